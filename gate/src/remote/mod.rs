//! Checking files on an HTTP(S) server without downloading them (feature `remote`, on by
//! default).
//!
//! [`Remote::check`] takes `http://`, `https://` and `hf://org/repo[@revision]/path`
//! addresses and gives, for each, the same strict verdict, rule and offset as the local check
//! of the same bytes, or a "could not check" error, and what it cost:
//!
//! - **Header level** ([`Depth::Header`]): one range request for the first
//!   [`RemoteOptions::first_fetch`] bytes (64 KiB), a second for the rest of the header only
//!   if it is longer (its body read straight into the checker's header buffer, so a header
//!   is held once); the file's length from `Content-Range` (or `Content-Length`, or a
//!   `HEAD` when the server gives neither), so `DATA-TRUNCATED` and `DATA-TRAILING` are
//!   decided without the data. A server that ignores `Range` and sends the whole file (200)
//!   is read only as far as needed, and the connection dropped.
//! - **Deep** ([`Depth::Deep`]): the body is streamed once, in bounded memory, through the
//!   streaming validator with the deep scan (and SHA-256 if asked).
//! - **Sharded checkpoints**: a URL whose last segment ends in `.safetensors.index.json` is
//!   an index: it is fetched (at most one byte past the header limit), and each shard is
//!   resolved as a sibling of the index's URL, so under the `INDEX-SHARD-NAME` rule no shard
//!   can leave the index's directory or host, and checked like a file. A shard answered with
//!   404 or 410 is `INDEX-SHARD-MISSING`; any other failure makes the set "could not check".
//!   A server lists no directory, so `INDEX-SHARD-UNLISTED` is checked remotely only for the
//!   sets of a repository listed through the hub's API ([`Remote::list_repository`], used by
//!   `Gate::plan` for `hf://org/repo[@revision]`, which hands the listing on as [`Known`]). Up to
//!   [`RemoteOptions::max_concurrent_shards`] shards are fetched at a time (one by the set's
//!   own job, the others by helpers of the client's pool of
//!   [`RemoteOptions::shard_helpers`], shared by all the sets checked at once), within a
//!   budget of header bytes ([`RemoteOptions::shard_header_budget`]), and handed to the set's
//!   check in the index's order.
//!
//! # Deadlines
//!
//! Each address has one deadline for everything its check fetches:
//! [`RemoteOptions::total_timeout`] (120 s) at the header level,
//! [`RemoteOptions::stream_timeout`] (1 hour) for a deep check, which reads the data. For an
//! index, the index and all its shards share it: a set of a thousand slow shards cannot take
//! a thousand times as long. A whole repository on the hub (`hf://org/repo`, listed by the
//! run's plan) has one deadline too, the same timeout counted from its listing: the listing,
//! the indexes fetched for their shards' names and every check of its files and sets end by
//! it (each address's own deadline still holds within it). A deadline passed is an
//! [`ErrorKind::Timeout`] error ("could
//! not check"), never a verdict; so is a body slower than the minimum speed, which ends a
//! stalled transfer long before the deadline.
//!
//! # A client for hostile servers
//!
//! Redirects are followed by hand, up to [`RemoteOptions::max_redirects`], with a loop
//! detected as soon as a URL comes round again. Credentials (the extra headers of
//! [`RemoteOptions::header`] and the `HF_TOKEN` bearer token) are sent only to the origin
//! (scheme, host and port) of the address the user gave, never after a redirect to another
//! one; the token only when that origin is the Hugging Face endpoint's. They never appear in
//! a message, and [`RemoteOptions`]'s `Debug` shows header names only. Every exchange has a
//! connect timeout, a read timeout (the longest wait for any byte), and the address's
//! deadline; a body slower than [`RemoteOptions::min_speed_bytes`] per
//! [`RemoteOptions::min_speed_window`] is dropped. 429 and 500/502/503/504 are retried up to
//! [`RemoteOptions::max_retries`] times with exponential backoff, honouring a `Retry-After`
//! of at most [`RemoteOptions::max_retry_after`] (a longer one, or one past the deadline,
//! gives up at once). A wait a server asks for (`Retry-After` on a 429 or 503, or the hub's
//! `RateLimit: "resolvers";r=0;t=55`, on any response) holds back every job of the client that
//! talks to that origin, not only the one told: the server is waited for, not hammered. When a
//! `RateLimit` leaves fewer requests (`r`) than the client has on their way to the origin, the
//! jobs send only what is left less those in flight and wait for the window's end (`t`), so a
//! closing window meets few 429s instead of one a job (never a verdict: a wait past the
//! deadline is `not checked`). A body
//! shorter or longer than announced, a range other than the one asked for, a content coding,
//! a file that changes between two requests, any other status: each is an [`RemoteError`]
//! with a clear message, never a verdict.
//!
//! The client is `ureq` 3 with rustls (ring) and the webpki roots; no proxy is configured
//! beyond what `ureq` reads from the usual environment variables (`HTTPS_PROXY`, `NO_PROXY`,
//! ...). To trust another CA (a mirror with its own), pass a PEM bundle holding it *and* the
//! public roots you still want with [`RemoteOptions::ca_bundle_pem`]; it replaces the
//! built-in roots, as curl's `--cacert` does.
//!
//! Every call into the validator library is in one private module (`verdict`).

