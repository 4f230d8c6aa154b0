//! What is fetched for each kind of check: the header with range requests, the whole body
//! streamed once, or an index and its shards.

use ureq::http::Method;

use super::address::Url;
use super::budget::header_share;
use super::http::{read_up_to, Response, Session};
use super::{verdict, Depth, ErrorKind, FileCheck, RemoteError};
use stcheck::Config;

/// The most range requests one header check makes (a server that answers each range with a
/// few bytes cannot keep us going).
const MAX_RANGE_REQUESTS: u32 = 8;

/// `Content-Range: bytes START-END/TOTAL` (TOTAL may be `*`) or `bytes */TOTAL`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ContentRange {
    pub(super) span: Option<(u64, u64)>,
    pub(super) total: Option<u64>,
}

pub(super) fn parse_content_range(v: &str) -> Option<ContentRange> {
    let rest = v.trim().strip_prefix("bytes")?.trim_start();
    let (span, total) = rest.split_once('/')?;
    let num = |s: &str| {
        let s = s.trim();
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u64>().ok())
            .flatten()
    };
    let total = match total.trim() {
        "*" => None,
        t => Some(num(t)?),
    };
    let span = match span.trim() {
        "*" => None,
        s => {
            let (a, b) = s.split_once('-')?;
            let (a, b) = (num(a)?, num(b)?);
            if b < a || total.is_some_and(|t| b >= t) {
                return None;
            }
            Some((a, b))
        }
    };
    if span.is_none() && total.is_none() {
        return None;
    }
    Some(ContentRange { span, total })
}

fn response_error(message: impl Into<String>) -> RemoteError {
    RemoteError::new(ErrorKind::Response, message)
}

/// The body is the file's bytes: no content coding.
fn check_encoding(resp: &Response) -> Result<(), RemoteError> {
    match resp.header("content-encoding").map(str::trim) {
        None | Some("") => Ok(()),
        Some(e) if e.eq_ignore_ascii_case("identity") => Ok(()),
        Some(_) => Err(response_error(
            "the server sent the file with a content coding (Content-Encoding), not its bytes",
        )),
    }
}

/// What the server said about the file on the first response, compared on later ones.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    total: u64,
    etag: Option<String>,
}

impl Identity {
    fn same_file(&self, later: &Identity) -> Result<(), RemoteError> {
        // A weak validator (W/"x") names the same version as the strong one ("x") here.
        let strong = |e: &str| e.trim().trim_start_matches("W/").to_owned();
        let etags_differ =
            matches!((&self.etag, &later.etag), (Some(a), Some(b)) if strong(a) != strong(b));
        if self.total != later.total || etags_differ {
            return Err(response_error(
                "the file changed on the server between two requests (its length or ETag differs)",
            ));
        }
        Ok(())
    }
}

/// Bytes from the start of the file, as one response delivered them.
struct Got {
    /// Offset of the response's first byte in the file.
    start: u64,
    /// How many of its first bytes went straight into the checker's header buffer
    /// ([`verdict::Feed::read_header`]); they are not in `bytes`.
    fed: u64,
    /// The response's bytes not yet fed.
    bytes: Vec<u8>,
    identity: Option<Identity>,
    /// The server ignored the range and sent the whole file (200).
    whole: bool,
    /// 416: the range starts at or past the end of the file.
    unsatisfiable: bool,
}

