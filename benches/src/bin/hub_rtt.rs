//! The network of `benches/remote_rtt.py`: a hub-like HTTP server and a proxy in front of it
//! that adds a round-trip time, with the requests and connections counted. One thread per
//! connection, blocking I/O: on a loaded machine the model stays ahead of the programs it
//! measures (the Python server and proxy it replaces did not).
//!
//! The hub serves, for generated repositories (`bench/single{i}`: one `model.safetensors`;
//! `bench/sharded{i}`: S shards and their index):
//! - `/api/models/{org}/{repo}/revision/{rev}`: the commit;
//! - `/api/models/{org}/{repo}/tree/{commit}?recursive=true`: the listing, 1,000 entries a
//!   page with a `Link: <...>; rel="next"` header, as the hub pages;
//! - `/{org}/{repo}/resolve/{rev}/{path}`: ranges, `X-Repo-Commit`, `ETag`, `X-Linked-Etag`,
//!   `X-Linked-Size`; with `--redirect` an LFS file answers 302 to a CDN host (another port
//!   of the proxy, so another origin with its own connections), as the hub redirects to its
//!   storage;
//! - with `--quota Q --window W`: once Q requests were served in the current fixed window of
//!   W seconds, 429 with `Retry-After` and the hub's `RateLimit`/`RateLimit-Policy` headers;
//!   every answer carries `RateLimit` with the requests left. The CDN's requests are not
//!   counted (the hub's quota is of its own requests).
//!
//! Files are a real header followed by zeros, generated on request: nothing large is held.
//!
//! The proxy: every byte reaches the other side RTT/2 after it was received; a new
//! connection's first byte arrives one more RTT later (the TCP handshake; no TLS is modelled).
//!
//! Usage: hub_rtt [--files N] [--repos RxS] [--quota Q] [--window SECS] [--redirect]
//!                [--rtt-ms MS] [--trace FILE]
//! Prints the hub's port (through the proxy) on its first line; then reads commands on
//! standard input: `stats` prints `{"requests":..,"statuses":{..},"connections":..,
//! "cdn_connections":..}` and resets the counts; `quit` or the end of input stops it.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
const ORG: &str = "bench";
const TENSORS: usize = 8;
const SHAPE: (u64, u64) = (256, 256);
const PAGE: usize = 1000;

const USAGE: &str = "usage: hub_rtt [--files N] [--repos RxS] [--quota Q] [--window SECS] \
                     [--redirect] [--rtt-ms MS] [--trace FILE]";

/// A safetensors file served from its head and a length: bytes past the head are zeros.
struct File {
    head: Vec<u8>,
    size: u64,
    sha: String,
}

