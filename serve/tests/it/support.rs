//! The tests' server (in this process, on loopback ports the system picks) and blocking
//! clients that speak clamd and HTTP/1.1 by hand, so that what goes over the wire is exactly
//! what the test says.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use stcheck_serve::{Server, Settings};

/// The tests of this binary run one at a time: the descriptor counts of one must not see
/// another's sockets.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A hang guard only: no test waits this long unless something is broken.
pub(crate) const HANG_GUARD: Duration = Duration::from_secs(120);

/// A service running on its own runtime.
pub(crate) struct Running {
    pub(crate) server: Server,
    runtime: Option<tokio::runtime::Runtime>,
    _turn: MutexGuard<'static, ()>,
}

impl Running {
    pub(crate) fn clamd(&self) -> SocketAddr {
        self.server.clamd_addr().expect("clamd bound")
    }

    pub(crate) fn http(&self) -> SocketAddr {
        self.server.http_addr().expect("http bound")
    }

    /// Wait (counting, not timing) until `done` holds of the server.
    pub(crate) fn until(&self, what: &str, done: impl Fn(&Server) -> bool) {
        let start = Instant::now();
        while !done(&self.server) {
            assert!(
                start.elapsed() < HANG_GUARD,
                "hang guard: waiting for {what}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stop it and wait for the streams in flight.
    pub(crate) fn stop(mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.block_on(self.server.shutdown());
            rt.shutdown_timeout(Duration::from_secs(5));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(5));
        }
    }
}

/// Settings for tests: clamd and HTTP on loopback ports the system picks.
pub(crate) fn settings() -> Settings {
    Settings {
        clamd: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        http: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        ..Settings::default()
    }
}

/// Start a service with `settings`, after the test before it ended.
pub(crate) fn start(settings: Settings) -> Running {
    let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let server = runtime.block_on(Server::start(settings)).expect("starts");
    Running {
        server,
        runtime: Some(runtime),
        _turn: turn,
    }
}

/// Start with the test settings changed by `f`.
pub(crate) fn start_with(f: impl FnOnce(&mut Settings)) -> Running {
    let mut s = settings();
    f(&mut s);
    start(s)
}

pub(crate) fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(HANG_GUARD)).expect("timeout");
    s.set_write_timeout(Some(HANG_GUARD)).expect("timeout");
    s
}

/// `bytes` as INSTREAM chunks of `chunk` bytes and the zero-length end.
pub(crate) fn chunks(bytes: &[u8], chunk: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / chunk.max(1) * 4 + 8);
    for c in bytes.chunks(chunk.max(1)) {
        out.extend_from_slice(&(c.len() as u32).to_be_bytes());
        out.extend_from_slice(c);
    }
    out.extend_from_slice(&[0, 0, 0, 0]);
    out
}

