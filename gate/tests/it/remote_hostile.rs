//! `stcheck_gate::remote` against servers that misbehave: each misbehaviour is a "could not check"
//! outcome with a clear message, never a verdict, and no credential ever shows in the result.
#![cfg(feature = "remote")]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::test_options;
use stcheck::Config;
use stcheck_gate::remote::{Depth, ErrorKind, Found, Remote, RemoteError, RemoteOptions, UrlCheck};
use stcheck_testkit::http::{declared_file, serve_file, zeros_file, Length, Reply, Server};
use stcheck_testkit::short;

const KEY: &str = "sentinel-api-key-5d41402abc4b2a76";
const TOKEN: &str = "hf_sentinel_token_7d793037a0760186";

/// The test options with credentials that must never show.
fn with_secrets(o: RemoteOptions) -> RemoteOptions {
    o.header("X-Api-Key", KEY)
        .expect("header")
        .hf_token(Some(TOKEN))
}

fn client(o: RemoteOptions) -> Remote {
    Remote::new(with_secrets(o)).expect("client")
}

fn no_secret(check: &UrlCheck) {
    let all = format!("{check:?}");
    let shown = match &check.outcome {
        Err(e) => format!("{e} {}", e.message()),
        Ok(_) => String::new(),
    };
    for s in [KEY, TOKEN] {
        assert!(!all.contains(s), "a credential in {all}");
        assert!(!shown.contains(s), "a credential in {shown}");
    }
}

/// The check must fail with `kind`, a message holding `words`, and no credential shown.
fn could_not_check(check: &UrlCheck, kind: ErrorKind, words: &str) -> RemoteError {
    no_secret(check);
    match &check.outcome {
        Err(e) => {
            eprintln!("{}: {e}", check.url);
            assert_eq!(e.kind(), kind, "{e}");
            assert!(
                e.message().contains(words),
                "message {:?} lacks {words:?}",
                e.message()
            );
            e.clone()
        }
        Ok(found) => panic!("a verdict where none is possible: {}", short(found, 300)),
    }
}

fn valid(check: &UrlCheck) {
    no_secret(check);
    match &check.outcome {
        Ok(Found::File(f)) => assert!(f.checked.verdict.is_ok(), "{:?}", f.checked.verdict),
        other => panic!("expected a valid file: {}", short(other, 300)),
    }
}

/// A valid file whose header (a long metadata value) is longer than the first fetch.
fn long_header_file() -> Vec<u8> {
    let value = "x".repeat(100_000);
    stcheck::write::serialize(
        &[stcheck::write::TensorSpec::new(
            "w",
            stcheck::Dtype::F32,
            &[2],
            &[0u8; 8],
        )],
        &[("note", value.as_str())],
    )
    .expect("serialize")
}

const H: Depth = Depth::Header;

#[test]
fn a_server_ignoring_range_is_read_only_as_far_as_needed() {
    // 32 MiB: more than loopback's socket buffers, so the server notices the hang-up.
    let file = Arc::new(zeros_file(8 << 20));
    let len = file.len() as u64;
    let f = Arc::clone(&file);
    let server = Server::start(move |req| serve_file(req, &f, false));
    let c = client(test_options());
    let check = c.check(&server.url("/big.safetensors"), &Config::default(), H);
    valid(&check);
    assert_eq!(check.cost.requests, 1);
    assert!(check.cost.bytes <= 64 * 1024, "{:?}", check.cost);
    let log = server.settle(Duration::from_secs(20));
    assert_eq!(log.len(), 1);
    assert_eq!(
        log[0].wrote_all,
        Some(false),
        "the client read the whole body"
    );
    assert!(log[0].body_written < len);

    // A header longer than the first fetch: a second request, still not the whole file.
    let long = Arc::new(long_header_file());
    let l = Arc::clone(&long);
    let server = Server::start(move |req| {
        let mut big = (*l).clone();
        if req.path() == "/padded" {
            // Appended bytes make DATA-TRAILING, decided from the length alone.
            big.extend(std::iter::repeat_n(0u8, 4 << 20));
        }
        serve_file(req, &big, false)
    });
    let check = c.check(&server.url("/long"), &Config::default(), H);
    valid(&check);
    assert!(check.cost.requests <= 2);
    let check = c.check(&server.url("/padded"), &Config::default(), H);
    match &check.outcome {
        Ok(Found::File(f)) => {
            let e = f.checked.verdict.as_ref().expect_err("trailing bytes");
            assert_eq!(e.rule().id(), "DATA-TRAILING");
            assert_eq!(f.checked.file_len, Some(long.len() as u64 + (4 << 20)));
        }
        other => panic!("{}", short(other, 300)),
    }
    assert!(check.cost.bytes <= long.len() as u64 + 64 * 1024);
}

