//! A loopback HTTP/1.1 server for the tests of `stcheck::remote`.
//!
//! It listens on 127.0.0.1 only (port 0: the system picks one), runs a thread per connection
//! with read and write timeouts, serves at most `MAX_REQUESTS_PER_CONNECTION` requests on a
//! connection, and stops when dropped, or by itself after `LIFETIME` whatever happens. A
//! handler turns each request into a [`Reply`], which can also misbehave: lie about its
//! length, drip, stall, or write raw bytes. Optionally it speaks TLS (rustls).
#![allow(dead_code, unreachable_pub)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// The server stops by itself after this long.
pub const LIFETIME: Duration = Duration::from_secs(300);
const MAX_REQUESTS_PER_CONNECTION: usize = 10_000;
const MAX_HEAD: usize = 64 * 1024;
const IDLE: Duration = Duration::from_secs(3);

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    /// Lower-case names, in order.
    pub headers: Vec<(String, String)>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// Every header line, for searching for a leaked secret.
    pub fn all_headers(&self) -> String {
        self.headers
            .iter()
            .map(|(n, v)| format!("{n}: {v}\n"))
            .collect()
    }
}

/// How the body's length is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// `Content-Length` of the body.
    Auto,
    /// No `Content-Length`: the body ends when the connection closes.
    CloseDelimited,
    /// `Content-Length: n`, whatever the body is; the connection closes after the body.
    Claim(u64),
}

/// A response, and how to send it.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub length: Length,
    /// Close the connection after this response.
    pub close: bool,
    /// Send the headers only (a `HEAD`), with the length the body would have.
    pub head_only: bool,
    /// Send the body `step` bytes at a time, waiting `every` between them.
    pub drip: Option<(usize, Duration)>,
    /// Send the headers, then nothing, for this long, then close.
    pub stall: Option<Duration>,
    /// Write these bytes instead of a response (dripped too, with `drip`), then close.
    pub raw: Option<Vec<u8>>,
}

impl Reply {
    pub fn new(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            length: Length::Auto,
            close: false,
            head_only: false,
            drip: None,
            stall: None,
            raw: None,
        }
    }

    pub fn header(mut self, name: &str, value: impl Into<String>) -> Reply {
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Reply {
        self.body = body.into();
        self
    }

    pub fn length(mut self, length: Length) -> Reply {
        self.length = length;
        self
    }

    pub fn close(mut self) -> Reply {
        self.close = true;
        self
    }

    pub fn drip(mut self, step: usize, every: Duration) -> Reply {
        self.drip = Some((step.max(1), every));
        self.close = true;
        self
    }

    pub fn stall(mut self, d: Duration) -> Reply {
        self.stall = Some(d);
        self.close = true;
        self
    }

    pub fn raw(bytes: impl Into<Vec<u8>>) -> Reply {
        let mut r = Reply::new(0);
        r.raw = Some(bytes.into());
        r.close = true;
        r
    }

    pub fn redirect(status: u16, location: &str) -> Reply {
        Reply::new(status).header("Location", location)
    }
}

/// One request and what became of its response.
#[derive(Debug, Clone)]
pub struct Logged {
    pub request: Request,
    /// The peer's port (connections are told apart by it).
    pub peer_port: u16,
    /// Whether the whole response was written (false if the client hung up first).
    pub wrote_all: Option<bool>,
    /// Body bytes written before the end or the hang-up.
    pub body_written: u64,
    /// When the request was read, and when its response ended (written or abandoned).
    pub received: Instant,
    pub ended: Option<Instant>,
}

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

/// The server. Dropping it stops it.
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    log: Arc<Mutex<Vec<Logged>>>,
    accept: Option<JoinHandle<()>>,
    scheme: &'static str,
}

impl Server {
    /// A plain HTTP server.
    pub fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Server {
        Server::spawn(Arc::new(handler), None)
    }

    /// An HTTPS server with this rustls configuration.
    pub fn start_tls(
        config: Arc<rustls::ServerConfig>,
        handler: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        Server::spawn(Arc::new(handler), Some(config))
    }

    /// A plain HTTP server on another loopback address (`127.0.0.2`: another host for the
    /// client, as a hub's CDN is).
    pub fn start_at(
        ip: &'static str,
        handler: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        Server::spawn_at(ip, Arc::new(handler), None)
    }

