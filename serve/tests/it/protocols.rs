//! The clamd commands and the HTTP endpoints, and who may call them.

use std::io::Write;
use std::net::SocketAddr;

use crate::support::{self, chunks, command, connect, http, instream, post, read_reply};

fn model() -> Vec<u8> {
    std::fs::read(support::root().join("examples/model.safetensors")).expect("example")
}

fn duplicate() -> Vec<u8> {
    std::fs::read(support::root().join("examples/duplicate-name.safetensors")).expect("example")
}

#[test]
fn clamd_commands() {
    let run = support::start_with(|s| s.limits.max_stream = 12345);
    let a = run.clamd();
    assert_eq!(command(a, b"zPING\0"), "PONG");
    assert_eq!(command(a, b"nPING\n"), "PONG\n");
    assert_eq!(command(a, b"PING\n"), "PONG\n");
    assert!(command(a, b"zVERSION\0").starts_with("stcheck "));
    let v = command(a, b"zVERSIONCOMMANDS\0");
    assert!(v.contains("| COMMANDS: ") && v.contains("INSTREAM"), "{v}");
    let stats = command(a, b"zSTATS\0");
    assert!(stats.contains("LIMIT: StreamMaxLength 12345"), "{stats}");
    // The connection asking is the one open.
    assert!(stats.contains("\nCONNECTIONS: 1\n"), "{stats}");
    assert!(stats.ends_with("END"), "{stats}");
    let scan = command(a, b"zSCAN /etc/passwd\0");
    assert!(
        scan.ends_with("ERROR") && scan.contains("not served"),
        "{scan}"
    );
    assert_eq!(command(a, b"zHELLO\0"), "UNKNOWN COMMAND");
    let long = command(a, &[b'z'; 5000]);
    assert_eq!(long, "command longer than 1024 bytes. ERROR\n");
}

#[test]
fn clamd_session_numbers_its_replies() {
    let run = support::start(support::settings());
    let mut s = connect(run.clamd());
    let mut all = b"zIDSESSION\0zPING\0zINSTREAM\0".to_vec();
    all.extend_from_slice(&chunks(&model(), 100));
    all.extend_from_slice(b"zINSTREAM\0");
    all.extend_from_slice(&chunks(&duplicate(), 100));
    all.extend_from_slice(b"zPING\0zEND\0");
    s.write_all(&all).expect("send");
    let replies: Vec<String> = (0..4).map(|_| read_reply(&mut s)).collect();
    assert_eq!(
        replies,
        [
            "1: PONG",
            "2: stream: OK",
            "3: stream: SAFETENSORS.JSON-DUPLICATE-KEY FOUND",
            "4: PONG"
        ]
    );
    // END closes the connection.
    assert_eq!(read_reply(&mut s), "");
}

#[test]
fn clamd_on_a_unix_socket() {
    let dir = support::root().join("target").join("serve-test-sockets");
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join(format!("clamd-{}.sock", std::process::id()));
    let p = path.clone();
    let run = support::start_with(move |s| s.clamd_socket = Some(p));
    let mut s = std::os::unix::net::UnixStream::connect(&path).expect("connect");
    let mut all = b"zINSTREAM\0".to_vec();
    all.extend_from_slice(&chunks(&duplicate(), 10));
    s.write_all(&all).expect("send");
    assert_eq!(
        read_reply(&mut s),
        "stream: SAFETENSORS.JSON-DUPLICATE-KEY FOUND"
    );
    run.stop();
    assert!(!path.exists(), "the socket is removed at the stop");
}

