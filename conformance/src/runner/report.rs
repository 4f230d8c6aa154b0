//! Human output: the terminal summary of one run and the Markdown matrix of many.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::classify::{Expect, Judge, VERDICT_ONLY};
use super::known::Difference;
use super::manifest::{Class, Kind, Manifest, Verdict};
use super::outcome::Outcome;
use super::run::{CaseResult, RunResults};
use crate::harness;
use crate::harness::report::{count, divergences_head, failures, matrix_head, md, table};

fn judge_name(j: Judge) -> &'static str {
    match j {
        Judge::Strict => "strict verdicts",
        Judge::Reference => "reference verdicts",
        Judge::Portable => "portable verdicts",
    }
}

/// The counts of a run, e.g. `PASS 150, SHOULD_HAVE_REJECTED 3`.
pub fn counts(results: &RunResults) -> String {
    harness::report::counts(&results.summary)
}

/// Whether a case passed as a rejection without the adapter naming a rule: the runner cannot
/// tell a right reason from a wrong one.
pub fn no_reason_given(c: &CaseResult) -> bool {
    c.outcome == Outcome::Pass && c.expected == Expect::Reject && c.rule.is_none()
}

/// Whether a case passed as an accepted file whose adapter reported no content (a
/// verdict-only answer): the runner checked the verdict, not what was read.
pub fn verdict_only(c: &CaseResult) -> bool {
    c.outcome == Outcome::Pass && c.expected == Expect::Accept && c.detail == VERDICT_ONLY
}

/// The counts of some cases, with the passes split by reason, e.g. `PASS 120, PASS (no
/// reason given) 30, PASS (verdict only) 40, WRONG_RULE 2`: `PASS` counts accepted files read
/// right and rejections for an acceptable rule, `PASS (no reason given)` rejections that
/// named no rule, `PASS (verdict only)` accepted files with no content reported.
fn count_line<'a>(cases: impl Iterator<Item = &'a CaseResult> + Clone) -> String {
    let unexplained = cases.clone().filter(|c| no_reason_given(c)).count();
    let unread = cases.clone().filter(|c| verdict_only(c)).count();
    let mut by: BTreeMap<Outcome, usize> = BTreeMap::new();
    for c in cases.filter(|c| !no_reason_given(c) && !verdict_only(c)) {
        *by.entry(c.outcome).or_default() += 1;
    }
    let mut parts: Vec<String> = Vec::new();
    for o in Outcome::ALL {
        if let Some(n) = by.get(o) {
            parts.push(format!("{o} {n}"));
        }
        if *o == Outcome::Pass && unexplained > 0 {
            parts.push(format!("PASS (no reason given) {unexplained}"));
        }
        if *o == Outcome::Pass && unread > 0 {
            parts.push(format!("PASS (verdict only) {unread}"));
        }
    }
    parts.join(", ")
}

/// `[RULE, RULE] description` of a case, from the manifest.
fn about(manifest: Option<&Manifest>, id: &str) -> String {
    let Some(case) = manifest.and_then(|m| m.case(id)) else {
        return String::new();
    };
    let mut s = String::new();
    if !case.rules.is_empty() {
        let _ = write!(s, "[{}]", case.rules.join(", "));
    }
    if !case.description.is_empty() {
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(&case.description);
    }
    s
}

/// The sort key of a class in reports: security first, unclassified last.
fn class_rank(c: Option<Class>) -> usize {
    c.and_then(|c| Class::ALL.iter().position(|x| *x == c))
        .unwrap_or(Class::ALL.len())
}

