//! The running service: its listeners, the admission of streams (workers, then a bounded
//! queue, then a busy answer at once), the clamd and HTTP connections, the verdict log, and
//! the graceful stop.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use stcheck::ReadErrorKind;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

use crate::clamd::{split_command, Command, Delimiter, Frame, Framing};
use crate::face::{Check, Outcome, Verdict};
use crate::log::Log;
use crate::metrics::Metrics;
use crate::settings::Settings;

/// The bytes asked of a socket at once.
const READ_CHUNK: usize = 64 << 10;

/// What every connection shares.
#[derive(Debug)]
struct Shared {
    /// The settings in force: replaced whole by a reload, read once per connection, command
    /// or request.
    current: RwLock<Arc<Current>>,
    metrics: Metrics,
    /// The log: verdict lines and the service's own.
    log: Log,
    /// Verdict lines as JSON (the settings' `log_json`, read without the lock).
    log_json: AtomicBool,
    stopping: AtomicBool,
    stop: watch::Sender<bool>,
    /// Workers a reload took away that streams in flight still hold: each stream that ends
    /// while this is above zero pays one back (its worker is forgotten, not returned).
    owed: AtomicUsize,
}

/// The settings in force and what is made of them.
#[derive(Debug)]
struct Current {
    settings: Settings,
    /// The service's own options, resolved once.
    check: Arc<Check>,
    token: Option<String>,
    /// HTTP over TLS (with client certificates when asked).
    tls: Option<Arc<rustls::ServerConfig>>,
    workers: Arc<Semaphore>,
}

impl Current {
    /// What `settings` make, or why the service cannot run with them (`workers`: the
    /// service's one semaphore of workers, kept across reloads and resized by them).
    fn new(settings: Settings, workers: Option<&Arc<Semaphore>>) -> Result<Current, String> {
        let check = Check::new(settings.options.clone())?;
        let tls = crate::tls::config(&settings)?;
        if let Some(addr) = settings.http {
            let client_certs = tls.is_some() && settings.tls_client_ca.is_some();
            if !addr.ip().is_loopback() && settings.token_file.is_none() && !client_certs {
                return Err(format!(
                    "--http {addr} is not a loopback address: give --token-file FILE so that \
                     callers need a bearer token, or --tls-cert, --tls-key and \
                     --tls-client-ca so that they need a client certificate"
                ));
            }
        }
        if let Some(addr) = settings.clamd {
            if !addr.ip().is_loopback() && !settings.clamd_allow_remote {
                return Err(format!(
                    "--clamd {addr} is not a loopback address, and the clamd protocol has no \
                     authentication: give --clamd-allow-remote to serve it anyway (or use \
                     --clamd-socket)"
                ));
            }
        }
        let token = match &settings.token_file {
            None => None,
            Some(path) => {
                let t = std::fs::read_to_string(path)
                    .map_err(|e| format!("--token-file {}: {e}", path.display()))?;
                let t = t.trim().to_owned();
                if t.is_empty() {
                    return Err(format!(
                        "--token-file {}: the file is empty",
                        path.display()
                    ));
                }
                Some(t)
            }
        };
        let workers = match workers {
            Some(w) => w.clone(),
            None => Arc::new(Semaphore::new(settings.limits.workers)),
        };
        Ok(Current {
            settings,
            check: Arc::new(check),
            token,
            tls,
            workers,
        })
    }
}

/// A running service.
#[derive(Debug)]
pub struct Server {
    shared: Arc<Shared>,
    clamd: Option<SocketAddr>,
    http: Option<SocketAddr>,
    clamd_socket: Option<PathBuf>,
    /// The service made the clamd socket's file (and removes it at the stop).
    made_socket: bool,
    /// Its sockets were passed by a service manager.
    passed: bool,
}

impl Server {
    /// Bind every listener the settings name and start accepting, on the current tokio
    /// runtime; or why the service cannot start.
    pub async fn start(settings: Settings) -> Result<Server, String> {
        Server::start_with(settings, None).await
    }

