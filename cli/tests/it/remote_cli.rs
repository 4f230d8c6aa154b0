//! `stcheck URL` end to end, against a loopback server: the verdict and exit code equal the
//! local ones, `--json` shows the URL and what the check cost, an index URL checks the set with
//! its shards, `hf://` follows `HF_ENDPOINT` with `HF_TOKEN`, a failing server is "could not
//! check" (exit 2), and credentials never appear in the output.
#![cfg(feature = "remote")]

use std::time::{Duration, Instant};

use stcheck_testkit::cli::{json_lines as lines, output, Out};
use stcheck_testkit::http::{declared_file, serve_file, zeros_file, Length, Reply, Server};

fn run(args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = crate::stcheck();
    cmd.args(args).envs(env.iter().copied());
    output(&mut cmd)
}

fn bad_file() -> Vec<u8> {
    let mut f = zeros_file(2);
    f.push(0); // a trailing byte: DATA-TRAILING
    f
}

fn shard(name: &str) -> Vec<u8> {
    stcheck::write::serialize(
        &[stcheck::write::TensorSpec::new(
            name,
            stcheck::Dtype::F32,
            &[1],
            &[0; 4],
        )],
        &[],
    )
    .expect("shard")
}

fn server() -> Server {
    let good = zeros_file(3);
    let bad = bad_file();
    let (s1, s2) = (shard("a"), shard("b"));
    let index = br#"{"metadata":{"total_size":8},"weight_map":{"a":"m-1.safetensors","b":"m-2.safetensors"}}"#.to_vec();
    Server::start(move |req| match req.path() {
        "/good.safetensors" => serve_file(req, &good, true),
        "/bad.safetensors" => serve_file(req, &bad, true),
        "/set/m.safetensors.index.json" => serve_file(req, &index, true),
        "/set/m-1.safetensors" => serve_file(req, &s1, true),
        "/set/m-2.safetensors" => serve_file(req, &s2, true),
        "/hub/org/repo/resolve/main/good.safetensors" => {
            if req.header("authorization") == Some("Bearer hf_secret_token") {
                serve_file(req, &good, true)
            } else {
                Reply::new(401)
            }
        }
        "/broken.safetensors" => Reply::new(500),
        _ => Reply::new(404),
    })
}