impl File {
    fn new(names: &[String]) -> File {
        let each = SHAPE.0 * SHAPE.1 * 4;
        let mut text = String::from("{");
        for (i, n) in names.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            let i = i as u64;
            text += &format!(
                "\"{n}\":{{\"dtype\":\"F32\",\"shape\":[{},{}],\"data_offsets\":[{},{}]}}",
                SHAPE.0,
                SHAPE.1,
                i * each,
                (i + 1) * each
            );
        }
        text.push('}');
        while !text.len().is_multiple_of(8) {
            text.push(' ');
        }
        let mut head = (text.len() as u64).to_le_bytes().to_vec();
        head.extend_from_slice(text.as_bytes());
        let size = head.len() as u64 + each * names.len() as u64;
        let sha = hex(&Sha256::digest(&head));
        File { head, size, sha }
    }

    /// Bytes `a..=b` (within the file).
    fn read(&self, a: u64, b: u64) -> Vec<u8> {
        let mut out = vec![0u8; (b + 1 - a) as usize];
        let head = self.head.len() as u64;
        if a < head {
            let end = (b + 1).min(head);
            out[..(end - a) as usize].copy_from_slice(&self.head[a as usize..end as usize]);
        }
        out
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

enum Entry {
    Lfs(File),
    Small(Vec<u8>),
}

impl Entry {
    fn size(&self) -> u64 {
        match self {
            Entry::Lfs(f) => f.size,
            Entry::Small(b) => b.len() as u64,
        }
    }

    fn oid(&self) -> String {
        match self {
            Entry::Lfs(f) => f.sha[..40].to_string(),
            Entry::Small(b) => hex(&Sha256::digest(b))[..40].to_string(),
        }
    }

    fn read(&self, a: u64, b: u64) -> Vec<u8> {
        match self {
            Entry::Lfs(f) => f.read(a, b),
            Entry::Small(d) => d[a as usize..=b as usize].to_vec(),
        }
    }
}

type Repo = BTreeMap<String, Entry>;

fn single_repo() -> Repo {
    let names: Vec<String> = (0..TENSORS).map(|j| format!("w{j}")).collect();
    let mut r = Repo::new();
    r.insert("model.safetensors".into(), Entry::Lfs(File::new(&names)));
    r.insert("config.json".into(), Entry::Small(b"{}".to_vec()));
    r
}

fn sharded_repo(shards: usize) -> Repo {
    let mut r = Repo::new();
    r.insert("config.json".into(), Entry::Small(b"{}".to_vec()));
    let mut weight_map = serde_json::Map::new();
    let mut total = 0u64;
    for i in 0..shards {
        let name = format!("model-{:05}-of-{shards:05}.safetensors", i + 1);
        let names: Vec<String> = (0..TENSORS).map(|j| format!("layers.{i}.w{j}")).collect();
        let f = File::new(&names);
        for n in &names {
            weight_map.insert(n.clone(), name.clone().into());
        }
        total += f.size - f.head.len() as u64;
        r.insert(name, Entry::Lfs(f));
    }
    let index = serde_json::json!({"metadata": {"total_size": total}, "weight_map": weight_map});
    r.insert(
        "model.safetensors.index.json".into(),
        Entry::Small(index.to_string().into_bytes()),
    );
    r
}

#[derive(Default)]
struct Counts {
    requests: u64,
    statuses: BTreeMap<u16, u64>,
}

struct Window {
    start: Instant,
    served: u64,
}

struct Hub {
    repos: BTreeMap<String, Repo>,
    redirect: bool,
    quota: u64,
    window: f64,
    /// The CDN's port (through the proxy), for the redirect's `Location`.
    cdn_port: u16,
    counts: Mutex<Counts>,
    current: Mutex<Window>,
    /// `--trace FILE`: a line per request, `ms-since-start status target`.
    trace: Option<Mutex<io::BufWriter<std::fs::File>>>,
    started: Instant,
}

struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Content-Length when it is not the body's (HEAD).
    length: Option<u64>,
}

fn answer(status: u16, headers: Vec<(&str, String)>, body: Vec<u8>) -> Answer {
    Answer {
        status,
        headers: headers
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        body,
        length: None,
    }
}

impl Hub {
    /// Counts the request against the quota: `Err` is the 429 to answer, `Ok` the `RateLimit`
    /// header the answer carries (none without a quota).
    fn admit(&self) -> Result<Option<(String, String)>, Answer> {
        if self.quota == 0 {
            return Ok(None);
        }
        let mut w = self.current.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let mut since = now.duration_since(w.start).as_secs_f64();
        if since >= self.window {
            w.start = now;
            w.served = 0;
            since = 0.0;
        }
        let left = self.window - since;
        let t = (left.ceil() as u64).max(1);
        let policy = (
            "RateLimit-Policy".to_string(),
            format!(
                "\"fixed window\";\"resolvers\";q={};w={}",
                self.quota, self.window as u64
            ),
        );
        if w.served >= self.quota {
            let mut a = answer(
                429,
                vec![
                    ("Retry-After", t.to_string()),
                    ("RateLimit", format!("\"resolvers\";r=0;t={t}")),
                ],
                b"Too Many Requests".to_vec(),
            );
            a.headers.push(policy);
            return Err(a);
        }
        w.served += 1;
        let r = self.quota - w.served;
        Ok(Some((
            "RateLimit".to_string(),
            format!("\"resolvers\";r={r};t={t}"),
        )))
    }

    fn route(&self, method: &str, target: &str, headers: &BTreeMap<String, String>) -> Answer {
        // The quota counts the hub's requests, not its storage's (the CDN).
        let limit = match target.starts_with("/cdn/") {
            true => None,
            false => match self.admit() {
                Err(a) => return a,
                Ok(limit) => limit,
            },
        };
        let mut a = self.route_admitted(method, target, headers);
        a.headers.extend(limit);
        if method == "HEAD" {
            a.length = Some(a.length.unwrap_or(a.body.len() as u64));
            a.body.clear();
        }
        a
    }

