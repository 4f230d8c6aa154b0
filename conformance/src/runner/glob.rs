//! `--run` / `--skip` patterns: `*` matches any run of characters (including `/`), `?` one
//! character; everything else matches itself.

/// Whether `pattern` matches all of `text`.
pub fn matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Iterative matcher with one backtrack point (the last `*`): linear in practice.
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if c == '?' || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Whether a case is selected: it matches one `run` pattern (or `run` is empty) and no
/// `skip` pattern. A pattern is tried against the case ID and its path.
pub fn selected(run: &[String], skip: &[String], id: &str, path: &str) -> bool {
    let hit = |pats: &[String]| pats.iter().any(|p| matches(p, id) || matches(p, path));
    (run.is_empty() || hit(run)) && !hit(skip)
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs() {
        assert!(matches("invalid/*", "invalid/layout/gap"));
        assert!(matches("*gap*", "invalid/layout/gap-between"));
        assert!(matches("a?c", "abc"));
        assert!(!matches("a?c", "ac"));
        assert!(!matches("valid/*", "invalid/x"));
        assert!(matches("*", ""));
        assert!(matches("a*b*c", "axxbyyc"));
        assert!(!matches("a*b*c", "axxbyy"));
        assert!(matches("exact", "exact"));
        assert!(!matches("exact", "exact2"));
    }
}