#[test]
fn a_body_shorter_than_announced_is_not_a_verdict() {
    let file = zeros_file(100_000);
    let f = file.clone();
    let server = Server::start(move |req| {
        let len = f.len() as u64;
        match req.path() {
            // A range announced as 64 KiB, cut after 1,000 bytes.
            "/range" => Reply::new(206)
                .header("Content-Range", format!("bytes 0-65535/{len}"))
                .body(f[..1000].to_vec())
                .length(Length::Claim(65536)),
            // The same without Content-Length: the connection closes early.
            "/range-close" => Reply::new(206)
                .header("Content-Range", format!("bytes 0-65535/{len}"))
                .body(f[..1000].to_vec())
                .length(Length::CloseDelimited),
            // The whole file announced, half sent.
            _ => Reply::new(200)
                .body(f[..f.len() / 2].to_vec())
                .length(Length::Claim(len)),
        }
    });
    let c = client(test_options());
    let cfg = Config::default();
    could_not_check(
        &c.check(&server.url("/range"), &cfg, H),
        ErrorKind::Network,
        "the connection closed before the end of the body",
    );
    could_not_check(
        &c.check(&server.url("/range-close"), &cfg, H),
        ErrorKind::Response,
        "shorter than the 65536 announced",
    );
    // Deep: the stream ends early; the validator must not call it DATA-TRUNCATED.
    could_not_check(
        &c.check(&server.url("/whole"), &cfg, Depth::Deep { sha256: true }),
        ErrorKind::Network,
        "streaming the file: the connection closed before the end of the body",
    );
}

#[test]
fn a_tiny_file_announced_longer_is_not_a_verdict() {
    // 200 without range support: the body ends (at 80 bytes) before the announced length.
    let file = zeros_file(2);
    let f = file.clone();
    let server = Server::start(move |_| {
        Reply::new(200)
            .body(f.clone())
            .length(Length::Claim(f.len() as u64 + 500))
    });
    let c = client(test_options());
    could_not_check(
        &c.check(&server.url("/f"), &Config::default(), H),
        ErrorKind::Network,
        "the connection closed before the end of the body",
    );
}

#[test]
fn a_body_longer_than_announced_is_not_a_verdict() {
    let file = zeros_file(100_000);
    let len = file.len();
    let f = file.clone();
    let server = Server::start(move |req| match req.path() {
        // Content-Range says 100 bytes, Content-Length 200.
        "/cl" => Reply::new(206)
            .header("Content-Range", format!("bytes 0-99/{len}"))
            .body(f[..200].to_vec()),
        // Content-Range says 100 bytes, and 200 come before the connection closes.
        _ => Reply::new(206)
            .header("Content-Range", format!("bytes 0-99/{len}"))
            .body(f[..200].to_vec())
            .length(Length::CloseDelimited),
    });
    let c = client(test_options());
    could_not_check(
        &c.check(&server.url("/cl"), &Config::default(), H),
        ErrorKind::Response,
        "announces 200 bytes (Content-Length) for a range of 100 bytes",
    );
    could_not_check(
        &c.check(&server.url("/close"), &Config::default(), H),
        ErrorKind::Response,
        "longer than the 100 bytes announced",
    );
}

#[test]
fn a_slow_drip_runs_out_of_time() {
    let file = zeros_file(1000);
    let f = file.clone();
    let server =
        Server::start(move |req| serve_file(req, &f, true).drip(1, Duration::from_millis(20)));
    // Header level: the file's deadline.
    let mut o = test_options();
    o.total_timeout = Duration::from_millis(500);
    let c = client(o);
    could_not_check(
        &c.check(&server.url("/f"), &Config::default(), H),
        ErrorKind::Timeout,
        "gave up after 0.5 s",
    );
    // Deep, long before its deadline: the minimum speed.
    let mut o = test_options();
    o.min_speed_bytes = 1000;
    o.min_speed_window = Duration::from_millis(300);
    let c = client(o);
    could_not_check(
        &c.check(
            &server.url("/f"),
            &Config::default(),
            Depth::Deep { sha256: false },
        ),
        ErrorKind::Timeout,
        "less than the minimum of 1000 bytes",
    );
}