    fn spawn(handler: Arc<Handler>, tls: Option<Arc<rustls::ServerConfig>>) -> Server {
        Server::spawn_at("127.0.0.1", handler, tls)
    }

    fn spawn_at(
        ip: &'static str,
        handler: Arc<Handler>,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> Server {
        let listener = TcpListener::bind((ip, 0)).expect("bind a loopback port");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("local_addr");
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let scheme = if tls.is_some() { "https" } else { "http" };
        let accept = {
            let stop = Arc::clone(&stop);
            let log = Arc::clone(&log);
            thread::spawn(move || {
                let born = Instant::now();
                while !stop.load(Ordering::Relaxed) && born.elapsed() < LIFETIME {
                    match listener.accept() {
                        Ok((stream, peer)) => {
                            let handler = Arc::clone(&handler);
                            let stop = Arc::clone(&stop);
                            let log = Arc::clone(&log);
                            let tls = tls.clone();
                            thread::spawn(move || {
                                serve_connection(stream, peer, tls, &*handler, &stop, &log, born)
                            });
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            thread::sleep(Duration::from_millis(1));
                        }
                        Err(_) => thread::sleep(Duration::from_millis(5)),
                    }
                }
            })
        };
        Server {
            addr,
            stop,
            log,
            accept: Some(accept),
            scheme,
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://IP:PORT` + `path` (127.0.0.1 unless started elsewhere).
    pub fn url(&self, path: &str) -> String {
        format!("{}://{}:{}{path}", self.scheme, self.addr.ip(), self.port())
    }

    /// The same server under another host name (another origin for the client).
    pub fn url_as(&self, host: &str, path: &str) -> String {
        format!("{}://{host}:{}{path}", self.scheme, self.port())
    }

    pub fn log(&self) -> Vec<Logged> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    pub fn requests(&self) -> Vec<Request> {
        self.log().into_iter().map(|l| l.request).collect()
    }

    pub fn clear_log(&self) {
        if let Ok(mut l) = self.log.lock() {
            l.clear();
        }
    }

    /// Wait (at most `limit`) until every logged response is finished or abandoned.
    pub fn settle(&self, limit: Duration) -> Vec<Logged> {
        let start = Instant::now();
        loop {
            let log = self.log();
            if log.iter().all(|l| l.wrote_all.is_some()) || start.elapsed() > limit {
                return log;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

fn serve_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    tls: Option<Arc<rustls::ServerConfig>>,
    handler: &Handler,
    stop: &AtomicBool,
    log: &Mutex<Vec<Logged>>,
    born: Instant,
) {
    let _ = tcp.set_nonblocking(false);
    let _ = tcp.set_read_timeout(Some(IDLE));
    let _ = tcp.set_write_timeout(Some(Duration::from_secs(10)));
    let _ = tcp.set_nodelay(true);
    match tls {
        None => serve_stream(tcp, peer, handler, stop, log, born),
        Some(config) => {
            let Ok(conn) = rustls::ServerConnection::new(config) else {
                return;
            };
            serve_stream(
                rustls::StreamOwned::new(conn, tcp),
                peer,
                handler,
                stop,
                log,
                born,
            )
        }
    }
}

fn serve_stream<S: Read + Write>(
    stream: S,
    peer: SocketAddr,
    handler: &Handler,
    stop: &AtomicBool,
    log: &Mutex<Vec<Logged>>,
    born: Instant,
) {
    let mut reader = BufReader::new(stream);
    for _ in 0..MAX_REQUESTS_PER_CONNECTION {
        if stop.load(Ordering::Relaxed) || born.elapsed() > LIFETIME {
            return;
        }
        let Some(request) = read_request(&mut reader) else {
            return;
        };
        let reply = handler(&request);
        let index = {
            let Ok(mut l) = log.lock() else { return };
            l.push(Logged {
                request,
                peer_port: peer.port(),
                wrote_all: None,
                body_written: 0,
                received: Instant::now(),
                ended: None,
            });
            l.len() - 1
        };
        let mut written = 0u64;
        let ok = write_reply(reader.get_mut(), &reply, stop, &mut written).is_ok();
        if let Ok(mut l) = log.lock() {
            if let Some(e) = l.get_mut(index) {
                e.wrote_all = Some(ok);
                e.body_written = written;
                e.ended = Some(Instant::now());
            }
        }
        if !ok || reply.close || reply.raw.is_some() || reply.length != Length::Auto {
            return;
        }
    }
}

fn read_request<R: BufRead>(r: &mut R) -> Option<Request> {
    let mut head = Vec::new();
    loop {
        let mut line = Vec::new();
        let n = r
            .by_ref()
            .take(MAX_HEAD as u64)
            .read_until(b'\n', &mut line)
            .ok()?;
        if n == 0 {
            return None;
        }
        if line == b"\r\n" || line == b"\n" {
            break;
        }
        head.push(String::from_utf8(line).ok()?.trim_end().to_owned());
        if head.len() > 200 {
            return None;
        }
    }
    let mut first = head.first()?.split(' ');
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers = head[1..]
        .iter()
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Some(Request {
        method,
        target,
        headers,
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        307 => "Temporary Redirect",
        404 => "Not Found",
        416 => "Range Not Satisfiable",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Whatever",
    }
}

fn sleep_unless_stopped(d: Duration, stop: &AtomicBool) {
    let end = Instant::now() + d;
    while Instant::now() < end && !stop.load(Ordering::Relaxed) {
        thread::sleep(Duration::from_millis(5).min(end - Instant::now()));
    }
}

fn write_reply<W: Write>(
    w: &mut W,
    reply: &Reply,
    stop: &AtomicBool,
    written: &mut u64,
) -> io::Result<()> {
    if let Some(raw) = &reply.raw {
        let (step, every) = reply.drip.unwrap_or((raw.len().max(1), Duration::ZERO));
        for (i, chunk) in raw.chunks(step).enumerate() {
            if stop.load(Ordering::Relaxed) {
                return Err(io::Error::other("stopped"));
            }
            if i > 0 {
                sleep_unless_stopped(every, stop);
            }
            w.write_all(chunk)?;
            w.flush()?;
        }
        return w.flush();
    }
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    for (n, v) in &reply.headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    match reply.length {
        Length::Auto => head.push_str(&format!("Content-Length: {}\r\n", reply.body.len())),
        Length::Claim(n) => head.push_str(&format!("Content-Length: {n}\r\n")),
        Length::CloseDelimited => {}
    }
    if reply.close || reply.length != Length::Auto {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    w.write_all(head.as_bytes())?;
    w.flush()?;
    if let Some(d) = reply.stall {
        sleep_unless_stopped(d, stop);
        return Ok(());
    }
    if reply.head_only {
        return Ok(());
    }
    match reply.drip {
        None => {
            for chunk in reply.body.chunks(64 * 1024) {
                w.write_all(chunk)?;
                *written += chunk.len() as u64;
            }
        }
        Some((step, every)) => {
            // A wait between chunks, none after the last (the end is logged when it is sent).
            for (i, chunk) in reply.body.chunks(step).enumerate() {
                if stop.load(Ordering::Relaxed) {
                    return Err(io::Error::other("stopped"));
                }
                if i > 0 {
                    sleep_unless_stopped(every, stop);
                }
                w.write_all(chunk)?;
                w.flush()?;
                *written += chunk.len() as u64;
            }
        }
    }
    w.flush()
}

/// Serve `bytes` as a file: `HEAD`, `GET`, and with `ranges` a single `Range: bytes=a-b`,
/// `bytes=a-` or `bytes=-n` (206, or 416 past the end); otherwise 200 with the whole body.
pub fn serve_file(req: &Request, bytes: &[u8], ranges: bool) -> Reply {
    let len = bytes.len() as u64;
    let etag = format!("\"{:016x}\"", fnv(bytes));
    let mut reply = Reply::new(200).header("ETag", etag.clone());
    if ranges {
        reply = reply.header("Accept-Ranges", "bytes");
    }
    let range = req
        .header("range")
        .filter(|_| ranges)
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.split_once('-'));
    if let Some((a, b)) = range {
        let (start, end) = match (a.parse::<u64>().ok(), b.parse::<u64>().ok()) {
            (Some(a), Some(b)) => (a, b.min(len.saturating_sub(1))),
            (Some(a), None) if b.is_empty() => (a, len.saturating_sub(1)),
            (None, Some(n)) if a.is_empty() => (len.saturating_sub(n), len.saturating_sub(1)),
            _ => return Reply::new(400).close(),
        };
        if start >= len || end < start {
            return Reply::new(416)
                .header("ETag", etag)
                .header("Content-Range", format!("bytes */{len}"));
        }
        let body = bytes[start as usize..=end as usize].to_vec();
        let mut r = Reply::new(206)
            .header("ETag", etag)
            .header("Accept-Ranges", "bytes")
            .header("Content-Range", format!("bytes {start}-{end}/{len}"))
            .body(body);
        r.head_only = req.method == "HEAD";
        return r;
    }
    reply = reply.body(bytes.to_vec());
    reply.head_only = req.method == "HEAD";
    reply
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The corpus files listed by `corpus/manifest.json`: (path, bytes).
pub fn corpus_files() -> Vec<(String, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let text = std::fs::read_to_string(root.join("manifest.json")).expect("corpus/manifest.json");
    let manifest: serde_json::Value = serde_json::from_str(&text).expect("manifest JSON");
    manifest["cases"]
        .as_array()
        .expect("cases")
        .iter()
        // Sharded sets (`"kind": "index"`) are served and checked by `remote_index`.
        .filter(|case| case["kind"].as_str().unwrap_or("file") == "file")
        .map(|case| {
            let path = case["path"].as_str().expect("path").to_owned();
            let bytes = std::fs::read(root.join(&path)).expect("corpus file");
            (path, bytes)
        })
        .collect()
}

/// The most responses in progress at the same time among `log` entries that `pick` selects
/// (by the interval from reading the request to the end of the response).
pub fn most_at_once(log: &[Logged], pick: impl Fn(&Logged) -> bool) -> usize {
    let mut edges: Vec<(Instant, i32)> = Vec::new();
    for l in log.iter().filter(|l| pick(l)) {
        edges.push((l.received, 1));
        edges.push((l.ended.unwrap_or_else(Instant::now), -1));
    }
    // At the same instant an end comes before a start.
    edges.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as usize
}

/// A file whose header declares one U8 tensor of `declared` bytes, with only `have` bytes of
/// its data present: a body that a server can announce whole and send in part.
pub fn declared_file(declared: u64, have: usize) -> (Vec<u8>, u64) {
    let header = format!(
        "{{\"w\":{{\"dtype\":\"U8\",\"shape\":[{declared}],\"data_offsets\":[0,{declared}]}}}}"
    );
    let mut header = header.into_bytes();
    while header.len() % 8 != 0 {
        header.push(b' ');
    }
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&header);
    let total = out.len() as u64 + declared;
    out.resize(out.len() + have, 0);
    (out, total)
}

/// A valid file of one F32 tensor of `elements` zeros.
pub fn zeros_file(elements: u64) -> Vec<u8> {
    let data = vec![0u8; (elements * 4) as usize];
    stcheck::write::serialize(
        &[stcheck::write::TensorSpec::new(
            "w",
            stcheck::Dtype::F32,
            &[elements],
            &data,
        )],
        &[],
    )
    .expect("serialize")
}

/// Client options for tests: short timeouts and backoff, so a misbehaving server costs
/// little time (the defaults are for real servers).
pub fn test_options() -> stcheck_gate::remote::RemoteOptions {
    let mut o = stcheck_gate::remote::RemoteOptions::default();
    o.connect_timeout = Duration::from_secs(5);
    o.read_timeout = Duration::from_secs(5);
    o.total_timeout = Duration::from_secs(20);
    o.stream_timeout = Some(Duration::from_secs(20));
    o.backoff = Duration::from_millis(5);
    o.max_retry_after = Duration::from_secs(1);
    o
}

/// `{:?}` of `x`, cut to `n` characters (a corpus file can hold a 65,536-character name).
pub fn short<T: std::fmt::Debug>(x: &T, n: usize) -> String {
    let s = format!("{x:?}");
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s,
    }
}

/// A CA (its PEM) and a rustls server configuration with a certificate it signed.
pub fn pki() -> (String, Arc<rustls::ServerConfig>) {
    let ca_key = rcgen::KeyPair::generate().expect("CA key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "stcheck test CA");
    let ca_cert = ca_params.self_signed(&ca_key).expect("CA cert");
    let issuer = rcgen::Issuer::new(ca_params, ca_key);

    let key = rcgen::KeyPair::generate().expect("server key");
    let params =
        rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .expect("server params");
    let cert = params.signed_by(&key, &issuer).expect("server cert");

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocols")
        .with_no_client_auth()
        .with_single_cert(
            vec![rustls::pki_types::CertificateDer::from(cert.der().to_vec())],
            rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
                key.serialize_der(),
            )),
        )
        .expect("server config");
    (ca_cert.pem(), Arc::new(config))
}