mod address;
mod budget;
mod deadline;
mod fetch;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod http;
mod hub;
pub(crate) mod plan;
mod said;
mod shards;
mod verdict;

use std::fmt;
use std::time::Duration;

use stcheck::index::IndexReport;
use stcheck::index::ShardOutcome;
use stcheck::Checked;
use stcheck::Config;
use stcheck::{ReadError, ReadErrorKind};

use address::{HfAddress, Origin, Url};
pub(crate) use deadline::Deadline;
use http::Session;
pub use hub::{HubInfo, Listing, RepoFile, MAX_ENTRIES, MAX_PAGES, MAX_PAGE_BYTES};

/// The Hugging Face endpoint used when `HF_ENDPOINT` is not set.
pub const DEFAULT_HF_ENDPOINT: &str = "https://huggingface.co";

/// Header names that frame the exchange and cannot be given as extra headers.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "range",
    "accept-encoding",
    "content-length",
    "transfer-encoding",
    "connection",
    "te",
    "upgrade",
    "trailer",
    "keep-alive",
    "proxy-connection",
];

/// Bytes a header value may hold as text: printable ASCII, space and tab.
fn header_value_byte(b: u8) -> bool {
    b == b'\t' || (b' '..=b'~').contains(&b)
}

/// The `hf://` address of `path` in the repository of `address` at `commit`.
pub(crate) fn file_at(address: &str, commit: &str, path: &str) -> Option<String> {
    HfAddress::parse(address)
        .ok()
        .map(|a| a.file_at(commit, path))
}

/// The revision of an `hf://` address.
pub(crate) fn revision_of(address: &str) -> Option<String> {
    HfAddress::parse(address)
        .ok()
        .map(|a| a.revision().to_owned())
}

