//! Target `remote_range`: a file served over loopback HTTP by a server whose every answer is
//! drawn from the input: honest, the whole file for a range, a body cut short, a range other
//! than the one asked for, chunked (whole or cut), a retryable or final error status, a
//! content coding, a status line that is not HTTP. The client ([`Remote::check`], at the header
//! level with a first fetch of 8 bytes to 64 KiB, or deep) either gives the local verdict on the
//! file's bytes or says it could not check: never another verdict, never a panic, within its
//! request budget. Every answer delivers true bytes of the file or fails to deliver; none lies
//! about the file's length, so any verdict must be the file's.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use stcheck::{Checked, Config};
use stcheck_gate::remote::{Depth, Found, Remote, RemoteOptions};

/// The answers the server can give, one per input byte (modulo their number).
const ANSWERS: u8 = 12;

/// What one exchange serves.
#[derive(Default)]
struct Case {
    file: Vec<u8>,
    script: Vec<u8>,
    requests: u32,
    /// The size of a chunk of a chunked body.
    chunk: usize,
}

/// The loopback server of the process (one for every run of the target) and the case it
/// serves.
struct Server {
    port: u16,
    case: Arc<Mutex<Case>>,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().expect("its address").port();
        let case: Arc<Mutex<Case>> = Arc::default();
        let served = Arc::clone(&case);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                // A hang guard only: every answer closes the connection.
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let _ = answer(stream, &served);
            }
        });
        Server { port, case }
    })
}

/// The range asked for, inclusive (`bytes=a-b`, `bytes=a-`).
fn range_of(line: &str) -> Option<(u64, Option<u64>)> {
    let (name, value) = line.split_once(':')?;
    if !name.trim().eq_ignore_ascii_case("range") {
        return None;
    }
    let (a, b) = value.trim().strip_prefix("bytes=")?.split_once('-')?;
    Some((a.parse().ok()?, b.parse().ok()))
}

fn answer(stream: TcpStream, case: &Mutex<Case>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut head = Vec::new();
    let mut range = None;
    loop {
        let mut line = String::new();
        if reader.by_ref().take(8192).read_line(&mut line)? == 0 || head.len() > 64 {
            return Ok(());
        }
        if line == "\r\n" {
            break;
        }
        range = range.or_else(|| range_of(&line));
        head.push(line);
    }
    let is_head = head.first().is_some_and(|l| l.starts_with("HEAD "));
    let (file, choice, chunk) = {
        let mut c = case.lock().unwrap_or_else(|e| e.into_inner());
        let i = c.requests as usize;
        c.requests += 1;
        let choice = c.script.get(i).copied().unwrap_or(0) % ANSWERS;
        (c.file.clone(), choice, c.chunk)
    };
    let response = respond(
        &file,
        range,
        if is_head { 0 } else { choice },
        is_head,
        chunk,
    );
    let mut stream = stream;
    stream.write_all(&response)?;
    stream.flush()
}

/// The bytes of one response.
fn respond(
    file: &[u8],
    range: Option<(u64, Option<u64>)>,
    choice: u8,
    is_head: bool,
    chunk: usize,
) -> Vec<u8> {
    let total = file.len() as u64;
    let honest = match range {
        Some((a, b)) if a < total => {
            let b = b.map_or(total - 1, |b| b.min(total - 1));
            Some((a, b))
        }
        _ => None,
    };
    let mut headers = vec!["Connection: close".to_owned(), "ETag: \"e\"".to_owned()];
    let (status, mut body) = match (range, honest, choice) {
        // 416 only where it is true: the range starts at or past the end.
        (Some(_), None, _) => {
            headers.push(format!("Content-Range: bytes */{total}"));
            ("416 Range Not Satisfiable", Vec::new())
        }
        (_, _, 6) => {
            headers.push("Retry-After: 0".into());
            ("503 Service Unavailable", Vec::new())
        }
        (_, _, 7) => ("404 Not Found", Vec::new()),
        (_, _, 10) => ("abc", Vec::new()),
        (None, _, _) | (_, _, 1) => ("200 OK", file.to_vec()),
        (Some(_), Some((a, b)), _) => {
            // A range other than the one asked for: one byte further, honestly labelled.
            let (a, b) = if choice == 3 && b + 1 < total {
                (a + 1, b + 1)
            } else {
                (a, b)
            };
            headers.push(format!("Content-Range: bytes {a}-{b}/{total}"));
            (
                "206 Partial Content",
                file[a as usize..=b as usize].to_vec(),
            )
        }
    };
    if choice == 9 {
        headers.push("Content-Encoding: gzip".into());
    }
    let announced = body.len();
    let chunked = matches!(choice, 4 | 5) && !is_head;
    if chunked {
        headers.push("Transfer-Encoding: chunked".into());
        let mut c = Vec::new();
        for piece in body.chunks(chunk.max(1)) {
            c.extend(format!("{:x}\r\n", piece.len()).as_bytes());
            c.extend(piece);
            c.extend(b"\r\n");
        }
        if choice == 4 {
            c.extend(b"0\r\n\r\n");
        } else {
            c.truncate(c.len() / 2);
        }
        body = c;
    } else {
        headers.push(format!("Content-Length: {announced}"));
        match choice {
            // Cut short: the connection closes before the announced length.
            2 => body.truncate(body.len() / 2),
            // Longer than announced: the client must not read past the length.
            8 => body.extend(b"trailing bytes"),
            _ => {}
        }
    }
    let mut out = format!("HTTP/1.1 {status}\r\n{}\r\n\r\n", headers.join("\r\n")).into_bytes();
    if !is_head {
        out.extend(body);
    }
    out
}

