//! One file's HTTP exchanges: redirects followed by hand (so credentials go only where they
//! belong), bounded retries with backoff, the deadline, and the cost.

use std::io::{self, Read};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ureq::http::{HeaderMap, Method};

use super::address::{Origin, Url};
use super::budget::{header_share, Permit, Slot};
pub(super) use super::deadline::Deadline;
use super::{Cost, ErrorKind, Remote, RemoteError};

/// A response whose status is 2xx or 416 (redirects, retries and other statuses are handled).
pub(super) struct Response {
    pub(super) status: u16,
    pub(super) headers: HeaderMap,
    body: ureq::Body,
}

impl Response {
    /// A header's value, if present and text.
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// `Content-Length`, if present and a number. An unparsable value is an error.
    pub(super) fn content_length(&self) -> Result<Option<u64>, RemoteError> {
        match self.headers.get("content-length") {
            None => Ok(None),
            Some(v) => v
                .to_str()
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .map(Some)
                .ok_or_else(|| {
                    RemoteError::new(
                        ErrorKind::Response,
                        "the Content-Length header is not a number",
                    )
                }),
        }
    }
}

/// The exchanges made for one file (or one index): where credentials may go, the deadline,
/// and what it cost so far.
pub(super) struct Session<'r> {
    remote: &'r Remote,
    /// Credentials are sent only to this origin, the one the user named.
    home: Origin,
    /// The URL the job started at (messages name a URL only when it is another one).
    start: Url,
    deadline: Deadline,
    /// A shard fetched ahead for its set: the set's budget of header bytes and its end.
    slot: Option<Slot<'r>>,
    /// The header bytes this shard holds of its set's budget, once its length is known.
    pub(super) permit: Option<Permit<'r>>,
    pub(super) cost: Cost,
    /// What the hub said about the file: the commit, the LFS object's SHA-256, the ETag.
    pub(super) hub: super::HubInfo,
    /// The commit every response of the address's origin must name in `X-Repo-Commit`, if it
    /// names one: the address's own (`hf://org/repo@COMMIT/...`), else the first one named.
    pin: Option<String>,
    /// Redirects to another origin refused (the hub's API: a listing is read from the hub).
    home_only: bool,
}

/// Most bytes of a body read only to keep its connection (see [`Session::discard`]).
pub(super) const DISCARD_LIMIT: u64 = 64 * 1024;

/// Most origins remembered with a wait they asked for or requests in flight (the oldest idle
/// one is forgotten first; past that a new origin is not paced).
const MAX_PAUSED_ORIGINS: usize = 64;

/// What the client knows of one origin's rate limit.
#[derive(Debug)]
struct Paced {
    origin: Origin,
    /// No request before this (a 429's `Retry-After`, a `RateLimit` with `r=0`).
    until: Option<Instant>,
    /// Requests sent and not yet answered.
    in_flight: usize,
    /// Requests the origin still takes before the end of its window, as its `RateLimit`
    /// said less the requests sent since (see [`Pauses::answered`]), and that end.
    left: Option<(u64, Instant)>,
    /// `left` started from the answer to a request sent alone: it is exact (for this client).
    exact: bool,
    /// The origin's answers carry a `RateLimit`: once a window has ended, the first request
    /// goes alone (the probe) and the others wait for its answer.
    limited: bool,
    /// The probe is on its way.
    probe: bool,
}

impl Paced {
    fn idle(&self, now: Instant) -> bool {
        self.in_flight == 0
            && self.until.is_none_or(|t| t <= now)
            && self.left.is_none_or(|(_, t)| t <= now)
    }
}

/// Until when each origin asked the client's jobs to wait, and how many requests its
/// `RateLimit` header leaves: one job told to wait holds back all the others, and when fewer
/// requests are left than are on their way the jobs send only those and wait for the window
/// to end (the 429s a closing window answered were the requests in flight past its quota).
///
/// How many are left is known exactly only from an answer to a request that was alone on its
/// way: the others in flight may or may not have been counted when the server answered. So the
/// first window's count takes every request in flight from what the server says is left (less
/// than there may be, never more); when that count is spent, the jobs wait for the requests in
/// flight and then one request alone (the probe) counts again. Once a window has ended the
/// next one starts with a probe too. A probe's answer gives the count the others then spend one
/// by one (a round trip each time; a window of the hub is 5 minutes).
#[derive(Debug, Default)]
pub(super) struct Pauses {
    origins: Mutex<Vec<Paced>>,
    /// Told when a probe is answered.
    probed: std::sync::Condvar,
}

/// Why a request may not leave yet.
#[derive(Debug)]
pub(super) enum Hold {
    /// For this long.
    For(Duration),
    /// Until the answer to the window's first request (the probe) arrives.
    Probe,
}

/// A request on its way to an origin (counted in flight until answered or dropped).
pub(super) struct Flight<'p> {
    pauses: &'p Pauses,
    origin: Option<Origin>,
    probe: bool,
}

