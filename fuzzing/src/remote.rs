//! Targets over what a server or a user hands the remote client: `address` (URLs, `hf://`
//! addresses, redirects and the redaction of secrets), `hub_listing` (a listing's pages and
//! their `Link` pagination), `remote_index` (the shard names of a fetched index, turned into
//! URLs) and `content_range`-style header parsing, through the entry points of
//! `stcheck_gate::remote::fuzzing`.

use std::collections::HashSet;

use stcheck::index::{check_index, visit_shard_names, MemorySource, ShardSource};
use stcheck::{Checked, Config, ReadError};
use stcheck_gate::remote::fuzzing::{self as remote, Page, UrlParts};
use stcheck_gate::target::{scrub_url_in, shown_url};

/// The planted secret. Every `~` is taken out of the parts drawn from the input, so a `~`
/// in what is shown can only come from the secret.
const SECRET: &str = "~s3cret~";

/// The hub endpoint the `hf://` addresses are resolved under.
const ENDPOINT: &str = "https://hub.example";

fn visible(s: &str, also: &[char]) -> String {
    s.chars()
        .filter(|c| *c != '~' && !c.is_control() && !also.contains(c))
        .collect()
}

/// A URL the client built must parse again to the same URL.
fn reparses(u: &UrlParts, what: &str) {
    let again = remote::parse_url(&u.request_target).unwrap_or_else(|e| {
        panic!(
            "FUZZ FINDING: {what} {:?} does not parse again: {e}",
            u.request_target
        )
    });
    assert_eq!(&again, u, "FUZZ FINDING: {what} changes when parsed again");
    assert!(
        !u.shown.contains('?') || u.shown.ends_with("?..."),
        "FUZZ FINDING: {what} shows its query: {:?}",
        u.shown
    );
}

/// The `address` target. Input: up to the first `\n` the user information, up to the next
/// the host and path, then the query and fragment (lossy UTF-8). A secret is planted in the
/// user information, the query and the fragment; the input alone is also parsed as a URL, as
/// an `hf://` address and as a redirect target. Whether the input alone parsed as a URL or an
/// `hf://` address.
pub fn check_address(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\n');
    let user = visible(parts.next().unwrap_or(""), &['/', '?', '#', '@', '\\', ':']);
    let host_path = visible(parts.next().unwrap_or(""), &[]);
    let tail = visible(parts.next().unwrap_or(""), &[]);
    for scheme in ["https", "HTTP", "hf"] {
        let planted = [
            format!("{scheme}://{user}:{SECRET}@{host_path}"),
            format!("{scheme}://{user}:{SECRET}@{host_path}?{tail}{SECRET}"),
            format!("{scheme}://{host_path}?{SECRET}{tail}#{SECRET}"),
            format!("{scheme}://{host_path}#{tail}{SECRET}"),
        ];
        for address in &planted {
            let shown = shown_url(address);
            assert!(
                !shown.contains('~'),
                "FUZZ FINDING: the secret of {address:?} survives shown_url: {shown:?}"
            );
            let message = format!("cannot fetch {address}: refused");
            let scrubbed = scrub_url_in(&message, address);
            assert!(
                !scrubbed.contains(SECRET),
                "FUZZ FINDING: the secret of {address:?} survives scrub_url_in: {scrubbed:?}"
            );
            match remote::parse_url(address) {
                Ok(u) => {
                    assert!(
                        !u.shown.contains('~') && !u.origin.contains('~'),
                        "FUZZ FINDING: the secret of {address:?} is shown: {u:?}"
                    );
                    reparses(&u, "a parsed URL");
                }
                Err(e) => assert!(
                    !e.contains('~'),
                    "FUZZ FINDING: the refusal of {address:?} quotes the secret: {e}"
                ),
            }
            if let Err(e) = remote::parse_hf(address, ENDPOINT) {
                assert!(
                    !e.contains('~'),
                    "FUZZ FINDING: the refusal of {address:?} quotes the secret: {e}"
                );
            }
        }
    }
    // Shown twice is shown once, for text that escaping leaves alone.
    let shown = shown_url(&text);
    if !shown.contains(['\\', '"']) && shown.is_ascii() {
        assert_eq!(
            shown_url(&shown),
            shown,
            "FUZZ FINDING: shown_url is not idempotent on {text:?}"
        );
    }
    let parsed = remote::parse_url(&text);
    if let Ok(u) = &parsed {
        reparses(u, "a parsed URL");
    }
    // A redirect or `Link` target: the result is a URL the client can send.
    for base in [
        "https://hub.example/api/models/o/r/tree/x?recursive=true",
        "http://h:8080/a/b/",
    ] {
        if let Ok(u) = remote::join_url(base, &text) {
            reparses(&u, "a resolved reference");
            let after_scheme = u.request_target.split_once("://").map_or("", |(_, r)| r);
            let path = after_scheme.find('/').map_or("", |i| &after_scheme[i..]);
            let path = path.split('?').next().unwrap_or("");
            assert!(
                path.split('/').all(|s| s != "." && s != ".."),
                "FUZZ FINDING: a resolved reference keeps a dot segment: {:?}",
                u.request_target
            );
        }
    }
    check_hf(&text) || parsed.is_ok()
}