/// Issue 19: a deep check of a server sending 1,280 bytes/s of a declared 1 GiB tensor,
/// above the minimum speed (1024 bytes per 30 s), ends at the file's deadline: not checked,
/// never a verdict, with the deadline in the message.
#[test]
fn a_deep_check_of_a_dripped_body_ends_at_its_deadline() {
    let (body, total) = declared_file(1 << 30, 64 * 1024);
    let server = Server::start(move |_| {
        Reply::new(200)
            .body(body.clone())
            .length(Length::Claim(total))
            .drip(64, Duration::from_millis(50))
    });
    let mut o = test_options();
    // The floor stays the default one; the drip is above it.
    assert_eq!(o.min_speed_bytes, 1024);
    assert_eq!(o.min_speed_window, Duration::from_secs(30));
    o.stream_timeout = Some(Duration::from_secs(2));
    let c = client(o);
    let started = std::time::Instant::now();
    let check = c.check(
        &server.url("/big.safetensors"),
        &Config::default(),
        Depth::Deep { sha256: true },
    );
    let e = could_not_check(&check, ErrorKind::Timeout, "gave up after 2 s");
    assert!(e.message().contains("the time allowed for one file"), "{e}");
    // A generous bound that proves it ended (the body alone would take 51 s).
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let log = server.settle(Duration::from_secs(5));
    assert_eq!(log.len(), 1, "one request, no retry of a deadline");
    assert!(log[0].body_written < 64 * 1024, "{}", log[0].body_written);
}

/// The defaults bound every check: a deep one too, however slowly the bytes come.
#[test]
fn the_default_deadlines_are_bounded() {
    let o = RemoteOptions::default();
    assert_eq!(o.total_timeout, Duration::from_secs(120));
    assert_eq!(o.stream_timeout, Some(Duration::from_secs(3600)));
    assert!(o.max_concurrent_shards > 1);
}

#[test]
fn a_response_head_dripped_byte_by_byte_runs_out_of_time() {
    // Each byte well within the read timeout; the head never ends.
    let head: Vec<u8> = b"HTTP/1.1 200 OK\r\nX-Padding: "
        .iter()
        .copied()
        .chain(std::iter::repeat_n(b'a', 10_000))
        .collect();
    let server =
        Server::start(move |_| Reply::raw(head.clone()).drip(1, Duration::from_millis(10)));
    let mut o = test_options();
    o.total_timeout = Duration::from_millis(500);
    let c = client(o);
    // A deep check's deadline is longer (stream_timeout: 20 s here), yet the head is
    // bounded by the total timeout.
    for depth in [H, Depth::Deep { sha256: false }] {
        could_not_check(
            &c.check(&server.url("/f"), &Config::default(), depth),
            ErrorKind::Timeout,
            "",
        );
    }
}

#[test]
fn a_stalled_server_hits_the_read_timeout() {
    let server = Server::start(|_| {
        Reply::new(206)
            .header("Content-Range", "bytes 0-65535/100000")
            .length(Length::Claim(65536))
            .stall(Duration::from_secs(5))
    });
    let mut o = test_options();
    o.read_timeout = Duration::from_millis(300);
    let c = client(o);
    could_not_check(
        &c.check(&server.url("/f"), &Config::default(), H),
        ErrorKind::Timeout,
        "no data for 0.3 s",
    );
    // Nothing at all after the request.
    let server = Server::start(|_| Reply::raw(Vec::new()).stall(Duration::from_secs(5)));
    let check = c.check(&server.url("/f"), &Config::default(), H);
    assert!(check.outcome.is_err());
    no_secret(&check);
}