impl Flight<'_> {
    /// The answer's head arrived: what its `RateLimit` header says is left is paced.
    pub(super) fn answered(mut self, headers: &HeaderMap, max_wait: Duration) {
        if let Some(origin) = self.origin.take() {
            let left = rate_limit_left(headers);
            self.pauses.answered(&origin, left, max_wait, self.probe);
        }
    }
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        if let Some(origin) = self.origin.take() {
            self.pauses
                .answered(&origin, None, Duration::ZERO, self.probe);
        }
    }
}

impl Pauses {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Paced>> {
        self.origins.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The entry of `origin`, made if there is room (an idle one forgotten if need be).
    fn entry<'v>(all: &'v mut Vec<Paced>, origin: &Origin, now: Instant) -> Option<&'v mut Paced> {
        if let Some(i) = all.iter().position(|p| p.origin == *origin) {
            return all.get_mut(i);
        }
        if all.len() >= MAX_PAUSED_ORIGINS {
            let i = all.iter().position(|p| p.idle(now))?;
            all.swap_remove(i);
        }
        all.push(Paced {
            origin: origin.clone(),
            until: None,
            in_flight: 0,
            left: None,
            exact: false,
            limited: false,
            probe: false,
        });
        all.last_mut()
    }

    /// `origin` takes no request for `d` from now (a later end wins over an earlier one).
    pub(super) fn hold(&self, origin: &Origin, d: Duration) {
        let now = Instant::now();
        let Some(end) = now.checked_add(d) else {
            return;
        };
        let mut all = self.lock();
        if let Some(p) = Self::entry(&mut all, origin, now) {
            p.until = Some(p.until.map_or(end, |t| t.max(end)));
        }
    }

    /// [`Pauses::hold`], unless `origin`'s window is counted exactly (from its probe's
    /// answer): no request is left in it, and the count holds the jobs until its end.
    pub(super) fn hold_unless_counted(&self, origin: &Origin, d: Duration) {
        let now = Instant::now();
        let counted = self.lock().iter().any(|p| {
            p.origin == *origin && p.exact && p.left.is_some_and(|(n, end)| n == 0 && end > now)
        });
        if !counted {
            self.hold(origin, d);
        }
    }

    /// A request to `origin` may leave now (`Ok`, counted in flight and against what its
    /// `RateLimit` left), or not yet.
    pub(super) fn depart(&self, origin: &Origin) -> Result<Flight<'_>, Hold> {
        let now = Instant::now();
        let mut all = self.lock();
        let Some(p) = Self::entry(&mut all, origin, now) else {
            // No room to remember it: not paced (every entry has requests in flight).
            return Ok(Flight {
                pauses: self,
                origin: None,
                probe: false,
            });
        };
        if let Some(d) = p.until.and_then(|t| t.checked_duration_since(now)) {
            if !d.is_zero() {
                return Err(Hold::For(d));
            }
        }
        let mut probe = false;
        match p.left {
            Some((_, end)) if end <= now => {
                p.left = None;
                p.exact = false;
                if p.probe {
                    return Err(Hold::Probe);
                }
                probe = true;
            }
            // Counted conservatively and spent: once nothing is in flight, one request
            // alone counts what is really left (the others wait for its answer).
            Some((0, _)) if !p.exact && (p.probe || p.in_flight > 0) => return Err(Hold::Probe),
            Some((0, _)) if !p.exact => probe = true,
            Some((0, end)) => return Err(Hold::For(end - now)),
            Some((ref mut n, _)) => *n -= 1,
            None if p.probe => return Err(Hold::Probe),
            None => probe = p.limited,
        }
        p.probe |= probe;
        p.in_flight += 1;
        Ok(Flight {
            pauses: self,
            origin: Some(origin.clone()),
            probe,
        })
    }

    /// Wait (at most `most`) for the answer to `origin`'s probe, or for its requests in
    /// flight to be answered when a conservative count is spent.
    pub(super) fn await_probe(&self, origin: &Origin, most: Duration) {
        let all = self.lock();
        let _ = self.probed.wait_timeout_while(all, most, |all| {
            all.iter().any(|p| {
                p.origin == *origin
                    && (p.probe
                        || (!p.exact && p.in_flight > 0 && p.left.is_some_and(|(n, _)| n == 0)))
            })
        });
    }

    /// A request to `origin` was answered (or failed), its `RateLimit` saying `left` requests
    /// remain for the given time. In a window counted from a probe's answer the count kept is
    /// exact, and an answer saying fewer are left (another client's requests) lowers it;
    /// otherwise the requests still in flight may not have reached the server when it
    /// counted: they are taken from what it says is left, and a smaller count than the one
    /// kept wins until the kept window ends (answers arrive out of order).
    fn answered(
        &self,
        origin: &Origin,
        left: Option<(u64, Duration)>,
        max_wait: Duration,
        probe: bool,
    ) {
        let now = Instant::now();
        let mut all = self.lock();
        let Some(p) = all.iter_mut().find(|p| p.origin == *origin) else {
            return;
        };
        p.in_flight = p.in_flight.saturating_sub(1);
        if probe || (p.in_flight == 0 && !p.exact) {
            p.probe = false;
            self.probed.notify_all();
        }
        let Some((r, t)) = left else {
            // A probe answered without a RateLimit: the origin no longer says it limits.
            if probe {
                p.limited = false;
            }
            return;
        };
        p.limited = true;
        let Some(end) = now.checked_add(t.min(max_wait)) else {
            return;
        };
        let unsure = r.saturating_sub(p.in_flight as u64);
        p.left = match p.left {
            // A probe's answer counts anew (it went alone: nothing else was in flight).
            Some((kept, kept_end)) if kept_end > now && !probe => {
                let said = if p.exact { r } else { unsure };
                Some((kept.min(said), kept_end))
            }
            // A new window, or a probe's count of this one (which ends when it did).
            kept => {
                let end = match kept {
                    Some((_, kept_end)) if kept_end > now => kept_end.min(end),
                    _ => end,
                };
                p.exact = probe && p.in_flight == 0;
                Some((if p.exact { r } else { unsure }, end))
            }
        };
    }
}