/// Read a ranged response: 206 for exactly the bytes announced, 200 for the whole file (read
/// only `want_end` bytes of it; dropping the rest closes the connection), 416 for an empty
/// file. `want` is the inclusive range asked for. With `feed` in the header stage, a 206 body
/// goes straight into the checker's header buffer ([`read_body`]).
fn read_range(
    session: &mut Session<'_>,
    resp: Response,
    want: (u64, u64),
    feed: Option<&mut verdict::Feed>,
) -> Result<Got, RemoteError> {
    check_encoding(&resp)?;
    let etag = resp.header("etag").map(str::to_owned);
    match resp.status {
        206 => {
            if resp.header("content-type").is_some_and(|t| {
                t.trim_start()
                    .to_ascii_lowercase()
                    .starts_with("multipart/")
            }) {
                return Err(response_error(
                    "the server answered one range with a multipart body",
                ));
            }
            let cr = resp
                .header("content-range")
                .ok_or_else(|| response_error("a 206 response without Content-Range"))?;
            let cr = parse_content_range(cr)
                .ok_or_else(|| response_error("a 206 response with a malformed Content-Range"))?;
            let Some((a, b)) = cr.span else {
                return Err(response_error("a 206 response without a byte range"));
            };
            if a != want.0 || b > want.1 {
                return Err(response_error(format!(
                    "asked for bytes {}-{}, the server sent bytes {a}-{b}",
                    want.0, want.1
                )));
            }
            let span = b - a + 1;
            if let Some(cl) = resp.content_length()? {
                if cl != span {
                    return Err(response_error(format!(
                        "the response announces {cl} bytes (Content-Length) for a range of {span} bytes (Content-Range)"
                    )));
                }
            }
            let identity = cr.total.map(|total| Identity { total, etag });
            // Without the file's length (`bytes A-B/*`) the caller may still ask it with a HEAD
            // before feeding: the body waits in a buffer.
            let feed = feed.filter(|_| identity.is_some());
            let (fed, bytes) = read_exactly(session, resp, span, feed)?;
            Ok(Got {
                start: a,
                fed,
                bytes,
                identity,
                whole: false,
                unsatisfiable: false,
            })
        }
        200 => {
            let total = resp.content_length()?;
            let identity = total.map(|total| Identity { total, etag });
            // Only as far as needed: the rest is never read.
            let limit = want.1.saturating_add(1);
            let mut reader = session.reader(resp);
            let read = read_up_to(&mut reader, limit);
            drop(reader);
            let bytes = read.map_err(|e| session.body_error(e, "reading the response"))?;
            let got = bytes.len() as u64;
            let identity = match identity {
                Some(id) if got < limit && got != id.total => {
                    return Err(response_error(format!(
                        "the body ended after {got} bytes, but the server announced {} (Content-Length)",
                        id.total
                    )))
                }
                Some(id) => Some(id),
                // No length announced, but the body ended: it was the whole file.
                None if got < limit => Some(Identity {
                    total: got,
                    etag: None,
                }),
                None => None,
            };
            Ok(Got {
                start: 0,
                fed: 0,
                bytes,
                identity,
                whole: true,
                unsatisfiable: false,
            })
        }
        416 => {
            // `bytes */TOTAL`; without it, the caller asks the length with a HEAD.
            let total = resp
                .header("content-range")
                .and_then(parse_content_range)
                .filter(|cr| cr.span.is_none())
                .and_then(|cr| cr.total);
            session.finish(resp);
            Ok(Got {
                start: want.0,
                fed: 0,
                bytes: Vec::new(),
                identity: total.map(|total| Identity { total, etag }),
                whole: false,
                unsatisfiable: true,
            })
        }
        s => Err(response_error(format!(
            "unexpected HTTP {s} to a range request"
        ))),
    }
}

/// Read exactly `n` bytes of a body announced as `n` long: fewer is "shorter than announced",
/// one more is "longer than announced". The bytes fed to `feed` on the way ([`read_body`])
/// and the rest.
fn read_exactly(
    session: &mut Session<'_>,
    resp: Response,
    n: u64,
    feed: Option<&mut verdict::Feed>,
) -> Result<(u64, Vec<u8>), RemoteError> {
    let mut reader = session.reader(resp);
    let read = read_body(&mut reader, n.saturating_add(1), feed);
    drop(reader);
    let (fed, bytes) = read.map_err(|e| session.body_error(e, "reading the response"))?;
    let got = fed + bytes.len() as u64;
    if got < n {
        return Err(response_error(format!(
            "the body ended after {got} bytes, shorter than the {n} announced"
        )));
    }
    if got > n {
        return Err(response_error(format!(
            "the body is longer than the {n} bytes announced"
        )));
    }
    Ok((fed, bytes))
}