/// The commit an `hf://` address names as its revision (40 hex digits), which every response
/// must then name.
fn pinned_commit(address: &str) -> Option<String> {
    revision_of(address).filter(|r| r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Whether `arg` is an address [`Remote::check`] takes (`http://`, `https://`, `hf://`,
/// any case), as opposed to a local path.
pub fn is_url(arg: &str) -> bool {
    crate::target::is_url(arg)
}

/// Options of the client. `RemoteOptions::default()` has no credentials and the hub at
/// [`DEFAULT_HF_ENDPOINT`]; [`RemoteOptions::from_env`] reads `HF_TOKEN` and `HF_ENDPOINT`.
#[derive(Clone)]
#[non_exhaustive]
pub struct RemoteOptions {
    /// Longest time to open a connection (name lookup, TCP and TLS). Default: 10 s.
    pub connect_timeout: Duration,
    /// Longest wait for any byte once connected. Default: 30 s.
    pub read_timeout: Duration,
    /// Total time for one header-level check: every request, redirect, retry and wait
    /// included; for an index, the index and all its shards together. Default: 120 s.
    pub total_timeout: Duration,
    /// Total time for one deep check, the whole body included; for an index, the index and
    /// all its shards together. `None` = no limit beyond the minimum speed (a server that
    /// sends just above it can then hold the check for as long as it likes). Default: 1 hour,
    /// which takes a 50 GB file (the hub's largest) at 14 MB/s, a 5 GB shard at 1.4 MB/s.
    pub stream_timeout: Option<Duration>,
    /// A body that delivers fewer than this many bytes in a whole
    /// [`RemoteOptions::min_speed_window`] is dropped (a slow drip). Default: 1024.
    pub min_speed_bytes: u64,
    /// See [`RemoteOptions::min_speed_bytes`]. Default: 30 s.
    pub min_speed_window: Duration,
    /// Most redirects followed for one request. Default: 10.
    pub max_redirects: u32,
    /// Most retries of one request after 429, 500, 502, 503, 504 or a failed connection.
    /// Default: 3.
    pub max_retries: u32,
    /// First backoff; each retry doubles it, up to 8 times this. Default: 250 ms.
    pub backoff: Duration,
    /// Longest wait a server may ask for (`Retry-After`, or the `t` of a `RateLimit` header
    /// that says no request is left); a server asking for more, or for a wait past the
    /// address's deadline, is given up on at once ("could not check"). Default: 120 s.
    pub max_retry_after: Duration,
    /// Bytes asked for by the first range request of a header-level check; a header that
    /// fits costs one request. Default: 65,536.
    pub first_fetch: u64,
    /// Most shards of an index fetched at the same time (at least 1); they are still handed
    /// to the set's check, and reported, in the index's order. A set fetches one shard at a
    /// time on its own and the others with helpers of the client's pool
    /// ([`RemoteOptions::shard_helpers`]), also those the other sets give back once its
    /// names are all planned. Default: [`DEFAULT_URL_JOBS`](crate::options::DEFAULT_URL_JOBS)
    /// (so the last set of a run can use the whole pool; it was 16).
    pub max_concurrent_shards: usize,
    /// Shard fetches the sets checked with this client may run beside their own one, all the
    /// sets together: a set fetches up to [`RemoteOptions::max_concurrent_shards`] shards at
    /// a time while helpers are free, and one when none is. So a run of many sets sends at
    /// most its URL jobs plus this many requests at once, however many sets it checks; a
    /// helper goes back to the pool when its set has no shard left to fetch. Default:
    /// [`DEFAULT_URL_JOBS`](crate::options::DEFAULT_URL_JOBS).
    pub shard_helpers: usize,
    /// Idle connections kept open per host for the next request: one for each job that may
    /// talk to a host at once, so a run of many files on one host opens about that many
    /// connections in all. Default: [`DEFAULT_URL_JOBS`](crate::options::DEFAULT_URL_JOBS)
    /// plus the default [`RemoteOptions::shard_helpers`].
    pub connections_per_host: usize,
    /// Header bytes the shards of one set fetched ahead may hold together: a shard whose
    /// header would pass it waits for the ones before it, so memory follows the largest
    /// header plus this, not the number of shards fetched at once. Default: 16 MiB.
    pub shard_header_budget: u64,
    /// Most HTTP requests this client sends in all (redirects and retries included), over
    /// every check made with it: a check that would pass it fails with
    /// [`ErrorKind::Budget`]. Default: 1,000,000.
    pub max_requests: u64,
    headers: Vec<(String, String)>,
    hf_token: Option<String>,
    hf_endpoint: String,
    ca_bundle: Option<Vec<u8>>,
    /// How the budget's option is named in the message of a spent budget.
    budget_option: &'static str,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
            total_timeout: Duration::from_secs(120),
            stream_timeout: Some(Duration::from_secs(3600)),
            min_speed_bytes: 1024,
            min_speed_window: Duration::from_secs(30),
            max_redirects: 10,
            max_retries: 3,
            backoff: Duration::from_millis(250),
            max_retry_after: Duration::from_secs(120),
            first_fetch: 64 * 1024,
            max_concurrent_shards: crate::options::DEFAULT_URL_JOBS,
            shard_helpers: crate::options::DEFAULT_URL_JOBS,
            connections_per_host: crate::options::DEFAULT_URL_JOBS * 2,
            shard_header_budget: 16 << 20,
            max_requests: 1_000_000,
            headers: Vec::new(),
            hf_token: None,
            hf_endpoint: DEFAULT_HF_ENDPOINT.to_owned(),
            ca_bundle: None,
            budget_option: crate::options::Face::Cli.name(crate::options::Opt::MaxRequests),
        }
    }
}

impl fmt::Debug for RemoteOptions {
    /// Header names, never values; whether a token is set, never the token.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteOptions")
            .field("connect_timeout", &self.connect_timeout)
            .field("read_timeout", &self.read_timeout)
            .field("total_timeout", &self.total_timeout)
            .field("stream_timeout", &self.stream_timeout)
            .field("min_speed_bytes", &self.min_speed_bytes)
            .field("min_speed_window", &self.min_speed_window)
            .field("max_redirects", &self.max_redirects)
            .field("max_retries", &self.max_retries)
            .field("backoff", &self.backoff)
            .field("max_retry_after", &self.max_retry_after)
            .field("first_fetch", &self.first_fetch)
            .field("max_concurrent_shards", &self.max_concurrent_shards)
            .field("shard_helpers", &self.shard_helpers)
            .field("connections_per_host", &self.connections_per_host)
            .field("shard_header_budget", &self.shard_header_budget)
            .field("max_requests", &self.max_requests)
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("hf_token", &self.hf_token.as_ref().map(|_| "<set>"))
            .field("hf_endpoint", &self.hf_endpoint)
            .field("ca_bundle", &self.ca_bundle.as_ref().map(Vec::len))
            .finish()
    }
}