/// `Retry-After` in seconds (the HTTP-date form is not read: the backoff applies).
fn retry_after(headers: &HeaderMap) -> Option<u64> {
    headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// Each item of the `RateLimit` headers (draft-ietf-httpapi-ratelimit-headers, as the
/// Hugging Face hub sends them: `"resolvers";r=0;t=55`) that names both the requests left
/// (`r`) and the seconds until the window ends (`t`), as `(r, t)`.
fn rate_limit_items(headers: &HeaderMap, mut each: impl FnMut(u64, u64)) {
    for value in headers.get_all("ratelimit") {
        let Ok(text) = value.to_str() else { continue };
        for item in text.split(',') {
            let (mut r, mut t) = (None, None);
            for param in item.split(';').skip(1) {
                let Some((k, v)) = param.split_once('=') else {
                    continue;
                };
                let v = v.trim().parse::<u64>().ok();
                match k.trim() {
                    "r" => r = v,
                    "t" => t = v,
                    _ => {}
                }
            }
            if let (Some(r), Some(t)) = (r, t) {
                each(r, t);
            }
        }
    }
}

/// The wait a `RateLimit` header asks for: the longest `t` of an item with no request left
/// (`r=0`). `None` when every item has requests left, or for a header that does not parse.
pub(super) fn rate_limit_reset(headers: &HeaderMap) -> Option<Duration> {
    let mut wait: Option<u64> = None;
    rate_limit_items(headers, |r, t| {
        if r == 0 {
            wait = Some(wait.map_or(t, |w| w.max(t)));
        }
    });
    wait.filter(|&t| t > 0).map(Duration::from_secs)
}

/// The fewest requests a `RateLimit` header leaves (of its items with a window `t` > 0) and
/// the time until that item's window ends.
fn rate_limit_left(headers: &HeaderMap) -> Option<(u64, Duration)> {
    let mut least: Option<(u64, u64)> = None;
    rate_limit_items(headers, |r, t| {
        if t > 0 && least.is_none_or(|(lr, _)| r < lr) {
            least = Some((r, t));
        }
    });
    least.map(|(r, t)| (r, Duration::from_secs(t)))
}

/// Statuses retried with backoff.
fn retryable(status: u16) -> bool {
    matches!(status, 429 | 500 | 502 | 503 | 504)
}

/// The reason phrase of common statuses, for messages.
fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        410 => "Gone",
        416 => "Range Not Satisfiable",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

fn status_text(status: u16) -> String {
    match reason(status) {
        "" => format!("HTTP {status}"),
        r => format!("HTTP {status} {r}"),
    }
}

impl<'r> Session<'r> {
    /// A session for a job that starts at `url`, to be over by `deadline`.
    pub(super) fn new(remote: &'r Remote, url: &Url, deadline: Deadline) -> Self {
        Session {
            remote,
            home: url.origin(),
            start: url.clone(),
            deadline,
            slot: None,
            permit: None,
            cost: Cost::default(),
            hub: super::HubInfo::default(),
            pin: None,
            home_only: false,
        }
    }

    /// The session of the hub's API: a redirect to another origin is refused, not followed.
    pub(super) fn home_only(mut self) -> Self {
        self.home_only = true;
        self
    }

    /// The session of a file or set pinned to `commit` (`None`: to the first one the server
    /// names).
    pub(super) fn pinned(mut self, commit: Option<String>) -> Self {
        self.pin = commit.map(|c| c.to_ascii_lowercase());
        self
    }

    /// The commit this session is pinned to, once known.
    pub(super) fn pin(&self) -> Option<String> {
        self.pin.clone()
    }

    /// Compare the `X-Repo-Commit` of a response with the pin (or pin it): bytes of another
    /// commit than the one asked for, on any response, get no verdict.
    fn same_commit(&mut self, headers: &ureq::http::HeaderMap) -> Result<(), RemoteError> {
        let Some(said) = super::said::commit(headers) else {
            return Ok(());
        };
        match &self.pin {
            None => {
                self.pin = Some(said);
                Ok(())
            }
            Some(p) if *p == said => Ok(()),
            Some(p) => Err(RemoteError::new(
                ErrorKind::CommitMoved,
                format!(
                    "requested at commit {p}, the server answered with commit {said} \
                     (X-Repo-Commit): not the bytes asked for"
                ),
            )),
        }
    }

    /// The session of a shard fetched ahead in `slot` of its set.
    pub(super) fn in_set(mut self, slot: Slot<'r>) -> Self {
        self.slot = Some(slot);
        self
    }

    pub(super) fn options(&self) -> &'r super::RemoteOptions {
        &self.remote.options
    }

    pub(super) fn deadline(&self) -> Deadline {
        self.deadline
    }

    /// The time left; `Err` once the deadline has passed or the set no longer wants this
    /// shard.
    fn remaining(&self) -> Result<Option<Duration>, RemoteError> {
        if let Some(slot) = &self.slot {
            slot.going_on()?;
        }
        self.deadline.remaining()
    }

    /// Hold `bytes` of header of the set's budget before reading them (once; no-op outside a
    /// set).
    pub(super) fn reserve(&mut self, bytes: u64) -> Result<(), RemoteError> {
        if let (Some(slot), None) = (&self.slot, &self.permit) {
            self.permit = Some(slot.reserve(bytes)?);
        }
        Ok(())
    }

    /// Send `method` for `url` with an optional inclusive byte range; follow redirects and
    /// retry 429/5xx and failed connections. Returns a 2xx or 416 response; any other status
    /// is an error.
    pub(super) fn send(
        &mut self,
        method: Method,
        url: &Url,
        range: Option<(u64, u64)>,
    ) -> Result<Response, RemoteError> {
        let opts = &self.remote.options;
        let mut url = url.clone();
        let mut visited = vec![url.clone()];
        let mut retries = 0u32;
        let mut hops = 0u32;
        loop {
            let flight = self.wait_for_origin(&url)?;
            let timeout = self.remaining()?;
            self.remote.spend_request()?;
            self.cost.requests += 1;
            let result = self.request(&method, &url, range, timeout);
            let resp = match result {
                Ok(r) => {
                    flight.answered(r.headers(), opts.max_retry_after);
                    r
                }
                Err(e) => {
                    drop(flight);
                    if e.retryable && retries < opts.max_retries {
                        retries += 1;
                        self.cost.retries += 1;
                        self.wait(opts.backoff(retries))?;
                        continue;
                    }
                    return Err(e.error);
                }
            };
            let status = resp.status().as_u16();
            // A server that says no request is left until `t` holds back every job (in a
            // window counted from its probe, until the end that answer gave: a later `t`,
            // rounded up to a second, would wait past it).
            if let Some(t) = rate_limit_reset(resp.headers()) {
                self.remote
                    .paused
                    .hold_unless_counted(&url.origin(), t.min(opts.max_retry_after));
            }
            if url.origin() == self.home {
                // The hub answers a file's `resolve` URL with a redirect to its CDN that
                // carries X-Repo-Commit and X-Linked-Etag: read them from every response of
                // the address's own origin.
                self.hub.note(resp.headers(), (200..300).contains(&status));
                self.same_commit(resp.headers())?;
            } else if (200..300).contains(&status) {
                self.hub.note_etag(resp.headers());
            }
            match status {
                200..=299 | 416 => {
                    let (parts, body) = resp.into_parts();
                    return Ok(Response {
                        status,
                        headers: parts.headers,
                        body,
                    });
                }
                301 | 302 | 303 | 307 | 308 => {
                    let location = resp
                        .headers()
                        .get("location")
                        .and_then(|v| v.to_str().ok())
                        .ok_or_else(|| {
                            RemoteError::new(
                                ErrorKind::Redirect,
                                format!("{} without a usable Location header", status_text(status)),
                            )
                        })?;
                    let next = url
                        .join(location)
                        .map_err(|e| RemoteError::new(ErrorKind::Redirect, e))?;
                    if self.home_only && next.origin() != self.home {
                        return Err(RemoteError::new(
                            ErrorKind::Redirect,
                            format!(
                                "{} redirects to another host ({}): the hub's API is read \
                                 from the hub's own host only",
                                url.shown(),
                                next.shown()
                            ),
                        ));
                    }
                    if visited.contains(&next) {
                        return Err(RemoteError::new(
                            ErrorKind::Redirect,
                            format!(
                                "redirect loop: {} leads back to {}",
                                url.shown(),
                                next.shown()
                            ),
                        ));
                    }
                    if hops >= opts.max_redirects {
                        return Err(RemoteError::new(
                            ErrorKind::Redirect,
                            format!("more than {} redirects", opts.max_redirects),
                        ));
                    }
                    hops += 1;
                    self.cost.redirects += 1;
                    // Its body read (a few bytes), the connection serves the next request.
                    self.discard(resp);
                    visited.push(next.clone());
                    url = next;
                    retries = 0;
                }
                s if retryable(s) && retries < opts.max_retries => {
                    let asked = retry_after(resp.headers())
                        .or_else(|| rate_limit_reset(resp.headers()).map(|t| t.as_secs()));
                    self.discard(resp);
                    let refuse = |why: String| {
                        RemoteError::status(
                            s,
                            format!(
                                "{}{}; it asks to retry after {}",
                                status_text(s),
                                self.from(&url),
                                why
                            ),
                        )
                    };
                    let wait = match asked {
                        Some(secs) if Duration::from_secs(secs) > opts.max_retry_after => {
                            return Err(refuse(format!(
                                "{secs} s, more than the {} s allowed",
                                opts.max_retry_after.as_secs()
                            )));
                        }
                        Some(secs) => Duration::from_secs(secs).max(opts.backoff(retries + 1)),
                        None => opts.backoff(retries + 1),
                    };
                    if let Some(left) = self.remaining()? {
                        if wait >= left {
                            let secs = wait.as_secs_f64();
                            return Err(refuse(format!(
                                "{secs} s, past the deadline ({})",
                                self.deadline.message()
                            )));
                        }
                    }
                    if asked.is_some() {
                        // Every job waits, not only this one.
                        self.remote.paused.hold(&url.origin(), wait);
                    }
                    retries += 1;
                    self.cost.retries += 1;
                    self.wait(wait)?;
                }
                s => {
                    if !retryable(s) {
                        let reason = super::said::reason(s, resp.headers());
                        return Err(RemoteError::status(
                            s,
                            format!("{}{}{reason}", status_text(s), self.from(&url)),
                        ));
                    }
                    let tried = if retryable(s) {
                        match opts.max_retries {
                            1 => " (after 1 retry)".to_owned(),
                            n => format!(" (after {n} retries)"),
                        }
                    } else {
                        String::new()
                    };
                    return Err(RemoteError::status(
                        s,
                        format!("{}{}{tried}", status_text(s), self.from(&url)),
                    ));
                }
            }
        }
    }

    /// `"URL: "` for a URL other than the one the job started at (after a redirect).
    fn at(&self, url: &Url) -> String {
        if *url == self.start {
            String::new()
        } else {
            format!("{}: ", url.shown())
        }
    }

    /// `" from URL"` for a URL other than the one the job started at.
    fn from(&self, url: &Url) -> String {
        if *url == self.start {
            String::new()
        } else {
            format!(" from {}", url.shown())
        }
    }

    /// Wait until the origin of `url` takes requests again, if a server asked for a wait or
    /// its `RateLimit` left no request for this one (`Err` if that is past the deadline); the
    /// request is then on its way.
    fn wait_for_origin(&self, url: &Url) -> Result<Flight<'r>, RemoteError> {
        let origin = url.origin();
        loop {
            match self.remote.paused.depart(&origin) {
                Ok(flight) => return Ok(flight),
                Err(Hold::For(d)) => self.cost_free_wait(d)?,
                Err(Hold::Probe) => {
                    // The probe's answer, within the deadline (its own bounds it).
                    let most = self.remaining()?.unwrap_or(Duration::from_secs(1));
                    self.remote
                        .paused
                        .await_probe(&origin, most.min(Duration::from_secs(1)));
                }
            }
        }
    }

    /// [`Session::wait`] for a wait the server asked of all jobs.
    fn cost_free_wait(&self, d: Duration) -> Result<(), RemoteError> {
        if let Some(left) = self.remaining()? {
            if d >= left {
                return Err(RemoteError::new(
                    ErrorKind::Timeout,
                    format!(
                        "the server asked to wait {:.1} s before the next request (Retry-After \
                         or RateLimit), past the deadline: {}",
                        d.as_secs_f64(),
                        self.deadline.message()
                    ),
                ));
            }
        }
        std::thread::sleep(d);
        Ok(())
    }

    /// Read the rest of a body the check does not need (a redirect's, a 429's), at most
    /// [`DISCARD_LIMIT`] bytes, so that its connection is kept for the next request; a longer
    /// or broken body closes the connection instead.
    fn discard(&mut self, resp: ureq::http::Response<ureq::Body>) {
        let (parts, body) = resp.into_parts();
        self.finish(Response {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
        });
    }

    /// [`Session::discard`] for a response already taken.
    pub(super) fn finish(&mut self, resp: Response) {
        let mut reader = self.reader(resp);
        let _ = io::copy(&mut (&mut reader).take(DISCARD_LIMIT), &mut io::sink());
    }

    /// Sleep `d`, unless it would pass the deadline.
    fn wait(&self, d: Duration) -> Result<(), RemoteError> {
        if let Some(left) = self.remaining()? {
            if d >= left {
                return Err(self.deadline.passed());
            }
        }
        std::thread::sleep(d);
        Ok(())
    }

    /// One exchange, no redirect followed.
    fn request(
        &self,
        method: &Method,
        url: &Url,
        range: Option<(u64, u64)>,
        timeout: Option<Duration>,
    ) -> Result<ureq::http::Response<ureq::Body>, Failed> {
        let target = url.request_target();
        let builder = ureq::http::Request::builder()
            .method(method.clone())
            .uri(&target)
            .header("accept-encoding", "identity");
        let builder = match range {
            Some((a, b)) => builder.header("range", format!("bytes={a}-{b}")),
            None => builder,
        };
        let mut builder = builder;
        if url.origin() == self.home {
            for (name, value) in &self.remote.options.headers {
                builder = builder.header(name.as_str(), value.as_str());
            }
            // An Authorization header given explicitly wins over HF_TOKEN.
            let explicit = self
                .remote
                .options
                .headers
                .iter()
                .any(|(n, _)| n == "authorization");
            if self.home == self.remote.hf_origin && !explicit {
                if let Some(token) = &self.remote.options.hf_token {
                    builder = builder.header("authorization", format!("Bearer {token}"));
                }
            }
        }
        let request = builder.body(()).map_err(|_| Failed {
            error: RemoteError::new(
                ErrorKind::Address,
                format!("cannot build a request for {}", url.shown()),
            ),
            retryable: false,
        })?;
        let agent = &self.remote.agent;
        let request = agent
            .configure_request(request)
            .timeout_global(timeout)
            .build();
        agent.run(request).map_err(|e| self.failed(e, url))
    }

    fn failed(&self, e: ureq::Error, url: &Url) -> Failed {
        let shown = url.shown();
        let at = self.at(url);
        let (kind, message, retryable) = match &e {
            ureq::Error::Timeout(t) => (
                ErrorKind::Timeout,
                format!(
                    "{at}{}",
                    timeout_message(*t, self.options(), &self.deadline)
                ),
                false,
            ),
            ureq::Error::HostNotFound => (
                ErrorKind::Network,
                format!("host not found: {}", url.origin()),
                false,
            ),
            ureq::Error::Io(io)
                if io
                    .get_ref()
                    .is_some_and(|inner| inner.is::<rustls::Error>()) =>
            {
                (
                    ErrorKind::Tls,
                    format!("TLS with {}: {}", url.origin(), self.scrub(&io.to_string())),
                    false,
                )
            }
            ureq::Error::Io(io) => (
                ErrorKind::Network,
                format!("{at}{}", self.scrub(&io.to_string())),
                matches!(
                    io.kind(),
                    io::ErrorKind::ConnectionRefused
                        | io::ErrorKind::ConnectionReset
                        | io::ErrorKind::ConnectionAborted
                        | io::ErrorKind::UnexpectedEof
                        | io::ErrorKind::BrokenPipe
                ),
            ),
            ureq::Error::ConnectionFailed => (
                ErrorKind::Network,
                format!("could not connect to {}", url.origin()),
                true,
            ),
            ureq::Error::Tls(_) | ureq::Error::Rustls(_) | ureq::Error::Pem(_) => (
                ErrorKind::Tls,
                format!("TLS with {}: {}", url.origin(), self.scrub(&e.to_string())),
                false,
            ),
            ureq::Error::BadUri(_) | ureq::Error::Http(_) => (
                ErrorKind::Address,
                format!("the HTTP client does not accept the URL {shown}"),
                false,
            ),
            ureq::Error::Protocol(_) => (
                ErrorKind::Response,
                format!(
                    "{at}the response is not valid HTTP/1.1 ({})",
                    self.scrub(&e.to_string())
                ),
                false,
            ),
            ureq::Error::LargeResponseHeader(..) => (
                ErrorKind::Response,
                format!("the response headers from {shown} are too large"),
                false,
            ),
            _ => (
                ErrorKind::Response,
                format!("{at}{}", self.scrub(&e.to_string())),
                false,
            ),
        };
        Failed {
            error: RemoteError::new(kind, message),
            retryable,
        }
    }

    /// A failure while reading a body, `what` saying what was being read.
    pub(super) fn body_error(&self, e: io::Error, what: &str) -> RemoteError {
        let inner = e.get_ref().and_then(|x| x.downcast_ref::<ureq::Error>());
        if let Some(ureq::Error::Timeout(t)) = inner {
            return RemoteError::new(
                ErrorKind::Timeout,
                format!(
                    "{what}: {}",
                    timeout_message(*t, self.options(), &self.deadline)
                ),
            );
        }
        if let Some(u) = inner {
            return RemoteError::new(
                ErrorKind::Network,
                format!("{what}: {}", self.scrub(&u.to_string())),
            );
        }
        match e.kind() {
            // Our own minimum-speed check.
            io::ErrorKind::TimedOut => RemoteError::new(
                ErrorKind::Timeout,
                format!("{what}: {}", self.scrub(&e.to_string())),
            ),
            io::ErrorKind::UnexpectedEof => RemoteError::new(
                ErrorKind::Network,
                format!(
                    "{what}: the connection closed before the end of the body the server announced"
                ),
            ),
            _ => RemoteError::new(
                ErrorKind::Network,
                format!("{what}: {}", self.scrub(&e.to_string())),
            ),
        }
    }

    /// Remove every credential value from a message (dependency messages are not ours).
    pub(super) fn scrub(&self, message: &str) -> String {
        self.remote.options.scrub(message)
    }

    /// The body of `resp` as a reader that counts into this session's cost, enforces the
    /// minimum transfer speed and the deadline, and stops when the set no longer wants it.
    pub(super) fn reader<'s>(&'s mut self, resp: Response) -> Counted<'s, 'r> {
        let opts = &self.remote.options;
        Counted {
            inner: resp.body.into_reader(),
            bytes: &mut self.cost.bytes,
            window_start: Instant::now(),
            window_bytes: 0,
            min_bytes: opts.min_speed_bytes,
            window: opts.min_speed_window,
            deadline: self.deadline,
            slot: self.slot,
            gate: None,
        }
    }

    /// [`Session::reader`] for a body that is the file from its first byte: for a shard of
    /// a set, its length field, once read, holds the header's bytes (at most `limit`) of the
    /// set's budget before more is read.
    pub(super) fn file_reader<'s>(&'s mut self, resp: Response, limit: u64) -> Counted<'s, 'r> {
        let slot = self.slot.filter(|_| self.permit.is_none());
        let permit = &mut self.permit;
        let mut reader = Counted {
            inner: resp.body.into_reader(),
            bytes: &mut self.cost.bytes,
            window_start: Instant::now(),
            window_bytes: 0,
            min_bytes: self.remote.options.min_speed_bytes,
            window: self.remote.options.min_speed_window,
            deadline: self.deadline,
            slot: self.slot,
            gate: None,
        };
        reader.gate = slot.map(|slot| Gate {
            slot,
            permit,
            head: [0; 8],
            seen: 0,
            limit,
        });
        reader
    }
}