#[test]
fn over_the_limit_is_an_error_never_ok() {
    let run = support::start_with(|s| s.limits.max_stream = 100);
    let bytes = model();
    assert!(bytes.len() > 100);
    // One chunk past the limit, and many small ones that pass it together.
    for chunk in [1000, 10] {
        let got = instream(run.clamd(), &bytes, chunk);
        assert_eq!(got, "INSTREAM size limit exceeded. ERROR");
    }
    // HTTP: a declared length past the limit, and a chunked body that passes it.
    let r = post(run.http(), "", &bytes);
    assert_eq!(r.status, 413);
    assert_eq!(r.json()["data"]["read_error"], "too_large");
    assert_eq!(r.json()["data"]["status"], "io_error");
    let mut s = connect(run.http());
    let mut req =
        b"POST /v1/check HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
    for c in bytes.chunks(30) {
        req.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        req.extend_from_slice(c);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    let _ = s.write_all(&req);
    let r = support::read_response(&mut s);
    assert_eq!(r.status, 413);
    assert_eq!(r.json()["data"]["read_error"], "too_large");
    // A file within the limit is still checked.
    drop(run);
    let run2 = support::start_with(|s| s.limits.max_stream = bytes.len() as u64);
    assert_eq!(instream(run2.clamd(), &bytes, 10), "stream: OK");
}

#[test]
fn http_endpoints() {
    let run = support::start(support::settings());
    let a = run.http();
    assert_eq!(http(a, "GET", "/healthz", "", b"").status, 200);
    assert_eq!(http(a, "GET", "/readyz", "", b"").status, 200);
    let rule = http(a, "GET", "/v1/rules/layout-gap", "", b"");
    assert_eq!(rule.status, 200);
    assert!(rule.text().starts_with("### LAYOUT-GAP"), "{}", rule.text());
    assert_eq!(http(a, "GET", "/v1/rules/NO-SUCH", "", b"").status, 404);
    assert_eq!(http(a, "GET", "/v1/check", "", b"").status, 405);
    assert_eq!(http(a, "GET", "/nowhere", "", b"").status, 404);
    let bad = post(a, "colour=red", &model());
    assert_eq!(bad.status, 400);
    assert!(bad.text().contains("colour"), "{}", bad.text());
    let conflict = post(a, "allow=JSON-DUPLICATE-KEY", &model());
    assert_eq!(conflict.status, 400);
    // The reference profile reads no data: a deep check cannot go with it.
    let reference = post(a, "profile=reference&deep", &model());
    assert_eq!(reference.status, 400);
    assert!(
        reference.text().contains("strict profile"),
        "{}",
        reference.text()
    );
    post(a, "", &duplicate());
    let m = http(a, "GET", "/metrics", "", b"").text();
    assert!(
        m.contains("stcheck_invalid_total{rule=\"JSON-DUPLICATE-KEY\"} 1"),
        "{m}"
    );
    assert!(m.contains("stcheck_limit{limit=\"StreamMaxLength\"} 68719476736"));
}

#[test]
fn an_idle_http_connection_is_closed_after_the_idle_timeout() {
    use std::io::Read;
    let run = support::start_with(|s| {
        s.limits.idle_timeout = std::time::Duration::from_millis(200);
        // Longer than the hang guard: only the idle timeout can close these.
        s.limits.command_timeout = std::time::Duration::from_secs(1000);
    });
    let a = run.http();
    // Kept alive after one request, then nothing more.
    let mut s = connect(a);
    s.write_all(b"GET /healthz HTTP/1.1\r\nhost: t\r\n\r\n")
        .expect("send");
    let mut got = Vec::new();
    // The whole response (`ok` and a newline), then the end of the connection.
    let ended = s.read_to_end(&mut got);
    let text = String::from_utf8_lossy(&got);
    assert!(ended.is_ok(), "not closed: {ended:?} after {text:?}");
    assert!(
        text.starts_with("HTTP/1.1 200") && text.ends_with("\r\n\r\nok\n"),
        "{text}"
    );
    // A connection that never sends a request.
    let mut s = connect(a);
    let mut got = Vec::new();
    assert!(s.read_to_end(&mut got).is_ok() && got.is_empty(), "{got:?}");
    run.until("no connection open", |s| s.connections() == 0);
    // The limit is shown with the others.
    let m = http(a, "GET", "/metrics", "", b"").text();
    assert!(
        m.contains("stcheck_limit{limit=\"IdleTimeout\"} 0.2"),
        "{m}"
    );
}

#[test]
fn expected_sha256() {
    let run = support::start(support::settings());
    let bytes = model();
    let r = post(run.http(), "sha256", &bytes);
    let hex = r.json()["data"]["deep"]["sha256"]
        .as_str()
        .expect("sha256")
        .to_owned();
    let same = post(run.http(), &format!("expected-sha256={hex}"), &bytes);
    assert_eq!(same.status, 200);
    let other = post(
        run.http(),
        &format!("expected_sha256={}", "0".repeat(64)),
        &bytes,
    );
    assert_eq!(other.status, 422);
    let data = &other.json()["data"];
    assert_eq!(data["error"]["rule"], "INTEGRITY-SHA256");
    // The one integrity decision: the source named as the service names the option, in the
    // message and the record.
    assert!(
        data["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("expected-sha256 publishes")),
        "{data}"
    );
    assert_eq!(
        data["published_sha256"],
        serde_json::json!([{"source": "expected-sha256", "sha256": "0".repeat(64)}])
    );
}

#[test]
fn a_bearer_token_when_asked() {
    let dir = support::root().join("target").join("serve-test-sockets");
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join(format!("token-{}", std::process::id()));
    std::fs::write(&file, "s3cret-token\n").expect("token");
    let f = file.clone();
    let run = support::start_with(move |s| s.token_file = Some(f));
    let a = run.http();
    assert_eq!(http(a, "GET", "/healthz", "", b"").status, 200);
    let no = http(a, "POST", "/v1/check", "", &model());
    assert_eq!(no.status, 401);
    let wrong = http(
        a,
        "GET",
        "/metrics",
        "authorization: Bearer s3cret-tokex\r\n",
        b"",
    );
    assert_eq!(wrong.status, 401);
    let yes = http(
        a,
        "POST",
        "/v1/check",
        "authorization: Bearer s3cret-token\r\n",
        &model(),
    );
    assert_eq!(yes.status, 200);
    drop(run);
    let _ = std::fs::remove_file(&file);
}

#[test]
fn off_loopback_needs_a_token_or_an_explicit_allowance() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let any = SocketAddr::from(([0, 0, 0, 0], 0));
    let mut s = support::settings();
    s.http = Some(any);
    let e = rt
        .block_on(stcheck_serve::Server::start(s))
        .expect_err("refused");
    assert!(e.contains("--token-file"), "{e}");
    let mut s = support::settings();
    s.clamd = Some(any);
    let e = rt
        .block_on(stcheck_serve::Server::start(s))
        .expect_err("refused");
    assert!(e.contains("--clamd-allow-remote"), "{e}");
}