#[test]
fn redirect_loops_and_chains_are_cut() {
    let server = Server::start(|req| match req.path() {
        "/a" => Reply::redirect(302, "/b"),
        "/b" => Reply::redirect(301, "a"),
        p if p.starts_with("/r/") => {
            let n: u32 = p[3..].parse().unwrap_or(0);
            Reply::redirect(307, &format!("/r/{}", n + 1))
        }
        "/nowhere" => Reply::new(302),
        "/ftp" => Reply::redirect(302, "ftp://127.0.0.1/x"),
        _ => Reply::new(404),
    });
    let c = client(test_options());
    let cfg = Config::default();
    let check = c.check(&server.url("/a"), &cfg, H);
    could_not_check(&check, ErrorKind::Redirect, "redirect loop");
    assert_eq!(check.cost.requests, 2);
    let check = c.check(&server.url("/r/0"), &cfg, H);
    could_not_check(&check, ErrorKind::Redirect, "more than 10 redirects");
    assert_eq!(check.cost.requests, 11);
    could_not_check(
        &c.check(&server.url("/nowhere"), &cfg, H),
        ErrorKind::Redirect,
        "without a usable Location",
    );
    could_not_check(
        &c.check(&server.url("/ftp"), &cfg, H),
        ErrorKind::Redirect,
        "not an http:// or https:// URL",
    );
}

#[test]
fn client_errors_are_not_retried_and_not_verdicts() {
    let server = Server::start(|req| {
        let status: u16 = req.path()[1..].parse().unwrap_or(400);
        Reply::new(status).body("nope")
    });
    let c = client(test_options());
    for status in [400u16, 401, 403, 404, 405, 410, 418, 501] {
        let check = c.check(&server.url(&format!("/{status}")), &Config::default(), H);
        let e = could_not_check(&check, ErrorKind::Status, &format!("HTTP {status}"));
        assert_eq!(e.http_status(), Some(status));
        assert_eq!(check.cost.requests, 1, "{status}");
    }
}

#[test]
fn server_errors_are_retried_with_backoff_then_given_up() {
    let file = zeros_file(10);
    let count = Arc::new(AtomicU32::new(0));
    let (f, n) = (file.clone(), Arc::clone(&count));
    let server = Server::start(move |req| match req.path() {
        // 503 twice (Retry-After: 0), then the file.
        "/flaky" => {
            if n.fetch_add(1, Ordering::SeqCst) < 2 {
                Reply::new(503).header("Retry-After", "0")
            } else {
                serve_file(req, &f, true)
            }
        }
        "/down" => Reply::new(500),
        "/busy" => Reply::new(429).header("Retry-After", "3600"),
        _ => Reply::new(404),
    });
    let c = client(test_options());
    let cfg = Config::default();
    let check = c.check(&server.url("/flaky"), &cfg, H);
    valid(&check);
    assert_eq!((check.cost.requests, check.cost.retries), (3, 2));

    let check = c.check(&server.url("/down"), &cfg, H);
    let e = could_not_check(&check, ErrorKind::Status, "HTTP 500 Internal Server Error");
    assert!(e.message().contains("after 3 retries"), "{e}");
    assert_eq!((check.cost.requests, check.cost.retries), (4, 3));

    let check = c.check(&server.url("/busy"), &cfg, H);
    could_not_check(&check, ErrorKind::Status, "retry after 3600 s");
    assert_eq!(check.cost.requests, 1);
}

#[test]
fn a_connection_refused_is_retried_then_given_up() {
    // A port nobody listens on: bind, note it, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let c = client(test_options());
    let check = c.check(
        &format!("http://127.0.0.1:{port}/f.safetensors"),
        &Config::default(),
        H,
    );
    assert!(check.outcome.is_err());
    assert_eq!(check.cost.retries, 3);
    no_secret(&check);
}

#[test]
fn responses_that_are_not_the_files_bytes_are_refused() {
    let file = long_header_file();
    let len = file.len();
    let served = Arc::new(AtomicU32::new(0));
    let (f, n) = (file.clone(), Arc::clone(&served));
    let server = Server::start(move |req| match req.path() {
        "/gzip" => serve_file(req, &f, true).header("Content-Encoding", "gzip"),
        "/elsewhere" => Reply::new(206)
            .header("Content-Range", format!("bytes 10-20/{len}"))
            .body(f[10..21].to_vec()),
        "/multipart" => Reply::new(206)
            .header("Content-Type", "multipart/byteranges; boundary=x")
            .header("Content-Range", format!("bytes 0-9/{len}"))
            .body(f[..10].to_vec()),
        "/no-range-header" => Reply::new(206).body(f[..10].to_vec()),
        "/416" => Reply::new(416).header("Content-Range", format!("bytes */{len}")),
        "/204" => Reply::new(204),
        "/garbage" => Reply::raw(b"HTTP/1.1 2OO OK\r\n\r\n".to_vec()),
        // The ETag changes between the first and the second range request.
        "/changing" => {
            let k = n.fetch_add(1, Ordering::SeqCst);
            let mut r = serve_file(req, &f, true);
            for h in r.headers.iter_mut() {
                if h.0 == "ETag" {
                    h.1 = format!("\"v{k}\"");
                }
            }
            r
        }
        _ => Reply::new(404),
    });
    let c = client(test_options());
    let cfg = Config::default();
    for (path, kind, words) in [
        ("/gzip", ErrorKind::Response, "content coding"),
        (
            "/elsewhere",
            ErrorKind::Response,
            "the server sent bytes 10-20",
        ),
        ("/multipart", ErrorKind::Response, "multipart"),
        (
            "/no-range-header",
            ErrorKind::Response,
            "without Content-Range",
        ),
        ("/416", ErrorKind::Response, "416"),
        ("/204", ErrorKind::Response, "unexpected HTTP 204"),
        ("/garbage", ErrorKind::Response, "not valid HTTP/1.1"),
        (
            "/changing",
            ErrorKind::Response,
            "the file changed on the server",
        ),
    ] {
        let check = c.check(&server.url(path), &cfg, H);
        could_not_check(&check, kind, words);
    }
}