/// What a timeout of the client means, in the options' terms.
fn timeout_message(t: ureq::Timeout, o: &super::RemoteOptions, deadline: &Deadline) -> String {
    match t {
        ureq::Timeout::Global => deadline.message(),
        ureq::Timeout::PerRead | ureq::Timeout::RecvBody => format!(
            "no data for {} s (the read timeout)",
            o.read_timeout.as_secs_f64()
        ),
        ureq::Timeout::RecvResponse | ureq::Timeout::SendRequest => format!(
            "the response headers did not arrive within {} s",
            o.total_timeout.as_secs_f64()
        ),
        ureq::Timeout::Connect | ureq::Timeout::Resolve => format!(
            "could not connect within {} s",
            o.connect_timeout.as_secs_f64()
        ),
        other => format!("timed out ({other})"),
    }
}

/// A failed exchange, and whether it is worth another try.
struct Failed {
    error: RemoteError,
    retryable: bool,
}

/// A response body that counts the bytes it delivers and fails when fewer than `min_bytes`
/// arrived in a whole `window` (a slow drip that per-read timeouts do not catch), when the
/// deadline has passed (a drip above that speed), or when its set no longer wants it.
pub(super) struct Counted<'s, 'r> {
    inner: ureq::BodyReader<'static>,
    bytes: &'s mut u64,
    window_start: Instant,
    window_bytes: u64,
    min_bytes: u64,
    window: Duration,
    deadline: Deadline,
    slot: Option<Slot<'r>>,
    gate: Option<Gate<'s, 'r>>,
}