/// An `hf://` address: whatever it holds, its URLs stay on the endpoint's host, and its file
/// at a commit names the same repository.
fn check_hf(text: &str) -> bool {
    let Ok(a) = remote::parse_hf(text, ENDPOINT) else {
        return false;
    };
    let endpoint = remote::parse_url(ENDPOINT).expect("the endpoint parses");
    let tree = a.tree_url.as_ref().unwrap_or_else(|e| {
        panic!("FUZZ FINDING: {text:?} parses, but its listing URL does not: {e}")
    });
    assert_eq!(
        tree.origin, endpoint.origin,
        "FUZZ FINDING: the listing URL of {text:?} leaves the endpoint"
    );
    reparses(tree, "a listing URL");
    match (&a.resolve_url, a.is_repository) {
        (Ok(u), false) => {
            assert_eq!(
                u.origin, endpoint.origin,
                "FUZZ FINDING: the file URL of {text:?} leaves the endpoint"
            );
            reparses(u, "a file URL");
        }
        (Err(e), false) => panic!("FUZZ FINDING: {text:?} parses, but its file URL does not: {e}"),
        (Ok(_), true) => panic!("FUZZ FINDING: the repository {text:?} has a file URL"),
        (Err(_), true) => {}
    }
    let again = remote::parse_hf(&a.at_commit, ENDPOINT).unwrap_or_else(|e| {
        panic!(
            "FUZZ FINDING: the file of {text:?} at a commit, {:?}, does not parse: {e}",
            a.at_commit
        )
    });
    assert_eq!(again.repository, a.repository, "FUZZ FINDING: {text:?}");
    assert_eq!(again.revision, "0".repeat(40), "FUZZ FINDING: {text:?}");
    true
}

/// The `hub_listing` target. Input: pages separated by the byte `0xFF`; in a page, the body
/// comes first, then each `Link` header value after a `0xFE` byte. A listing read from them
/// keeps only usable paths, never leaves the hub's origin, never reads a page twice, and
/// ends within the pages given. The number of files kept, if the listing was read.
pub fn check_hub_listing(data: &[u8]) -> Option<usize> {
    let pages: Vec<Page<'_>> = data
        .split(|&b| b == 0xFF)
        .map(|p| {
            let mut parts = p.split(|&b| b == 0xFE);
            let body = parts.next().unwrap_or(&[]);
            Page {
                body,
                links: parts.collect(),
            }
        })
        .collect();
    let first = "https://hub.example/api/models/o/r/tree/0123?recursive=true";
    let keep_all = |_: &str| true;
    let (files, requested) = remote::read_listing(first, &pages, &keep_all).ok()?;
    assert!(
        requested.len() <= pages.len(),
        "FUZZ FINDING: more pages read than given"
    );
    let distinct: HashSet<&String> = requested.iter().collect();
    assert_eq!(
        distinct.len(),
        requested.len(),
        "FUZZ FINDING: a page read twice: {requested:?}"
    );
    let origin = remote::parse_url(first).expect("first").origin;
    for r in &requested {
        let u = remote::parse_url(r).expect("a page's URL parses");
        assert_eq!(
            u.origin, origin,
            "FUZZ FINDING: a page on another origin: {r:?}"
        );
    }
    for f in &files {
        assert!(
            !f.path.is_empty()
                && f.path
                    .split('/')
                    .all(|s| !s.is_empty() && s != "." && s != "..")
                && !f.path.chars().any(char::is_control),
            "FUZZ FINDING: the listing kept an unusable path {:?}",
            f.path
        );
        if let Some(h) = &f.lfs_sha256 {
            assert!(
                h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
                "FUZZ FINDING: an LFS hash that is not lower-case SHA-256 hex: {h:?}"
            );
        }
    }
    Some(files.len())
}

