//! A measurement, not a test (ignored by default): requests and bytes per file, and files per
//! second, for 1,000 files checked over loopback HTTP with 1 and 8 threads, beside the same
//! files checked locally (read + `stcheck::validate`) in the same run.
//!
//! ```text
//! cargo test --release -p stcheck-cli --test it remote_measure -- --ignored --nocapture
//! ```
//!
//! The server runs in the same process and shares the machine's cores with the client.
#![cfg(feature = "remote")]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use stcheck::Config;
use stcheck_gate::remote::{Cost, Depth, Found, Remote, RemoteOptions};
use stcheck_testkit::corpus::Manifest;
use stcheck_testkit::http;
use stcheck_testkit::http::{serve_file, Reply, Server};

const FILES: usize = 1000;

/// The length of the virtual large files: 70 GB.
const BIG: u64 = 8 + 96 + 70_000_000_000;

/// The header of a 70 GB file of one U8 tensor (length field included), N = 96.
fn virtual_head() -> Vec<u8> {
    let json = br#"{"w":{"dtype":"U8","shape":[70000000000],"data_offsets":[0,70000000000]}}"#;
    let mut header = json.to_vec();
    header.resize(96, b' ');
    let mut head = 96u64.to_le_bytes().to_vec();
    head.extend_from_slice(&header);
    head
}

/// A file of `len` bytes that starts with `head` and is zeros after it, served by ranges
/// without holding it (a range must stay within the first MiB).
fn serve_virtual(req: &http::Request, head: &[u8], len: u64) -> Reply {
    let Some((a, b)) = req
        .header("range")
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.split_once('-'))
        .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
    else {
        return Reply::new(400);
    };
    let b = b.min(len - 1);
    if a > b || b - a >= 1 << 20 {
        return Reply::new(400);
    }
    let body: Vec<u8> = (a..=b)
        .map(|i| {
            usize::try_from(i)
                .ok()
                .and_then(|i| head.get(i))
                .copied()
                .unwrap_or(0)
        })
        .collect();
    Reply::new(206)
        .header("Content-Range", format!("bytes {a}-{b}/{len}"))
        .body(body)
}

/// Split `items` across `threads` scoped threads; returns the results in order.
fn in_threads<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|c| s.spawn(|| c.iter().map(&f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("worker"))
            .collect()
    })
}

#[test]
#[ignore = "a measurement; run with --ignored --nocapture"]
fn requests_bytes_and_files_per_second() {
    let corpus = Manifest::load().file_bytes();
    // 1,000 files: the corpus, repeated under distinct names.
    let files: Arc<Vec<(String, Vec<u8>)>> = Arc::new(
        (0..FILES)
            .map(|i| {
                let (path, bytes) = &corpus[i % corpus.len()];
                (format!("{i}/{}", path.replace('/', "_")), bytes.clone())
            })
            .collect(),
    );
    let served: HashMap<String, Vec<u8>> = files.iter().cloned().collect();
    let big_head = virtual_head();
    let server = Server::start(move |req| {
        let path = req.path().trim_start_matches('/');
        if path.starts_with("big/") {
            return serve_virtual(req, &big_head, BIG);
        }
        match served.get(path) {
            Some(b) => serve_file(req, b, true),
            None => Reply::new(404),
        }
    });
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("remote_measure");
    let _ = std::fs::remove_dir_all(&dir);
    for (p, b) in files.iter() {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, b).expect("write");
    }
    let urls: Vec<String> = files
        .iter()
        .map(|(p, _)| server.url(&format!("/{p}")))
        .collect();
    let paths: Vec<PathBuf> = files.iter().map(|(p, _)| dir.join(p)).collect();
    let total_bytes: u64 = files.iter().map(|(_, b)| b.len() as u64).sum();
    let config = Config::default();
    let client = Remote::new(RemoteOptions::default()).expect("client");

    println!(
        "{FILES} files, {} distinct corpus files, {total_bytes} bytes in all",
        corpus.len()
    );
    println!("| threads | remote files/s | local files/s | remote/local | requests/file (max) | bytes/file (max) | invalid |");
    println!("|---|---|---|---|---|---|---|");
    for threads in [1usize, 8] {
        // Local first, then remote, then local again: the slower of the two local runs
        // is not kept, so a cold cache does not flatter the ratio.
        let local = || {
            let t = Instant::now();
            let verdicts = in_threads(&paths, threads, |p| {
                let bytes = std::fs::read(p).expect("read");
                stcheck::validate(&bytes, &config).is_ok()
            });
            (t.elapsed(), verdicts)
        };
        let (l1, local_verdicts) = local();
        let t = Instant::now();
        let checks = in_threads(&urls, threads, |u| {
            let c = client.check(u, &config, Depth::Header);
            let ok = match &c.outcome {
                Ok(Found::File(f)) => f.checked.verdict.is_ok(),
                other => panic!("{u}: {other:?}"),
            };
            (ok, c.cost)
        });
        let remote = t.elapsed();
        let (l2, _) = local();
        let local_best = l1.min(l2);
        let verdicts: Vec<bool> = checks.iter().map(|(ok, _)| *ok).collect();
        assert_eq!(verdicts, local_verdicts);
        let costs: Vec<Cost> = checks.iter().map(|(_, c)| *c).collect();
        let requests: u64 = costs.iter().map(|c| u64::from(c.requests)).sum();
        let bytes: u64 = costs.iter().map(|c| c.bytes).sum();
        let max_req = costs.iter().map(|c| c.requests).max().unwrap_or(0);
        let max_bytes = costs.iter().map(|c| c.bytes).max().unwrap_or(0);
        let rfs = FILES as f64 / remote.as_secs_f64();
        let lfs = FILES as f64 / local_best.as_secs_f64();
        println!(
            "| {threads} | {rfs:.0} | {lfs:.0} | {:.3} | {:.3} ({max_req}) | {:.0} ({max_bytes}) | {} |",
            rfs / lfs,
            requests as f64 / FILES as f64,
            bytes as f64 / FILES as f64,
            verdicts.iter().filter(|ok| !**ok).count()
        );
    }
    cli_files_per_second(&server, &urls, &paths);
    let _ = std::fs::remove_dir_all(&dir);

    // 1,000 virtual 70 GB files (a 96-byte header): the remote side only.
    let big: Vec<String> = (0..FILES)
        .map(|i| server.url(&format!("/big/{i}")))
        .collect();
    println!();
    println!("| threads | 70 GB files/s (remote) | requests/file (max) | bytes/file (max) |");
    println!("|---|---|---|---|");
    for threads in [1usize, 8] {
        let t = Instant::now();
        let costs = in_threads(&big, threads, |u| {
            let c = client.check(u, &config, Depth::Header);
            match &c.outcome {
                Ok(Found::File(f)) => {
                    assert!(f.checked.verdict.is_ok() && f.checked.file_len == Some(BIG))
                }
                other => panic!("{u}: {other:?}"),
            }
            c.cost
        });
        let elapsed = t.elapsed();
        let requests: u64 = costs.iter().map(|c| u64::from(c.requests)).sum();
        let bytes: u64 = costs.iter().map(|c| c.bytes).sum();
        println!(
            "| {threads} | {:.0} | {:.3} ({}) | {:.0} ({}) |",
            FILES as f64 / elapsed.as_secs_f64(),
            requests as f64 / FILES as f64,
            costs.iter().map(|c| c.requests).max().unwrap_or(0),
            bytes as f64 / FILES as f64,
            costs.iter().map(|c| c.bytes).max().unwrap_or(0),
        );
    }
}