/// A comparable verdict: a valid file's tensor names and warnings, or the error's rule,
/// offset, tensor and message.
type Verdict = Result<(Vec<String>, Vec<stcheck::Warning>), (String, u64, Option<String>, String)>;

fn verdict(c: &Checked<'_>) -> Verdict {
    match &c.verdict {
        Ok(r) => Ok((
            r.tensors().map(|t| t.name.to_owned()).collect(),
            r.warnings().to_vec(),
        )),
        Err(e) => Err((
            e.rule().id().to_owned(),
            e.offset(),
            e.tensor().map(str::to_owned),
            e.message().to_owned(),
        )),
    }
}

/// The `remote_range` target. Input: a flags byte (bit 0: deep; bits 1-2: the first fetch, 8,
/// 64, 4096 or 65,536 bytes; bits 3-7: the chunk size of a chunked body, less one), the number of scripted answers (mod 9), the answers (one byte
/// each; later requests are answered honestly), then the file. Whether a verdict was given.
pub fn check_remote_range(data: &[u8]) -> bool {
    let [flags, n, rest @ ..] = data else {
        return false;
    };
    let n = usize::from(n % 9).min(rest.len());
    let (script, file) = rest.split_at(n);
    let deep = flags & 1 == 1;
    let first_fetch = [8, 64, 4096, 65536][usize::from((flags >> 1) & 3)];
    // One check at a time: the process has one server and one case, and `cargo test` runs the
    // smoke test and the kept corpus on two threads at once (a response of another case's
    // file was a false finding under load).
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = server();
    *server.case.lock().unwrap_or_else(|e| e.into_inner()) = Case {
        file: file.to_vec(),
        script: script.to_vec(),
        requests: 0,
        chunk: usize::from(flags >> 3) + 1,
    };
    let mut options = RemoteOptions::default();
    options.read_timeout = Duration::from_secs(10);
    options.max_retries = 1;
    options.backoff = Duration::from_millis(1);
    options.first_fetch = first_fetch;
    options.max_requests = 64;
    let remote = Remote::new(options).expect("a client");
    let url = format!("http://127.0.0.1:{}/m.safetensors", server.port);
    let depth = if deep {
        Depth::Deep { sha256: false }
    } else {
        Depth::Header
    };
    let check = remote.check(&url, &Config::default(), depth);
    let served = server
        .case
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .requests;
    assert!(
        u64::from(served) <= 64 && check.cost.requests <= 64,
        "FUZZ FINDING: {served} requests served, {} counted",
        check.cost.requests
    );
    let found = match check.outcome {
        Ok(Found::File(f)) => f,
        Ok(Found::Index(_)) => panic!("FUZZ FINDING: a .safetensors URL taken for an index"),
        Err(_) => return false,
    };
    // The file's length, as the record's `size` gives it: the one the server announced or the
    // stream showed (unknown for a chunked body streamed to an early error), never more than
    // the file, and the file's length whenever the whole file was needed (a valid file).
    let size = found.checked.file_len;
    assert!(
        size.is_none_or(|n| n <= file.len() as u64),
        "FUZZ FINDING: a size of {size:?} for a file of {} bytes",
        file.len()
    );
    if found.checked.verdict.is_ok() {
        assert_eq!(
            size,
            Some(file.len() as u64),
            "FUZZ FINDING: a valid verdict on a file of the wrong length"
        );
    }
    let config = if deep {
        Config::default().deep(true)
    } else {
        Config::default()
    };
    let want = verdict(&stcheck::Checker::check_slice(&config, file));
    let got = verdict(&found.checked);
    assert!(
        got == want,
        "FUZZ FINDING: the remote verdict {got:?} is not the local {want:?} (script {script:?}, deep {deep}, first fetch {first_fetch})"
    );
    true
}