impl RemoteOptions {
    /// The defaults, plus `HF_TOKEN` (sent only to the Hugging Face endpoint) and
    /// `HF_ENDPOINT` (the endpoint, default [`DEFAULT_HF_ENDPOINT`]) from the environment.
    pub fn from_env() -> Self {
        let mut o = Self::default();
        if let Ok(t) = std::env::var("HF_TOKEN") {
            if !t.trim().is_empty() {
                o.hf_token = Some(t.trim().to_owned());
            }
        }
        if let Ok(e) = std::env::var("HF_ENDPOINT") {
            if !e.trim().is_empty() {
                o.hf_endpoint = e.trim().to_owned();
            }
        }
        o
    }

    /// Name the option that raises [`RemoteOptions::max_requests`] as the caller's face spells
    /// it, for the message of a spent budget (default: `--max-requests`).
    pub fn budget_option(mut self, name: &'static str) -> Self {
        self.budget_option = name;
        self
    }

    /// Add a header sent with every request to the origin of the address being checked
    /// (never after a redirect to another origin). The value is treated as a secret. Errors
    /// for a name that is not an HTTP token, a header that frames the exchange (`Host`,
    /// `Range`, `Accept-Encoding`, ...), or a value with a control character.
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, RemoteError> {
        let setup = |m: &str| RemoteError::new(ErrorKind::Setup, m);
        let token_byte = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        if name.is_empty() || !name.bytes().all(token_byte) {
            return Err(setup(
                "a header name must be an HTTP token (letters, digits, -)",
            ));
        }
        let lower = name.to_ascii_lowercase();
        if RESERVED_HEADERS.contains(&lower.as_str()) {
            return Err(setup("this header frames the exchange and cannot be set"));
        }
        if !value.bytes().all(header_value_byte) {
            return Err(setup(
                "a header value must be printable ASCII (no control or non-ASCII character)",
            ));
        }
        self.headers.push((lower, value.trim().to_owned()));
        Ok(self)
    }

    /// Set (or clear) the Hugging Face token.
    pub fn hf_token(mut self, token: Option<&str>) -> Self {
        self.hf_token = token.map(str::to_owned);
        self
    }

    /// Set the Hugging Face endpoint (`HF_ENDPOINT`): scheme, host and optional path prefix.
    pub fn hf_endpoint(mut self, endpoint: &str) -> Self {
        self.hf_endpoint = endpoint.to_owned();
        self
    }

    /// Trust the CA certificates of this PEM bundle instead of the built-in roots.
    pub fn ca_bundle_pem(mut self, pem: Vec<u8>) -> Self {
        self.ca_bundle = Some(pem);
        self
    }

    /// The wait before retry number `n` (1-based).
    fn backoff(&self, n: u32) -> Duration {
        let factor = 1u32 << n.saturating_sub(1).min(3);
        self.backoff.saturating_mul(factor)
    }

    /// `message` with every credential value replaced.
    fn scrub(&self, message: &str) -> String {
        let mut out = message.to_owned();
        let secrets = self
            .headers
            .iter()
            .map(|(_, v)| v.as_str())
            .chain(self.hf_token.as_deref());
        for s in secrets {
            if s.len() >= 4 {
                out = out.replace(s, "<redacted>");
            }
        }
        out
    }
}

/// How much of a file to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// The header with range requests, the data region's length from the file's length.
    Header,
    /// The whole body streamed once: the strict verdict and the deep scan.
    Deep {
        /// Compute the SHA-256 of the file in the same pass.
        sha256: bool,
    },
}

