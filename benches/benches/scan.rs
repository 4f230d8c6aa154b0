//! Deep-scan throughput against the memory-bandwidth floor, on one memory-mapped file that is
//! already in the page cache.
//!
//! `scan/baseline` sums the file's u64 words (what reading the mapping costs on this machine);
//! `scan/deep` is the checker on the whole mapped file with the deep scan, single-threaded, `scan/deep+sha256` adds the SHA-256 of
//! the whole file in the same pass, `scan/deep-2threads` splits the tensors across 2 threads and
//! `scan/deep+sha256-2threads` hashes on one thread while the other scans.
//!
//! `scan/baseline-2threads` sums the mapping's words on 2 threads (the bandwidth floor of the
//! 2-thread scans; the map is made once and its page tables stay filled between iterations),
//! `scan/baseline-fresh-map-2threads` does the same over a new map each time (what a check of a
//! file that maps it pays: the map's page tables are filled again), `scan/mmap-deep-2threads`
//! is `check_file` with [`stcheck::ReadMode::Mmap`] (`--mmap`), and the `scan/read-*` benchmarks check the same file the default way,
//! without a map: `check_file` with [`stcheck::ReadMode::Read`], whose data region is read
//! with `pread` in blocks by each scanning thread (so a file truncated under it is an error,
//! never `SIGBUS`). `scan/pread-only-2threads` is their floor: the same reads with nothing
//! done with the bytes (the copy out of the page cache that a scan without a map pays,
//! [`stcheck_benches::pread_threads`]). Criterion runs one benchmark after the other, so on a
//! shared machine a change of load between them moves the ratio: `scan_floor`
//! (`benches/src/bin/scan_floor.rs`) alternates the floor and the scans run by run and gives
//! their CPU time too.
//!
//! The file (F16, BF16, F32 and BOOL tensors, finite values) is built once under
//! `CARGO_TARGET_TMPDIR` and reused. Its size is `STCHECK_SCAN_MIB` MiB (default 512); under
//! `cargo test --benches` (criterion's test mode) a 4 MiB file is used instead.

use std::fs::File;
use std::hint::black_box;
use std::io::BufWriter;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use stcheck::write::{serialize_to, TensorSpec};
use stcheck::{Checker, Config, Dtype};

fn size_mib() -> u64 {
    // Criterion benchmarks only with `--bench` (as `cargo bench` passes) and without `--test`;
    // otherwise (`cargo test --benches`, `--list`) each benchmark runs once: a small file will do.
    let args: Vec<String> = std::env::args().collect();
    let measuring =
        args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test" || a == "--list");
    if !measuring {
        return 4;
    }
    std::env::var("STCHECK_SCAN_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512)
}

/// Deterministic pseudo-random words (xorshift64), masked so every value is finite.
fn fill(len: usize, seed: u64, mask_and: u64, mask_or: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&((x & mask_and) | mask_or).to_le_bytes());
    }
    out.truncate(len);
    out
}

fn build(path: &PathBuf, mib: u64) {
    // 8 tensors of mib/8 MiB each: 2 x F16, 2 x BF16, 3 x F32, 1 x BOOL.
    let each = usize::try_from(mib * (1 << 20) / 8).expect("size fits in memory");
    // Clearing the top exponent bit of every lane keeps it finite.
    let f16 = !0x4000_4000_4000_4000u64;
    let f32 = !0x4000_0000_4000_0000u64;
    let kinds = [
        ("a.f16", Dtype::F16, 2, f16, 0),
        ("b.f16", Dtype::F16, 2, f16, 0),
        ("c.bf16", Dtype::BF16, 2, f16, 0),
        ("d.bf16", Dtype::BF16, 2, f16, 0),
        ("e.f32", Dtype::F32, 4, f32, 0),
        ("f.f32", Dtype::F32, 4, f32, 0),
        ("g.f32", Dtype::F32, 4, f32, 0),
        ("h.bool", Dtype::BOOL, 1, 0x0101_0101_0101_0101, 0),
    ];
    let data: Vec<Vec<u8>> = kinds
        .iter()
        .enumerate()
        .map(|(i, k)| fill(each, 0x9E37_79B9_7F4A_7C15 ^ i as u64, k.3, k.4))
        .collect();
    let shapes: Vec<[u64; 1]> = kinds.iter().map(|k| [(each / k.2) as u64]).collect();
    let specs: Vec<TensorSpec<'_>> = kinds
        .iter()
        .zip(&data)
        .zip(&shapes)
        .map(|((k, d), s)| TensorSpec::new(k.0, k.1, s, d))
        .collect();
    let tmp = path.with_extension("tmp");
    let w = BufWriter::new(File::create(&tmp).expect("create bench file"));
    serialize_to(w, &specs, &[]).expect("write bench file");
    std::fs::rename(&tmp, path).expect("rename bench file");
}