/// Read one NUL-delimited reply (or up to the end of the connection).
pub(crate) fn read_reply(s: &mut impl Read) -> String {
    let mut out = Vec::new();
    let mut b = [0u8; 1];
    loop {
        match s.read(&mut b) {
            Ok(0) | Err(_) => break,
            Ok(_) if b[0] == 0 => break,
            Ok(_) => out.push(b[0]),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One command on a new connection, its reply.
pub(crate) fn command(addr: SocketAddr, cmd: &[u8]) -> String {
    let mut s = connect(addr);
    s.write_all(cmd).expect("send");
    read_reply(&mut s)
}

/// `zINSTREAM` of `bytes` in chunks of `chunk` bytes: the reply.
pub(crate) fn instream(addr: SocketAddr, bytes: &[u8], chunk: usize) -> String {
    let mut s = connect(addr);
    let mut all = b"zINSTREAM\0".to_vec();
    all.extend_from_slice(&chunks(bytes, chunk));
    // A reply can come before the end (an invalid header); the rest is still taken.
    let _ = s.write_all(&all);
    read_reply(&mut s)
}

/// An HTTP/1.1 response: status code, headers (lower-case names), body.
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Response {
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Read a whole response from a connection that closes after it.
pub(crate) fn read_response(s: &mut impl Read) -> Response {
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head: {:?}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .expect("status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Response {
        status,
        headers,
        body: raw[end + 4..].to_vec(),
    }
}

/// An HTTP request with `extra` header lines and a body (`Content-Length`), on a connection
/// closed after it.
pub(crate) fn http(
    addr: SocketAddr,
    method: &str,
    target: &str,
    extra: &str,
    body: &[u8],
) -> Response {
    let mut s = connect(addr);
    let head = format!(
        "{method} {target} HTTP/1.1\r\nhost: test\r\nconnection: close\r\n{extra}\
         content-length: {}\r\n\r\n",
        body.len()
    );
    let mut all = head.into_bytes();
    all.extend_from_slice(body);
    let _ = s.write_all(&all);
    read_response(&mut s)
}

/// `POST /v1/check?query` of `bytes`.
pub(crate) fn post(addr: SocketAddr, query: &str, bytes: &[u8]) -> Response {
    let target = match query {
        "" => "/v1/check".to_owned(),
        q => format!("/v1/check?{q}"),
    };
    http(addr, "POST", &target, "", bytes)
}

/// The workspace's root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

/// Every regular `*.safetensors` file of the corpus, sorted.
pub(crate) fn corpus_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                walk(&p, out);
            } else if t.is_file() && p.extension().is_some_and(|x| x == "safetensors") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join("corpus"), &mut out);
    out.sort();
    out
}

/// The descriptors this process has open.
pub(crate) fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .count()
}

/// The service's binary running as its own process, its standard error read line by line.
pub(crate) struct Process {
    pub(crate) child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    /// Every line read so far.
    pub(crate) said: Vec<String>,
}

impl Process {
    /// `stcheck-serve ARGS...` (the test holds its turn: see `start`).
    pub(crate) fn spawn(args: &[&str]) -> Process {
        Process::spawn_program(Path::new(env!("CARGO_BIN_EXE_stcheck-serve")), args)
    }

    /// `program ARGS...`, a program that runs the service (or is it).
    pub(crate) fn spawn_program(program: &Path, args: &[&str]) -> Process {
        use std::io::BufRead;
        let mut child = std::process::Command::new(program)
            .args(args)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Process {
            child,
            lines,
            said: Vec::new(),
        }
    }

    /// The next line that starts with `prefix` (what follows it), the lines before it kept in
    /// `said`.
    pub(crate) fn line(&mut self, prefix: &str) -> String {
        loop {
            match self.lines.recv_timeout(HANG_GUARD) {
                Ok(line) => {
                    self.said.push(line.clone());
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return rest.to_owned();
                    }
                }
                Err(e) => panic!(
                    "no line {prefix:?} ({e}); the service said {:?}; it ended: {:?}",
                    self.said,
                    self.child.try_wait()
                ),
            }
        }
    }

    /// The next line that starts with one of `prefixes`: which one, and what follows it.
    pub(crate) fn line_of(&mut self, prefixes: &[&str]) -> (usize, String) {
        loop {
            match self.lines.recv_timeout(HANG_GUARD) {
                Ok(line) => {
                    self.said.push(line.clone());
                    for (i, prefix) in prefixes.iter().enumerate() {
                        if let Some(rest) = line.strip_prefix(prefix) {
                            return (i, rest.to_owned());
                        }
                    }
                }
                Err(e) => panic!(
                    "no line {prefixes:?} ({e}); it said {:?}; it ended: {:?}",
                    self.said,
                    self.child.try_wait()
                ),
            }
        }
    }

    /// The clamd address from its start-up line.
    pub(crate) fn clamd(&mut self) -> SocketAddr {
        self.line("stcheck serve: clamd on ")
            .parse()
            .expect("address")
    }

    /// Send it `signal` (`-TERM`, `-HUP`).
    pub(crate) fn signal(&self, signal: &str) {
        let sent = std::process::Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success());
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A scratch file under target/ with `text`, named for this process and `name`.
pub(crate) fn scratch(name: &str, text: &str) -> PathBuf {
    let dir = root().join("target").join("serve-test-sockets");
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join(format!("{name}-{}", std::process::id()));
    std::fs::write(&file, text).expect("scratch file");
    file
}