/// Up to `limit` bytes of `reader`: with `feed` in the header stage, as many as the header
/// still wants go straight into the checker's header buffer ([`verdict::Feed::read_header`]),
/// so a remote header of up to 100 MB is held once (it used to be read into a `Vec` and then
/// copied into the checker's buffer: two copies at the peak); the rest, if any (a body that
/// goes on past the header, the one byte that tells a body longer than announced), into the
/// returned `Vec`. Returns the bytes fed and that `Vec`.
fn read_body(
    reader: &mut dyn std::io::Read,
    limit: u64,
    feed: Option<&mut verdict::Feed>,
) -> std::io::Result<(u64, Vec<u8>)> {
    use std::io::Read as _;
    let fed = match feed {
        Some(f) => f.read_header(&mut (&mut *reader).take(limit))?.unwrap_or(0),
        None => 0,
    };
    Ok((fed, read_up_to(reader, limit - fed)?))
}

/// The header-level check: the length field and the header with range requests, the file's
/// length from `Content-Range` (or `Content-Length`, or a `HEAD`). The one checker is fed the
/// bytes as they arrive and says how many more it wants: with a header that fits the first
/// fetch, one request.
pub(super) fn check_header(
    session: &mut Session<'_>,
    url: &Url,
    config: &Config,
) -> Result<FileCheck, RemoteError> {
    let first = session.options().first_fetch.max(8);
    let mut identity: Option<Identity> = None;
    let mut feed: Option<verdict::Feed> = None;
    let mut range_requests = 0u32;
    loop {
        let have = feed.as_ref().map_or(0, verdict::Feed::consumed);
        let want_len = match &feed {
            None => first,
            Some(f) => match f.wanted() {
                None => break,
                Some(w) => w,
            },
        };
        if identity.as_ref().is_some_and(|id| have >= id.total) {
            // The file ends here: the checker decides from what it has.
            break;
        }
        if range_requests >= MAX_RANGE_REQUESTS {
            return Err(response_error(format!(
                "the server's ranges are too short: {have} bytes after {MAX_RANGE_REQUESTS} range requests"
            )));
        }
        range_requests += 1;
        // Ask for what is wanted, and at least a first fetch's worth at the start.
        let len = if feed.is_none() {
            first
        } else {
            want_len.max(1)
        };
        let mut end = have.saturating_add(len - 1);
        if let Some(id) = &identity {
            end = end.min(id.total.saturating_sub(1));
        }
        let want = (have, end);
        let resp = session.send(Method::GET, url, Some(want))?;
        let mut got = read_range(session, resp, want, feed.as_mut())?;
        if got.unsatisfiable && got.identity.is_none() {
            got.identity = Some(head_identity(session, url)?);
        }
        let bytes: Vec<u8> = if got.whole {
            // The server ignores Range: this body is the file from its start, read as far as
            // `want` asks and no further.
            got.bytes
                .get(usize::try_from(have).unwrap_or(usize::MAX)..)
                .unwrap_or(&[])
                .to_vec()
        } else {
            if got.start != have {
                return Err(response_error("the server sent a range we did not ask for"));
            }
            match &got.identity {
                _ if got.fed > 0 || !got.bytes.is_empty() => {}
                Some(id) if id.total <= have => {}
                Some(id) if got.unsatisfiable => {
                    return Err(response_error(format!(
                        "HTTP 416 Range Not Satisfiable for bytes {}-{} of a file of {} bytes",
                        want.0, want.1, id.total
                    )))
                }
                _ => return Err(response_error("the server sent an empty range")),
            }
            got.bytes
        };
        match (&identity, got.identity) {
            (Some(first_id), Some(later)) => first_id.same_file(&later)?,
            (None, Some(id)) => identity = Some(id),
            (_, None) => {}
        }
        if identity.is_none() {
            identity = Some(head_identity(session, url)?);
        }
        let Some(id) = &identity else {
            return Err(response_error(
                "the server did not say how long the file is",
            ));
        };
        let sent = got.fed + bytes.len() as u64;
        if have + sent > id.total {
            return Err(response_error(format!(
                "the server sent more bytes than the {} it announced for the file",
                id.total
            )));
        }
        if sent == 0 && have < id.total {
            return Err(response_error(format!(
                "the body ended after {have} bytes, before the end of the header"
            )));
        }
        if feed.is_none() {
            // A shard of a set holds its header's bytes of the set's budget before they come.
            if let Some(field) = bytes.get(..8) {
                let mut le = [0u8; 8];
                le.copy_from_slice(field);
                session.reserve(header_share(le, config.header_limit()))?;
            }
        }
        let f = feed.get_or_insert_with(|| verdict::Feed::new(config, id.total));
        if !f.feed(&bytes) {
            break;
        }
    }
    let (Some(_), Some(f)) = (identity, feed) else {
        return Err(response_error(
            "the server did not say how long the file is",
        ));
    };
    let checked = f
        .try_finish()
        .map_err(|e| RemoteError::new(ErrorKind::Setup, e.to_string()))?;
    Ok(FileCheck { checked })
}