impl Depth {
    pub(crate) fn timeout(self, o: &RemoteOptions) -> Option<Duration> {
        match self {
            Depth::Header => Some(o.total_timeout),
            Depth::Deep { .. } => o.stream_timeout,
        }
    }
}

pub use crate::event::Cost;

/// The kind of a [`RemoteError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The address cannot be used (not a URL, user information in it, a bad `hf://` path).
    Address,
    /// The options cannot be used (a bad header, a CA bundle without certificates).
    Setup,
    /// The server answered with a status that is not the file: 4xx, 5xx (after retries), or
    /// another unexpected one. [`RemoteError::http_status`] gives it.
    Status,
    /// A redirect loop, too many redirects, or a redirect without a usable target.
    Redirect,
    /// A deadline passed, or the body was slower than the minimum speed.
    Timeout,
    /// The connection failed or broke.
    Network,
    /// The TLS handshake failed (an untrusted certificate, a wrong host name, ...).
    Tls,
    /// The response broke HTTP's promises: a body shorter or longer than announced, a range
    /// other than asked for, a content coding, a file that changed between requests.
    Response,
    /// A shard of an index could not be checked (for a reason other than time: a shard, or
    /// the set, out of time is [`ErrorKind::Timeout`]).
    Shard,
    /// The client's budget of requests ([`RemoteOptions::max_requests`]) is spent.
    Budget,
    /// A response (any of a file's, or of a set's index and shards) named another commit in
    /// `X-Repo-Commit` than the one asked for (`hf://org/repo@COMMIT/...`) or than the first
    /// response named: the bytes are not the ones asked for.
    CommitMoved,
}

/// Why an address could not be checked: says nothing about the file's validity. The message
/// never holds a credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteError {
    kind: ErrorKind,
    status: Option<u16>,
    message: String,
}

impl RemoteError {
    fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        RemoteError {
            kind,
            status: None,
            message: message.into(),
        }
    }

    fn status(status: u16, message: impl Into<String>) -> Self {
        RemoteError {
            kind: ErrorKind::Status,
            status: Some(status),
            message: message.into(),
        }
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The HTTP status, for [`ErrorKind::Status`].
    pub fn http_status(&self) -> Option<u16> {
        self.status
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for RemoteError {
    /// The message (a printer adds its own "not checked:" or "could not check:").
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RemoteError {}

impl ErrorKind {
    /// A stable code for machines, the `read_error` of a record whose URL could not be checked
    /// (`docs/json-output.md`): `"address"`, `"setup"`, `"http_status"` (with the status),
    /// `"redirect"`, `"timeout"`, `"network"`, `"tls"`, `"response"`, `"shard"`, `"budget"`
    /// or `"commit_moved"`.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::Address => "address",
            ErrorKind::Setup => "setup",
            ErrorKind::Status => "http_status",
            ErrorKind::Redirect => "redirect",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Network => "network",
            ErrorKind::Tls => "tls",
            ErrorKind::Response => "response",
            ErrorKind::Shard => "shard",
            ErrorKind::Budget => "budget",
            ErrorKind::CommitMoved => "commit_moved",
        }
    }
}

/// "Could not check", typed: a read error of kind [`ReadErrorKind::Io`] whose code is the
/// remote kind's ([`ErrorKind::code`]) and which keeps the HTTP status, so that a record tells
/// a timeout from a 404 from a TLS failure without its message being parsed.
impl From<RemoteError> for ReadError {
    fn from(e: RemoteError) -> Self {
        let r = ReadError::new(ReadErrorKind::Io, e.message).with_code(e.kind.code());
        match e.status {
            Some(s) => r.with_http_status(s),
            None => r,
        }
    }
}

/// The verdict on one file.
#[derive(Debug)]
pub struct FileCheck {
    /// The one checker's result: the same as the local check of the same bytes (with
    /// [`Depth::Deep`], the deep scan and the hash too). Its `file_len` is the file's length
    /// (the record's `size`): the one the server announced, else the one the stream showed,
    /// else unknown (`None`: a stream of unannounced length whose check ended early).
    pub checked: Checked<'static>,
}

/// The verdict on a sharded checkpoint.
#[derive(Debug)]
pub struct IndexCheck {
    /// The set's report, as the local check gives it.
    pub report: IndexReport,
    /// What each shard cost, by the name the index gives it, in the order checked.
    pub shards: Vec<(String, Cost)>,
}

/// What an address held.
#[derive(Debug)]
pub enum Found {
    /// A safetensors file.
    File(Box<FileCheck>),
    /// An index and its shards.
    Index(Box<IndexCheck>),
}

/// The result of [`Remote::check`].
#[derive(Debug)]
pub struct UrlCheck {
    /// The address as given, for display: user information removed, a query shown as `?...`.
    pub url: String,
    /// The `http(s)` URL requested (differs from [`UrlCheck::url`] for `hf://`), for display.
    pub resolved: Option<String>,
    /// The verdict, or why there is none (exit 2 in the command line).
    pub outcome: Result<Found, RemoteError>,
    /// Requests and bytes, over the index and its shards for an index.
    pub cost: Cost,
    /// What the hub said about the file (or the index): its commit, ETag, SHA-256.
    pub hub: HubInfo,
}

/// What a repository's listing tells the check of one of its files or sets.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Known {
    /// The `*.safetensors` files in an index's directory (by file name), for
    /// `INDEX-SHARD-UNLISTED`; `None`: not known (a server lists no directory).
    pub listed: Option<Vec<String>>,
    /// The SHA-256 (hex) the listing publishes for files of the address's directory, by file
    /// name: compared with the file's own with `sha256`.
    pub sha256: std::collections::HashMap<String, String>,
    /// Indexes of the address's directory already fetched (by the repository's plan, for the
    /// names of their shards), by file name: a set's check takes its index from here instead
    /// of fetching it again.
    pub indexes: std::collections::HashMap<String, FetchedIndex>,
    /// The SHA-256 the user gives for the file at the address (`--expect-sha256`): `(source,
    /// hex)`, the source named as the face names the option. One more published id.
    pub expected: Option<(&'static str, String)>,
    /// The deadline of the whole repository the address was listed from: a check of one of
    /// its files or sets ends by it too (one `--timeout` for the repository).
    deadline: Option<Deadline>,
}

/// A shard of a set named by URL as it was fetched, handed on with its outcome: its address
/// (as shown), what it cost, and what the server said about it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ShardFetch {
    /// The shard's URL, as every output shows an address.
    pub url: String,
    /// What fetching (and reading) it cost.
    pub cost: Cost,
    /// What the server said about it: commit, entity tag, published SHA-256.
    pub hub: HubInfo,
}

