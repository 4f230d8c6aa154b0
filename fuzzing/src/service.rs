//! The service's protocol grammars (`stcheck serve`): the clamd command line and `INSTREAM`'s
//! chunk framing, and the HTTP query of `POST /v1/check`. Bytes from any client reach them.

use stcheck_gate::options::RunOptions;
use stcheck_serve::clamd::{split_command, Frame, Framing};
use stcheck_serve::query::{parse_query, MAX_QUERY_LEN};

/// A clamd connection's bytes: commands split one after another until one is incomplete or
/// refused, then (as after `INSTREAM`) the rest as chunk framing fed in pieces of 1 to 16
/// bytes, with a limit drawn from the input. Never panics; a command takes at least one byte
/// and no more than there is; the framing hands out exactly the bytes its chunk lengths
/// announce, in order, never past the limit, and nothing after the zero-length end; feeding
/// the same bytes whole gives the same stream. Returns the stream's length and whether its end
/// came (`None` past the limit), for the smoke tests to see both kinds of outcome.
pub fn check_clamd(data: &[u8]) -> Option<(usize, bool)> {
    let mut at = 0;
    while let Ok(Some((_, _, used))) = split_command(&data[at..]) {
        assert!(
            used >= 1 && used <= data.len() - at,
            "FUZZ FINDING: a command took {used} bytes of {}",
            data.len() - at
        );
        at += used;
    }
    let rest = &data[at..];
    let limit = rest.first().map_or(0, |&b| 1u64 << (b % 24));
    let pieces = rest.get(1).map_or(1, |&b| 1 + usize::from(b % 16));
    let body = rest.get(2..).unwrap_or_default();
    let piecewise = frames(limit, body, pieces);
    let whole = frames(limit, body, body.len().max(1));
    assert_eq!(
        piecewise, whole,
        "FUZZ FINDING: the framing depends on how the bytes arrive"
    );
    let (stream, ended, total) = piecewise?;
    assert!(
        stream.len() as u64 <= limit,
        "FUZZ FINDING: {} bytes past a limit of {limit}",
        stream.len()
    );
    if ended {
        assert_eq!(
            stream.len() as u64,
            total,
            "FUZZ FINDING: a whole stream is not the bytes its chunks announced"
        );
    }
    Some((stream.len(), ended))
}

/// The stream of `body` fed through a framing of `limit` in pieces of `step` bytes: its
/// bytes, whether the end came, the bytes announced; `None` past the limit.
fn frames(limit: u64, body: &[u8], step: usize) -> Option<(Vec<u8>, bool, u64)> {
    let mut f = Framing::new(limit);
    let mut out = Vec::new();
    let mut announced_before = 0;
    for piece in body.chunks(step) {
        let mut at = 0;
        while at < piece.len() {
            let (n, frame) = f.next(&piece[at..]).ok()?;
            assert!(
                n <= piece.len() - at,
                "FUZZ FINDING: the framing took {n} of {} bytes",
                piece.len() - at
            );
            at += n;
            match frame {
                Some(Frame::Data(d)) => {
                    assert!(!d.is_empty(), "FUZZ FINDING: an empty data frame");
                    out.extend_from_slice(d);
                }
                Some(Frame::End) => {}
                None if n == 0 => break,
                None => {}
            }
            assert!(
                f.total() >= announced_before && f.total() <= limit,
                "FUZZ FINDING: announced bytes went from {announced_before} to {} (limit {limit})",
                f.total()
            );
            announced_before = f.total();
            if f.ended() {
                break;
            }
        }
        if f.ended() {
            break;
        }
    }
    Some((out, f.ended(), f.total()))
}

/// An HTTP query as `POST /v1/check` receives it: never panics; what it accepts resolves to
/// run options or a refusal (never a panic either), and an expected SHA-256 it accepts is 64
/// lower-case hex digits and turns the SHA-256 on. Returns whether the query was accepted.
pub fn check_query(data: &[u8]) -> bool {
    let Ok(query) = std::str::from_utf8(data) else {
        return false;
    };
    match parse_query(query, &RunOptions::default()) {
        Ok(q) => {
            assert!(
                query.len() <= MAX_QUERY_LEN,
                "FUZZ FINDING: a query of {} bytes accepted",
                query.len()
            );
            let resolved = q.options.resolve();
            if let Some(hex) = &q.options.expect_sha256 {
                assert!(
                    hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
                    "FUZZ FINDING: expected-sha256 {hex:?}"
                );
                assert!(
                    resolved.as_ref().map_or(true, |c| c.sha256),
                    "FUZZ FINDING: an expected SHA-256 without the hash"
                );
            }
            true
        }
        Err(e) => {
            assert!(!e.is_empty(), "FUZZ FINDING: a refusal without a message");
            false
        }
    }
}
