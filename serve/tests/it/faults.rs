//! Faults, each set up deterministically and asserted by its outcome: slow connections,
//! clients that leave mid-stream, limits and deadlines, broken framing, a full queue, and
//! SIGTERM during uploads. Timeouts are short and configured; the tests wait by counting.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use crate::support::{self, chunks, connect, instream, post, read_reply, read_response};

fn model() -> Vec<u8> {
    std::fs::read(support::root().join("examples/model.safetensors")).expect("example")
}

/// A clamd stream begun and held: the command and `n` bytes of a chunk announced larger.
fn held_instream(addr: SocketAddr, n: usize) -> TcpStream {
    let mut s = connect(addr);
    let mut all = b"zINSTREAM\0".to_vec();
    all.extend_from_slice(&1000u32.to_be_bytes());
    all.extend_from_slice(&model()[..n]);
    s.write_all(&all).expect("send");
    s
}

/// An HTTP upload begun and held: 1000 bytes declared, `n` sent.
fn held_post(addr: SocketAddr, n: usize) -> TcpStream {
    let mut s = connect(addr);
    let mut all = b"POST /v1/check HTTP/1.1\r\nhost: t\r\ncontent-length: 1000\r\n\r\n".to_vec();
    all.extend_from_slice(&model()[..n]);
    s.write_all(&all).expect("send");
    s
}

#[test]
fn a_thousand_slow_connections_and_a_real_upload_is_still_answered() {
    let run = support::start_with(|s| {
        s.limits.command_timeout = Duration::from_secs(600);
        s.limits.idle_timeout = Duration::from_secs(600);
    });
    let mut slow = Vec::new();
    for i in 0..1000 {
        // One byte of a command, or of a request head, and nothing more.
        let (addr, byte) = if i % 2 == 0 {
            (run.clamd(), b"z")
        } else {
            (run.http(), b"P")
        };
        let mut s = connect(addr);
        s.write_all(byte).expect("send");
        slow.push(s);
    }
    run.until("1000 connections", |s| s.connections() == 1000);
    assert_eq!(instream(run.clamd(), &model(), 64), "stream: OK");
    assert_eq!(post(run.http(), "", &model()).status, 200);
    assert_eq!(run.server.verdicts(), (2, 0, 0));
    drop(slow);
    run.until("every connection closed", |s| s.connections() == 0);
}

#[test]
fn clients_leaving_mid_stream_leave_no_descriptor_behind() {
    // Room for every stream at once: none is turned away busy.
    let run = support::start_with(|s| s.limits.workers = 128);
    // The runtime's own descriptors exist once it has served a request.
    assert_eq!(instream(run.clamd(), &model(), 64), "stream: OK");
    assert_eq!(post(run.http(), "", &model()).status, 200);
    run.until("idle", |s| s.connections() == 0);
    let before = support::open_descriptors();
    for _ in 0..50 {
        drop(held_instream(run.clamd(), 10));
        drop(held_post(run.http(), 10));
    }
    // Each one counted (a client gone is a not-checked verdict), then every connection shut.
    run.until("100 streams cut off", |s| s.verdicts() == (2, 0, 100));
    run.until("every connection closed", |s| {
        s.connections() == 0 && s.streams() == (0, 0)
    });
    assert_eq!(support::open_descriptors(), before);
    let m = support::http(run.http(), "GET", "/metrics", "", b"").text();
    assert!(m.contains("stcheck_cut_off_total 100\n"), "{m}");
}

#[test]
fn past_the_deadline_is_an_error() {
    let run = support::start_with(|s| {
        s.limits.stream_deadline = Duration::from_millis(200);
        s.limits.read_timeout = Duration::from_secs(600);
    });
    let mut s = held_instream(run.clamd(), 10);
    assert_eq!(read_reply(&mut s), "INSTREAM deadline exceeded. ERROR");
    let mut h = held_post(run.http(), 10);
    let r = read_response(&mut h);
    assert_eq!(r.status, 408);
    assert_eq!(r.json()["data"]["status"], "io_error");
    assert!(r.text().contains("deadline"), "{}", r.text());
}

#[test]
fn no_bytes_within_the_read_timeout_is_an_error() {
    let run = support::start_with(|s| s.limits.read_timeout = Duration::from_millis(200));
    let mut s = held_instream(run.clamd(), 10);
    assert_eq!(
        read_reply(&mut s),
        "INSTREAM: no bytes within the read timeout. ERROR"
    );
    let mut h = held_post(run.http(), 10);
    assert_eq!(read_response(&mut h).status, 408);
}