    /// [`Server::start`], with the sockets a service manager passed (`passed`): then those
    /// are the service's sockets, and the settings' addresses are not bound.
    pub async fn start_with(
        mut settings: Settings,
        passed: Option<crate::listen::Passed>,
    ) -> Result<Server, String> {
        let passed = passed.filter(|p| !p.is_empty());
        if let Some(p) = &passed {
            // The addresses are the passed sockets' (the start-up checks apply to them).
            settings.clamd = p.clamd.as_ref().and_then(|l| l.local_addr().ok());
            settings.http = p.http.as_ref().and_then(|l| l.local_addr().ok());
            settings.clamd_socket = p
                .clamd_unix
                .as_ref()
                .and_then(|l| l.local_addr().ok())
                .and_then(|a| a.as_pathname().map(PathBuf::from));
        }
        let current = Current::new(settings, None)?;
        let (stop, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            log_json: AtomicBool::new(current.settings.log_json),
            current: RwLock::new(Arc::new(current)),
            metrics: Metrics::default(),
            log: Log::stderr(),
            stopping: AtomicBool::new(false),
            owed: AtomicUsize::new(0),
            stop,
        });
        let now = shared.now();
        let s = &now.settings;
        let passed_any = passed.is_some();
        let bind = |addr: SocketAddr, what: &str| {
            let what = what.to_owned();
            async move {
                TcpListener::bind(addr)
                    .await
                    .map_err(|e| format!("--{what} {addr}: {e}"))
            }
        };
        let (clamd, http, unix) = match passed {
            Some(p) => {
                let tcp = |l: Option<std::net::TcpListener>, what: &str| {
                    l.map(|l| {
                        l.set_nonblocking(true)
                            .and_then(|()| TcpListener::from_std(l))
                            .map_err(|e| format!("the {what} socket passed: {e}"))
                    })
                    .transpose()
                };
                let unix = p
                    .clamd_unix
                    .map(|l| {
                        l.set_nonblocking(true)
                            .and_then(|()| tokio::net::UnixListener::from_std(l))
                            .map_err(|e| format!("the clamd Unix socket passed: {e}"))
                    })
                    .transpose()?;
                (tcp(p.clamd, "clamd")?, tcp(p.http, "http")?, unix)
            }
            None => {
                let clamd = match s.clamd {
                    Some(a) => Some(bind(a, "clamd").await?),
                    None => None,
                };
                let http = match s.http {
                    Some(a) => Some(bind(a, "http").await?),
                    None => None,
                };
                let unix = match &s.clamd_socket {
                    Some(path) => Some(bind_unix(path)?),
                    None => None,
                };
                (clamd, http, unix)
            }
        };
        let server = Server {
            clamd: clamd.as_ref().and_then(|l| l.local_addr().ok()),
            http: http.as_ref().and_then(|l| l.local_addr().ok()),
            clamd_socket: s.clamd_socket.clone(),
            // A passed socket's file belongs to the service manager.
            made_socket: !passed_any && s.clamd_socket.is_some(),
            passed: passed_any,
            shared: shared.clone(),
        };
        if let Some(l) = clamd {
            tokio::spawn(accept_tcp(l, shared.clone(), Protocol::Clamd));
        }
        if let Some(l) = http {
            tokio::spawn(accept_tcp(l, shared.clone(), Protocol::Http));
        }
        if let Some(l) = unix {
            tokio::spawn(accept_unix(l, shared.clone()));
        }
        Ok(server)
    }

    /// Read the settings again from where they came from (the configuration file, then the
    /// flags): the limits, the check options, the token file and the log's form apply to the
    /// connections, commands and requests that come after; the sockets are kept (a changed
    /// address is said and waits for a restart). Settings that cannot be used are refused and
    /// the ones in force kept: `Err` says why. `Ok` has the lines to log.
    pub fn reload(&self) -> Result<Vec<String>, String> {
        let sh = &self.shared;
        let old = sh.now();
        let mut new = Settings::from_source(old.settings.source.clone())?;
        let mut said = Vec::new();
        let o = &old.settings;
        if !self.passed
            && (
                new.clamd,
                &new.clamd_socket,
                new.http,
                new.clamd_allow_remote,
            ) != (o.clamd, &o.clamd_socket, o.http, o.clamd_allow_remote)
        {
            said.push("the addresses changed: the sockets are kept until a restart".to_owned());
        }
        new.clamd = o.clamd;
        new.clamd_socket = o.clamd_socket.clone();
        new.http = o.http;
        new.clamd_allow_remote = o.clamd_allow_remote;
        let (from, to) = (o.limits.workers, new.limits.workers);
        let current = Current::new(new, Some(&old.workers))?;
        resize(sh, &current.workers, from, to);
        sh.log_json.store(current.settings.log_json, Relaxed);
        *sh.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(current);
        said.extend(self.limits_line());
        Ok(said)
    }

    /// The clamd TCP address bound.
    pub fn clamd_addr(&self) -> Option<SocketAddr> {
        self.clamd
    }

    /// The HTTP address bound.
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http
    }

    /// Verdicts given so far: valid, invalid, not checked.
    pub fn verdicts(&self) -> (u64, u64, u64) {
        self.shared.metrics.verdicts()
    }

    /// Streams admitted (being read) and waiting for a worker.
    pub fn streams(&self) -> (usize, usize) {
        let m = &self.shared.metrics;
        (m.in_flight.load(Relaxed), m.queued.load(Relaxed))
    }

    /// HTTP connections whose TLS handshake failed.
    pub fn tls_refused(&self) -> u64 {
        self.shared.metrics.tls_refused.load(Relaxed)
    }

    /// Connections open.
    pub fn connections(&self) -> usize {
        self.shared.metrics.connections.load(Relaxed)
    }

    /// The start-up lines: where it listens and its limits.
    pub fn banner(&self) -> Vec<String> {
        let now = self.shared.now();
        let mut lines = Vec::new();
        if let Some(a) = self.clamd {
            lines.push(format!("clamd on {a}"));
            if !a.ip().is_loopback() {
                lines.push(format!(
                    "warning: clamd on {a}, off loopback, with no authentication \
                     (--clamd-allow-remote)"
                ));
            }
        }
        if let Some(p) = &self.clamd_socket {
            lines.push(format!("clamd on unix:{}", p.display()));
        }
        if let Some(a) = self.http {
            let tls = match (&now.tls, &now.settings.tls_client_ca) {
                (None, _) => "",
                (Some(_), None) => "TLS, ",
                (Some(_), Some(_)) => "TLS, client certificate required, ",
            };
            let auth = if now.token.is_some() {
                "bearer token required"
            } else {
                "no token"
            };
            lines.push(format!("http on {a} ({tls}{auth})"));
        }
        lines.extend(self.limits_line());
        lines
    }

    /// The limits in force, as one line.
    fn limits_line(&self) -> Option<String> {
        let now = self.shared.now();
        let limits: Vec<String> = crate::metrics::limit_values(&now.settings.limits)
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let header = now.header_limit();
        Some(format!(
            "limits: {} MaxHeaderSize={header} (memory per stream at most 2 x the header + {} \
             bytes)",
            limits.join(" "),
            READ_CHUNK
        ))
    }

    /// Stop accepting, let the streams in flight finish within the grace period, then return
    /// (the connections still open are dropped with the runtime).
    pub async fn shutdown(&self) {
        let sh = &self.shared;
        sh.stopping.store(true, Relaxed);
        let _ = sh.stop.send(true);
        let until = Instant::now() + sh.now().settings.limits.grace;
        let mut ticks = tokio::time::interval(Duration::from_millis(20));
        while Instant::now() < until {
            let m = &sh.metrics;
            if m.in_flight.load(Relaxed) + m.queued.load(Relaxed) == 0 {
                break;
            }
            ticks.tick().await;
        }
        if let (Some(p), true) = (&self.clamd_socket, self.made_socket) {
            let _ = std::fs::remove_file(p);
        }
        sh.log.flush();
    }

    /// A line of the service's own (`stcheck serve: ` and `line`) in its log, after the
    /// verdict lines logged before it.
    pub fn say(&self, line: &str) {
        self.shared.log.line(|b| {
            b.extend_from_slice(b"stcheck serve: ");
            b.extend_from_slice(line.as_bytes());
        });
    }

    /// Until every line logged so far is written.
    pub fn flush_log(&self) {
        self.shared.log.flush();
    }
}