    fn route_admitted(
        &self,
        method: &str,
        target: &str,
        headers: &BTreeMap<String, String>,
    ) -> Answer {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let mut parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        if parts.len() >= 5 && parts[0] == "api" && parts[1] == "models" {
            let key = format!("{}/{}", parts[2], parts[3]);
            let Some(repo) = self.repos.get(&key) else {
                return answer(
                    404,
                    vec![("X-Error-Code", "RepoNotFound".into())],
                    b"{}".into(),
                );
            };
            let json = ("Content-Type", "application/json".to_string());
            if parts[4] == "revision" {
                let body = serde_json::json!({"sha": COMMIT, "id": key}).to_string();
                return answer(200, vec![json], body.into_bytes());
            }
            if parts[4] == "tree" && parts.len() >= 6 {
                let start: usize = query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("cursor="))
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0);
                let entries: Vec<serde_json::Value> = repo
                    .iter()
                    .skip(start)
                    .take(PAGE)
                    .map(|(n, e)| match e {
                        Entry::Lfs(f) => serde_json::json!({"type": "file", "path": n,
                            "size": f.size, "oid": e.oid(),
                            "lfs": {"oid": f.sha, "size": f.size, "pointerSize": 134}}),
                        Entry::Small(_) => serde_json::json!({"type": "file", "path": n,
                            "size": e.size(), "oid": e.oid()}),
                    })
                    .collect();
                let mut h = vec![json];
                if start + PAGE < repo.len() {
                    let host = headers.get("host").map(String::as_str).unwrap_or("");
                    let next = format!(
                        "http://{host}/api/models/{key}/tree/{}?recursive=true&cursor={}",
                        parts[5],
                        start + PAGE
                    );
                    h.push(("Link", format!("<{next}>; rel=\"next\"")));
                }
                return answer(
                    200,
                    h,
                    serde_json::Value::Array(entries).to_string().into_bytes(),
                );
            }
        }
        let cdn = parts.first() == Some(&"cdn");
        if cdn && parts.len() >= 4 {
            // /cdn/{org}/{repo}/{path} is the file at the commit.
            let rest = parts.split_off(3);
            parts = vec![parts[1], parts[2], "resolve", COMMIT];
            parts.extend(rest);
        }
        if parts.len() < 5 || parts[2] != "resolve" {
            return answer(404, vec![], b"not found".to_vec());
        }
        let name = parts[4..].join("/");
        let key = format!("{}/{}", parts[0], parts[1]);
        let Some(entry) = self.repos.get(&key).and_then(|r| r.get(&name)) else {
            return answer(
                404,
                vec![
                    ("X-Error-Code", "EntryNotFound".into()),
                    ("X-Repo-Commit", COMMIT.into()),
                ],
                b"Entry not found".to_vec(),
            );
        };
        if let (true, false, Entry::Lfs(f)) = (self.redirect, cdn, entry) {
            let host = headers
                .get("host")
                .and_then(|h| h.rsplit_once(':'))
                .map(|(h, _)| h)
                .unwrap_or("127.0.0.1");
            let to = format!("http://{host}:{}/cdn/{key}/{name}", self.cdn_port);
            return answer(
                302,
                vec![
                    ("Location", to.clone()),
                    ("X-Repo-Commit", COMMIT.into()),
                    ("X-Linked-Etag", format!("\"{}\"", f.sha)),
                    ("X-Linked-Size", f.size.to_string()),
                ],
                format!("Found. Redirecting to {to}").into_bytes(),
            );
        }
        let mut h: Vec<(&str, String)> = Vec::new();
        if !cdn {
            h.push(("X-Repo-Commit", COMMIT.into()));
        }
        h.push(("Accept-Ranges", "bytes".into()));
        match entry {
            Entry::Lfs(f) => {
                h.push(("ETag", format!("\"{}\"", f.sha)));
                if !cdn {
                    h.push(("X-Linked-Etag", format!("\"{}\"", f.sha)));
                    h.push(("X-Linked-Size", f.size.to_string()));
                }
            }
            Entry::Small(_) => h.push(("ETag", format!("\"{}\"", entry.oid()))),
        }
        let size = entry.size();
        if let Some(r) = headers.get("range").and_then(|r| r.strip_prefix("bytes=")) {
            let (a, b) = r.split_once('-').unwrap_or((r, ""));
            let a: u64 = a.parse().unwrap_or(0);
            let b: u64 = b.parse().map_or(size.saturating_sub(1), |b: u64| {
                b.min(size.saturating_sub(1))
            });
            if a >= size || b < a {
                h.push(("Content-Range", format!("bytes */{size}")));
                return answer(416, h, Vec::new());
            }
            h.push(("Content-Range", format!("bytes {a}-{b}/{size}")));
            if method == "HEAD" {
                let mut out = answer(206, h, Vec::new());
                out.length = Some(b + 1 - a);
                return out;
            }
            return answer(206, h, entry.read(a, b));
        }
        if method == "HEAD" {
            let mut out = answer(200, h, Vec::new());
            out.length = Some(size);
            return out;
        }
        answer(200, h, entry.read(0, size.saturating_sub(1)))
    }

    /// Serve one connection's requests until it closes.
    fn serve(&self, stream: TcpStream) -> io::Result<()> {
        let mut out = stream.try_clone()?;
        let mut input = BufReader::new(stream);
        let mut line = String::new();
        loop {
            line.clear();
            if input.read_line(&mut line)? == 0 {
                return Ok(());
            }
            let mut words = line.split_whitespace();
            let (Some(method), Some(target)) = (words.next(), words.next()) else {
                return Ok(());
            };
            let (method, target) = (method.to_string(), target.to_string());
            let mut headers = BTreeMap::new();
            loop {
                line.clear();
                if input.read_line(&mut line)? == 0 {
                    return Ok(());
                }
                let l = line.trim_end();
                if l.is_empty() {
                    break;
                }
                if let Some((k, v)) = l.split_once(':') {
                    headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
                }
            }
            let body_len: u64 = headers
                .get("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            io::copy(&mut (&mut input).take(body_len), &mut io::sink())?;
            let a = self.route(&method, &target, &headers);
            {
                let mut c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
                c.requests += 1;
                *c.statuses.entry(a.status).or_default() += 1;
            }
            if let Some(t) = &self.trace {
                let ms = self.started.elapsed().as_secs_f64() * 1000.0;
                let mut t = t.lock().unwrap_or_else(|p| p.into_inner());
                let _ = writeln!(t, "{ms:.1} {} {target}", a.status);
                let _ = t.flush();
            }
            let mut head = format!(
                "HTTP/1.1 {} X\r\nContent-Length: {}\r\n",
                a.status,
                a.length.unwrap_or(a.body.len() as u64)
            );
            for (k, v) in &a.headers {
                head += &format!("{k}: {v}\r\n");
            }
            head += "\r\n";
            let mut bytes = head.into_bytes();
            bytes.extend_from_slice(&a.body);
            out.write_all(&bytes)?;
        }
    }
}