fn bench_file(mib: u64) -> (File, stcheck::Mapped) {
    let path =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("scan-{mib}mib-v1.safetensors"));
    if !path.exists() {
        build(&path, mib);
    }
    let file = File::open(&path).expect("open bench file");
    // The library's one mapping function; the file lives under target/, is written once above
    // (to a temporary name, then renamed) and never modified while mapped.
    let map = stcheck::map(&file).expect("mmap bench file");
    (file, map)
}

fn baseline(bytes: &[u8]) -> u64 {
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .fold(0u64, u64::wrapping_add)
}

/// [`baseline_threads`] over a new map of `file`: what any mapped check of a file pays (the
/// map, and the page tables filled as the threads touch it), where `baseline-2threads` sums a
/// map made once, its page tables already filled.
fn fresh_map_threads(file: &File, threads: usize) -> u64 {
    let map = stcheck::map(file).expect("map the bench file");
    baseline_threads(&map, threads)
}

/// [`baseline`] on `threads` threads, each summing its share of the words.
fn baseline_threads(bytes: &[u8], threads: usize) -> u64 {
    let share = bytes.len().div_ceil(threads).div_ceil(8) * 8;
    std::thread::scope(|s| {
        let parts: Vec<_> = bytes
            .chunks(share.max(8))
            .map(|part| s.spawn(move || baseline(part)))
            .collect();
        parts
            .into_iter()
            .map(|p| p.join().expect("summing thread"))
            .fold(0u64, u64::wrapping_add)
    })
}

fn scan_bench(c: &mut Criterion) {
    let mib = size_mib();
    let (file, map) = bench_file(mib);
    let bytes: &[u8] = &map;
    let report = stcheck::validate(bytes, &Config::default()).expect("bench file is valid");
    // Warm the page cache and the mapping's page tables.
    black_box(baseline(bytes));

    let run = |config: &Config| {
        let checked = Checker::check_slice(config, bytes);
        let deep = checked.deep.expect("bench file scans clean");
        assert_eq!(deep.bytes_scanned, report.data_len());
        deep
    };
    // The file is finite and boolean-clean: nothing to warn about.
    assert!(run(&Config::default().deep(true)).non_finite.is_empty());

    let mut g = c.benchmark_group("scan");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("baseline", |b| {
        b.iter(|| black_box(baseline(black_box(bytes))))
    });
    let deep = Config::default().deep(true);
    g.bench_function("deep", |b| b.iter(|| black_box(run(&deep))));
    let sha = deep.clone().sha256(true);
    g.bench_function("deep+sha256", |b| b.iter(|| black_box(run(&sha))));
    let two = deep.clone().threads(2);
    g.bench_function("deep-2threads", |b| b.iter(|| black_box(run(&two))));
    // The hash on a thread of its own, the scan on the other.
    let two_sha = deep.clone().sha256(true).threads(2);
    g.bench_function("deep+sha256-2threads", |b| {
        b.iter(|| black_box(run(&two_sha)))
    });
    g.bench_function("baseline-2threads", |b| {
        b.iter(|| black_box(baseline_threads(black_box(bytes), 2)))
    });
    g.bench_function("baseline-fresh-map-2threads", |b| {
        b.iter(|| black_box(fresh_map_threads(&file, 2)))
    });
    let check = |config: &Config, mode: stcheck::ReadMode| {
        stcheck::check_file(&file, config, mode, |checked| {
            let deep = checked.deep.expect("bench file scans clean");
            assert_eq!(deep.bytes_scanned, report.data_len());
            deep
        })
        .expect("read the bench file")
    };
    let read = |config: &Config| check(config, stcheck::ReadMode::Read);
    g.bench_function("mmap-deep-2threads", |b| {
        b.iter(|| black_box(check(&two, stcheck::ReadMode::Mmap)))
    });
    g.bench_function("pread-only-2threads", |b| {
        b.iter(|| black_box(stcheck_benches::pread_threads(&file, bytes.len() as u64, 2)))
    });
    g.bench_function("read-deep", |b| b.iter(|| black_box(read(&deep))));
    g.bench_function("read-deep-2threads", |b| b.iter(|| black_box(read(&two))));
    g.bench_function("read-deep+sha256-2threads", |b| {
        b.iter(|| black_box(read(&two_sha)))
    });
    g.finish();
}

criterion_group!(benches, scan_bench);
criterion_main!(benches);