impl Current {
    fn header_limit(&self) -> u64 {
        self.settings
            .options
            .max_header_size
            .unwrap_or(stcheck::limits::DEFAULT_MAX_HEADER_SIZE)
    }
}

impl Shared {
    /// The settings in force.
    fn now(&self) -> Arc<Current> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// One log line for a verdict (nothing of the request: no bytes, no token, no address),
    /// formatted straight into the log's buffer.
    fn log(&self, protocol: &str, outcome: &Outcome, bytes: u64, took: Duration) {
        use std::io::Write;
        self.metrics.verdict(outcome, took);
        let rule = match outcome.verdict {
            Verdict::Invalid => outcome.signature(),
            Verdict::Valid | Verdict::NotChecked => "",
        };
        let (secs, micros) = (took.as_secs(), took.subsec_micros());
        let verdict = outcome.verdict.as_str();
        let json = self.log_json.load(Relaxed);
        self.log.line(|b| {
            let _ = if json {
                write!(
                    b,
                    "{{\"event\":\"verdict\",\"protocol\":\"{protocol}\",\"verdict\":\"{verdict}\",\
                     \"rule\":\"{rule}\",\"bytes\":{bytes},\"seconds\":{secs}.{micros:06}}}"
                )
            } else {
                write!(
                    b,
                    "stcheck serve: verdict {protocol} {verdict}{}{rule} bytes={bytes} \
                     seconds={secs}.{micros:06}",
                    if rule.is_empty() { "" } else { " " }
                )
            };
        });
    }
}

/// The one semaphore of workers, from `from` permits to `to`: more at once (first cancelling
/// what a shrink still owes); fewer by taking the free workers now and owing the rest, which
/// the streams in flight pay back as they end ([`Slot`]'s drop), before any stream waiting in
/// the queue is admitted. Streams in flight keep their worker; those waiting stay queued. No
/// task and no ordering between tasks: what a stream ending does is decided when it ends.
fn resize(sh: &Shared, workers: &Semaphore, from: usize, to: usize) {
    if to > from {
        let grow = to - from;
        let cancelled = sh
            .owed
            .fetch_update(Relaxed, Relaxed, |owed| Some(owed - owed.min(grow)))
            .map_or(0, |owed| owed.min(grow));
        workers.add_permits(grow - cancelled);
    } else {
        let mut fewer = from - to;
        while fewer > 0 {
            match workers.try_acquire() {
                Ok(free) => {
                    free.forget();
                    fewer -= 1;
                }
                Err(_) => break,
            }
        }
        sh.owed.fetch_add(fewer, Relaxed);
    }
}