/// The length field of a shard's body, read on its way to the checker, and the share of the
/// set's budget it takes.
struct Gate<'s, 'r> {
    slot: Slot<'r>,
    permit: &'s mut Option<Permit<'r>>,
    head: [u8; 8],
    seen: usize,
    limit: u64,
}

impl Read for Counted<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // The client's own deadline ends a read that waits; this one, a read that does not.
        let over = match &self.slot {
            Some(slot) => slot.going_on().and_then(|()| self.deadline.remaining()),
            None => self.deadline.remaining(),
        };
        if let Err(e) = over {
            return Err(io::Error::new(io::ErrorKind::TimedOut, e.message));
        }
        let k = self.inner.read(buf)?;
        *self.bytes += k as u64;
        self.window_bytes += k as u64;
        if let Some(g) = &mut self.gate {
            let n = (8 - g.seen).min(k);
            g.head[g.seen..g.seen + n].copy_from_slice(&buf[..n]);
            g.seen += n;
            if g.seen == 8 {
                let permit = g
                    .slot
                    .reserve(header_share(g.head, g.limit))
                    .map_err(|e| io::Error::new(io::ErrorKind::TimedOut, e.message))?;
                *g.permit = Some(permit);
                self.gate = None;
                // A wait for the budget is not the server's slowness.
                self.window_start = Instant::now();
                self.window_bytes = 0;
            }
        }
        if k > 0 && self.window_start.elapsed() >= self.window {
            if self.window_bytes < self.min_bytes {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the server sent {} bytes in {} s, less than the minimum of {} bytes",
                        self.window_bytes,
                        self.window.as_secs_f64(),
                        self.min_bytes
                    ),
                ));
            }
            self.window_start = Instant::now();
            self.window_bytes = 0;
        }
        Ok(k)
    }
}

