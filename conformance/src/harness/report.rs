//! What both runners' reports share: counts per outcome, Markdown escaping, and the
//! known-failures tail of a summary.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::known::Difference;
use super::Verdict;

/// Counts in report order, e.g. `PASS 150, SHOULD_HAVE_REJECTED 3`.
pub fn counts<V: Verdict>(summary: &BTreeMap<V, usize>) -> String {
    V::ALL
        .iter()
        .filter_map(|o| summary.get(o).map(|n| format!("{o} {n}")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The counts of some outcomes, in report order.
pub fn count_line<V: Verdict>(outcomes: impl Iterator<Item = V>) -> String {
    let mut by: BTreeMap<V, usize> = BTreeMap::new();
    for o in outcomes {
        *by.entry(o).or_default() += 1;
    }
    counts(&by)
}

/// Text for a Markdown table cell: `|` escaped, lines joined.
pub fn md(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// An ID or name for Markdown: code, with characters that would break a table escaped and
/// control characters shown as `\u{..}`.
pub fn code(text: &str) -> String {
    let shown: String = text
        .chars()
        .map(|c| {
            if c.is_control() {
                format!("\\u{{{:x}}}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect();
    format!("`{}`", md(&shown).replace('`', "'"))
}

/// The summary's last lines: how the run compares with its known-failures file.
pub fn known_failures_tail<V: Verdict>(s: &mut String, differences: Option<&[Difference<V>]>) {
    match differences {
        None => {}
        Some([]) => {
            let _ = writeln!(s, "known failures: every result is as recorded");
        }
        Some(d) => {
            let _ = writeln!(
                s,
                "known failures: {} difference(s) from the recorded results:",
                d.len()
            );
            for x in d {
                let _ = writeln!(s, "  {x}");
            }
        }
    }
}

/// The failures of a run by outcome (`SHOULD_HAVE_REJECTED 3, CRASH 1`), or `none`.
pub fn failures<V: Verdict>(summary: &BTreeMap<V, usize>) -> String {
    let fails: Vec<String> = V::ALL
        .iter()
        .filter(|o| o.is_failure())
        .filter_map(|o| {
            summary
                .get(o)
                .filter(|n| **n > 0)
                .map(|n| format!("{o} {n}"))
        })
        .collect();
    if fails.is_empty() {
        "none".to_owned()
    } else {
        fails.join(", ")
    }
}

/// The head of a matrix: the fixed columns (`| Case | verdict |`, `|---|---|`), then one
/// column per implementation.
pub fn matrix_head<'a>(
    s: &mut String,
    fixed: &str,
    fixed_rule: &str,
    names: impl Iterator<Item = &'a str>,
) {
    let mut header = fixed.to_owned();
    let mut rule = fixed_rule.to_owned();
    for name in names {
        let _ = write!(header, " {} |", md(name));
        rule.push_str("---|");
    }
    let _ = writeln!(s, "{header}\n{rule}");
}

/// The heading of one implementation's divergences; `false` (after writing `Passes every
/// {noun}.`) when it has none.
pub fn divergences_head(s: &mut String, adapter: &str, any: bool, noun: &str) -> bool {
    let _ = writeln!(s, "### {}\n", md(adapter));
    if !any {
        let _ = writeln!(s, "Passes every {noun}.\n");
    }
    any
}

/// A section with a table: `## title`, the table's head and its rule line.
pub fn table(s: &mut String, title: &str, head: &str, rule: &str) {
    let _ = writeln!(s, "## {title}\n\n{head}\n{rule}");
}

/// How many items of a run had outcome `o`.
pub fn count<V: Verdict>(summary: &BTreeMap<V, usize>, o: V) -> usize {
    summary.get(&o).copied().unwrap_or(0)
}