/// A stream admitted: a worker is its until it is dropped.
#[derive(Debug)]
struct Slot {
    shared: Arc<Shared>,
    permit: Option<OwnedSemaphorePermit>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.shared.metrics.in_flight.fetch_sub(1, Relaxed);
        let owed = &self.shared.owed;
        if owed
            .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1))
            .is_ok()
        {
            // A reload made the pool smaller: this worker is not given back.
            if let Some(permit) = self.permit.take() {
                permit.forget();
            }
        }
    }
}

/// A worker for a stream: at once, or after waiting in the queue; `None` (busy) when the
/// queue is full or the service is stopping.
async fn admit(sh: &Arc<Shared>, now: &Current) -> Option<Slot> {
    let m = &sh.metrics;
    if sh.stopping.load(Relaxed) {
        return None;
    }
    let permit = match now.workers.clone().try_acquire_owned() {
        Ok(p) => p,
        Err(_) => {
            if m.queued.fetch_add(1, Relaxed) >= now.settings.limits.queue {
                m.queued.fetch_sub(1, Relaxed);
                m.busy.fetch_add(1, Relaxed);
                return None;
            }
            let p = now.workers.clone().acquire_owned().await;
            m.queued.fetch_sub(1, Relaxed);
            p.ok()?
        }
    };
    m.in_flight.fetch_add(1, Relaxed);
    Some(Slot {
        shared: sh.clone(),
        permit: Some(permit),
    })
}

#[derive(Debug, Clone, Copy)]
enum Protocol {
    Clamd,
    Http,
}

/// A connection counted while it is open.
#[derive(Debug)]
struct Open(Arc<Shared>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.metrics.connections.fetch_sub(1, Relaxed);
    }
}

/// Count a new connection, or `None` when there are too many.
fn open(sh: &Arc<Shared>) -> Option<Open> {
    let m = &sh.metrics;
    if m.connections.fetch_add(1, Relaxed) >= sh.now().settings.limits.max_connections {
        m.connections.fetch_sub(1, Relaxed);
        m.busy.fetch_add(1, Relaxed);
        return None;
    }
    Some(Open(sh.clone()))
}

async fn accept_tcp(listener: TcpListener, sh: Arc<Shared>, protocol: Protocol) {
    let mut stop = sh.stop.subscribe();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stopped(&mut stop) => return,
        };
        let Ok((socket, _)) = accepted else {
            // Out of descriptors or a connection reset before it was taken: try the next.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = socket.set_nodelay(true);
        let sh = sh.clone();
        tokio::spawn(async move {
            let tls = match protocol {
                Protocol::Http => sh.now().tls.clone(),
                Protocol::Clamd => None,
            };
            let Some(open) = open(&sh) else {
                if tls.is_none() {
                    busy_connection(socket, protocol).await;
                }
                // Over TLS: closed before the handshake.
                return;
            };
            match (protocol, tls) {
                (Protocol::Clamd, _) => clamd_connection(socket, sh).await,
                (Protocol::Http, None) => http_connection(socket, sh).await,
                (Protocol::Http, Some(config)) => {
                    let limit = sh.now().settings.limits.command_timeout;
                    let acceptor = tokio_rustls::TlsAcceptor::from(config);
                    match tokio::time::timeout(limit, acceptor.accept(socket)).await {
                        Ok(Ok(tls)) => http_connection(tls, sh).await,
                        // No certificate, one from another CA, not TLS, or too slow: closed.
                        Ok(Err(_)) | Err(_) => {
                            sh.metrics.tls_refused.fetch_add(1, Relaxed);
                        }
                    }
                }
            }
            drop(open);
        });
    }
}

/// A connection past the limit: a busy answer at once, then closed.
async fn busy_connection(mut socket: TcpStream, protocol: Protocol) {
    let answer: &[u8] = match protocol {
        Protocol::Clamd => b"stcheck: too many connections, try again. ERROR\n",
        Protocol::Http => {
            b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\ncontent-length: 0\r\n\
              connection: close\r\n\r\n"
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), socket.write_all(answer)).await;
}

fn bind_unix(path: &std::path::Path) -> Result<tokio::net::UnixListener, String> {
    use std::os::unix::fs::FileTypeExt;
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_socket() {
            let _ = std::fs::remove_file(path);
        } else {
            return Err(format!(
                "--clamd-socket {}: exists and is not a socket",
                path.display()
            ));
        }
    }
    tokio::net::UnixListener::bind(path)
        .map_err(|e| format!("--clamd-socket {}: {e}", path.display()))
}

