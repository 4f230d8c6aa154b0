//! Entry points for the fuzz targets of `stcheck-fuzzing` (feature `fuzzing`): the parsers of
//! what a server or a user sends, which are otherwise private to this module. Each returns
//! plain values, so the properties are asserted by the fuzzing crate. Not a stable API.

use std::collections::HashSet;

use ureq::http::{HeaderMap, HeaderValue};

use super::address::{HfAddress, Url};
use super::hub::{files_of_page, next_page, TreeEntry};
use super::RepoFile;

/// What a parsed `http(s)://` URL shows and sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlParts {
    /// For display (`Url`'s `shown`: the query as `?...`).
    pub shown: String,
    /// The whole URL as requested.
    pub request_target: String,
    /// Scheme, host and port.
    pub origin: String,
    /// The last path segment, decoded where possible.
    pub file_name: String,
}

fn parts(u: &Url) -> UrlParts {
    UrlParts {
        shown: u.shown(),
        request_target: u.request_target(),
        origin: u.origin().to_string(),
        file_name: u.file_name(),
    }
}

/// Parse an absolute `http(s)://` URL.
pub fn parse_url(s: &str) -> Result<UrlParts, String> {
    Url::parse(s).map(|u| parts(&u))
}

/// Resolve `reference` (a `Location` or a `Link` target) against the URL `base`.
pub fn join_url(base: &str, reference: &str) -> Result<UrlParts, String> {
    Url::parse(base)?.join(reference).map(|u| parts(&u))
}

/// The file `name` beside the URL `base` (a shard beside its index).
pub fn sibling_url(base: &str, name: &str) -> Result<UrlParts, String> {
    Url::parse(base).map(|u| parts(&u.sibling(name)))
}

/// What a parsed `hf://` address names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HfParts {
    /// `[datasets/|spaces/]org/repo`.
    pub repository: String,
    /// The revision (`main` when none was given).
    pub revision: String,
    /// Whether it names the whole repository.
    pub is_repository: bool,
    /// The same file at revision `0` * 40, as an `hf://` address.
    pub at_commit: String,
    /// The listing's API URL under `endpoint`.
    pub tree_url: Result<UrlParts, String>,
    /// The file's `resolve` URL under `endpoint`.
    pub resolve_url: Result<UrlParts, String>,
}

/// Parse an `hf://` address and build its URLs under the endpoint `endpoint`.
pub fn parse_hf(s: &str, endpoint: &str) -> Result<HfParts, String> {
    let a = HfAddress::parse(s)?;
    let endpoint = Url::parse(endpoint)?;
    Ok(HfParts {
        repository: a.repository(),
        revision: a.revision().to_owned(),
        is_repository: a.is_repository(),
        at_commit: a.file_at(&"0".repeat(40), "x.safetensors"),
        tree_url: a
            .api_url(&endpoint, "tree", a.revision())
            .map(|u| parts(&u)),
        resolve_url: a.resolve_url(&endpoint).map(|u| parts(&u)),
    })
}

/// `Content-Range`: the span (first and last byte) and the total, as the range reader reads it.
#[allow(clippy::type_complexity)]
pub fn content_range(v: &str) -> Option<(Option<(u64, u64)>, Option<u64>)> {
    super::fetch::parse_content_range(v).map(|c| (c.span, c.total))
}

/// One page of a listing as a server sent it: the body and the `Link` header values.
#[derive(Debug, Clone)]
pub struct Page<'a> {
    /// The response body.
    pub body: &'a [u8],
    /// The values of its `Link` headers (those that are not valid header values are dropped,
    /// as the HTTP client would refuse them).
    pub links: Vec<&'a [u8]>,
}

/// A listing read from `pages` as `Remote::list_repository` reads it, starting at `first`
/// (the tree URL): the next page is the one the `Link` header names, answered by the next
/// element of `pages`, whatever its URL. The files `keep` accepts, and the request targets of
/// the pages read; or the refusal's message.
pub fn read_listing(
    first: &str,
    pages: &[Page<'_>],
    keep: &dyn Fn(&str) -> bool,
) -> Result<(Vec<RepoFile>, Vec<String>), String> {
    let mut url = Url::parse(first)?;
    let origin = url.origin();
    let mut seen = HashSet::new();
    let mut requested = Vec::new();
    let mut files = Vec::new();
    for (i, page) in pages.iter().enumerate() {
        seen.insert(url.request_target());
        requested.push(url.request_target());
        let tree: Vec<TreeEntry> = serde_json::from_slice(page.body)
            .map_err(|e| format!("not the JSON the hub sends: {e}"))?;
        files_of_page(tree, keep, &mut files).map_err(|e| e.message().to_owned())?;
        let mut headers = HeaderMap::new();
        for v in &page.links {
            if let Ok(v) = HeaderValue::from_bytes(v) {
                headers.append("link", v);
            }
        }
        let page_number = u32::try_from(i + 1).unwrap_or(u32::MAX);
        match next_page(&url, &headers, &origin, &seen, page_number)
            .map_err(|e| e.message().to_owned())?
        {
            Some(next) => url = next,
            None => return Ok((files, requested)),
        }
    }
    Err("more pages than were given".into())
}
