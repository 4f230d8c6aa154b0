//! Target `glob`: `--exclude` patterns against paths. Bounded work for any pattern (at most
//! (segments + 1) x (names + 1) segment comparisons, counted), and the same answer as a
//! reference matcher written for clarity: dynamic programming over the segments and, within a
//! segment, over the tokens, so it cannot share a bug of the greedy matcher's backtracking.

use stcheck_gate::glob::Glob;

/// A token of one pattern segment.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Star,
    Any,
    Byte(u8),
    /// Ranges (single bytes as `(b, b)`), and whether the set is negated.
    Set(Vec<(u8, u8)>, bool),
}

fn tokens(seg: &[u8]) -> Vec<Token> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < seg.len() {
        match seg[i] {
            b'*' => out.push(Token::Star),
            b'?' => out.push(Token::Any),
            b'\\' if i + 1 < seg.len() => {
                out.push(Token::Byte(seg[i + 1]));
                i += 1;
            }
            b'[' => {
                let mut j = i + 1;
                let negated = seg.get(j) == Some(&b'!');
                if negated {
                    j += 1;
                }
                let body_start = j;
                if seg.get(j) == Some(&b']') {
                    j += 1;
                }
                while seg[j] != b']' {
                    j += 1;
                }
                let body = &seg[body_start..j];
                let mut ranges = Vec::new();
                let mut k = 0;
                while k < body.len() {
                    if k + 2 < body.len() && body[k + 1] == b'-' {
                        ranges.push((body[k], body[k + 2]));
                        k += 3;
                    } else {
                        ranges.push((body[k], body[k]));
                        k += 1;
                    }
                }
                out.push(Token::Set(ranges, negated));
                i = j;
            }
            c => out.push(Token::Byte(c)),
        }
        i += 1;
    }
    out
}

fn token_takes(t: &Token, c: u8) -> bool {
    match t {
        Token::Star => unreachable!("a star is not one byte"),
        Token::Any => true,
        Token::Byte(b) => *b == c,
        Token::Set(ranges, negated) => {
            ranges.iter().any(|&(a, b)| (a..=b).contains(&c)) != *negated
        }
    }
}

fn segment_ref(seg: &[u8], name: &[u8]) -> bool {
    let t = tokens(seg);
    // ok[j]: the tokens so far match name[..j].
    let mut ok = vec![false; name.len() + 1];
    ok[0] = true;
    for tok in &t {
        let mut next = vec![false; name.len() + 1];
        for j in 0..=name.len() {
            next[j] = match tok {
                Token::Star => ok[j] || (j > 0 && next[j - 1]),
                _ => j > 0 && ok[j - 1] && token_takes(tok, name[j - 1]),
            };
        }
        ok = next;
    }
    ok[name.len()]
}

/// The reference answer for a pattern that [`Glob::new`] accepted.
fn reference(pattern: &str, rel: &[&[u8]], is_dir: bool) -> bool {
    let mut p = pattern;
    let dir_only = p.ends_with('/') && p.len() > 1;
    if dir_only {
        p = &p[..p.len() - 1];
    }
    if dir_only && !is_dir {
        return false;
    }
    let anchored = p.contains('/');
    let p = p.strip_prefix('/').unwrap_or(p);
    let segs: Vec<&str> = p.split('/').collect();
    if !anchored {
        return rel
            .last()
            .is_some_and(|name| segment_ref(segs[0].as_bytes(), name));
    }
    // ok[j]: the segments so far match rel[..j].
    let mut ok = vec![false; rel.len() + 1];
    ok[0] = true;
    for seg in &segs {
        let mut next = vec![false; rel.len() + 1];
        for j in 0..=rel.len() {
            next[j] = if *seg == "**" {
                ok[j] || (j > 0 && next[j - 1])
            } else {
                j > 0 && ok[j - 1] && segment_ref(seg.as_bytes(), rel[j - 1])
            };
        }
        ok = next;
    }
    ok[rel.len()]
}

/// The `glob` target. Input: the first byte says whether the path is a directory (its low
/// bit); then the pattern up to the first `\n` (lossy UTF-8, as the command line gives
/// text); then the path, its names separated by `/` (bytes, as a walk gives them). The
/// answer, if the pattern compiled.
pub fn check_glob(data: &[u8]) -> Option<bool> {
    let (&flags, rest) = data.split_first()?;
    let is_dir = flags & 1 == 1;
    let (pattern, path) = match rest.iter().position(|&b| b == b'\n') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let pattern = String::from_utf8_lossy(pattern);
    let glob = Glob::new(&pattern).ok()?;
    let rel: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
    let (found, steps) = glob.matches_counted(&rel, is_dir);
    assert_eq!(
        found,
        glob.matches(&rel, is_dir),
        "FUZZ FINDING: counted and plain matching differ"
    );
    let bound = (glob.segment_count() as u64 + 1) * (rel.len() as u64 + 1);
    assert!(
        steps <= bound,
        "FUZZ FINDING: {pattern:?} took {steps} segment comparisons on {} names (bound {bound})",
        rel.len()
    );
    let expected = reference(&pattern, &rel, is_dir);
    assert_eq!(
        found, expected,
        "FUZZ FINDING: {pattern:?} on {:?} (dir: {is_dir}): matcher says {found}, reference {expected}",
        String::from_utf8_lossy(path)
    );
    Some(found)
}