/// Records the names the index checker asks for.
struct Asked {
    inner: MemorySource,
    names: std::sync::Mutex<Vec<String>>,
}

impl ShardSource for Asked {
    fn list(&self) -> Result<Vec<String>, ReadError> {
        self.inner.list()
    }

    fn check(
        &self,
        name: &str,
        config: &Config,
        f: &mut dyn FnMut(Checked<'_>),
    ) -> Result<(), ReadError> {
        self.names
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(name.to_owned());
        self.inner.check(name, config, f)
    }
}

/// The `remote_index` target: the bytes of an index fetched by URL. Every shard name the
/// remote planner takes (`visit_shard_names`, then `check_shard_name`) becomes a URL in the
/// index's own directory on the index's own host, whose file name is that name; and every
/// shard the checker asks for was planned. The number of names planned.
pub fn check_remote_index(data: &[u8]) -> usize {
    let config = Config::default();
    let index_url = "https://cdn.example:8443/models/m/model.safetensors.index.json?sig=x";
    let base = remote::parse_url(index_url).expect("the index URL parses");
    let dir = &base.request_target[..base.request_target.rfind('/').expect("a path") + 1];
    let mut planned: Vec<String> = Vec::new();
    visit_shard_names(data, &config, &mut |name| {
        if stcheck::index::check_shard_name(name).is_ok() {
            planned.push(name.to_owned());
        }
        std::ops::ControlFlow::Continue(())
    });
    for name in &planned {
        let u = remote::sibling_url(index_url, name)
            .unwrap_or_else(|e| panic!("FUZZ FINDING: the shard {name:?} has no URL: {e}"));
        assert_eq!(
            u.origin, base.origin,
            "FUZZ FINDING: the shard {name:?} leaves the host"
        );
        let rest = u.request_target.strip_prefix(dir).unwrap_or_else(|| {
            panic!(
                "FUZZ FINDING: the shard {name:?} leaves the index's directory: {:?}",
                u.request_target
            )
        });
        assert!(
            !rest.contains(['/', '?', '#']),
            "FUZZ FINDING: the shard {name:?} is not one segment: {rest:?}"
        );
        assert_eq!(
            &u.file_name, name,
            "FUZZ FINDING: the shard's URL names another file"
        );
        reparses(&u, "a shard URL");
    }
    let asked = Asked {
        inner: MemorySource::new(),
        names: Default::default(),
    };
    let _ = check_index(data, &asked, &config);
    let count = planned.len();
    let planned: HashSet<&String> = planned.iter().collect();
    for name in asked.names.into_inner().unwrap_or_else(|e| e.into_inner()) {
        assert!(
            planned.contains(&name),
            "FUZZ FINDING: the checker asked for the shard {name:?}, which the planner skipped"
        );
    }
    count
}

/// The `content_range` part of `remote_range`: a parsed `Content-Range` is a consistent
/// span of the total, and prints back to itself. Whether it parsed.
pub fn check_content_range(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let Some((span, total)) = remote::content_range(&text) else {
        return false;
    };
    assert!(
        span.is_some() || total.is_some(),
        "FUZZ FINDING: an empty Content-Range"
    );
    if let Some((a, b)) = span {
        assert!(
            a <= b,
            "FUZZ FINDING: span {a}-{b} runs backwards in {text:?}"
        );
        if let Some(t) = total {
            assert!(
                b < t,
                "FUZZ FINDING: span {a}-{b} past the total {t} in {text:?}"
            );
        }
    }
    let printed = format!(
        "bytes {}/{}",
        span.map_or("*".to_owned(), |(a, b)| format!("{a}-{b}")),
        total.map_or("*".to_owned(), |t| t.to_string())
    );
    assert_eq!(
        remote::content_range(&printed),
        Some((span, total)),
        "FUZZ FINDING: {printed:?} does not read back"
    );
    true
}
