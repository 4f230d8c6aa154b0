//! `--exclude` patterns: gitignore-style globs matched against a path below the directory
//! named on the command line.
//!
//! - A pattern without `/` (other than a trailing one) matches a file or directory *name* at
//!   any depth: `.git`, `*.tmp`, `.stcheck-src`.
//! - A pattern with `/` matches the path from the directory named (a leading `/` is
//!   optional): `vendor/models`, `/build/*.safetensors`.
//! - `*` matches any run of characters but `/`, `?` one character but `/`, `[abc]`, `[a-z]`
//!   and `[!a-z]` one character of (or not of) a set; `**` as a whole segment matches any
//!   number of segments (`**/cache`, `out/**`, `a/**/b`); `\` takes the next character
//!   literally.
//! - A trailing `/` matches directories only. An excluded directory is not walked.
//! - Negation (`!pattern`) is not supported and is refused, as is an empty pattern: a gate's
//!   exclusions should be read at a glance.
//!
//! Names are matched on their bytes (a name that is not UTF-8 is matched like any other).

/// One compiled `--exclude` pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    /// Segments of the pattern; `None` for `**`.
    segments: Vec<Option<Vec<u8>>>,
    anchored: bool,
    dir_only: bool,
}

impl Glob {
    /// Compile `pattern`; errors say what is wrong with it.
    pub fn new(pattern: &str) -> Result<Glob, String> {
        let mut p = pattern;
        if p.is_empty() {
            return Err("an empty pattern".into());
        }
        if p.starts_with('!') {
            return Err(format!(
                "{pattern:?}: negation ('!') is not supported; name what to leave out"
            ));
        }
        let dir_only = p.ends_with('/') && p.len() > 1;
        if dir_only {
            p = &p[..p.len() - 1];
        }
        let anchored = p.contains('/');
        let p = p.strip_prefix('/').unwrap_or(p);
        if p.is_empty() {
            return Err(format!("{pattern:?}: the pattern names nothing"));
        }
        let mut segments = Vec::new();
        for seg in p.split('/') {
            if seg.is_empty() {
                return Err(format!("{pattern:?}: an empty segment ('//')"));
            }
            if seg == "**" {
                segments.push(None);
            } else {
                check_classes(seg).map_err(|e| format!("{pattern:?}: {e}"))?;
                segments.push(Some(seg.as_bytes().to_vec()));
            }
        }
        Ok(Glob {
            segments,
            anchored,
            dir_only,
        })
    }

    /// Whether the path `rel` (segments from the directory named, as bytes) is excluded;
    /// `is_dir`: it is a directory.
    pub fn matches(&self, rel: &[&[u8]], is_dir: bool) -> bool {
        if self.dir_only && !is_dir {
            return false;
        }
        if !self.anchored {
            return match (rel.last(), self.segments.first()) {
                (Some(name), Some(Some(p))) => segment_matches(p, name),
                // `**` alone: any name at any depth.
                (Some(_), Some(None)) => true,
                _ => false,
            };
        }
        segments_match(&self.segments, rel, &mut 0)
    }

    /// [`Glob::matches`], and the number of segment comparisons it took (for the `glob` fuzz
    /// target and the regression test that bounds the work by the path's length).
    #[doc(hidden)]
    pub fn matches_counted(&self, rel: &[&[u8]], is_dir: bool) -> (bool, u64) {
        let mut steps = 0;
        let found = match (self.dir_only && !is_dir, self.anchored) {
            (true, _) => false,
            (false, false) => self.matches(rel, is_dir),
            (false, true) => segments_match(&self.segments, rel, &mut steps),
        };
        (found, steps)
    }

    /// The number of segments of the pattern (`**` counts as one).
    #[doc(hidden)]
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }
}

/// Whether every `[` opens a set that closes.
fn check_classes(seg: &str) -> Result<(), String> {
    let b = seg.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'[' => match class_end(b, i) {
                Some(end) => i = end + 1,
                None => return Err("a '[' without its ']'".into()),
            },
            _ => i += 1,
        }
    }
    Ok(())
}