#[test]
fn a_total_hidden_from_content_range_is_asked_with_head() {
    let file = zeros_file(10);
    let f = file.clone();
    let server = Server::start(move |req| {
        let mut r = serve_file(req, &f, true);
        if req.method == "GET" {
            for h in r.headers.iter_mut() {
                if h.0 == "Content-Range" {
                    h.1 = h.1.split('/').next().unwrap_or("").to_owned() + "/*";
                }
            }
        }
        r
    });
    let check = client(test_options()).check(&server.url("/f"), &Config::default(), H);
    valid(&check);
    assert_eq!(check.cost.requests, 2);
    let methods: Vec<String> = server.requests().into_iter().map(|r| r.method).collect();
    assert_eq!(methods, ["GET", "HEAD"]);
}

#[test]
fn credentials_go_only_to_the_origin_named() {
    let file = zeros_file(10);
    let f = file.clone();
    let server = Arc::new(Server::start(move |req| match req.path() {
        "/cross" => {
            // Same server, another host name: another origin.
            let port = req
                .header("host")
                .and_then(|h| h.rsplit(':').next())
                .unwrap_or("0")
                .to_owned();
            Reply::redirect(302, &format!("http://localhost:{port}/file?sig=abc"))
        }
        "/same" => Reply::redirect(302, "/file"),
        "/file" => serve_file(req, &f, true),
        _ => Reply::new(404),
    }));
    let c = client(test_options());
    let cfg = Config::default();

    let check = c.check(&server.url("/cross"), &cfg, H);
    valid(&check);
    assert_eq!(check.cost.redirects, 1);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].header("x-api-key"), Some(KEY));
    assert!(reqs[1]
        .header("host")
        .unwrap_or("")
        .starts_with("localhost:"));
    assert_eq!(
        reqs[1].header("x-api-key"),
        None,
        "a credential crossed hosts"
    );
    for r in &reqs {
        // Not the hub: the token goes nowhere.
        assert!(!r.all_headers().contains(TOKEN));
        assert_eq!(r.header("authorization"), None);
    }

    server.clear_log();
    let check = c.check(&server.url("/same"), &cfg, H);
    valid(&check);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[1].header("x-api-key"),
        Some(KEY),
        "same origin keeps them"
    );

    // The other way round: named as localhost, redirected to 127.0.0.1.
    server.clear_log();
    let check = c.check(&server.url_as("localhost", "/same"), &cfg, H);
    valid(&check);
    for r in server.requests() {
        assert_eq!(r.header("x-api-key"), Some(KEY));
    }
}

