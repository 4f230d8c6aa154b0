//! The Hugging Face hub's own API: a repository's files at a revision, what the hub says about
//! a file (its commit and SHA-256), and its reasons for refusing a request.
//!
//! What this relies on, as `huggingface_hub` (`HfApi.repo_info`, `HfApi.list_repo_tree`,
//! `utils._pagination.paginate`, `utils._http.hf_raise_for_status`) uses the hub:
//!
//! - `GET {endpoint}/api/{models|datasets|spaces}/{org}/{repo}/revision/{revision}` (the
//!   revision quoted as one segment, `/` as `%2F`) answers a JSON object whose `sha` is the
//!   commit the revision names now. It is asked once per repository, and every file is then
//!   requested at that commit, so all the files of a run (a set's index and shards) come from
//!   one commit even if the branch moves meanwhile.
//! - `GET {endpoint}/api/{kind}/{org}/{repo}/tree/{commit}?recursive=true` answers a JSON
//!   array of entries `{"type": "file"|"directory", "path", "size", "oid", "lfs": {"oid",
//!   "size", "pointerSize"}}`, where `lfs.oid` is the SHA-256 of a file stored in LFS. Long
//!   listings are paginated: the response's `Link` header names the next page
//!   (`<URL>; rel="next"`, the URL already holding its query), as GitHub's API does.
//! - A file's `resolve` URL answers with `X-Repo-Commit` (the commit) and, for an LFS file,
//!   `X-Linked-Etag` (its SHA-256, quoted) on the response of the hub itself, usually a
//!   redirect to a CDN.
//! - A refusal carries `X-Error-Code` (`RepoNotFound`, `RevisionNotFound`, `EntryNotFound`,
//!   `GatedRepo`, ...) and `X-Error-Message`.
//!
//! Bounded: at most [`MAX_PAGES`] pages of at most [`MAX_PAGE_BYTES`] bytes each, at most
//! [`MAX_ENTRIES`] entries in all, of which only the files a check needs are kept; a next page
//! on another origin, or one already seen, is refused.

use std::collections::HashSet;

use ureq::http::{HeaderMap, Method};

use super::address::{HfAddress, Origin, Url};
use super::http::{read_up_to, Deadline, Session};
use super::said::{clean, is_commit, is_sha256_hex};
use super::{Cost, ErrorKind, Remote, RemoteError};
pub use crate::event::HubInfo;

/// Most pages of a tree listing.
pub const MAX_PAGES: u32 = 1_000;
/// Most bytes of one page of a tree listing, or of the revision's description.
pub const MAX_PAGE_BYTES: u64 = 64 << 20;
/// Most entries of a tree listing (files and directories).
pub const MAX_ENTRIES: u64 = 2_000_000;

/// A file of a repository's listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoFile {
    /// Its path in the repository (`/`-separated).
    pub path: String,
    /// Its length, as listed.
    pub size: Option<u64>,
    /// The SHA-256 of its LFS object, lower case, for a file stored in LFS.
    pub lfs_sha256: Option<String>,
    /// The listing's `lfs.oid` when it is not a SHA-256 (its letters and digits, at most 80):
    /// never dropped, a deep check fails the file with `INTEGRITY-SHA256`.
    pub lfs_oid_malformed: Option<String>,
}

impl RepoFile {
    /// What keeping it costs, about: its strings and the record around them.
    fn kept_bytes(&self) -> u64 {
        let ids = [&self.lfs_sha256, &self.lfs_oid_malformed];
        let ids: usize = ids.iter().filter_map(|s| s.as_ref()).map(String::len).sum();
        (self.path.len() + ids + std::mem::size_of::<RepoFile>()) as u64
    }
}

/// A repository's files at one commit.
#[derive(Debug, Clone)]
pub struct Listing {
    /// The repository as given, for display (`hf://org/repo@revision`).
    pub shown: String,
    /// The commit the revision named when it was resolved.
    pub commit: String,
    /// The files that `keep` kept, in the hub's order.
    pub files: Vec<RepoFile>,
    /// What listing it cost.
    pub cost: Cost,
}

impl Listing {
    /// The `hf://` address of `file` at the listing's commit.
    pub fn address_of(&self, address: &str, file: &RepoFile) -> Option<String> {
        let a = HfAddress::parse(address).ok()?;
        Some(a.file_at(&self.commit, &file.path))
    }
}

fn response_error(message: impl Into<String>) -> RemoteError {
    RemoteError::new(ErrorKind::Response, message)
}