/// An index fetched ahead of its check: its bytes, what the hub said about it and what
/// fetching it cost (counted in the set's cost when the check uses it).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FetchedIndex {
    /// At most one byte past the header limit of the configuration it was fetched under.
    pub bytes: std::sync::Arc<[u8]>,
    /// What the hub said about it.
    pub hub: HubInfo,
    /// What fetching it cost.
    pub cost: Cost,
}

/// A client that checks files by URL. Cheap to share between threads (`&Remote` is `Sync`).
pub struct Remote {
    agent: ureq::Agent,
    options: RemoteOptions,
    /// Requests sent so far, against [`RemoteOptions::max_requests`].
    sent: std::sync::atomic::AtomicU64,
    /// Until when each origin asked every job to wait (a 429's `Retry-After`, a `RateLimit`
    /// with no request left, or fewer left than in flight): one job told to wait holds back
    /// all the others.
    paused: http::Pauses,
    /// The helpers free of [`RemoteOptions::shard_helpers`]: the sets' shard fetches beside
    /// their own one.
    helpers: shards::HelperPool,
    hf_endpoint: Url,
    hf_origin: Origin,
}

impl fmt::Debug for Remote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Remote")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Remote {
    /// A client with these options. Errors for an unusable `HF_ENDPOINT` or CA bundle.
    pub fn new(options: RemoteOptions) -> Result<Remote, RemoteError> {
        let hf_endpoint = Url::parse(options.hf_endpoint.trim()).map_err(|e| {
            RemoteError::new(ErrorKind::Setup, format!("the Hugging Face endpoint: {e}"))
        })?;
        let hf_origin = hf_endpoint.origin();
        if let Some(t) = &options.hf_token {
            if !t.bytes().all(header_value_byte) {
                return Err(RemoteError::new(
                    ErrorKind::Setup,
                    "the Hugging Face token holds a character not allowed in a header",
                ));
            }
        }
        let mut tls = ureq::tls::TlsConfig::builder();
        if let Some(pem) = &options.ca_bundle {
            let mut certs = Vec::new();
            for item in ureq::tls::parse_pem(pem) {
                match item {
                    Ok(ureq::tls::PemItem::Certificate(c)) => certs.push(c),
                    Ok(_) => {}
                    Err(_) => {
                        return Err(RemoteError::new(
                            ErrorKind::Setup,
                            "the CA bundle is not valid PEM",
                        ))
                    }
                }
            }
            if certs.is_empty() {
                return Err(RemoteError::new(
                    ErrorKind::Setup,
                    "the CA bundle holds no certificate",
                ));
            }
            tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&certs));
        }
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(format!("stcheck/{}", env!("CARGO_PKG_VERSION")))
            .timeout_resolve(Some(options.connect_timeout))
            .timeout_connect(Some(options.connect_timeout))
            .timeout_per_read(Some(options.read_timeout))
            // A response head dripped a byte at a time: bounded even without a deadline.
            .timeout_send_request(Some(options.total_timeout))
            .timeout_recv_response(Some(options.total_timeout))
            .timeout_per_write(Some(options.read_timeout))
            // ureq keeps 3 idle connections per host and 10 in all by default: a run of 32
            // jobs on one host then opened a new connection for about every third file.
            .max_idle_connections_per_host(options.connections_per_host.max(1))
            .max_idle_connections(options.connections_per_host.max(1).saturating_mul(4))
            .tls_config(tls.build())
            .build()
            .new_agent();
        Ok(Remote {
            agent,
            helpers: shards::HelperPool::new(options.shard_helpers),
            options,
            sent: std::sync::atomic::AtomicU64::new(0),
            paused: http::Pauses::default(),
            hf_endpoint,
            hf_origin,
        })
    }

    /// The options.
    pub fn options(&self) -> &RemoteOptions {
        &self.options
    }

    /// Requests sent so far by this client.
    pub fn requests_sent(&self) -> u64 {
        self.sent.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Count one request against the budget; `Err` once it is spent.
    fn spend_request(&self) -> Result<(), RemoteError> {
        use std::sync::atomic::Ordering;
        let max = self.options.max_requests;
        let took = self
            .sent
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < max).then_some(n + 1)
            });
        took.map(|_| ()).map_err(|_| {
            RemoteError::new(
                ErrorKind::Budget,
                format!(
                    "the run's budget of {max} HTTP requests is spent ({} raises it)",
                    self.options.budget_option
                ),
            )
        })
    }

    /// Check the file or index at `address` (`http://`, `https://` or `hf://`) under `config`.
    /// Never panics; a server's misbehaviour is an `Err` outcome, never a verdict.
    pub fn check(&self, address: &str, config: &Config, depth: Depth) -> UrlCheck {
        self.check_with(address, config, depth, &mut |_, _, _| {})
    }

    /// [`Remote::check`], handing each shard of an index to `on_shard` as it is checked (as
    /// [`stcheck::index::check_index_with`] does), for output.
    pub fn check_with(
        &self,
        address: &str,
        config: &Config,
        depth: Depth,
        on_shard: &mut dyn FnMut(&str, ShardOutcome<'_, '_>, Option<&ShardFetch>),
    ) -> UrlCheck {
        self.check_known(address, config, depth, &Known::default(), on_shard)
    }

    /// [`Remote::check_with`], with what a repository's listing says about the address.
    pub fn check_known(
        &self,
        address: &str,
        config: &Config,
        depth: Depth,
        known: &Known,
        on_shard: &mut dyn FnMut(&str, ShardOutcome<'_, '_>, Option<&ShardFetch>),
    ) -> UrlCheck {
        let shown = crate::target::shown_url(address);
        let url = match self.resolve(address) {
            Ok(u) => u,
            Err(e) => {
                return UrlCheck {
                    url: shown,
                    resolved: None,
                    outcome: Err(e),
                    cost: Cost::default(),
                    hub: HubInfo::default(),
                }
            }
        };
        let is_index = fetch::names_index(&url);
        // One deadline for everything the address needs: a file with its data, or an index
        // with all its shards.
        let what = match is_index {
            true => Deadline::SET,
            false => Deadline::FILE,
        };
        let deadline = Deadline::after(depth.timeout(&self.options), what).within(known.deadline);
        let mut session = Session::new(self, &url, deadline).pinned(pinned_commit(address));
        let outcome = if is_index {
            shards::check_index(self, &mut session, &url, config, depth, known, on_shard)
        } else {
            let published = known.sha256.get(&url.file_name()).map(String::as_str);
            let expected = known.expected.as_ref().map(|(s, id)| (*s, id.as_str()));
            fetch::check_file(&mut session, &url, config, depth, published, expected)
                .map(|f| Found::File(Box::new(f)))
        };
        let outcome = outcome.map_err(|e| RemoteError {
            message: self.options.scrub(&e.message),
            ..e
        });
        UrlCheck {
            url: shown,
            resolved: Some(url.shown()),
            outcome,
            cost: session.cost,
            hub: session.hub,
        }
    }

    /// The index at `address` (at most one byte past `config`'s header limit), for a caller
    /// that needs the names of its shards; handed to the set's check through
    /// [`Known::indexes`], it is not fetched again.
    pub fn fetch_index(&self, address: &str, config: &Config) -> Result<FetchedIndex, RemoteError> {
        self.fetch_index_within(address, config, None)
    }

    /// [`Remote::fetch_index`], ending by `outer` too (a repository's deadline).
    fn fetch_index_within(
        &self,
        address: &str,
        config: &Config,
        outer: Option<Deadline>,
    ) -> Result<FetchedIndex, RemoteError> {
        let url = self.resolve(address)?;
        let deadline =
            Deadline::after(Some(self.options.total_timeout), Deadline::FILE).within(outer);
        let mut session = Session::new(self, &url, deadline).pinned(pinned_commit(address));
        match fetch::fetch_index_bytes(&mut session, &url, config) {
            Ok(bytes) => Ok(FetchedIndex {
                bytes: bytes.into(),
                hub: session.hub,
                cost: session.cost,
            }),
            Err(e) => Err(RemoteError {
                message: self.options.scrub(&e.message),
                ..e
            }),
        }
    }

    fn resolve(&self, address: &str) -> Result<Url, RemoteError> {
        let bad = |e: String| RemoteError::new(ErrorKind::Address, e);
        if address
            .get(..5)
            .is_some_and(|p| p.eq_ignore_ascii_case("hf://"))
        {
            let hf = HfAddress::parse(address).map_err(bad)?;
            if hf.is_repository() {
                return Err(bad(
                    "the address names a whole repository: its files are listed by the run \
                     (Gate::targets), not checked as one file"
                        .into(),
                ));
            }
            hf.resolve_url(&self.hf_endpoint).map_err(bad)
        } else {
            Url::parse(address).map_err(bad)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_debug_and_scrub_hide_values() {
        let o = RemoteOptions::default()
            .header("X-Api-Key", "s3cret-value")
            .expect("a valid header")
            .hf_token(Some("hf_tokentoken"));
        let d = format!("{o:?}");
        assert!(!d.contains("s3cret") && !d.contains("tokentoken"), "{d}");
        assert!(d.contains("x-api-key"));
        assert_eq!(
            o.scrub("a s3cret-value and hf_tokentoken"),
            "a <redacted> and <redacted>"
        );
        assert!(RemoteOptions::default()
            .header("Range", "bytes=0-")
            .is_err());
        assert!(RemoteOptions::default().header("X-A", "a\r\nb").is_err());
        assert!(RemoteOptions::default().header("X A", "a").is_err());
    }

    #[test]
    fn backoff_doubles_and_stops_growing() {
        let o = RemoteOptions::default();
        let ms: Vec<u128> = (1..=6).map(|n| o.backoff(n).as_millis()).collect();
        assert_eq!(ms, [250, 500, 1000, 2000, 2000, 2000]);
    }

    #[test]
    fn a_client_is_shared_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Remote>();
        send_sync::<UrlCheck>();
    }

    #[test]
    fn bad_credentials_are_refused_up_front() {
        for v in ["a\u{e9}", "a\nb", "\u{7f}"] {
            assert!(RemoteOptions::default().header("X-A", v).is_err(), "{v:?}");
            let e = Remote::new(RemoteOptions::default().hf_token(Some(v))).expect_err("token");
            assert_eq!(e.kind(), ErrorKind::Setup);
            assert!(!e.message().contains(v));
        }
        assert!(Remote::new(RemoteOptions::default().hf_endpoint("ftp://x")).is_err());
    }

    #[test]
    fn recognises_addresses() {
        assert!(is_url("HTTPS://x/y") && is_url("hf://o/r/f") && is_url("http://x"));
        assert!(!is_url("./http://x") && !is_url("model.safetensors") && !is_url("hf:/x"));
    }
}