#[test]
fn hf_addresses_go_to_the_endpoint_with_the_token_and_not_beyond() {
    let file = zeros_file(10);
    let f = file.clone();
    let server = Server::start(move |req| {
        let port = req
            .header("host")
            .and_then(|h| h.rsplit(':').next())
            .unwrap_or("0")
            .to_owned();
        match req.path() {
            // The hub redirects `resolve` to a CDN (here: another host name).
            "/org/repo/resolve/v1.0/sub%20dir/model.safetensors" => {
                Reply::redirect(302, &format!("http://localhost:{port}/cdn/blob?X-Sig=1"))
            }
            "/cdn/blob" => serve_file(req, &f, true),
            _ => Reply::new(404),
        }
    });
    let mut o = test_options().hf_endpoint(&server.url(""));
    o.max_retries = 0;
    let c = client(o);
    let check = c.check(
        "hf://org/repo@v1.0/sub dir/model.safetensors",
        &Config::default(),
        H,
    );
    valid(&check);
    assert_eq!(check.url, "hf://org/repo@v1.0/sub dir/model.safetensors");
    assert_eq!(
        check.resolved.as_deref(),
        Some(
            server
                .url("/org/repo/resolve/v1.0/sub%20dir/model.safetensors")
                .as_str()
        )
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[0].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(
        reqs[1].header("authorization"),
        None,
        "the token left the hub"
    );
    assert_eq!(reqs[1].header("x-api-key"), None);

    // A 404 from the hub is "could not check".
    let check = c.check("hf://org/repo/missing.safetensors", &Config::default(), H);
    could_not_check(&check, ErrorKind::Status, "HTTP 404");
}

#[test]
fn bad_addresses_are_refused_without_a_request() {
    let c = client(test_options());
    for (addr, words) in [
        ("http://user:pa55word@127.0.0.1:1/x", "user information"),
        ("ftp://127.0.0.1/x", "not an http"),
        ("hf://org", "org/repo"),
        ("hf://org/repo/../x", "'..'"),
        // Issue 19: a revision is a segment like the path's, however it is spelled.
        ("hf://org/repo@../model.safetensors", "revision"),
        ("hf://org/repo@./model.safetensors", "revision"),
        ("hf://org/repo@%2e%2e/model.safetensors", "revision"),
        ("hf://org/repo@%2E%2e/model.safetensors", "revision"),
        ("hf://org/repo@.%2E/model.safetensors", "revision"),
        ("hf://org/repo@refs/pr/../model.safetensors", "revision"),
        (
            "hf://org/repo@refs%2F..%2Fmain/model.safetensors",
            "revision",
        ),
        ("hf://org/repo@refs/pr//model.safetensors", "revision"),
        ("http://127.0.0.1:1/a b", "percent-encoded"),
    ] {
        let check = c.check(addr, &Config::default(), H);
        let e = could_not_check(&check, ErrorKind::Address, words);
        assert!(!check.url.contains("pa55word") && !e.message().contains("pa55word"));
        assert_eq!(check.cost.requests, 0);
    }
}

#[test]
fn an_empty_file_is_frame_short_however_the_server_says_it() {
    let server = Server::start(|req| match req.path() {
        // 416 with `bytes */0`, as the corpus server answers.
        "/ranges" => serve_file(req, &[], true),
        // 416 without Content-Range: the length comes from a HEAD.
        "/bare-416" if req.method == "HEAD" => serve_file(req, &[], false),
        "/bare-416" => Reply::new(416),
        // Range ignored: 200 with an empty body.
        _ => serve_file(req, &[], false),
    });
    let want = stcheck::validate(&[], &Config::default()).expect_err("empty");
    let c = client(test_options());
    for (path, requests) in [("/ranges", 1), ("/bare-416", 2), ("/plain", 1)] {
        let check = c.check(&server.url(path), &Config::default(), H);
        match &check.outcome {
            Ok(Found::File(f)) => {
                let e = f.checked.verdict.as_ref().expect_err("an empty file");
                assert_eq!(
                    (e.rule(), e.offset(), e.message()),
                    (want.rule(), 0, want.message())
                );
                assert_eq!(f.checked.file_len, Some(0));
            }
            other => panic!("{path}: {}", short(other, 300)),
        }
        assert_eq!(check.cost.requests, requests, "{path}");
    }
}

#[test]
fn an_explicit_authorization_header_wins_over_the_token() {
    let file = zeros_file(1);
    let server = Server::start(move |req| serve_file(req, &file, true));
    let o = test_options()
        .hf_endpoint(&server.url(""))
        .hf_token(Some(TOKEN))
        .header("Authorization", "Basic dXNlcjpwYXNz")
        .expect("header");
    let check =
        Remote::new(o)
            .expect("client")
            .check("hf://org/repo/f.safetensors", &Config::default(), H);
    valid(&check);
    let reqs = server.requests();
    let auth: Vec<&str> = reqs[0]
        .headers
        .iter()
        .filter(|(n, _)| n == "authorization")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(auth, ["Basic dXNlcjpwYXNz"]);
}
