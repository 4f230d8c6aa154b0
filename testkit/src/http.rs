//! A loopback HTTP/1.1 server for the tests of the remote source (`stcheck_gate::remote`) and
//! of the command line's URL and hub checks.
//!
//! It listens on 127.0.0.1 only (port 0: the system picks one), runs a thread per connection
//! with read and write timeouts, serves at most `MAX_REQUESTS_PER_CONNECTION` requests on a
//! connection, and stops when dropped, or by itself after `LIFETIME` whatever happens. A
//! handler turns each request into a [`Reply`], which can also misbehave: lie about its
//! length, drip, stall, or write raw bytes. Optionally it speaks TLS (rustls).
//!
//! It counts the requests it has in flight ([`Server::most_in_flight`]): a request counts from
//! when it is read until just before the last byte of its response is written, so the count
//! never exceeds what the client has in flight, however the threads are scheduled (the
//! client cannot have finished a response whose last byte is not sent yet).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
}

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;
type Pick = dyn Fn(&Request) -> bool + Send + Sync;

/// The requests in flight that the server counts, and the most there were at once.
#[derive(Debug, Default)]
struct InFlight {
    now: AtomicUsize,
    most: AtomicUsize,
}

impl InFlight {
    fn arrive(&self) {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(n, Ordering::SeqCst);
    }
}

/// A counted request until it is released (once): before the last byte of its response.
struct Counted<'a>(Option<&'a InFlight>);