async fn accept_unix(listener: tokio::net::UnixListener, sh: Arc<Shared>) {
    let mut stop = sh.stop.subscribe();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stopped(&mut stop) => return,
        };
        let Ok((mut socket, _)) = accepted else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let sh = sh.clone();
        tokio::spawn(async move {
            let Some(open) = open(&sh) else {
                let _ = tokio::time::timeout(
                    Duration::from_secs(1),
                    socket.write_all(b"stcheck: too many connections, try again. ERROR\n"),
                )
                .await;
                return;
            };
            clamd_connection(socket, sh).await;
            drop(open);
        });
    }
}

/// Until the service stops (or its stop signal is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await.map(|_| ());
}

/// How waiting for bytes ended.
enum Filled {
    /// Some bytes came.
    Got,
    /// The client closed its side (or the connection failed).
    Closed,
    /// The time ran out.
    Late,
    /// The service is stopping.
    Stopping,
}

/// Read more bytes into `buf` by `until`.
async fn fill<S: AsyncRead + Unpin>(
    io: &mut S,
    buf: &mut Vec<u8>,
    until: Instant,
    stop: &mut watch::Receiver<bool>,
    stoppable: bool,
) -> Filled {
    buf.reserve(READ_CHUNK);
    let read = tokio::time::timeout_at(until.into(), io.read_buf(buf));
    let stopped = async {
        if stoppable {
            stopped(stop).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        r = read => match r {
            Ok(Ok(0)) | Ok(Err(_)) => Filled::Closed,
            Ok(Ok(_)) => Filled::Got,
            Err(_) => Filled::Late,
        },
        _ = stopped => Filled::Stopping,
    }
}

/// Write one reply (with the session's number and the command's delimiter).
async fn reply<S: AsyncWrite + Unpin>(
    io: &mut S,
    session: Option<u64>,
    text: &str,
    delimiter: Delimiter,
    limit: Duration,
) -> bool {
    let mut line = match session {
        Some(n) => format!("{n}: {text}").into_bytes(),
        None => text.as_bytes().to_vec(),
    };
    line.push(delimiter.byte());
    matches!(
        tokio::time::timeout(limit, io.write_all(&line)).await,
        Ok(Ok(()))
    )
}

/// The version clamd clients show.
fn version() -> String {
    format!("stcheck {}", env!("CARGO_PKG_VERSION"))
}

async fn clamd_connection<S: AsyncRead + AsyncWrite + Unpin>(mut io: S, sh: Arc<Shared>) {
    let mut stop = sh.stop.subscribe();
    let mut buf: Vec<u8> = Vec::new();
    // In a session: the number of the next command.
    let mut session: Option<u64> = None;
    loop {
        // Each command under the settings in force when it starts.
        let now = sh.now();
        let limits = &now.settings.limits;
        let wait = match session {
            Some(_) => limits.idle_timeout,
            None => limits.command_timeout,
        };
        let until = Instant::now() + wait;
        let (command, delimiter, used) = loop {
            match split_command(&buf) {
                Ok(Some(c)) => break c,
                Ok(None) => {}
                Err(e) => {
                    let _ = reply(
                        &mut io,
                        None,
                        &format!("{e}. ERROR"),
                        Delimiter::Newline,
                        limits.read_timeout,
                    )
                    .await;
                    return;
                }
            }
            match fill(&mut io, &mut buf, until, &mut stop, true).await {
                Filled::Got => {}
                Filled::Closed | Filled::Stopping => return,
                Filled::Late => {
                    let text = match session {
                        Some(_) => "idle timeout, session closed. ERROR",
                        None => "command read timeout. ERROR",
                    };
                    let _ =
                        reply(&mut io, None, text, Delimiter::Newline, limits.read_timeout).await;
                    return;
                }
            }
        };
        buf.drain(..used);
        let id = session;
        let say = |text: String| (text, true);
        let (text, keep) = match command {
            Command::Ping => say("PONG".into()),
            Command::Version => say(version()),
            Command::VersionCommands => say(format!(
                "{}| COMMANDS: PING VERSION VERSIONCOMMANDS STATS INSTREAM IDSESSION END",
                version()
            )),
            Command::Stats => say(sh.metrics.stats(limits)),
            Command::IdSession if session.is_none() => {
                session = Some(1);
                continue;
            }
            Command::IdSession => ("IDSESSION: already in a session. ERROR".into(), false),
            Command::End => return,
            Command::Instream => {
                if instream(&mut io, &mut buf, &sh, &now, id, delimiter, &mut stop).await {
                    (String::new(), true)
                } else {
                    return;
                }
            }
            Command::Path(name) => (
                format!(
                    "{name}: path commands are not served (no root is configured); send the \
                     file with INSTREAM. ERROR"
                ),
                true,
            ),
            Command::Unsupported(name) => (format!("{name}: not served by stcheck. ERROR"), true),
            Command::Unknown(_) => ("UNKNOWN COMMAND".into(), false),
        };
        if !text.is_empty() && !reply(&mut io, id, &text, delimiter, limits.read_timeout).await {
            return;
        }
        match &mut session {
            Some(n) if keep => *n += 1,
            _ => return,
        }
    }
}

/// The clamd answer for an outcome.
fn clamd_answer(outcome: &Outcome) -> String {
    match outcome.verdict {
        Verdict::Valid => "stream: OK".into(),
        Verdict::Invalid => format!("stream: SAFETENSORS.{} FOUND", outcome.signature()),
        Verdict::NotChecked => {
            let why: String = outcome
                .message
                .as_deref()
                .unwrap_or("not checked")
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            format!("stream: not checked: {why} ERROR")
        }
    }
}

/// One `INSTREAM`: `true` when the connection may go on (a session's next command).
async fn instream<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    buf: &mut Vec<u8>,
    sh: &Arc<Shared>,
    now: &Current,
    session: Option<u64>,
    delimiter: Delimiter,
    stop: &mut watch::Receiver<bool>,
) -> bool {
    let limits = &now.settings.limits;
    let started = Instant::now();
    let deadline = started + limits.stream_deadline;
    let Some(slot) = admit(sh, now).await else {
        let _ = reply(
            io,
            session,
            "INSTREAM: busy (every worker and the queue are taken), try again. ERROR",
            delimiter,
            limits.read_timeout,
        )
        .await;
        return false;
    };
    let check = &now.check;
    let mut framing = Framing::new(limits.max_stream);
    let mut stream = Some(check.stream());
    let mut answered = false;
    let fail = |kind: ReadErrorKind, why: &str| {
        check.unchecked(&stcheck::ReadError::new(kind, why), false)
    };
    loop {
        let mut at = 0;
        let mut early: Option<Outcome> = None;
        let ended = loop {
            match framing.next(&buf[at..]) {
                Err(e) => {
                    let why = format!("the stream passes the limit of {} bytes", e.limit);
                    if !answered {
                        let outcome = fail(ReadErrorKind::TooLarge, &why);
                        sh.log("clamd", &outcome, framing.total(), started.elapsed());
                        let _ = reply(
                            io,
                            session,
                            "INSTREAM size limit exceeded. ERROR",
                            delimiter,
                            limits.read_timeout,
                        )
                        .await;
                    }
                    return false;
                }
                Ok((n, frame)) => {
                    at += n;
                    match frame {
                        Some(Frame::Data(d)) => {
                            sh.metrics.bytes_read.fetch_add(d.len() as u64, Relaxed);
                            if let Some(s) = stream.as_mut() {
                                if s.feed(d).await {
                                    if let Some(s) = stream.take() {
                                        early = Some(check.finish(s, false).await);
                                    }
                                }
                            }
                        }
                        Some(Frame::End) => break true,
                        None => break false,
                    }
                }
            }
            if early.is_some() {
                break false;
            }
        };
        buf.drain(..at);
        if let Some(outcome) = early {
            // The verdict is known before the end: answered now, the rest read and discarded.
            sh.log("clamd", &outcome, framing.total(), started.elapsed());
            answered = true;
            if !reply(
                io,
                session,
                &clamd_answer(&outcome),
                delimiter,
                limits.read_timeout,
            )
            .await
            {
                return false;
            }
            continue;
        }
        if ended {
            break;
        }
        let until = deadline.min(Instant::now() + limits.read_timeout);
        let why = match fill(io, buf, until, stop, false).await {
            Filled::Got => continue,
            Filled::Closed => {
                sh.metrics.cut_off.fetch_add(1, Relaxed);
                "the client closed the connection before the stream's end"
            }
            Filled::Late if Instant::now() >= deadline => "the stream passed its deadline",
            Filled::Late | Filled::Stopping => "no bytes within the read timeout",
        };
        if !answered {
            let outcome = fail(ReadErrorKind::Io, why);
            sh.log("clamd", &outcome, framing.total(), started.elapsed());
            let text = match why {
                "the stream passed its deadline" => "INSTREAM deadline exceeded. ERROR".to_owned(),
                _ => format!("INSTREAM: {why}. ERROR"),
            };
            let _ = reply(io, session, &text, delimiter, limits.read_timeout).await;
        }
        return false;
    }
    if let Some(s) = stream.take() {
        let outcome = check.finish(s, false).await;
        sh.log("clamd", &outcome, framing.total(), started.elapsed());
        drop(slot);
        return reply(
            io,
            session,
            &clamd_answer(&outcome),
            delimiter,
            limits.read_timeout,
        )
        .await;
    }
    true
}