/// GET `url` and parse its JSON body (at most [`MAX_PAGE_BYTES`]), with the response's
/// headers.
fn get_json<T: serde::de::DeserializeOwned>(
    session: &mut Session<'_>,
    url: &Url,
    what: &str,
) -> Result<(T, HeaderMap), RemoteError> {
    let resp = session.send(Method::GET, url, None)?;
    if resp.status != 200 {
        return Err(response_error(format!(
            "unexpected HTTP {} to the request for {what}",
            resp.status
        )));
    }
    let headers = resp.headers.clone();
    let mut reader = session.reader(resp);
    let read = read_up_to(&mut reader, MAX_PAGE_BYTES + 1);
    drop(reader);
    let bytes = read.map_err(|e| session.body_error(e, what))?;
    if bytes.len() as u64 > MAX_PAGE_BYTES {
        return Err(response_error(format!(
            "{what} is longer than {MAX_PAGE_BYTES} bytes"
        )));
    }
    let value = serde_json::from_slice(&bytes)
        .map_err(|e| response_error(format!("{what} is not the JSON the hub sends: {e}")))?;
    Ok((value, headers))
}

#[derive(serde::Deserialize)]
struct RevisionInfo {
    sha: Option<String>,
}

#[derive(serde::Deserialize)]
pub(super) struct TreeEntry {
    #[serde(rename = "type")]
    kind: String,
    path: String,
    size: Option<u64>,
    lfs: Option<LfsInfo>,
}

#[derive(serde::Deserialize)]
struct LfsInfo {
    oid: Option<String>,
}

/// The URL of `rel="next"` in a `Link` header, if any.
pub(super) fn next_link(headers: &HeaderMap) -> Option<String> {
    for value in headers.get_all("link") {
        let Ok(value) = value.to_str() else { continue };
        for part in value.split(',') {
            let mut pieces = part.split(';');
            let Some(target) = pieces.next().map(str::trim) else {
                continue;
            };
            let is_next = pieces.any(|p| {
                let p = p.trim();
                p.strip_prefix("rel=").is_some_and(|r| {
                    r.trim_matches('"')
                        .split_ascii_whitespace()
                        .any(|r| r.eq_ignore_ascii_case("next"))
                })
            });
            if is_next {
                if let Some(u) = target.strip_prefix('<').and_then(|t| t.strip_suffix('>')) {
                    return Some(u.to_owned());
                }
            }
        }
    }
    None
}

impl Remote {
    /// Whether `address` names a whole repository on the hub (`hf://org/repo[@revision]`,
    /// `hf://datasets/org/repo`, ...).
    pub fn is_repository(address: &str) -> bool {
        address
            .get(..5)
            .is_some_and(|p| p.eq_ignore_ascii_case("hf://"))
            && HfAddress::parse(address).is_ok_and(|a| a.is_repository())
    }

    /// The files of the repository `address` names, at the commit its revision names now,
    /// keeping those whose path `keep` accepts. One deadline ([`super::RemoteOptions::total_timeout`])
    /// for the whole listing.
    pub fn list_repository(
        &self,
        address: &str,
        keep: &dyn Fn(&str) -> bool,
    ) -> Result<Listing, RemoteError> {
        let max = stcheck::limits::DEFAULT_MAX_HEADER_SIZE;
        self.list_repository_within(address, keep, None, (max, "max_header_size"))
    }

    /// [`Remote::list_repository`], ending by `outer` too (the repository's deadline), and
    /// keeping at most `max_kept` bytes of the files' names and ids (the run's header limit N,
    /// and how the face names it: with the plan's shard names, within SPEC section 3's bound
    /// of about 2 x N).
    pub(super) fn list_repository_within(
        &self,
        address: &str,
        keep: &dyn Fn(&str) -> bool,
        outer: Option<Deadline>,
        max_kept: (u64, &str),
    ) -> Result<Listing, RemoteError> {
        let bad = |e: String| RemoteError::new(ErrorKind::Address, e);
        let hf = HfAddress::parse(address).map_err(bad)?;
        if !hf.is_repository() {
            return Err(bad("not the address of a whole repository".into()));
        }
        let shown = format!("hf://{}@{}", hf.repository(), hf.revision());
        let revision_url = hf
            .api_url(&self.hf_endpoint, "revision", hf.revision())
            .map_err(bad)?;
        let deadline =
            Deadline::after(Some(self.options.total_timeout), "listing a repository").within(outer);
        let mut session = Session::new(self, &revision_url, deadline).home_only();
        let result = list(
            &mut session,
            &hf,
            &self.hf_endpoint,
            &revision_url,
            keep,
            max_kept,
        );
        result
            .map(|(commit, files)| Listing {
                shown,
                commit,
                files,
                cost: session.cost,
            })
            .map_err(|e| RemoteError {
                message: self.options.scrub(&e.message),
                ..e
            })
    }
}