/// Copy `from` to `to`, each chunk delivered `delay` after it was read (the first one
/// `first` later still); the end of `from` ends `to`'s writing side as late.
fn pump(mut from: TcpStream, to: TcpStream, delay: Duration, first: Duration) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    let writer = thread::spawn(move || {
        let mut to = to;
        for (due, data) in rx {
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                thread::sleep(wait);
            }
            if data.is_empty() {
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
            if to.write_all(&data).is_err() {
                let _ = to.shutdown(Shutdown::Both);
                return;
            }
        }
    });
    let mut extra = first;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = from.read(&mut buf).unwrap_or(0);
        let due = Instant::now() + delay + extra;
        extra = Duration::ZERO;
        if tx.send((due, buf[..n].to_vec())).is_err() || n == 0 {
            break;
        }
    }
    drop(tx);
    let _ = writer.join();
}

/// Accept connections on `listener`, each proxied to `upstream` with `rtt`, counted.
fn proxy(listener: TcpListener, upstream: u16, rtt: Duration, count: Arc<AtomicU64>) {
    for client in listener.incoming() {
        let Ok(client) = client else { continue };
        count.fetch_add(1, Ordering::Relaxed);
        thread::spawn(move || {
            let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                return;
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else {
                return;
            };
            let up = thread::spawn(move || pump(client, server, rtt / 2, rtt));
            pump(s2, c2, rtt / 2, Duration::ZERO);
            let _ = up.join();
        });
    }
}