/// The file's length from a `HEAD`, when ranged responses did not give it.
fn head_identity(session: &mut Session<'_>, url: &Url) -> Result<Identity, RemoteError> {
    let resp = session.send(Method::HEAD, url, None)?;
    if resp.status != 200 {
        return Err(response_error(format!(
            "the server did not say how long the file is (HEAD gave HTTP {})",
            resp.status
        )));
    }
    check_encoding(&resp)?;
    let total = resp.content_length()?.ok_or_else(|| {
        response_error(
            "the server did not say how long the file is (no total in Content-Range, no Content-Length); \
             the deep check reads the whole file instead",
        )
    })?;
    Ok(Identity {
        total,
        etag: resp.header("etag").map(str::to_owned),
    })
}

/// A plain `GET` answered with 200 and the file's own bytes; the announced length.
fn get_whole(
    session: &mut Session<'_>,
    url: &Url,
    what: &str,
) -> Result<(Response, Option<u64>), RemoteError> {
    let resp = session.send(Method::GET, url, None)?;
    if resp.status != 200 {
        return Err(response_error(format!(
            "unexpected HTTP {} to a request for {what}",
            resp.status
        )));
    }
    check_encoding(&resp)?;
    let announced = resp.content_length()?;
    Ok((resp, announced))
}

/// The deep check: the whole body streamed once through the one checker, which stops at the
/// first byte past the data region.
pub(super) fn check_stream(
    session: &mut Session<'_>,
    url: &Url,
    config: &Config,
) -> Result<FileCheck, RemoteError> {
    let (resp, _) = get_whole(session, url, "the whole file")?;
    let mut reader = session.file_reader(resp, config.header_limit());
    let result = verdict::stream_verdict(&mut reader, config);
    // What is left after the verdict (nothing, for a file read to its end) is read if it is
    // short, to keep the connection for the next file; a verdict reached long before the end
    // (a bad header) leaves the rest unread, and dropping the body closes the connection.
    if result.is_ok() {
        let _ = std::io::copy(
            &mut std::io::Read::take(&mut reader, super::http::DISCARD_LIMIT),
            &mut std::io::sink(),
        );
    }
    drop(reader);
    let checked =
        result.map_err(|e| session.body_error(e.into_io_error(), "streaming the file"))?;
    Ok(FileCheck { checked })
}

/// The bytes of an index: at most one byte past the header limit (a longer index is rejected
/// by its check without being read further).
pub(super) fn fetch_index_bytes(
    session: &mut Session<'_>,
    url: &Url,
    config: &Config,
) -> Result<Vec<u8>, RemoteError> {
    let (resp, announced) = get_whole(session, url, "the index")?;
    let limit = verdict::index_read_limit(config);
    let mut reader = session.reader(resp);
    let read = read_up_to(&mut reader, limit);
    drop(reader);
    let bytes = read.map_err(|e| session.body_error(e, "reading the index"))?;
    if let Some(n) = announced {
        if (bytes.len() as u64) < limit && bytes.len() as u64 != n {
            return Err(response_error(format!(
                "the index ended after {} bytes, but the server announced {n}",
                bytes.len()
            )));
        }
    }
    Ok(bytes)
}

