//! The query of `POST /v1/check` as a pure function (for the service and for fuzz targets):
//! `?profile=portable&deep&deny=LAYOUT-ALIGN,NAME-PATH&expected-sha256=HEX`: the check
//! options by the service's keys of the gate's option table ([`crate::options`]; a flag bare
//! or `=true`/`=false`) on top of the service's own; `expected-sha256` is the table's
//! `--expect-sha256`, the digest the file must have (`INTEGRITY-SHA256` otherwise; implies
//! `sha256`). `_` may stand for `-`.

use stcheck_gate::options::{Face, RunOptions};

use crate::options;

/// The longest query accepted, in bytes.
pub const MAX_QUERY_LEN: usize = 8192;

/// What a request asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The run's options: the service's, with the query's on top (lists extended).
    pub options: RunOptions,
}

/// The options of `query` (the part of the URI after `?`, without it) on top of `base`; the
/// options are not resolved yet ([`RunOptions::resolve`] finds their conflicts).
pub fn parse_query(query: &str, base: &RunOptions) -> Result<Query, String> {
    if query.len() > MAX_QUERY_LEN {
        return Err(format!("query longer than {MAX_QUERY_LEN} bytes"));
    }
    let mut out = Query {
        options: base.clone(),
    };
    // Messages name the options as a query writes them.
    out.options.face = Face::Service;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = match pair.split_once('=') {
            Some((k, v)) => (decode(k)?, Some(decode(v)?)),
            None => (decode(pair)?, None),
        };
        let spec = options::find_for_request(Face::Service, &key)
            .ok_or_else(|| format!("no option {key:?}"))?;
        options::set_text(&mut out.options, spec, value.as_deref())?;
    }
    Ok(out)
}

/// `s` with `+` as a space and `%XX` decoded; the result must be UTF-8.
fn decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("bad percent escape in {s:?}"))?;
                out.push(hex);
                i += 2;
            }
            _ => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| format!("{s:?} is not UTF-8 once decoded"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use stcheck::Profile;

    #[test]
    fn options_on_top_of_the_services() {
        let mut base = RunOptions::default();
        base.deny.push("NAME-PATH".into());
        let q = parse_query(
            "profile=portable&deep&deny=LAYOUT-ALIGN%2CLAYOUT-GAP&deny-warnings=false",
            &base,
        )
        .expect("parses");
        assert_eq!(q.options.profile, Profile::Portable);
        assert!(q.options.deep && !q.options.deny_warnings);
        assert_eq!(q.options.deny, ["NAME-PATH", "LAYOUT-ALIGN", "LAYOUT-GAP"]);
        let hex = "AB".repeat(32);
        let q = parse_query(&format!("expected-sha256={hex}"), &base).expect("parses");
        assert_eq!(q.options.expect_sha256, Some("ab".repeat(32)));
        assert!(q.options.resolve().expect("resolves").sha256);
    }

    #[test]
    fn refusals() {
        let base = RunOptions::default();
        for bad in [
            "color=red",
            "deep=maybe",
            "profile=lax",
            "deny",
            "expected-sha256=abc",
            "deny=%zz",
            "deny=%ff",
            "deep=1",
            "follow_links",
            "timeout=5",
        ] {
            assert!(parse_query(bad, &base).is_err(), "{bad}");
        }
        assert!(parse_query(&"a".repeat(MAX_QUERY_LEN + 1), &base).is_err());
    }
}