fn list(
    session: &mut Session<'_>,
    hf: &HfAddress,
    endpoint: &Url,
    revision_url: &Url,
    keep: &dyn Fn(&str) -> bool,
    (max_kept, limit): (u64, &str),
) -> Result<(String, Vec<RepoFile>), RemoteError> {
    let (info, headers): (RevisionInfo, HeaderMap) =
        get_json(session, revision_url, "the revision's description")?;
    let commit = info
        .sha
        .or_else(|| clean(&headers, "x-repo-commit"))
        .filter(|c| is_commit(c))
        .ok_or_else(|| response_error("the hub did not say which commit the revision names"))?
        .to_ascii_lowercase();
    let mut url = hf
        .api_url(endpoint, "tree", &commit)
        .map_err(|e| RemoteError::new(ErrorKind::Address, e))?;
    let origin = url.origin();
    let mut seen: HashSet<String> = HashSet::new();
    let mut files = Vec::new();
    let mut entries = 0u64;
    let mut kept = 0u64;
    for page in 1..=MAX_PAGES {
        seen.insert(url.request_target());
        let (tree, headers): (Vec<TreeEntry>, HeaderMap) =
            get_json(session, &url, "a page of the repository's file listing")?;
        entries += tree.len() as u64;
        if entries > MAX_ENTRIES {
            return Err(response_error(format!(
                "the repository lists more than {MAX_ENTRIES} files and directories"
            )));
        }
        let before = files.len();
        files_of_page(tree, keep, &mut files)?;
        kept = files[before..]
            .iter()
            .fold(kept, |n, f| n.saturating_add(f.kept_bytes()));
        if kept > max_kept {
            return Err(response_error(format!(
                "the repository lists more than {max_kept} bytes of names of files to check \
                 (the header limit, {limit}, bounds what a listing keeps)"
            )));
        }
        let Some(next) = next_page(&url, &headers, &origin, &seen, page)? else {
            return Ok((commit, files));
        };
        url = next;
    }
    Err(response_error(format!(
        "the repository's file listing has more than {MAX_PAGES} pages"
    )))
}

/// Keep the files of one page of a listing that `keep` accepts, after checking their paths.
pub(super) fn files_of_page(
    tree: Vec<TreeEntry>,
    keep: &dyn Fn(&str) -> bool,
    files: &mut Vec<RepoFile>,
) -> Result<(), RemoteError> {
    for e in tree {
        if e.kind != "file" || !keep(&e.path) {
            continue;
        }
        let ok_path = !e.path.is_empty()
            && e.path
                .split('/')
                .all(|s| !s.is_empty() && s != "." && s != "..")
            && !e.path.chars().any(char::is_control);
        if !ok_path {
            return Err(response_error(format!(
                "the listing names a file with an unusable path: {:?}",
                stcheck::escape(&e.path)
            )));
        }
        let oid = e.lfs.and_then(|l| l.oid);
        let (lfs_sha256, lfs_oid_malformed) = match oid {
            Some(o) if is_sha256_hex(&o) => (Some(o.to_ascii_lowercase()), None),
            // Kept (shown safely): a deep check then says so, instead of comparing nothing.
            Some(o) => {
                let shown = o.chars().filter(char::is_ascii_alphanumeric).take(80);
                (None, Some(shown.collect()))
            }
            None => (None, None),
        };
        files.push(RepoFile {
            path: e.path,
            size: e.size,
            lfs_sha256,
            lfs_oid_malformed,
        });
    }
    Ok(())
}

/// The page after `url`, from its response's `Link` header: on the hub's `origin`, and not one
/// of the pages already `seen`. `page` is the number of the page `url` is.
pub(super) fn next_page(
    url: &Url,
    headers: &HeaderMap,
    origin: &Origin,
    seen: &HashSet<String>,
    page: u32,
) -> Result<Option<Url>, RemoteError> {
    let Some(next) = next_link(headers) else {
        return Ok(None);
    };
    let next = url
        .join(&next)
        .map_err(|e| response_error(format!("the listing's next page: {e}")))?;
    if next.origin() != *origin {
        return Err(response_error(
            "the listing's next page is on another host than the hub's",
        ));
    }
    if seen.contains(&next.request_target()) {
        return Err(response_error(format!(
            "the listing's pages loop: page {} links back to an earlier page",
            page
        )));
    }
    Ok(Some(next))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::said::tests::headers;

    #[test]
    fn finds_the_next_page() {
        let h = headers(&[(
            "link",
            r#"<https://hub/api/models/o/r/tree/x?cursor=abc&recursive=true>; rel="next", <https://hub/last>; rel="last""#,
        )]);
        assert_eq!(
            next_link(&h).as_deref(),
            Some("https://hub/api/models/o/r/tree/x?cursor=abc&recursive=true")
        );
        assert_eq!(next_link(&headers(&[("link", "<a>; rel=\"prev\"")])), None);
        assert_eq!(next_link(&headers(&[])), None);
    }
}