type Body = Full<Bytes>;

fn respond(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

fn text(status: StatusCode, body: impl Into<String>) -> Response<Body> {
    let mut b = body.into();
    if !b.ends_with('\n') {
        b.push('\n');
    }
    respond(status, "text/plain; charset=utf-8", b)
}

/// A connection's requests being answered: while there is none, its idle timeout runs.
#[derive(Debug, Default)]
struct Requests {
    open: AtomicUsize,
    /// A request began or ended.
    changed: tokio::sync::Notify,
}

/// One request being answered, counted until it is dropped.
struct Answering(Arc<Requests>);

impl Answering {
    fn new(r: &Arc<Requests>) -> Answering {
        r.open.fetch_add(1, Relaxed);
        r.changed.notify_one();
        Answering(r.clone())
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Relaxed);
        self.0.changed.notify_one();
    }
}

/// An HTTP/1.1 connection (keep-alive): closed when the service stops, or when no request
/// comes within the idle timeout after the last one (or after it opened).
async fn http_connection<S>(io: S, sh: Arc<Shared>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut stop = sh.stop.subscribe();
    let requests = Arc::new(Requests::default());
    let service = {
        let sh = sh.clone();
        let requests = requests.clone();
        hyper::service::service_fn(move |req| {
            let sh = sh.clone();
            let answering = Answering::new(&requests);
            async move {
                let r = route(req, sh).await;
                drop(answering);
                Ok::<_, Infallible>(r)
            }
        })
    };
    let limits = sh.now().settings.limits.clone();
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.command_timeout)
        .max_buf_size(64 << 10)
        .serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    loop {
        let idle = async {
            if requests.open.load(Relaxed) == 0 {
                tokio::time::sleep(limits.idle_timeout).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            _ = conn.as_mut() => return,
            // A request began or ended: the idle time starts again.
            _ = requests.changed.notified() => continue,
            _ = idle => {}
            _ = stopped(&mut stop) => {}
        }
        // Idle, or stopping: no new request; one under way is answered, then it closes
        // (a client that does not take the answer within the read timeout is dropped).
        conn.as_mut().graceful_shutdown();
        let _ = tokio::time::timeout(limits.read_timeout.max(limits.grace), conn).await;
        return;
    }
}