impl Counted<'_> {
    fn release(&mut self) {
        if let Some(c) = self.0.take() {
            c.now.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// The server. Dropping it stops it.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    log: Arc<Mutex<Vec<Logged>>>,
    /// Entries before this one were cleared ([`Server::clear_log`]).
    cleared: Arc<AtomicUsize>,
    in_flight: Arc<InFlight>,
    accept: Option<JoinHandle<()>>,
    scheme: &'static str,
}

impl Server {
    /// A plain HTTP server.
    pub fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Server {
        Server::spawn(Arc::new(handler), None)
    }

    /// A plain HTTP server that counts in flight only the requests `pick` selects.
    pub fn start_counting(
        pick: impl Fn(&Request) -> bool + Send + Sync + 'static,
        handler: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        Server::spawn_picking("127.0.0.1", Arc::new(handler), None, Arc::new(pick))
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
        Server::spawn_picking(ip, handler, tls, Arc::new(|_: &Request| true))
    }

    fn spawn_picking(
        ip: &'static str,
        handler: Arc<Handler>,
        tls: Option<Arc<rustls::ServerConfig>>,
        pick: Arc<Pick>,
    ) -> Server {
        let listener = TcpListener::bind((ip, 0)).expect("bind a loopback port");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("local_addr");
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let in_flight = Arc::new(InFlight::default());
        let scheme = if tls.is_some() { "https" } else { "http" };
        let accept = {
            let stop = Arc::clone(&stop);
            let log = Arc::clone(&log);
            let in_flight = Arc::clone(&in_flight);
            thread::spawn(move || {
                let born = Instant::now();
                while !stop.load(Ordering::Relaxed) && born.elapsed() < LIFETIME {
                    match listener.accept() {
                        Ok((stream, peer)) => {
                            let handler = Arc::clone(&handler);
                            let stop = Arc::clone(&stop);
                            let log = Arc::clone(&log);
                            let tls = tls.clone();
                            let served = Served {
                                handler: Arc::clone(&handler),
                                pick: Arc::clone(&pick),
                                stop: Arc::clone(&stop),
                                log: Arc::clone(&log),
                                in_flight: Arc::clone(&in_flight),
                                born,
                            };
                            thread::spawn(move || serve_connection(stream, peer, tls, &served));
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
            cleared: Arc::new(AtomicUsize::new(0)),
            in_flight,
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

    /// Every request since the start or the last [`Server::clear_log`], and what became of
    /// its response.
    pub fn log(&self) -> Vec<Logged> {
        let from = self.cleared.load(Ordering::SeqCst);
        self.log
            .lock()
            .map(|l| l.get(from..).unwrap_or_default().to_vec())
            .unwrap_or_default()
    }

    pub fn requests(&self) -> Vec<Request> {
        self.log().into_iter().map(|l| l.request).collect()
    }

    /// Forget the requests so far (a response still in progress updates its own entry, not
    /// a later request's).
    pub fn clear_log(&self) {
        if let Ok(l) = self.log.lock() {
            self.cleared.store(l.len(), Ordering::SeqCst);
        }
    }

    /// The most counted requests that were in flight at once (see the module's docs): never
    /// more than the client had.
    pub fn most_in_flight(&self) -> usize {
        self.in_flight.most.load(Ordering::SeqCst)
    }

    /// The counted requests in flight now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.now.load(Ordering::SeqCst)
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

/// What a connection's thread needs from its server.
struct Served {
    handler: Arc<Handler>,
    pick: Arc<Pick>,
    stop: Arc<AtomicBool>,
    log: Arc<Mutex<Vec<Logged>>>,
    in_flight: Arc<InFlight>,
    born: Instant,
}

fn serve_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    tls: Option<Arc<rustls::ServerConfig>>,
    served: &Served,
) {
    let _ = tcp.set_nonblocking(false);
    let _ = tcp.set_read_timeout(Some(IDLE));
    let _ = tcp.set_write_timeout(Some(Duration::from_secs(10)));
    let _ = tcp.set_nodelay(true);
    match tls {
        None => serve_stream(tcp, peer, served),
        Some(config) => {
            let Ok(conn) = rustls::ServerConnection::new(config) else {
                return;
            };
            serve_stream(rustls::StreamOwned::new(conn, tcp), peer, served)
        }
    }
}

fn serve_stream<S: Read + Write>(stream: S, peer: SocketAddr, served: &Served) {
    let Served {
        handler,
        pick,
        stop,
        log,
        in_flight,
        born,
    } = served;
    let mut reader = BufReader::new(stream);
    for _ in 0..MAX_REQUESTS_PER_CONNECTION {
        if stop.load(Ordering::Relaxed) || born.elapsed() > LIFETIME {
            return;
        }
        let Some(request) = read_request(&mut reader) else {
            return;
        };
        let mut counted = Counted(pick(&request).then_some(&**in_flight));
        if let Some(c) = counted.0 {
            c.arrive();
        }
        let reply = handler(&request);
        let index = {
            let Ok(mut l) = log.lock() else { return };
            l.push(Logged {
                request,
                peer_port: peer.port(),
                wrote_all: None,
                body_written: 0,
            });
            l.len() - 1
        };
        let mut written = 0u64;
        let ok = write_reply(reader.get_mut(), &reply, stop, &mut written, &mut counted).is_ok();
        counted.release();
        if let Ok(mut l) = log.lock() {
            if let Some(e) = l.get_mut(index) {
                e.wrote_all = Some(ok);
                e.body_written = written;
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

/// Write `reply`, releasing `counted` just before its last bytes go out.
fn write_reply<W: Write>(
    w: &mut W,
    reply: &Reply,
    stop: &AtomicBool,
    written: &mut u64,
    counted: &mut Counted<'_>,
) -> io::Result<()> {
    if let Some(raw) = &reply.raw {
        let (step, every) = reply.drip.unwrap_or((raw.len().max(1), Duration::ZERO));
        let last = raw.len().div_ceil(step.max(1)).saturating_sub(1);
        for (i, chunk) in raw.chunks(step).enumerate() {
            if stop.load(Ordering::Relaxed) {
                return Err(io::Error::other("stopped"));
            }
            if i > 0 {
                sleep_unless_stopped(every, stop);
            }
            if i == last {
                counted.release();
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
    if reply.stall.is_some() || reply.head_only || reply.body.is_empty() {
        counted.release();
    }
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
            counted.release();
            for chunk in reply.body.chunks(64 * 1024) {
                w.write_all(chunk)?;
                *written += chunk.len() as u64;
            }
        }
        Some((step, every)) => {
            // A wait between chunks, none after the last (the end is logged when it is sent).
            let last = reply.body.len().div_ceil(step.max(1)).saturating_sub(1);
            for (i, chunk) in reply.body.chunks(step).enumerate() {
                if stop.load(Ordering::Relaxed) {
                    return Err(io::Error::other("stopped"));
                }
                if i > 0 {
                    sleep_unless_stopped(every, stop);
                }
                if i == last {
                    counted.release();
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

/// A certificate authority made at test time, issuing certificates.
pub struct Ca {
    pem: String,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

/// A certificate an authority issued and its key.
#[derive(Debug)]
pub struct Leaf {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// Its private key (PKCS #8), PEM.
    pub key_pem: String,
    /// The certificate, DER.
    pub cert: rustls::pki_types::CertificateDer<'static>,
    /// The key, DER.
    pub key: rustls::pki_types::PrivateKeyDer<'static>,
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ca")
            .field("pem", &self.pem)
            .finish_non_exhaustive()
    }
}

impl Ca {
    /// A new authority named `name`.
    pub fn new(name: &str) -> Ca {
        let key = rcgen::KeyPair::generate().expect("CA key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let cert = params.self_signed(&key).expect("CA cert");
        Ca {
            pem: cert.pem(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// Its certificate, PEM.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// A certificate for `names` (DNS names or IP addresses), good for a server and a client.
    pub fn issue(&self, names: &[&str]) -> Leaf {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .expect("params");
        params.extended_key_usages = vec![
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let cert = params.signed_by(&key, &self.issuer).expect("cert");
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            cert: rustls::pki_types::CertificateDer::from(cert.der().to_vec()),
            key: rustls::pki_types::PrivateKeyDer::Pkcs8(
                rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der()),
            ),
        }
    }
}

/// A CA (its PEM) and a rustls server configuration with a certificate it signed.
pub fn pki() -> (String, Arc<rustls::ServerConfig>) {
    let ca = Ca::new("stcheck test CA");
    let leaf = ca.issue(&["localhost", "127.0.0.1"]);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocols")
        .with_no_client_auth()
        .with_single_cert(vec![leaf.cert], leaf.key)
        .expect("server config");
    (ca.pem, Arc::new(config))
}
