//! What a server says about a file in its response headers, and why it refuses: the hub's
//! `X-Repo-Commit`, `X-Linked-Etag`, `ETag`, and `X-Error-Code` / `X-Error-Message` (see
//! `hub.rs` for what this relies on). A leaf: the HTTP session and the hub's API use it.

use ureq::http::HeaderMap;

use crate::event::HubInfo;

/// A header value fit to be shown and compared: printable, short, without `W/` and quotes.
pub(super) fn clean(headers: &HeaderMap, name: &str) -> Option<String> {
    let v = headers.get(name)?.to_str().ok()?.trim();
    let v = v.strip_prefix("W/").unwrap_or(v).trim_matches('"');
    let ok = !v.is_empty()
        && v.len() <= 128
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._:+/=".contains(&b));
    ok.then(|| v.to_owned())
}

/// Whether `s` is a SHA-256 in hex.
pub(super) fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether `s` can be a commit id (7 to 64 hex digits).
pub(super) fn is_commit(s: &str) -> bool {
    (7..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The commit a response names (`X-Repo-Commit`), lower case, if it names a well-formed one.
pub(super) fn commit(headers: &HeaderMap) -> Option<String> {
    clean(headers, "x-repo-commit")
        .filter(|c| is_commit(c))
        .map(|c| c.to_ascii_lowercase())
}

impl HubInfo {
    /// Take what a response of the hub itself says; `last`: it delivered the bytes.
    pub(crate) fn note(&mut self, headers: &HeaderMap, last: bool) {
        if self.commit.is_none() {
            self.commit = commit(headers);
        }
        if let Some(raw) = headers.get("x-linked-etag") {
            self.note_linked_etag(raw.as_bytes());
            if let Some(linked) = clean(headers, "x-linked-etag") {
                self.etag = Some(linked);
            }
        }
        if last {
            self.note_etag(headers);
        }
    }

    /// The `ETag` of the response that delivered the bytes, if no `X-Linked-Etag` came.
    pub(crate) fn note_etag(&mut self, headers: &HeaderMap) {
        if self.etag.is_none() {
            self.etag = clean(headers, "etag");
        }
    }
}

/// What the hub's refusal means for the user: `""`, or `": ..."` with the hub's error code,
/// its message (cleaned and cut short), and what to do.
pub(super) fn reason(status: u16, headers: &HeaderMap) -> String {
    let code = clean(headers, "x-error-code");
    let said: Option<String> = headers
        .get("x-error-message")
        .and_then(|v| v.to_str().ok())
        .map(|m| {
            m.chars()
                .filter(|c| !c.is_control())
                .take(200)
                .collect::<String>()
        })
        .filter(|m| !m.trim().is_empty());
    let advice = match code.as_deref() {
        Some("RepoNotFound") => {
            "the hub has no such repository, or it is private: check org/repo (and \
             datasets/ or spaces/ before it), and for a private repository set HF_TOKEN to a \
             token that can read it"
        }
        Some("RevisionNotFound") => {
            "the hub has no such revision: check the branch, tag or commit after '@' \
             (refs/pr/N for a pull request)"
        }
        Some("EntryNotFound") => {
            "the file is not in the repository at this revision: check its path and the \
             revision"
        }
        Some("GatedRepo") => {
            "the repository is gated: accept its terms on its page on the hub with your \
             account, then set HF_TOKEN to a token of that account"
        }
        Some("DisabledRepo") => "the repository has been disabled on the hub",
        _ => match status {
            401 => {
                "the server wants credentials: for the hub, set HF_TOKEN to a token that can \
                 read the repository; for another server, pass an Authorization header"
            }
            403 => {
                "the credentials sent may not read this: for a gated repository on the hub, \
                 accept its terms and set HF_TOKEN to a token of that account; check the \
                 token's permissions"
            }
            _ => "",
        },
    };
    let mut out = String::new();
    if let Some(c) = &code {
        out.push_str(&format!(" ({c})"));
    }
    if !advice.is_empty() {
        out.push_str(": ");
        out.push_str(advice);
    }
    if let Some(m) = said {
        out.push_str(&format!(" (the server says: {:?})", m.trim()));
    }
    out
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A header map of `(name, value)` pairs (also for the hub listing's tests).
    pub(in crate::remote) fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(
                ureq::http::HeaderName::from_bytes(n.as_bytes()).expect("name"),
                v.parse().expect("value"),
            );
        }
        h
    }

    #[test]
    fn reads_what_the_hub_says_about_a_file() {
        let sha = "a".repeat(64);
        let mut info = HubInfo::default();
        info.note(
            &headers(&[
                ("x-repo-commit", &"b".repeat(40)),
                ("x-linked-etag", &format!("\"{sha}\"")),
            ]),
            false,
        );
        info.note_etag(&headers(&[("etag", "\"cdn\"")]));
        assert_eq!(info.commit.as_deref(), Some("b".repeat(40).as_str()));
        assert_eq!(info.lfs_sha256.as_deref(), Some(sha.as_str()));
        assert_eq!(info.etag.as_deref(), Some(sha.as_str()));
        let mut plain = HubInfo::default();
        plain.note(
            &headers(&[("etag", "W/\"x1\""), ("x-repo-commit", "zz")]),
            true,
        );
        assert_eq!(plain.etag.as_deref(), Some("x1"));
        assert_eq!(plain.commit, None);
        assert_eq!(plain.lfs_sha256, None);
        // An X-Linked-Etag is a SHA-256, a git blob id (40 hex digits), or neither.
        let linked = |v: &str| {
            let mut info = HubInfo::default();
            info.note(&headers(&[("x-linked-etag", v)]), false);
            (
                info.lfs_sha256,
                info.git_blob_id,
                info.linked_etag_malformed,
            )
        };
        let blob = "C".repeat(40);
        assert_eq!(
            linked(&format!("\"{blob}\"")),
            (None, Some("c".repeat(40)), None)
        );
        for (bad, shown) in [
            (&sha[1..], &sha[1..]),
            ("\"not-hex\"", "nothex"),
            ("W/\"\"", ""),
        ] {
            assert_eq!(linked(bad), (None, None, Some(shown.to_owned())), "{bad}");
        }
    }

    #[test]
    fn every_hub_error_code_says_what_to_do() {
        for (code, words) in [
            ("RepoNotFound", "HF_TOKEN"),
            ("RevisionNotFound", "after '@'"),
            ("EntryNotFound", "check its path"),
            ("GatedRepo", "accept its terms"),
        ] {
            let r = reason(404, &headers(&[("x-error-code", code)]));
            assert!(r.contains(code) && r.contains(words), "{code}: {r}");
        }
        assert!(reason(401, &headers(&[])).contains("HF_TOKEN"));
        assert!(reason(403, &headers(&[])).contains("accept its terms"));
        assert_eq!(reason(404, &headers(&[])), "");
        let r = reason(404, &headers(&[("x-error-message", "no such\tthing")]));
        assert!(!r.contains('\t'), "{r}");
    }
}
