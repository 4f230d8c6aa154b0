//! Addresses: parsing `http(s)://` URLs, expanding `hf://` ones, resolving a redirect's
//! `Location` and a shard's name, and showing a URL without what may be secret in it.
//!
//! Hand-written rather than a URL crate: the client needs only absolute `http(s)` URLs, the
//! RFC 3986 reference resolution of section 5.2 for `Location`, and one more path segment for
//! a shard, and the final string is checked again by the HTTP client's own parser.

use std::fmt;

/// `http` or `https`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Scheme {
    Http,
    Https,
}

impl Scheme {
    fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// Scheme, host and port: who credentials belong to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Origin {
    scheme: Scheme,
    host: String,
    port: u16,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.scheme.as_str(), self.host)?;
        if self.port != self.scheme.default_port() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

/// An absolute `http` or `https` URL without user information or fragment.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Url {
    scheme: Scheme,
    /// Lower case; an IPv6 literal keeps its brackets.
    host: String,
    port: Option<u16>,
    /// Starts with `/`.
    path: String,
    /// Without the `?`.
    query: Option<String>,
}

/// Bytes allowed in a URL as given (RFC 3986 unreserved, reserved and `%`).
fn is_url_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=%".contains(&b)
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~".contains(&b)
}

/// Percent-encode every byte of `s` outside the unreserved set.
pub(crate) fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if is_unreserved(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A file path of an `hf://` address with the escapes [`HfAddress::file_at`] writes (`%25`,
/// `%23`, `%3F`, any case) decoded, and nothing else: any other `%` is the name's own.
fn unescape_name(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let c = match rest
            .get(i + 1..i + 3)
            .map(str::to_ascii_uppercase)
            .as_deref()
        {
            Some("25") => Some('%'),
            Some("23") => Some('#'),
            Some("3F") => Some('?'),
            _ => None,
        };
        match c {
            Some(c) => {
                out.push(c);
                rest = &rest[i + 3..];
            }
            None => {
                out.push('%');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Decode `%XX` escapes; `None` if one is malformed or the result is not UTF-8.
fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// RFC 3986 section 5.2.4.
fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').collect();
    let last = segments.len().saturating_sub(1);
    for (i, seg) in segments.iter().enumerate() {
        match *seg {
            "." => {
                if i == last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 {
                    out.pop();
                }
                if i == last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let joined = out.join("/");
    if joined.starts_with('/') {
        joined
    } else {
        format!("/{joined}")
    }
}

impl Url {
    /// Parse an absolute `http://` or `https://` URL. Errors never repeat the input: it may
    /// hold a secret.
    pub(crate) fn parse(s: &str) -> Result<Url, String> {
        let (scheme, rest) = if let Some(r) = strip_prefix_ignore_case(s, "https://") {
            (Scheme::Https, r)
        } else if let Some(r) = strip_prefix_ignore_case(s, "http://") {
            (Scheme::Http, r)
        } else {
            return Err("not an http:// or https:// URL".to_owned());
        };
        if let Some(b) = s.bytes().find(|&b| !is_url_byte(b)) {
            return Err(if b.is_ascii_graphic() || b == b' ' {
                format!(
                    "the URL holds {:?}, which must be percent-encoded",
                    b as char
                )
            } else {
                "the URL holds a control or non-ASCII character; percent-encode it".to_owned()
            });
        }
        let rest = rest.split('#').next().unwrap_or("");
        let auth_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(auth_end);
        if authority.contains('@') {
            return Err(
                "user information (user:password@) in a URL is not accepted; pass credentials in a header"
                    .to_owned(),
            );
        }
        let (host, port) = split_host_port(authority)?;
        let (path, query) = match tail.split_once('?') {
            Some((p, q)) => (p, Some(q.to_owned())),
            None => (tail, None),
        };
        let path = if path.is_empty() {
            "/".to_owned()
        } else {
            path.to_owned()
        };
        Ok(Url {
            scheme,
            host,
            port,
            path,
            query,
        })
    }

    pub(crate) fn origin(&self) -> Origin {
        Origin {
            scheme: self.scheme,
            host: self.host.clone(),
            port: self.port.unwrap_or(self.scheme.default_port()),
        }
    }

    /// The path, percent-encoded as sent.
    #[cfg(test)]
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The last path segment, decoded where possible.
    pub(crate) fn file_name(&self) -> String {
        let last = self.path.rsplit('/').next().unwrap_or("");
        decode(last).unwrap_or_else(|| last.to_owned())
    }

    /// Resolve a `Location` (RFC 3986 section 5.2.2; a fragment is dropped). Errors for a
    /// scheme other than `http`/`https`.
    pub(crate) fn join(&self, reference: &str) -> Result<Url, String> {
        let reference = reference.trim();
        let reference = reference.split('#').next().unwrap_or("");
        let has_scheme = reference.split_once(':').is_some_and(|(s, _)| {
            s.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        });
        // An absolute or network-path reference has its dot segments removed too (5.2.2).
        let without_dots = |mut u: Url| {
            u.path = remove_dot_segments(&u.path);
            u
        };
        if has_scheme {
            return Url::parse(reference)
                .map(without_dots)
                .map_err(|e| format!("redirect target: {e}"));
        }
        if let Some(rest) = reference.strip_prefix("//") {
            return Url::parse(&format!("{}://{rest}", self.scheme.as_str()))
                .map(without_dots)
                .map_err(|e| format!("redirect target: {e}"));
        }
        if !reference.bytes().all(is_url_byte) {
            return Err("redirect target holds a character that must be percent-encoded".into());
        }
        let (rpath, rquery) = match reference.split_once('?') {
            Some((p, q)) => (p, Some(q.to_owned())),
            None => (reference, None),
        };
        let mut out = self.clone();
        if rpath.is_empty() {
            if rquery.is_some() {
                out.query = rquery;
            }
            return Ok(out);
        }
        out.path = if rpath.starts_with('/') {
            remove_dot_segments(rpath)
        } else {
            let dir = &self.path[..self.path.rfind('/').map_or(0, |i| i + 1)];
            remove_dot_segments(&format!("{dir}{rpath}"))
        };
        out.query = rquery;
        Ok(out)
    }

    /// The file `name` (a plain file name, already checked) in this URL's directory: same
    /// origin, same directory, no query.
    pub(crate) fn sibling(&self, name: &str) -> Url {
        let dir = &self.path[..self.path.rfind('/').map_or(0, |i| i + 1)];
        Url {
            scheme: self.scheme,
            host: self.host.clone(),
            port: self.port,
            path: format!("{dir}{}", encode_segment(name)),
            query: None,
        }
    }

    /// The URL for display: the query, which may hold a signature, is shown as `?...`.
    pub(crate) fn shown(&self) -> String {
        let mut s = self.origin_and_path();
        if self.query.is_some() {
            s.push_str("?...");
        }
        s
    }

    fn origin_and_path(&self) -> String {
        let mut s = format!("{}://{}", self.scheme.as_str(), self.host);
        if let Some(p) = self.port {
            s.push_str(&format!(":{p}"));
        }
        s.push_str(&self.path);
        s
    }

    /// The whole URL, as requested. Not for display.
    pub(crate) fn request_target(&self) -> String {
        let mut s = self.origin_and_path();
        if let Some(q) = &self.query {
            s.push('?');
            s.push_str(q);
        }
        s
    }
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

fn split_host_port(authority: &str) -> Result<(String, Option<u16>), String> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let end = rest
            .find(']')
            .ok_or("an IPv6 address without its closing bracket")?;
        let host = &authority[..end + 2];
        let after = &rest[end + 1..];
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or("garbage after an IPv6 address")?),
        };
        (host, port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err("the URL has no host".to_owned());
    }
    if !host.starts_with('[')
        && !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b))
    {
        return Err("the URL's host holds a character not allowed in a host name".to_owned());
    }
    let port = match port {
        None | Some("") => None,
        Some(p) => Some(
            p.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| p.parse::<u16>().ok())
                .flatten()
                .filter(|&p| p != 0)
                .ok_or("the URL's port is not a number from 1 to 65535")?,
        ),
    };
    Ok((host.to_ascii_lowercase(), port))
}

/// A Hugging Face address, `hf://[datasets/|spaces/]org/repo[@revision][/path]`: a file, or
/// (without a path) the whole repository at that revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HfAddress {
    kind: &'static str,
    repo: String,
    revision: String,
    path: String,
}

impl HfAddress {
    /// Parse an `hf://` address. A revision runs to the next `/`, except that `refs/pr/N` and
    /// `refs/convert/NAME` are taken whole; a revision may also be given percent-encoded.
    /// Without a file path (`hf://org/repo`, `hf://org/repo@v1`, `hf://org/repo/`), the
    /// address names the whole repository ([`HfAddress::is_repository`]).
    pub(crate) fn parse(s: &str) -> Result<HfAddress, String> {
        let rest = strip_prefix_ignore_case(s, "hf://").ok_or("not an hf:// address")?;
        let (kind, rest) = if let Some(r) = rest.strip_prefix("datasets/") {
            ("datasets/", r)
        } else if let Some(r) = rest.strip_prefix("spaces/") {
            ("spaces/", r)
        } else {
            ("", rest)
        };
        let (org, rest) = rest
            .split_once('/')
            .ok_or("an hf:// address needs org/repo, then an optional @revision and file path")?;
        let (repo_rev, path) = if let Some(at) = rest.find('@').filter(|&at| {
            // The '@' of a revision comes before the first '/'.
            rest.find('/').is_none_or(|slash| at < slash)
        }) {
            let (repo, rev_path) = (&rest[..at], &rest[at + 1..]);
            let take = if rev_path.starts_with("refs/pr/") || rev_path.starts_with("refs/convert/")
            {
                3
            } else {
                1
            };
            let mut parts = rev_path.splitn(take + 1, '/');
            let rev: Vec<&str> = parts.by_ref().take(take).collect();
            let path = parts.next().unwrap_or("");
            ((repo, Some(rev.join("/"))), path)
        } else {
            let (repo, path) = rest.split_once('/').unwrap_or((rest, ""));
            ((repo, None), path)
        };
        let (repo, rev) = repo_rev;
        let ok_name = |n: &str| {
            !n.is_empty()
                && n != "."
                && n != ".."
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        };
        if !ok_name(org) || !ok_name(repo) {
            return Err(
                "an hf:// address needs org/repo made of letters, digits, '-', '_' and '.'"
                    .to_owned(),
            );
        }
        let revision = match rev {
            None => "main".to_owned(),
            Some(r) => decode(&r)
                .filter(|r| !r.chars().any(char::is_control))
                .ok_or("the revision after '@' is badly encoded")?,
        };
        // The segment rules of the path, applied after decoding: `..`, `%2e%2e` and
        // `refs/pr/..` are refused, not sent as a dot segment. The revision is then sent
        // as one segment, `/` encoded (`refs%2Fpr%2F1`), as huggingface_hub quotes it.
        if revision
            .split('/')
            .any(|seg| seg.is_empty() || seg == "." || seg == "..")
        {
            return Err(
                "the revision after '@' has an empty, '.' or '..' segment (a revision is a \
                 branch, a tag, a commit or refs/pr/N)"
                    .into(),
            );
        }
        for seg in path.split('/').filter(|_| !path.is_empty()) {
            if seg.is_empty() || seg == "." || seg == ".." {
                return Err(
                    "the file path of an hf:// address has an empty, '.' or '..' segment".into(),
                );
            }
            if seg.chars().any(char::is_control) {
                return Err("the file path of an hf:// address holds a control character".into());
            }
        }
        Ok(HfAddress {
            kind,
            repo: format!("{org}/{repo}"),
            revision,
            path: unescape_name(path),
        })
    }

    /// Whether the address names a whole repository (no file path).
    pub(crate) fn is_repository(&self) -> bool {
        self.path.is_empty()
    }

    /// The revision as given (`main` when none was).
    pub(crate) fn revision(&self) -> &str {
        &self.revision
    }

    /// The repository, `[datasets/|spaces/]org/repo`.
    pub(crate) fn repository(&self) -> String {
        format!("{}{}", self.kind, self.repo)
    }

    /// The file `path` of the same repository at revision `commit`, as an `hf://` address.
    /// A path's `%`, `#` and `?` (an uploader may put them in a file name) are written
    /// `%25`, `%23` and `%3F`, so that the address is shown whole (not cut as a query or a
    /// fragment) and parses back to the same path.
    pub(crate) fn file_at(&self, commit: &str, path: &str) -> String {
        // '%' first: the escapes written after it are not escaped again.
        let escaped = path
            .replace('%', "%25")
            .replace('#', "%23")
            .replace('?', "%3F");
        format!("hf://{}{}@{commit}/{escaped}", self.kind, self.repo)
    }

    /// The hub's API URL `{endpoint}/api/{models|datasets|spaces}/{org}/{repo}/{what}/{revision}`
    /// (what: `revision` or `tree`), as huggingface_hub's `repo_info` and `list_repo_tree`
    /// build it: the revision quoted as one segment.
    pub(crate) fn api_url(
        &self,
        endpoint: &Url,
        what: &str,
        revision: &str,
    ) -> Result<Url, String> {
        let base = endpoint.origin_and_path();
        let base = base.trim_end_matches('/');
        let kind = match self.kind {
            "datasets/" => "datasets",
            "spaces/" => "spaces",
            _ => "models",
        };
        let query = if what == "tree" {
            "?recursive=true"
        } else {
            ""
        };
        Url::parse(&format!(
            "{base}/api/{kind}/{}/{what}/{}{query}",
            self.repo,
            encode_segment(revision)
        ))
    }

    /// The hub's `resolve` URL under `endpoint` (scheme, host and an optional path prefix).
    pub(crate) fn resolve_url(&self, endpoint: &Url) -> Result<Url, String> {
        if self.is_repository() {
            return Err("an hf:// address of a whole repository has no file URL".into());
        }
        let base = endpoint.origin_and_path();
        let base = base.trim_end_matches('/');
        let path: Vec<String> = self.path.split('/').map(encode_segment).collect();
        Url::parse(&format!(
            "{base}/{}{}/resolve/{}/{}",
            self.kind,
            self.repo,
            encode_segment(&self.revision),
            path.join("/")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).expect(s)
    }

    #[test]
    fn names_with_hash_and_question_mark_are_shown_whole_and_parse_back() {
        let repo = HfAddress::parse("hf://org/repo").expect("repo");
        let endpoint = u("https://hub.example");
        for name in [
            "a#1.safetensors",
            "d/a?2.safetensors",
            "100%.safetensors",
            "%23",
        ] {
            let address = repo.file_at(&"ab".repeat(20), name);
            let shown = crate::target::shown_url(&address);
            assert_eq!(shown, address, "{name}");
            let back = HfAddress::parse(&address).expect("parses");
            assert_eq!(back.path, name);
            let url = back.resolve_url(&endpoint).expect("url");
            assert_eq!(url.file_name(), name.rsplit('/').next().unwrap_or(name));
        }
    }

    #[test]
    fn parses_and_shows_without_the_query() {
        let url = u("HTTPS://Example.COM:8443/a/b.safetensors?sig=secret#frag");
        assert_eq!(url.shown(), "https://example.com:8443/a/b.safetensors?...");
        assert_eq!(
            url.request_target(),
            "https://example.com:8443/a/b.safetensors?sig=secret"
        );
        assert_eq!(url.origin().to_string(), "https://example.com:8443");
        assert_eq!(u("http://h").path(), "/");
        assert_eq!(
            u("http://h:80/x").origin(),
            u("http://h/y").origin(),
            "the default port is the same origin"
        );
        assert_ne!(u("http://h/x").origin(), u("https://h/x").origin());
        assert_eq!(u("http://[::1]:8/x").origin().to_string(), "http://[::1]:8");
    }

    #[test]
    fn rejects_user_information_without_repeating_it() {
        let e = Url::parse("https://user:hunter2@example.com/x").expect_err("userinfo");
        assert!(!e.contains("hunter2"), "{e}");
        for bad in [
            "ftp://x/y",
            "http://",
            "http://h:0/",
            "http://h:99999/",
            "http://h/a b",
            "http://h/\n",
            "http://h\u{e9}/",
            "http://[::1/",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn joins_locations_as_rfc_3986_section_5_4() {
        let base = u("http://a/b/c/d;p?q");
        for (r, want) in [
            ("g", "http://a/b/c/g"),
            ("./g", "http://a/b/c/g"),
            ("g/", "http://a/b/c/g/"),
            ("/g", "http://a/g"),
            ("//g", "http://g/"),
            ("?y", "http://a/b/c/d;p?y"),
            ("g?y", "http://a/b/c/g?y"),
            ("#s", "http://a/b/c/d;p?q"),
            ("", "http://a/b/c/d;p?q"),
            (".", "http://a/b/c/"),
            ("..", "http://a/b/"),
            ("../g", "http://a/b/g"),
            ("../..", "http://a/"),
            ("../../g", "http://a/g"),
            ("../../../g", "http://a/g"),
            ("/./g", "http://a/g"),
            ("g/../h", "http://a/b/c/h"),
            ("https://cdn.example/x?sig=1", "https://cdn.example/x?sig=1"),
            // Found by the `address` fuzz target: an absolute or network-path reference
            // kept its dot segments (5.2.2 removes them from every reference's path).
            ("http://g/a/./b/../c", "http://g/a/c"),
            ("//g/x/..", "http://g/"),
        ] {
            assert_eq!(base.join(r).expect(r).request_target(), want, "{r}");
        }
        assert!(base.join("javascript:alert(1)").is_err());
        assert!(base.join("file:///etc/passwd").is_err());
    }

    #[test]
    fn a_sibling_stays_in_the_directory() {
        let index = u("http://h:1/org/repo/resolve/main/model.safetensors.index.json?x=1");
        let s = index.sibling("model-00001-of-00002.safetensors");
        assert_eq!(
            s.request_target(),
            "http://h:1/org/repo/resolve/main/model-00001-of-00002.safetensors"
        );
        assert_eq!(
            index.sibling("a b#?%.safetensors").path(),
            "/org/repo/resolve/main/a%20b%23%3F%25.safetensors"
        );
        assert_eq!(s.file_name(), "model-00001-of-00002.safetensors");
    }

    #[test]
    fn expands_hf_addresses() {
        let hub = u("https://huggingface.co");
        let mirror = u("http://127.0.0.1:9/mirror/");
        for (addr, endpoint, want) in [
            (
                "hf://org/repo/model.safetensors",
                &hub,
                "https://huggingface.co/org/repo/resolve/main/model.safetensors",
            ),
            (
                "hf://org/repo@v1.0/sub dir/model.safetensors",
                &hub,
                "https://huggingface.co/org/repo/resolve/v1.0/sub%20dir/model.safetensors",
            ),
            (
                "hf://org/repo@refs/pr/3/model.safetensors",
                &mirror,
                "http://127.0.0.1:9/mirror/org/repo/resolve/refs%2Fpr%2F3/model.safetensors",
            ),
            (
                "hf://datasets/org/repo@refs%2Fconvert%2Fparquet/x.safetensors",
                &hub,
                "https://huggingface.co/datasets/org/repo/resolve/refs%2Fconvert%2Fparquet/x.safetensors",
            ),
        ] {
            let a = HfAddress::parse(addr).expect(addr);
            assert_eq!(a.resolve_url(endpoint).expect(addr).request_target(), want);
        }
        for repo in [
            "hf://org/repo",
            "hf://org/repo/",
            "hf://org/repo@v1",
            "hf://datasets/o/r",
        ] {
            let a = HfAddress::parse(repo).expect(repo);
            assert!(a.is_repository(), "{repo}");
            assert!(a.resolve_url(&hub).is_err());
        }
        let a = HfAddress::parse("hf://datasets/org/repo@refs/pr/1").expect("pr");
        assert_eq!(
            a.api_url(&mirror, "tree", "refs/pr/1")
                .expect("tree")
                .request_target(),
            "http://127.0.0.1:9/mirror/api/datasets/org/repo/tree/refs%2Fpr%2F1?recursive=true"
        );
        assert_eq!(
            a.file_at("abc", "d/x.safetensors"),
            "hf://datasets/org/repo@abc/d/x.safetensors"
        );
        for bad in [
            "hf://org",
            "hf://org/../x/y",
            "hf://org/repo/a/../b",
            "hf://org/repo@/x",
            "hf://o rg/repo/x",
        ] {
            assert!(HfAddress::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_revision_is_never_a_dot_segment() {
        for bad in [
            "hf://org/repo@../model.safetensors",
            "hf://org/repo@./model.safetensors",
            "hf://org/repo@%2e%2e/model.safetensors",
            "hf://org/repo@%2E%2E/model.safetensors",
            "hf://org/repo@.%2e/model.safetensors",
            "hf://org/repo@%2e/model.safetensors",
            "hf://org/repo@refs/pr/../model.safetensors",
            "hf://org/repo@refs%2F..%2Fmain/model.safetensors",
            "hf://org/repo@refs%2Fpr%2F/model.safetensors",
            "hf://org/repo@refs/pr//model.safetensors",
            "hf://org/repo@%2F/model.safetensors",
            "hf://org/repo@%0a/model.safetensors",
            "hf://org/repo@%zz/model.safetensors",
        ] {
            let e = HfAddress::parse(bad).expect_err(bad);
            assert!(e.contains("revision"), "{bad}: {e}");
        }
        let hub = u("https://huggingface.co");
        for (addr, revision) in [
            ("hf://org/repo@refs/pr/1/model.safetensors", "refs%2Fpr%2F1"),
            (
                "hf://org/repo@refs%2Fpr%2F1/model.safetensors",
                "refs%2Fpr%2F1",
            ),
            ("hf://org/repo@v1..2/model.safetensors", "v1..2"),
            ("hf://org/repo@...x/model.safetensors", "...x"),
            // Double-encoded: the revision is the text `%2e%2e`, sent encoded again.
            ("hf://org/repo@%252e%252e/model.safetensors", "%252e%252e"),
        ] {
            let url = HfAddress::parse(addr)
                .and_then(|a| a.resolve_url(&hub))
                .expect(addr);
            assert_eq!(
                url.path(),
                format!("/org/repo/resolve/{revision}/model.safetensors"),
                "{addr}"
            );
        }
    }
}