/// The check of one file (not an index) at `url`. With its SHA-256, every id published for it
/// (`published`, the listing's LFS id; the `X-Linked-Etag`; `expected`, the user's `(source,
/// hex)`) is compared in the one integrity decision ([`stcheck::Checked::compare_published`]).
pub(super) fn check_file(
    session: &mut Session<'_>,
    url: &Url,
    config: &Config,
    depth: Depth,
    published: Option<&str>,
    expected: Option<(&str, &str)>,
) -> Result<FileCheck, RemoteError> {
    let config = verdict::config_for(config, depth);
    if !verdict::reads_data(&config) {
        return check_header(session, url, &config);
    }
    let mut file = check_stream(session, url, &config)?;
    // INTEGRITY-SHA256: the hash of a file the format accepts, against every id published for
    // it (the listing's LFS id, the X-Linked-Etag, the user's): one decision whatever the
    // route, any disagreement named with its sources.
    let mut ids = session.hub.published_ids(published);
    if let Some((_, sha)) = ids.iter().find(|(_, id)| super::said::is_sha256_hex(id)) {
        // The record's `lfs_sha256`: the listing's, else the header's (a SHA-256 only).
        session.hub.lfs_sha256 = Some(sha.to_ascii_lowercase());
    }
    if let Some((source, hex)) = expected {
        ids.push((source, hex.to_owned()));
    }
    let pairs: Vec<(&str, &str)> = ids.iter().map(|(s, id)| (*s, id.as_str())).collect();
    file.checked.compare_published(&pairs);
    Ok(file)
}

/// Whether the URL names an index (by its last path segment, as a local path would).
pub(super) fn names_index(url: &Url) -> bool {
    verdict::is_index_name(&url.file_name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use stcheck_testkit::Noting;

    /// A remote header's second range (the rest of the header) used to be read into a `Vec`
    /// and then copied into the checker's buffer; now every byte of it is read once, into the
    /// memory the report keeps, and a body that goes on past the range still shows.
    #[test]
    fn a_header_range_is_read_once_into_the_memory_the_report_keeps() {
        let (file, end) = stcheck_testkit::many_tensors(2_000);
        let first = 108;
        for extra in [0, 1] {
            let mut feed = verdict::Feed::new(&Config::default(), file.len() as u64);
            assert!(feed.feed(&file[..first]));
            let want = feed.wanted().expect("the rest of the header");
            assert_eq!(want, (end - first) as u64);
            // The server sends the range asked for, and `extra` bytes more.
            let mut body = Noting::new(&file[..end + extra], first);
            let (fed, rest) = read_body(&mut body, want + 1, Some(&mut feed)).expect("read");
            assert_eq!((fed, rest.len()), (want, extra), "extra {extra}");
            assert_eq!(feed.consumed(), end as u64);
            assert!(!feed.feed(&rest), "a header check needs nothing more");
            let checked = feed.try_finish().expect("checked");
            let text = checked.verdict.as_ref().expect("valid").header_text();
            body.assert_read_into(first..end, text.as_ptr() as usize + (first - 8));
        }
        // Outside the header stage (or without a checker) the body goes to the `Vec`.
        let mut body = Noting::new(&file[..first], 0);
        let (fed, rest) = read_body(&mut body, first as u64 + 1, None).expect("read");
        assert_eq!((fed, rest.as_slice()), (0, &file[..first]));
    }

    #[test]
    fn content_range() {
        let cr = |s| parse_content_range(s);
        assert_eq!(
            cr("bytes 0-99/1000"),
            Some(ContentRange {
                span: Some((0, 99)),
                total: Some(1000)
            })
        );
        assert_eq!(
            cr("bytes 5-5/*"),
            Some(ContentRange {
                span: Some((5, 5)),
                total: None
            })
        );
        assert_eq!(
            cr("bytes */0"),
            Some(ContentRange {
                span: None,
                total: Some(0)
            })
        );
        for bad in [
            "bytes 9-5/10",
            "bytes 0-10/10",
            "bytes */*",
            "items 0-1/2",
            "bytes 0-1",
            "bytes -1-2/3",
            "bytes +0-1/3",
            "bytes 0-99999999999999999999999/1",
        ] {
            assert_eq!(cr(bad), None, "{bad}");
        }
    }
}