/// Whether the request carries the service's bearer token (or none is needed).
fn authorized(req: &Request<Incoming>, now: &Current) -> bool {
    let Some(token) = &now.token else {
        return true;
    };
    let given = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    // Every byte compared, whatever the first difference.
    given.len() == token.len()
        && given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

async fn route(req: Request<Incoming>, sh: Arc<Shared>) -> Response<Body> {
    let path = req.uri().path().to_owned();
    let method = req.method().clone();
    match (&method, path.as_str()) {
        (&Method::GET, "/healthz") => return text(StatusCode::OK, "ok"),
        (&Method::GET, "/readyz") => {
            return if sh.stopping.load(Relaxed) {
                text(StatusCode::SERVICE_UNAVAILABLE, "stopping")
            } else {
                text(StatusCode::OK, "ready")
            }
        }
        _ => {}
    }
    let now = sh.now();
    if !authorized(&req, &now) {
        let mut r = text(StatusCode::UNAUTHORIZED, "a bearer token is needed");
        r.headers_mut().insert(
            hyper::header::WWW_AUTHENTICATE,
            hyper::header::HeaderValue::from_static("Bearer"),
        );
        return r;
    }
    match (&method, path.as_str()) {
        (&Method::GET, "/metrics") => respond(
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            sh.metrics.prometheus(&now.settings.limits),
        ),
        (&Method::POST, "/v1/check") => check(req, &sh, &now).await,
        (_, "/v1/check") => text(StatusCode::METHOD_NOT_ALLOWED, "POST the file to /v1/check"),
        (&Method::GET, p) if p.starts_with("/v1/rules/") => {
            match crate::face::explain(&p["/v1/rules/".len()..]) {
                Ok(section) => respond(StatusCode::OK, "text/markdown; charset=utf-8", section),
                Err(e) => text(StatusCode::NOT_FOUND, e),
            }
        }
        _ => text(StatusCode::NOT_FOUND, "no such endpoint"),
    }
}

/// The answer for an outcome: the record, with the status code of its verdict (not checked:
/// `unchecked`), and the connection closed when the body was not read to its end.
fn record_response(outcome: &Outcome, unchecked: StatusCode, close: bool) -> Response<Body> {
    let status = match outcome.verdict {
        Verdict::Valid => StatusCode::OK,
        Verdict::Invalid => StatusCode::UNPROCESSABLE_ENTITY,
        Verdict::NotChecked => unchecked,
    };
    let mut r = respond(status, "application/json", outcome.record.clone());
    if let Ok(v) = outcome.verdict.as_str().parse() {
        r.headers_mut().insert("x-stcheck-verdict", v);
    }
    if close {
        r.headers_mut().insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
    }
    r
}

async fn check(req: Request<Incoming>, sh: &Arc<Shared>, now: &Current) -> Response<Body> {
    let limits = &now.settings.limits;
    let started = Instant::now();
    let deadline = started + limits.stream_deadline;
    let query = req.uri().query().unwrap_or("");
    let check = if query.is_empty() {
        now.check.clone()
    } else {
        let made = crate::query::parse_query(query, &now.settings.options)
            .and_then(|q| Check::new(q.options));
        match made {
            Ok(c) => Arc::new(c),
            Err(e) => return text(StatusCode::BAD_REQUEST, e),
        }
    };
    let declared = req
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let too_large = |total: u64| {
        let why = format!(
            "the body ({total} bytes or more) passes the limit of {} bytes",
            limits.max_stream
        );
        check.unchecked(&stcheck::ReadError::new(ReadErrorKind::TooLarge, why), true)
    };
    if let Some(n) = declared.filter(|&n| n > limits.max_stream) {
        let outcome = too_large(n);
        sh.log("http", &outcome, 0, started.elapsed());
        return record_response(&outcome, StatusCode::PAYLOAD_TOO_LARGE, true);
    }
    let Some(slot) = admit(sh, now).await else {
        let mut r = text(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy: every worker and the queue are taken; try again",
        );
        r.headers_mut().insert(
            hyper::header::RETRY_AFTER,
            hyper::header::HeaderValue::from_static("1"),
        );
        r.headers_mut().insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
        return r;
    };
    let mut left = Left {
        shared: sh,
        check: &check,
        started,
        bytes: 0,
        answered: false,
    };
    let mut body = req.into_body();
    let mut stream = Some(check.stream());
    let mut decided: Option<Outcome> = None;
    let mut total = 0u64;
    let fail = |kind, why: &str| check.unchecked(&stcheck::ReadError::new(kind, why), true);
    loop {
        let until = deadline.min(Instant::now() + limits.read_timeout);
        let (why, code) = match tokio::time::timeout_at(until.into(), body.frame()).await {
            Ok(None) => break,
            Ok(Some(Ok(frame))) => {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                total = total.saturating_add(data.len() as u64);
                left.bytes = total;
                if total > limits.max_stream {
                    let outcome = too_large(total);
                    left.answered = true;
                    sh.log("http", &outcome, total, started.elapsed());
                    return record_response(&outcome, StatusCode::PAYLOAD_TOO_LARGE, true);
                }
                sh.metrics.bytes_read.fetch_add(data.len() as u64, Relaxed);
                if let Some(s) = stream.as_mut() {
                    if s.feed(&data).await {
                        // Known now; the rest of the body is read and discarded.
                        if let Some(s) = stream.take() {
                            decided = Some(check.finish(s, true).await);
                        }
                    }
                }
                continue;
            }
            Ok(Some(Err(_))) => {
                // Counted by `left` when it is dropped.
                (
                    "the request body was cut off before its end",
                    StatusCode::BAD_REQUEST,
                )
            }
            Err(_) if Instant::now() >= deadline => (
                "the stream passed its deadline",
                StatusCode::REQUEST_TIMEOUT,
            ),
            Err(_) => (
                "no bytes within the read timeout",
                StatusCode::REQUEST_TIMEOUT,
            ),
        };
        let outcome = match decided {
            // A verdict known before the body failed stands.
            Some(o) => o,
            // A client gone is counted and logged by `left`.
            None if code == StatusCode::BAD_REQUEST => {
                return record_response(&fail(ReadErrorKind::Io, why), code, true)
            }
            None => fail(ReadErrorKind::Io, why),
        };
        left.answered = true;
        sh.log("http", &outcome, total, started.elapsed());
        return record_response(&outcome, code, true);
    }
    let outcome = match (decided, stream) {
        (Some(o), _) => o,
        (None, Some(s)) => check.finish(s, true).await,
        (None, None) => fail(ReadErrorKind::Io, "no verdict"),
    };
    drop(slot);
    left.answered = true;
    sh.log("http", &outcome, total, started.elapsed());
    record_response(&outcome, StatusCode::INTERNAL_SERVER_ERROR, false)
}

/// An HTTP upload until it is answered: dropped before (hyper drops a request whose client
/// went away, or the body failed), it counts as cut off, with a not-checked verdict logged.
struct Left<'a> {
    shared: &'a Shared,
    check: &'a Check,
    started: Instant,
    bytes: u64,
    answered: bool,
}

impl Drop for Left<'_> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        let sh = self.shared;
        sh.metrics.cut_off.fetch_add(1, Relaxed);
        let why = "the client went away before the body's end";
        let outcome = self
            .check
            .unchecked(&stcheck::ReadError::new(ReadErrorKind::Io, why), false);
        sh.log("http", &outcome, self.bytes, self.started.elapsed());
    }
}