/// The index of the `]` closing the set opened at `open`.
fn class_end(p: &[u8], open: usize) -> Option<usize> {
    let mut i = open + 1;
    if p.get(i) == Some(&b'!') {
        i += 1;
    }
    // A `]` first in the set is a member.
    if p.get(i) == Some(&b']') {
        i += 1;
    }
    while i < p.len() {
        if p[i] == b']' {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Segments against path names: `**` matches any run of names, any other segment exactly one.
/// Greedy with one backtrack point (the last `**` seen), as [`segment_matches`] does for `*`
/// within a name: a failure after a later `**` never needs an earlier `**` to take more names,
/// so the work is at most (pattern segments + 1) x (names + 1) segment comparisons, whatever
/// the number of `**` (a recursion over every split was exponential in them).
/// `steps` counts the segment comparisons (the regression test bounds it).
fn segments_match(pattern: &[Option<Vec<u8>>], rel: &[&[u8]], steps: &mut u64) -> bool {
    let (mut pi, mut ri) = (0usize, 0usize);
    // The last `**`: its index in the pattern and the first name it does not yet cover.
    let mut star: Option<(usize, usize)> = None;
    while ri < rel.len() {
        *steps += 1;
        match pattern.get(pi) {
            Some(None) => {
                star = Some((pi, ri));
                pi += 1;
                continue;
            }
            Some(Some(p)) if segment_matches(p, rel[ri]) => {
                pi += 1;
                ri += 1;
                continue;
            }
            _ => {}
        }
        match star {
            Some((sp, sr)) => {
                pi = sp + 1;
                ri = sr + 1;
                star = Some((sp, sr + 1));
            }
            None => return false,
        }
    }
    pattern[pi..].iter().all(Option::is_none)
}

/// One segment against one name: `*`, `?`, `[...]`, `\x`. Iterative with one backtrack
/// point for `*`, so a pattern cannot take exponential time.
fn segment_matches(p: &[u8], name: &[u8]) -> bool {
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < name.len() {
        let step = match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, ni));
                pi += 1;
                continue;
            }
            Some(b'?') => Some(pi + 1),
            Some(b'[') => match class_end(p, pi) {
                Some(end) if class_has(&p[pi + 1..end], name[ni]) => Some(end + 1),
                _ => None,
            },
            Some(b'\\') if pi + 1 < p.len() => (p[pi + 1] == name[ni]).then_some(pi + 2),
            Some(&c) => (c == name[ni]).then_some(pi + 1),
            None => None,
        };
        match step {
            Some(next) => {
                pi = next;
                ni += 1;
            }
            None => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// Whether byte `c` is in the set `body` (between `[` and `]`).
fn class_has(body: &[u8], c: u8) -> bool {
    let (negated, body) = match body.split_first() {
        Some((b'!', rest)) => (true, rest),
        _ => (false, body),
    };
    let mut i = 0;
    let mut found = false;
    while i < body.len() {
        if i + 2 < body.len() && body[i + 1] == b'-' {
            if (body[i]..=body[i + 2]).contains(&c) {
                found = true;
            }
            i += 3;
        } else {
            if body[i] == c {
                found = true;
            }
            i += 1;
        }
    }
    found != negated
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, path: &str, is_dir: bool) -> bool {
        let rel: Vec<&[u8]> = path.split('/').map(str::as_bytes).collect();
        Glob::new(pattern).expect(pattern).matches(&rel, is_dir)
    }

    #[test]
    fn gitignore_style() {
        assert!(m(".stcheck-src", ".stcheck-src", true));
        assert!(m(".stcheck-src", "a/b/.stcheck-src", true));
        assert!(m(".stcheck-src/", "x/.stcheck-src", true));
        assert!(!m(".stcheck-src/", ".stcheck-src", false));
        assert!(m("*.tmp.safetensors", "deep/er/x.tmp.safetensors", false));
        assert!(!m("*.tmp.safetensors", "x.safetensors", false));
        assert!(m("vendor/models", "vendor/models", true));
        assert!(!m("vendor/models", "a/vendor/models", true));
        assert!(m("/build/*.safetensors", "build/a.safetensors", false));
        assert!(!m("/build/*.safetensors", "build/sub/a.safetensors", false));
        assert!(m("**/cache", "a/b/cache", true));
        assert!(m("**/cache", "cache", true));
        assert!(m("out/**", "out/x/y.safetensors", false));
        assert!(m("a/**/b", "a/b", true));
        assert!(m("a/**/b", "a/x/y/b", true));
        assert!(m(
            "shard-0000[0-3].safetensors",
            "shard-00002.safetensors",
            false
        ));
        assert!(!m(
            "shard-0000[!0-3].safetensors",
            "shard-00002.safetensors",
            false
        ));
        assert!(m("?.safetensors", "a.safetensors", false));
        assert!(!m("?.safetensors", "ab.safetensors", false));
        assert!(m("a\\*b", "a*b", false));
        assert!(!m("a\\*b", "axb", false));
        assert!(m(
            "*a*a*a*a*a*a*b",
            &"a".repeat(30).replace("aa", "ab"),
            false
        ));
        assert!(!m("*a*a*a*a*a*a*a*a*c", &"a".repeat(40), false));
    }

    /// Issue 35, hostile case 6: `**/**/**/**/**/**/nomatch` on a tree 80 deep tried every
    /// split of the path among the six `**` (90 s). The work is now bounded by the pattern's
    /// segments times the path's names: counted, not timed.
    #[test]
    fn many_double_stars_are_linear_in_the_path() {
        let g = Glob::new("**/**/**/**/**/**/nomatch").expect("a valid pattern");
        for depth in [1usize, 10, 80, 1000] {
            let names: Vec<String> = (0..depth).map(|i| format!("d{i}")).collect();
            let rel: Vec<&[u8]> = names.iter().map(|n| n.as_bytes()).collect();
            let (found, steps) = g.matches_counted(&rel, true);
            assert!(!found);
            let bound = (g.segment_count() as u64 + 1) * (depth as u64 + 1);
            assert!(steps <= bound, "depth {depth}: {steps} steps > {bound}");
            // And it still matches where it should.
            let mut hit = rel.clone();
            hit.push(b"nomatch");
            assert!(g.matches_counted(&hit, true).0);
        }
        // Backtracking that must let an earlier `**` take more names.
        assert!(m("a/**/b/c/**/d", "a/b/x/b/c/y/d", false));
        assert!(m("**/b/c", "b/b/c", false));
        assert!(!m("**/b/c/**/d", "b/c/b/c/e", false));
        assert!(m("a/**/**/b", "a/b", false));
    }

    /// Found by the `glob` fuzz target: `**` alone (no `/`) matched nothing, though a pattern
    /// without `/` matches a name at any depth and `**` matches any name.
    #[test]
    fn double_star_alone_matches_everything() {
        assert!(m("**", "a", false));
        assert!(m("**", "a/b/c", true));
        assert!(m("**/", "a/b", true));
        assert!(!m("**/", "a/b", false));
    }

    #[test]
    fn refuses_what_it_cannot_mean() {
        for bad in ["", "!x", "/", "a//b", "x[ab"] {
            assert!(Glob::new(bad).is_err(), "{bad:?}");
        }
    }
}