/// The `stcheck` binary on the same 1,000 files: `--json URL...` against `--json PATH...`, with
/// `--jobs 1` and `--jobs 8`, best of three runs each (a run includes starting the process).
/// Requests and bytes per file come from the records' `cost`.
fn cli_files_per_second(server: &Server, urls: &[String], paths: &[PathBuf]) {
    let bin = env!("CARGO_BIN_EXE_stcheck");
    let run = |jobs: usize, args: &[String]| {
        let mut best = None::<std::time::Duration>;
        let mut out = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            let o = Command::new(bin)
                .args(["--json", "--no-progress", "--jobs", &jobs.to_string()])
                .args(args)
                .output()
                .expect("run stcheck");
            let e = t.elapsed();
            assert!(matches!(o.status.code(), Some(0 | 1)), "{o:?}");
            best = Some(best.map_or(e, |b| b.min(e)));
            out = o.stdout;
        }
        (best.unwrap_or_default(), out)
    };
    let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let status = |out: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(out)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["type"] == "file")
            .map(|v| v["data"]["status"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    println!();
    println!(
        "CLI, {} files per run (best of 3, process start included):",
        urls.len()
    );
    println!(
        "| --jobs | remote files/s | local files/s | remote/local | requests/file | bytes/file |"
    );
    println!("|---|---|---|---|---|---|");
    for jobs in [1usize, 8] {
        server.clear_log();
        let (remote, rout) = run(jobs, urls);
        let (local, lout) = run(jobs, &paths);
        assert_eq!(
            status(&rout),
            status(&lout),
            "remote and local verdicts differ"
        );
        let records: Vec<serde_json::Value> = String::from_utf8_lossy(&rout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .filter(|v: &serde_json::Value| v["type"] == "file")
            .collect();
        let requests: u64 = records
            .iter()
            .filter_map(|v| v["data"]["cost"]["requests"].as_u64())
            .sum();
        let bytes: u64 = records
            .iter()
            .filter_map(|v| v["data"]["cost"]["bytes"].as_u64())
            .sum();
        let n = records.len().max(1) as f64;
        let rfs = urls.len() as f64 / remote.as_secs_f64();
        let lfs = paths.len() as f64 / local.as_secs_f64();
        println!(
            "| {jobs} | {rfs:.0} | {lfs:.0} | {:.3} | {:.3} | {:.0} |",
            rfs / lfs,
            requests as f64 / n,
            bytes as f64 / n
        );
    }
}