/// The terminal summary of one run: the counts, the counts per class, then every case that is
/// not `PASS` (every case with `verbose`), security first, each with its rule and description.
pub fn summary(
    results: &RunResults,
    manifest: Option<&Manifest>,
    differences: Option<&[Difference]>,
    verbose: bool,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "stconform: {} ({}{}{}), {} cases: {}",
        results.adapter,
        judge_name(results.judge),
        if results.deep { ", deep" } else { "" },
        match &results.corpus_version {
            Some(v) => format!(", corpus {v}"),
            None => String::new(),
        },
        results.cases.len(),
        counts(results)
    );
    if results.cases.iter().any(|c| c.class.is_some()) {
        for class in Class::ALL.iter().map(|c| Some(*c)).chain([None]) {
            let n = results.cases.iter().filter(|c| c.class == class).count();
            if n == 0 {
                continue;
            }
            let name = class.map(Class::name).unwrap_or("unclassified");
            let _ = writeln!(
                s,
                "  {name:<17} {n:>4} cases: {}",
                count_line(results.cases.iter().filter(|c| c.class == class))
            );
        }
    }
    let unexplained = results.cases.iter().filter(|c| no_reason_given(c)).count();
    if unexplained > 0 {
        let _ = writeln!(
            s,
            "  ({unexplained} rejections passed with no reason given: an adapter that names the \
             rule (protocol v2, PROTOCOL.md) has each checked against the case's acceptable \
             rules)"
        );
    }
    let unread = results.cases.iter().filter(|c| verdict_only(c)).count();
    if unread > 0 {
        let _ = writeln!(
            s,
            "  ({unread} accepted files passed on the verdict alone: the adapter reported no \
             tensors (\"tensors\": null), so what it read was not compared)"
        );
    }
    if let Some(m) = manifest {
        // Only the index cases this run's --run/--skip would have selected.
        let skipped = m
            .cases
            .iter()
            .filter(|c| c.kind == Kind::Index && results.case(&c.id).is_none())
            .filter(|c| crate::runner::glob::selected(&results.run, &results.skip, &c.id, &c.path))
            .count();
        if !results.index && skipped > 0 {
            let _ = writeln!(
                s,
                "  ({skipped} sharded-set cases not run: the adapter has no index mode, --index)"
            );
        }
    }
    let mut shown: Vec<&CaseResult> = results
        .cases
        .iter()
        .filter(|c| verbose || c.outcome != Outcome::Pass)
        .collect();
    shown.sort_by_key(|c| class_rank(c.class));
    for c in shown {
        let mut line = format!("  {:<21} {}", c.outcome.name(), c.id);
        let what = about(manifest, &c.id);
        if !what.is_empty() {
            let _ = write!(line, " {what}");
        }
        if let Some(class) = c.class {
            let _ = write!(line, " ({class})");
        }
        if !c.detail.is_empty() {
            let _ = write!(line, " — {}", c.detail);
        }
        if c.outcome.is_failure()
            && !c.stderr.is_empty()
            && c.outcome != Outcome::WrongContent
            && c.message.is_none()
        {
            let _ = write!(line, " [stderr: {}]", c.stderr);
        }
        let _ = writeln!(s, "{line}");
    }
    harness::report::known_failures_tail(&mut s, differences);
    s
}