#[test]
fn broken_framing_is_never_ok() {
    let run = support::start(support::settings());
    let bytes = model();
    // A whole valid file without the zero-length end, then the client's side closed.
    let mut s = connect(run.clamd());
    let mut all = b"zINSTREAM\0".to_vec();
    let framed = chunks(&bytes, 64);
    all.extend_from_slice(&framed[..framed.len() - 4]);
    s.write_all(&all).expect("send");
    s.shutdown(std::net::Shutdown::Write).expect("half-close");
    let got = read_reply(&mut s);
    assert!(got.ends_with("ERROR") && got.contains("closed"), "{got}");
    // A chunk announced 4 GiB long, cut short.
    let mut s = connect(run.clamd());
    let mut all = b"zINSTREAM\0".to_vec();
    all.extend_from_slice(&u32::MAX.to_be_bytes());
    all.extend_from_slice(&bytes);
    s.write_all(&all).expect("send");
    s.shutdown(std::net::Shutdown::Write).expect("half-close");
    let got = read_reply(&mut s);
    assert!(got.ends_with("ERROR"), "{got}");
    // A length field cut in the middle.
    let mut s = connect(run.clamd());
    s.write_all(b"zINSTREAM\0\0\0").expect("send");
    s.shutdown(std::net::Shutdown::Write).expect("half-close");
    assert!(read_reply(&mut s).ends_with("ERROR"));
    assert_eq!(run.server.verdicts(), (0, 0, 3));
}

#[test]
fn past_the_queue_a_busy_answer_at_once() {
    let run = support::start_with(|s| {
        s.limits.workers = 1;
        s.limits.queue = 1;
    });
    let mut first = held_instream(run.clamd(), 10);
    run.until("one stream admitted", |s| s.streams() == (1, 0));
    let mut second = held_instream(run.clamd(), 10);
    run.until("one stream queued", |s| s.streams() == (1, 1));
    let busy = instream(run.clamd(), &model(), 64);
    assert!(busy.contains("busy") && busy.ends_with("ERROR"), "{busy}");
    let r = post(run.http(), "", &model());
    assert_eq!(r.status, 503);
    assert!(r.headers.iter().any(|(k, _)| k == "retry-after"));
    // The streams held still get their verdicts: the rest of the announced chunk, then the
    // end (1000 bytes of the file and padding: a file with trailing bytes).
    for s in [&mut first, &mut second] {
        let mut rest = model()[10..].to_vec();
        rest.resize(990, 0);
        rest.extend_from_slice(&[0, 0, 0, 0]);
        s.write_all(&rest).expect("send");
        assert_eq!(read_reply(s), "stream: SAFETENSORS.DATA-TRAILING FOUND");
    }
}

#[test]
fn sigterm_during_uploads_gives_verdicts_or_errors_never_a_false_ok_and_exits_0() {
    let _turn = support::start_with(|s| {
        s.clamd = None;
        s.http = None;
    });
    let mut child = support::Process::spawn(&[
        "--clamd",
        "127.0.0.1:0",
        "--workers",
        "32",
        "--grace",
        "600",
    ]);
    let addr = child.clamd();
    let valid = model();
    let mut invalid = model();
    invalid.push(0);
    let go = Arc::new(Barrier::new(33));
    let mut uploads = Vec::new();
    for i in 0..32 {
        let bytes = if i % 2 == 0 {
            valid.clone()
        } else {
            invalid.clone()
        };
        let go = go.clone();
        uploads.push(std::thread::spawn(move || {
            let mut s = connect(addr);
            let framed = chunks(&bytes, 16);
            let mut first = b"zINSTREAM\0".to_vec();
            first.extend_from_slice(&framed[..40]);
            s.write_all(&first).expect("send");
            go.wait();
            go.wait();
            let _ = s.write_all(&framed[40..]);
            (i % 2 == 0, read_reply(&mut s))
        }));
    }
    go.wait();
    // Every upload is in flight before the signal.
    let start = std::time::Instant::now();
    loop {
        let stats = support::command(addr, b"zSTATS\0");
        if stats.contains("THREADS: live 32 ") {
            break;
        }
        assert!(start.elapsed() < support::HANG_GUARD, "{stats}");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.signal("-TERM");
    child.line("stcheck serve: stopping");
    go.wait();
    let mut answered = 0;
    for u in uploads {
        let (is_valid, reply) = u.join().expect("upload");
        match (is_valid, reply.as_str()) {
            (true, "stream: OK") => answered += 1,
            (false, "stream: SAFETENSORS.DATA-TRAILING FOUND") => answered += 1,
            // A connection error is allowed; a false OK or another verdict is not.
            (_, "") => {}
            (v, r) => panic!("valid {v}: {r:?}"),
        }
    }
    let status = child.child.wait().expect("exit");
    assert_eq!(status.code(), Some(0));
    // The grace period is long: every stream in flight finished.
    assert_eq!(answered, 32);
}