#[test]
fn urls_get_the_local_verdict_with_their_cost() {
    let s = server();
    let good = s.url("/good.safetensors");
    let bad = s.url("/bad.safetensors");
    let out = run(&[&good], &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out
        .stdout
        .starts_with(&format!("{good}: ok (1 tensor, 3 parameters")));
    let out = run(&["--json", &good, &bad], &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let v = lines(&out.stdout);
    assert_eq!(v[0]["data"]["status"], "valid");
    assert_eq!(v[0]["data"]["mode"], "remote");
    assert_eq!(v[0]["data"]["cost"]["requests"], 1);
    assert!(v[0]["data"]["cost"]["bytes"].as_u64().unwrap_or(0) <= 65_536);
    assert_eq!(v[1]["data"]["error"]["rule"], "DATA-TRAILING");
    let local = stcheck::validate(&bad_file(), &stcheck::Config::default()).expect_err("bad");
    assert_eq!(v[1]["data"]["error"]["offset"], local.offset());
    // Deep: the body streamed once, with the hash.
    let out = run(&["--json", "--sha256", &good], &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let v = lines(&out.stdout);
    assert_eq!(v[0]["data"]["deep"]["bytes_scanned"], 12);
    assert_eq!(
        v[0]["data"]["deep"]["sha256"].as_str().map(str::len),
        Some(64)
    );
}

/// `--profile reference` and `--compare-reference` on a URL give the reference crate's
/// verdict, from the header and the announced length, at the cost of a header check: for a
/// file and for each shard of an index.
#[test]
fn the_reference_verdict_for_urls() {
    let s = server();
    let good = s.url("/good.safetensors");
    let bad = s.url("/bad.safetensors");
    let index = s.url("/set/m.safetensors.index.json");
    let out = run(&["--json", "--profile", "reference", &good, &bad], &[]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let v = lines(&out.stdout);
    assert_eq!(v[0]["data"]["status"], "valid", "{}", out.stdout);
    assert_eq!(v[0]["data"]["reference"]["verdict"], "accept");
    assert_eq!(v[0]["data"]["cost"]["requests"], 1);
    assert_eq!(v[1]["data"]["status"], "invalid");
    assert_eq!(v[1]["data"]["reference"]["verdict"], "reject");
    assert_eq!(v[1]["data"]["strict"]["error"]["rule"], "DATA-TRAILING");
    let out = run(&["--compare-reference", &index], &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stdout.matches("reference: accepts (1 tensor)").count(),
        2,
        "{}",
        out.stdout
    );
}

#[test]
fn an_index_url_checks_the_set() {
    let s = server();
    let index = s.url("/set/m.safetensors.index.json");
    let out = run(&[&index], &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out
        .stdout
        .starts_with(&format!("{index}: ok (index of 2 shards; 2 tensors")));
    assert!(out.stdout.contains("shard "), "{}", out.stdout);
    let out = run(&["--json", &index], &[]);
    let v = lines(&out.stdout);
    assert_eq!(v[0]["type"], "index");
    assert_eq!(v[0]["data"]["status"], "valid");
    assert_eq!(v[0]["data"]["shards"].as_array().map(Vec::len), Some(2));
    for shard in v[0]["data"]["shards"].as_array().into_iter().flatten() {
        assert_eq!(shard["mode"], "remote", "{shard}");
    }
    assert!(v[0]["data"]["cost"]["requests"].as_u64().unwrap_or(0) >= 3);
}

#[test]
fn hf_addresses_use_the_endpoint_and_token_and_never_print_it() {
    let s = server();
    let endpoint = s.url("/hub/");
    let env = [
        ("HF_ENDPOINT", endpoint.as_str()),
        ("HF_TOKEN", "hf_secret_token"),
    ];
    let out = run(&["--json", "hf://org/repo/good.safetensors"], &env);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains("hf_secret_token") && !out.stderr.contains("hf_secret_token"));
    // Without the token the server refuses: not checked, exit 2, with what to do.
    let out = run(
        &["hf://org/repo/good.safetensors"],
        &[("HF_ENDPOINT", &endpoint)],
    );
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("401") && out.stderr.contains("set HF_TOKEN"),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.contains(": not checked: HTTP 401"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_failing_server_is_could_not_check_never_a_verdict() {
    let s = server();
    let url = s.url("/broken.safetensors");
    let out = run(
        &[
            "--json",
            "--header",
            "X-Api-Key: key-that-must-not-show",
            &url,
        ],
        &[],
    );
    assert_eq!(out.code, 2, "{}", out.stdout);
    let v = lines(&out.stdout);
    assert_eq!(v[0]["data"]["status"], "io_error");
    assert!(!out.stdout.contains("key-that-must-not-show"));
    assert!(!out.stderr.contains("key-that-must-not-show"));
    let out = run(&[&s.url("/missing.safetensors")], &[]);
    assert_eq!(out.code, 2);
}

/// Issue 19: `--timeout` bounds each URL, its data and (for an index) all its shards: a URL
/// past it is not checked (exit 2), and the other URLs' records and the summary are written.
#[test]
fn a_timeout_ends_a_dripping_url_and_the_run_goes_on() {
    // At most 16 shards of a set at a time (`--url-jobs 16`: the set's own fetch and 15
    // helpers): four rounds of them.
    const SHARDS: usize = 64;
    let good = zeros_file(3);
    let (body, total) = declared_file(1 << 30, 64 * 1024);
    let index: Vec<u8> = {
        let map: Vec<String> = (0..SHARDS)
            .map(|i| format!("\"t{i}\":\"m-{i}.safetensors\""))
            .collect();
        format!("{{\"weight_map\":{{{}}}}}", map.join(",")).into_bytes()
    };
    let shards: Vec<Vec<u8>> = (0..SHARDS).map(|i| shard(&format!("t{i}"))).collect();
    let s = Server::start(move |req| {
        let path = req.path();
        if path == "/good.safetensors" {
            return serve_file(req, &good, true);
        }
        if path == "/drip.safetensors" {
            // 1,280 bytes/s of a declared 1 GiB tensor: above the minimum speed.
            return Reply::new(200)
                .body(body.clone())
                .length(Length::Claim(total))
                .drip(64, Duration::from_millis(50));
        }
        if path == "/set/m.safetensors.index.json" {
            return serve_file(req, &index, true);
        }
        // Each shard about a second, dripped: 64 of them, at most 16 at a time, pass 2 s.
        match path
            .strip_prefix("/set/m-")
            .and_then(|p| p.strip_suffix(".safetensors"))
            .and_then(|i| i.parse::<usize>().ok())
            .and_then(|i| shards.get(i))
        {
            Some(b) => serve_file(req, b, true).drip(8, Duration::from_millis(100)),
            None => Reply::new(404),
        }
    });
    let (drip, good, set) = (
        s.url("/drip.safetensors"),
        s.url("/good.safetensors"),
        s.url("/set/m.safetensors.index.json"),
    );
    let started = Instant::now();
    let out = run(
        &[
            "--json",
            "--deep",
            "--timeout",
            "2",
            "--url-jobs",
            "16",
            &drip,
            &good,
            &set,
        ],
        &[],
    );
    assert!(
        started.elapsed() < Duration::from_secs(40),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    let v = lines(&out.stdout);
    assert_eq!(v.len(), 4, "{}", out.stdout);
    assert_eq!(v[0]["data"]["status"], "io_error", "{}", v[0]);
    assert_eq!(v[0]["data"]["read_error"], "timeout", "{}", v[0]);
    let message = v[0]["data"]["io_error"].as_str().unwrap_or_default();
    assert!(message.contains("gave up after 2 s"), "{message}");
    assert_eq!(v[1]["data"]["status"], "valid", "{}", v[1]);
    assert_eq!(v[2]["type"], "index");
    assert_eq!(v[2]["data"]["status"], "io_error", "{}", v[2]);
    assert_eq!(v[2]["data"]["read_error"], "timeout", "{}", v[2]);
    let message = v[2]["data"]["io_error"].as_str().unwrap_or_default();
    assert!(
        message.contains("gave up after 2 s") && message.contains("the whole set"),
        "{message}"
    );
    assert_eq!(v[3]["type"], "summary");
    assert_eq!(v[3]["data"]["exit_code"], 2);
    assert!(out.stderr.contains("gave up after 2 s"), "{}", out.stderr);

    // Text, header level: the set still runs out (each shard about a second).
    let out = run(&["--timeout=2", "--url-jobs=16", &set, &good], &[]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("not checked"), "{}", out.stdout);
    assert!(
        out.stdout.contains(&format!("{good}: ok")),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("summary: "), "{}", out.stdout);
}

/// Issue 29: "could not check" is typed. A 404, a timeout and a TLS failure (a certificate no
/// root the run trusts signed) give three documented codes: the JSON record's `read_error`
/// (with `http_status` for the 404) and the SARIF notification's id.
#[test]
fn a_404_a_timeout_and_a_tls_failure_are_three_documented_codes() {
    let plain = Server::start(|req| match req.path() {
        // Far past the run's 1 s timeout; the server stops stalling when it is dropped.
        "/stall.safetensors" => Reply::new(200)
            .body(zeros_file(3))
            .stall(Duration::from_secs(120)),
        _ => Reply::new(404),
    });
    let (_, config) = stcheck_testkit::http::pki();
    let tls = Server::start_tls(config, |req| serve_file(req, &zeros_file(3), true));
    let urls = [
        plain.url("/gone.safetensors"),
        plain.url("/stall.safetensors"),
        tls.url("/good.safetensors"),
    ];
    let args = |format: &'static str| {
        let mut a = vec!["--format", format, "--timeout", "1"];
        a.extend(urls.iter().map(String::as_str));
        a
    };
    let out = run(&args("json"), &[]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    let v = lines(&out.stdout);
    assert_eq!(v.len(), 4, "{}", out.stdout);
    let got: Vec<(&str, &str, Option<u64>)> = v[..3]
        .iter()
        .map(|r| {
            let d = &r["data"];
            (
                d["status"].as_str().unwrap_or_default(),
                d["read_error"].as_str().unwrap_or_default(),
                d.get("http_status").and_then(serde_json::Value::as_u64),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("io_error", "http_status", Some(404)),
            ("io_error", "timeout", None),
            ("io_error", "tls", None),
        ],
        "{}",
        out.stdout
    );

    let out = run(&args("sarif"), &[]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    let log: serde_json::Value = serde_json::from_str(&out.stdout).expect("SARIF");
    let ids: Vec<&str> = log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| n["descriptor"]["id"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(ids, ["http_status", "timeout", "tls"], "{}", out.stdout);
}

#[test]
fn a_timeout_must_be_a_positive_number_of_seconds() {
    for bad in ["0", "-1", "abc", "inf", "NaN", "", "1e30"] {
        let out = run(&["--timeout", bad, "http://127.0.0.1:1/x.safetensors"], &[]);
        assert_eq!(out.code, 2, "{bad}: {}{}", out.stdout, out.stderr);
        assert!(out.stderr.contains("--timeout"), "{bad}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{bad}: {}", out.stdout);
    }
    let out = run(&["--help"], &[]);
    assert!(out.stdout.contains("--timeout SECONDS"), "{}", out.stdout);
}
