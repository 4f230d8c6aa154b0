//! How a target the user named is shown: the one place that turns an address into the text
//! every output (the text lines, JSON Lines, SARIF, standard error, the Python package's
//! records and exceptions) prints for it.
//!
//! An address may carry credentials: user information (`https://user:secret@host/...`), a
//! presigned query (`?X-Amz-Signature=...`), a fragment. What is shown has the user
//! information removed, the query replaced by `?...` and the fragment dropped; control
//! characters are removed and the rest is escaped as names are ([`stcheck::escape`]). A path
//! is shown escaped ([`crate::fs::display_path`]).

/// The schemes an argument is taken as an address for (any case).
const SCHEMES: [&str; 3] = ["http://", "https://", "hf://"];

/// Whether `arg` is an address (`http://`, `https://`, `hf://`, any case), as opposed to a
/// local path.
pub fn is_url(arg: &str) -> bool {
    SCHEMES.iter().any(|p| {
        arg.get(..p.len())
            .is_some_and(|h| h.eq_ignore_ascii_case(p))
    })
}

/// Whether the address `url` names a sharded set's index (by its last path segment, before
/// a query or a fragment, as a local path would).
pub(crate) fn names_index(url: &str) -> bool {
    url.split(['?', '#']).next().is_some_and(|p| {
        let name = p.rsplit('/').next().unwrap_or(p);
        crate::fs::checkpoint_kind(std::ffi::OsStr::new(name)) == Some(crate::fs::Checkpoint::Index)
    })
}

/// The address `arg` as every output shows it: [`redacted_url`], escaped like a name.
/// Apply it once, to the address as given: the redaction is idempotent, the escaping is not
/// (it is one-to-one, so a `\`, a `"` or a non-ASCII character shown is escaped again).
pub fn shown_url(arg: &str) -> String {
    stcheck::escape(&redacted_url(arg)).into_owned()
}

/// The address `arg` without what may be secret: user information removed, a query shown as
/// `?...`, the fragment dropped, control characters removed (not escaped: for a SARIF URI,
/// which percent-encodes it).
pub fn redacted_url(arg: &str) -> String {
    let s: String = arg.chars().filter(|c| !c.is_control()).collect();
    let s = s.split('#').next().unwrap_or("");
    let (s, had_query) = match s.split_once('?') {
        Some((a, _)) => (a, true),
        None => (s, false),
    };
    let mut out = match s.split_once("://") {
        Some((scheme, rest)) => {
            let auth_end = rest.find('/').unwrap_or(rest.len());
            let (auth, path) = rest.split_at(auth_end);
            let host = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
            format!("{scheme}://{host}{path}")
        }
        None => s.to_owned(),
    };
    if had_query {
        out.push_str("?...");
    }
    out
}

/// `message` with every occurrence of `arg`'s secrets (its user information, its query and
/// fragment) replaced by what [`shown_url`] shows: for messages of lower layers that quote an
/// address as it was given.
pub fn scrub_url_in(message: &str, arg: &str) -> String {
    // What to replace, looked for in one pass over the message, the longest first at each
    // position: a replacement never changes the text another secret is looked for in (the
    // user information can also occur in the query, and the query in the user information:
    // replacing one first left the other unmatched, found by the `address` fuzz target).
    let mut secrets: Vec<(String, &str)> = Vec::new();
    if let Some((_, rest)) = arg.split_once("://") {
        let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        if let Some((user, _)) = rest[..auth_end].rsplit_once('@') {
            if !user.is_empty() {
                secrets.push((format!("{user}@"), ""));
                for part in user.split(':').filter(|p| p.len() >= 3) {
                    secrets.push((part.to_owned(), "<redacted>"));
                }
            }
        }
    }
    if let Some(i) = arg.find(['?', '#']) {
        let secret = &arg[i + 1..];
        if secret.len() >= 3 {
            secrets.push((secret.to_owned(), "..."));
        }
    }
    secrets.sort_by_key(|(s, _)| std::cmp::Reverse(s.len()));
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    'next: while let Some(c) = rest.chars().next() {
        for (secret, shown) in &secrets {
            if let Some(after) = rest.strip_prefix(secret.as_str()) {
                out.push_str(shown);
                rest = after;
                continue 'next;
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_no_secret() {
        assert_eq!(
            shown_url("https://u:hunter2@h/x?sig=1#f"),
            "https://h/x?..."
        );
        assert_eq!(shown_url("hf://org/repo/x"), "hf://org/repo/x");
        assert_eq!(shown_url("http://h/a#frag"), "http://h/a");
        assert_eq!(
            shown_url(&shown_url("https://u:p@h/x?s=1")),
            "https://h/x?..."
        );
        assert_eq!(shown_url("https://h/a\u{7}b"), "https://h/ab");
    }

    /// Found by the `address` fuzz target: the user information's text also in the query was
    /// removed there first, so the query no longer matched and was left whole.
    #[test]
    fn scrubs_a_query_that_repeats_the_user_information() {
        let arg = "https://u:p@h/x?sig=u:p@secret";
        let scrubbed = scrub_url_in(&format!("cannot fetch {arg}: refused"), arg);
        assert!(!scrubbed.contains("secret"), "{scrubbed}");
        assert_eq!(scrubbed, "cannot fetch https://h/x?...: refused");
        // And the other way round: a short query whose text also occurs in the user
        // information (the fuzz target's input, shortened).
        let arg = "https://:secret@h------@//-@--K-?---";
        let scrubbed = scrub_url_in(&format!("cannot fetch {arg}: refused"), arg);
        assert!(!scrubbed.contains("secret"), "{scrubbed}");
    }

    #[test]
    fn scrubs_messages() {
        let arg = "http://user:secret@h/x.safetensors?X-Amz-Signature=abc123";
        let m = format!("could not connect to {arg}");
        let s = scrub_url_in(&m, arg);
        assert!(!s.contains("secret") && !s.contains("abc123"), "{s}");
    }
}