/// Read at most `limit` bytes of `r` (fewer at its end). The buffer grows with what arrives.
pub(super) fn read_up_to<R: Read + ?Sized>(r: &mut R, limit: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    r.take(limit).read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Headers holding a `RateLimit` header for each of `values`.
    fn rate_limits(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append("ratelimit", v.parse().expect("value"));
        }
        h
    }

    #[test]
    fn rate_limit_headers() {
        let wait = |values: &[&str]| rate_limit_reset(&rate_limits(values));
        let secs = |s| Some(Duration::from_secs(s));
        assert_eq!(wait(&["\"resolvers\";r=0;t=55"]), secs(55));
        assert_eq!(wait(&["\"api\";r=12;t=55"]), None);
        assert_eq!(wait(&["\"a\";r=3;t=9, \"b\";r=0;t=7"]), secs(7));
        assert_eq!(wait(&["\"a\";r=0;t=4", "\"b\";r=0;t=6"]), secs(6));
        assert_eq!(wait(&["\"a\";t=5;r=0"]), secs(5));
        for bad in [
            "",
            "\"a\";r=0",
            "\"a\";r=0;t=x",
            "\"a\";r=0;t=0",
            "r=0;t=5",
            "\"a\";r=-1;t=5",
        ] {
            assert_eq!(wait(&[bad]), None, "{bad}");
        }
        assert_eq!(wait(&[]), None);
    }

    #[test]
    fn rate_limit_left_is_the_fewest_requests_of_an_item_with_a_window() {
        let left =
            |values: &[&str]| rate_limit_left(&rate_limits(values)).map(|(r, t)| (r, t.as_secs()));
        assert_eq!(left(&["\"resolvers\";r=4999;t=55"]), Some((4999, 55)));
        assert_eq!(left(&["\"a\";r=3;t=9, \"b\";r=7;t=2"]), Some((3, 9)));
        assert_eq!(left(&["\"a\";r=8;t=9", "\"b\";r=0;t=6"]), Some((0, 6)));
        for bad in ["", "\"a\";r=3", "\"a\";r=3;t=0", "r=3;t=5", "\"a\";r=x;t=5"] {
            assert_eq!(left(&[bad]), None, "{bad}");
        }
    }

    #[test]
    fn the_requests_in_flight_are_taken_from_what_is_left() {
        let pauses = Pauses::default();
        let origin = Url::parse("http://example.com/").expect("url").origin();
        let long = Duration::from_secs(60);
        let flights: Vec<_> = (0..4)
            .map(|_| pauses.depart(&origin).expect("free"))
            .collect();
        let mut flights = flights.into_iter();
        let h = rate_limits(&["\"r\";r=5;t=30"]);
        // 5 left as the server counted, 3 more on their way: 2 may still leave.
        flights.next().expect("one").answered(&h, long);
        let more: Vec<_> = (0..2)
            .map(|_| pauses.depart(&origin).expect("left"))
            .collect();
        // None left by this count, which may be short (the 3 in flight may have been counted
        // already): the jobs wait for them, and a later answer saying more are left does not
        // raise the count.
        assert!(matches!(pauses.depart(&origin), Err(Hold::Probe)));
        let more_left = rate_limits(&["\"r\";r=50;t=30"]);
        flights.next().expect("two").answered(&more_left, long);
        assert!(matches!(pauses.depart(&origin), Err(Hold::Probe)));
        // Once nothing is in flight, one request alone counts again; its answer is exact.
        drop(more);
        drop(flights);
        let probe = pauses.depart(&origin).expect("the probe");
        assert!(matches!(pauses.depart(&origin), Err(Hold::Probe)));
        probe.answered(&rate_limits(&["\"r\";r=1;t=30"]), long);
        let last = pauses.depart(&origin).expect("the one left");
        match pauses.depart(&origin) {
            Err(Hold::For(wait)) => assert!(wait <= Duration::from_secs(30), "{wait:?}"),
            _ => panic!("none left"),
        }
        drop(last);
        // A window that has ended: the next request goes alone (the probe), the others
        // wait for its answer, which counts the window exactly.
        let origin = Url::parse("http://example.net/").expect("url").origin();
        let first = pauses.depart(&origin).expect("free");
        first.answered(&rate_limits(&["\"r\";r=5;t=30"]), Duration::ZERO);
        let probe = pauses.depart(&origin).expect("the probe");
        assert!(matches!(pauses.depart(&origin), Err(Hold::Probe)));
        probe.answered(&rate_limits(&["\"r\";r=3;t=30"]), long);
        let three: Vec<_> = (0..3)
            .map(|_| pauses.depart(&origin).expect("counted"))
            .collect();
        assert!(matches!(pauses.depart(&origin), Err(Hold::For(_))));
        drop(three);
        // Another origin is not held back.
        let other = Url::parse("http://example.org/").expect("url").origin();
        assert!(pauses.depart(&other).is_ok());
    }
}