fn main() {
    let mut files = 0usize;
    let (mut repos, mut shards) = (0usize, 0usize);
    let (mut quota, mut window) = (0u64, 1.0f64);
    let mut redirect = false;
    let mut rtt_ms = 50.0f64;
    let mut trace = None;
    let mut args = std::env::args().skip(1);
    let fail = |m: String| -> ! {
        eprintln!("hub_rtt: {m}\n{USAGE}");
        std::process::exit(2)
    };
    while let Some(a) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .unwrap_or_else(|| fail(format!("{name} needs a value")))
        };
        match a.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            "--redirect" => redirect = true,
            "--files" => {
                files = value("--files")
                    .parse()
                    .unwrap_or_else(|_| fail("--files: not a number".into()))
            }
            "--repos" => {
                let v = value("--repos");
                let parsed = v
                    .split_once('x')
                    .and_then(|(r, s)| Some((r.parse().ok()?, s.parse().ok()?)));
                (repos, shards) = parsed.unwrap_or_else(|| fail(format!("--repos {v}: not RxS")));
            }
            "--quota" => {
                quota = value("--quota")
                    .parse()
                    .unwrap_or_else(|_| fail("--quota: not a number".into()))
            }
            "--window" => {
                window = value("--window")
                    .parse()
                    .ok()
                    .filter(|w: &f64| *w > 0.0)
                    .unwrap_or_else(|| fail("--window: not a positive number".into()))
            }
            "--trace" => {
                let path = value("--trace");
                let f = std::fs::File::create(&path)
                    .unwrap_or_else(|e| fail(format!("--trace {path}: {e}")));
                trace = Some(Mutex::new(io::BufWriter::new(f)));
            }
            "--rtt-ms" => {
                rtt_ms = value("--rtt-ms")
                    .parse()
                    .ok()
                    .filter(|r: &f64| *r >= 0.0)
                    .unwrap_or_else(|| fail("--rtt-ms: not a number".into()))
            }
            other => fail(format!("unknown argument {other:?}")),
        }
    }
    let mut all = BTreeMap::new();
    for i in 0..files {
        all.insert(format!("{ORG}/single{i}"), single_repo());
    }
    for i in 0..repos {
        all.insert(format!("{ORG}/sharded{i}"), sharded_repo(shards));
    }
    let bind = || TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| fail(format!("bind: {e}")));
    let (hub_l, front, cdn) = (bind(), bind(), bind());
    let port = |l: &TcpListener| l.local_addr().map(|a| a.port()).unwrap_or(0);
    let (hub_port, front_port, cdn_port) = (port(&hub_l), port(&front), port(&cdn));
    let hub = Arc::new(Hub {
        repos: all,
        redirect,
        quota,
        window,
        cdn_port,
        counts: Mutex::default(),
        current: Mutex::new(Window {
            start: Instant::now(),
            served: 0,
        }),
        trace,
        started: Instant::now(),
    });
    let h = Arc::clone(&hub);
    thread::spawn(move || {
        for s in hub_l.incoming().flatten() {
            let _ = s.set_nodelay(true);
            let h = Arc::clone(&h);
            thread::spawn(move || h.serve(s));
        }
    });
    let rtt = Duration::from_secs_f64(rtt_ms / 1000.0);
    let (front_n, cdn_n) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    for (l, n) in [(front, &front_n), (cdn, &cdn_n)] {
        let n = Arc::clone(n);
        thread::spawn(move || proxy(l, hub_port, rtt, n));
    }
    println!("{front_port}");
    let _ = io::stdout().flush();
    for line in io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        match line.trim() {
            "stats" => {
                let c = std::mem::take(&mut *hub.counts.lock().unwrap_or_else(|p| p.into_inner()));
                let statuses: serde_json::Map<String, serde_json::Value> = c
                    .statuses
                    .iter()
                    .map(|(k, v)| (k.to_string(), (*v).into()))
                    .collect();
                let out = serde_json::json!({
                    "requests": c.requests,
                    "statuses": statuses,
                    "connections": front_n.swap(0, Ordering::Relaxed),
                    "cdn_connections": cdn_n.swap(0, Ordering::Relaxed),
                });
                println!("{out}");
                let _ = io::stdout().flush();
            }
            "quit" | "" => break,
            other => eprintln!("hub_rtt: unknown command {other:?} (stats, quit)"),
        }
    }
}