/// The Markdown report of several runs over one corpus: a summary table, each
/// implementation's divergences, and the matrix of cases x implementations.
pub fn matrix(runs: &[RunResults], manifest: Option<&Manifest>) -> String {
    let mut s = String::new();
    table(
        &mut s,
        "Summary",
        "| Implementation | judged against | cases | PASS | failures | failures by class | unsupported | implementation-defined: accepts / rejects |",
        "|---|---|---:|---:|---|---|---:|---|",
    );
    for r in runs {
        let n = |o| count(&r.summary, o);
        let by_class: Vec<String> = Class::ALL
            .iter()
            .filter_map(|class| {
                let k = r
                    .cases
                    .iter()
                    .filter(|c| c.class == Some(*class) && c.outcome.is_failure())
                    .count();
                (k > 0).then(|| format!("{class} {k}"))
            })
            .collect();
        let _ = writeln!(
            s,
            "| {} | {}{} | {} | {} | {} | {} | {} | {} / {} |",
            md(&r.adapter),
            judge_name(r.judge),
            if r.deep { " (deep)" } else { "" },
            r.cases.len(),
            n(Outcome::Pass),
            failures(&r.summary),
            if by_class.is_empty() {
                "-".to_owned()
            } else {
                by_class.join(", ")
            },
            n(Outcome::Unsupported),
            n(Outcome::Accepted),
            n(Outcome::Rejected)
        );
    }

    let _ = writeln!(s, "\n## Divergences by implementation\n");
    for r in runs {
        let mut by: BTreeMap<Outcome, Vec<&CaseResult>> = BTreeMap::new();
        for c in r.cases.iter().filter(|c| c.outcome != Outcome::Pass) {
            by.entry(c.outcome).or_default().push(c);
        }
        if !divergences_head(&mut s, &r.adapter, !by.is_empty(), "case") {
            continue;
        }
        for (o, mut cases) in by {
            cases.sort_by_key(|c| class_rank(c.class));
            let _ = writeln!(s, "- **{o}** ({}):", cases.len());
            for c in cases {
                let mut line = format!("  - `{}`", md(&c.id));
                let what = about(manifest, &c.id);
                if !what.is_empty() {
                    let _ = write!(line, " {}", md(&what));
                }
                if let Some(class) = c.class {
                    let _ = write!(line, " ({class})");
                }
                if !c.detail.is_empty() && (o.is_failure() || o == Outcome::Unsupported) {
                    let _ = write!(line, " — {}", md(&c.detail));
                }
                let _ = writeln!(s, "{line}");
            }
        }
        let _ = writeln!(s);
    }

    let _ = writeln!(s, "## Matrix\n");
    let _ = writeln!(
        s,
        "`ok` = as expected; `accepts`/`rejects` = the choice on an implementation-defined case; \
         **ACCEPTS** = should have rejected; **REJECTS** = should have accepted; **RULE** = \
         rejected, naming another rule than the case's; **CONTENT** = accepted with wrong \
         tensors, bytes, values, metadata or warnings; `unsupported` = the implementation said \
         it does not support what the case needs; **CRASH**, **TIMEOUT**; \
         **NO-PANIC** = the reference panics here and this run did not crash (reference-judged \
         runs only); `-` = not run.\n"
    );
    matrix_head(
        &mut s,
        "| Case | verdict | class |",
        "|---|---|---|",
        runs.iter().map(|r| r.adapter.as_str()),
    );
    let ids: Vec<String> = match manifest {
        // Large cases get a row only when some run included them.
        Some(m) => m
            .cases
            .iter()
            .map(|c| c.id.clone())
            .chain(
                m.large
                    .iter()
                    .filter(|c| runs.iter().any(|r| r.case(&c.id).is_some()))
                    .map(|c| c.id.clone()),
            )
            .collect(),
        None => {
            let mut v: Vec<String> = Vec::new();
            for r in runs {
                for c in &r.cases {
                    if !v.contains(&c.id) {
                        v.push(c.id.clone());
                    }
                }
            }
            v
        }
    };
    for id in ids {
        let verdict = manifest
            .and_then(|m| m.case(&id))
            .map(|c| match (c.verdict, c.deep) {
                (Verdict::Accept, _) => "accept",
                (Verdict::Reject, false) => "reject",
                (Verdict::Reject, true) => "reject (deep)",
                (Verdict::ImplementationDefined, _) => "impl-defined",
            })
            .unwrap_or("?");
        let class = manifest
            .and_then(|m| m.case(&id))
            .and_then(|c| c.class)
            .map(Class::name)
            .unwrap_or("-");
        let mut row = format!("| `{}` | {verdict} | {class} |", md(&id));
        for r in runs {
            let cell = r.case(&id).map(|c| c.outcome.cell()).unwrap_or("-");
            let _ = write!(row, " {cell} |");
        }
        let _ = writeln!(s, "{row}");
    }
    s
}
