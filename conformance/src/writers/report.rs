//! Human output: the terminal summary of one writer run and the Markdown matrix of many.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::known::Difference;
use super::outcome::WriterOutcome;
use super::run::{TaskResult, WriterResults};
use super::task::Task;
use crate::harness;
use crate::harness::report::{code, count, divergences_head, failures, matrix_head, md, table};

/// The counts of a run, worst first, e.g. `SHOULD_HAVE_REFUSED 2, PASS 40`.
pub fn counts(results: &WriterResults) -> String {
    harness::report::counts(&results.summary)
}

/// How many files were written with the task's content, and how many of them are canonical.
pub fn canonical(results: &WriterResults) -> (usize, usize) {
    let written: Vec<&TaskResult> = results.tasks.iter().filter(|t| t.wrote_valid()).collect();
    let canonical = written.iter().filter(|t| t.form.is_empty()).count();
    (canonical, written.len())
}

/// The form warnings of a run: rule ID -> number of files.
fn form_counts(results: &WriterResults) -> BTreeMap<&str, usize> {
    let mut m = BTreeMap::new();
    for t in results.tasks.iter().filter(|t| t.wrote_valid()) {
        for w in &t.form {
            *m.entry(w.as_str()).or_insert(0) += 1;
        }
    }
    m
}

fn form_text(results: &WriterResults) -> String {
    let m = form_counts(results);
    if m.is_empty() {
        return "none".to_owned();
    }
    m.iter()
        .map(|(w, n)| format!("{w} ({n} file{})", if *n == 1 { "" } else { "s" }))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The terminal summary of one run; `verbose` lists every task.
pub fn summary(
    results: &WriterResults,
    differences: Option<&[Difference]>,
    verbose: bool,
) -> String {
    let mut s = String::new();
    let (canon, written) = canonical(results);
    let _ = writeln!(
        s,
        "stwrite: {}, {} tasks: {}",
        results.adapter,
        results.tasks.len(),
        counts(results)
    );
    let _ = writeln!(
        s,
        "  canonical: {canon} of {written} files written with the task's content; form \
         warnings: {}",
        form_text(results)
    );
    for t in &results.tasks {
        if !verbose && t.outcome == WriterOutcome::Pass && t.form.is_empty() {
            continue;
        }
        let mut line = format!("  {:<19} {}", t.outcome.name(), t.id);
        if !t.form.is_empty() {
            let _ = write!(line, " [form: {}]", t.form.join(", "));
        }
        if !t.detail.is_empty() {
            let _ = write!(line, ": {}", t.detail);
        }
        if t.outcome != WriterOutcome::Pass && !t.stderr.is_empty() {
            let _ = write!(line, " [stderr: {}]", t.stderr);
        }
        let _ = writeln!(s, "{line}");
    }
    harness::report::known_failures_tail(&mut s, differences);
    s
}

fn cell(t: &TaskResult) -> String {
    let mut c = t.outcome.cell().to_owned();
    if t.wrote_valid() && !t.form.is_empty() {
        c.push_str(" (nc)");
    }
    c
}

/// The Markdown report of several writer runs over the tasks: a summary table, the form of
/// the files each writes, each writer's divergences, and the matrix of tasks x writers.
pub fn matrix(runs: &[WriterResults], tasks: &[Task]) -> String {
    let mut s = String::new();
    table(
        &mut s,
        "Writer summary",
        "| Writer | tasks | PASS | failures, worst first | unsupported | either: writes / refuses | canonical files | worst outcome |",
        "|---|---:|---:|---|---:|---|---|---|",
    );
    for r in runs {
        let n = |o| count(&r.summary, o);
        let (canon, written) = canonical(r);
        let worst = match r.worst() {
            Some(o) if o.is_failure() => format!("**{o}**"),
            _ => "none".to_owned(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} / {} | {canon} of {written} | {worst} |",
            md(&r.adapter),
            r.tasks.len(),
            n(WriterOutcome::Pass),
            failures(&r.summary),
            n(WriterOutcome::Unsupported),
            n(WriterOutcome::Wrote),
            n(WriterOutcome::Refused),
        );
    }

    let _ = writeln!(s, "\n## Form of the files written\n");
    let _ = writeln!(
        s,
        "A file written with exactly the task's content is *canonical* when stcheck's strict \
         profile raises no warning on it beyond those the task's own content causes (a name \
         like `../x`). The warnings below are the writer's choice of form.\n"
    );
    let _ = writeln!(
        s,
        "| Writer | canonical | warnings caused by the writer's form |"
    );
    let _ = writeln!(s, "|---|---|---|");
    for r in runs {
        let (canon, written) = canonical(r);
        let _ = writeln!(
            s,
            "| {} | {canon} of {written} | {} |",
            md(&r.adapter),
            form_text(r)
        );
    }

    let _ = writeln!(s, "\n## Divergences by writer\n");
    for r in runs {
        let mut by: BTreeMap<usize, Vec<&TaskResult>> = BTreeMap::new();
        for t in r.tasks.iter().filter(|t| t.outcome != WriterOutcome::Pass) {
            by.entry(t.outcome.severity()).or_default().push(t);
        }
        if !divergences_head(&mut s, &r.adapter, !by.is_empty(), "task") {
            continue;
        }
        for list in by.values() {
            let o = list[0].outcome;
            let _ = writeln!(s, "- **{o}** ({}):", list.len());
            for t in list {
                let mut line = format!("  - {}", code(&t.id));
                if let Some(task) = tasks.iter().find(|x| x.id == t.id) {
                    let _ = write!(line, " {}", md(&task.description));
                }
                if !t.detail.is_empty() {
                    let _ = write!(line, " — {}", md(&t.detail));
                }
                if o != WriterOutcome::Refused && !t.stderr.is_empty() {
                    let _ = write!(line, " [{}]", md(&t.stderr));
                }
                let _ = writeln!(s, "{line}");
            }
        }
        let _ = writeln!(s);
    }

    let _ = writeln!(s, "## Writer matrix\n");
    let _ = writeln!(
        s,
        "`ok` = as expected; `(nc)` = written correctly but not canonical (see above); \
         `writes`/`refuses` = the choice on an `either` task; `n/a` = the writer's API cannot \
         express the task (the adapter exited 77); **WRITES!** = wrote a file for a task it \
         must refuse (the worst outcome); **CONTENT** = a valid file with other tensors, bytes \
         or metadata; **INVALID** = a file stcheck's strict profile rejects; **CRASH**, \
         **TIMEOUT**; **NONDET** = a second run wrote other bytes; **REFUSES** = refused a \
         task it must write; `-` = not run.\n"
    );
    matrix_head(
        &mut s,
        "| Task | expect |",
        "|---|---|",
        runs.iter().map(|r| r.adapter.as_str()),
    );
    for task in tasks {
        if !runs.iter().any(|r| r.task(&task.id).is_some()) {
            continue;
        }
        let mut row = format!("| {} | {} |", code(&task.id), task.expect.name());
        for r in runs {
            let c = r.task(&task.id).map(cell).unwrap_or_else(|| "-".to_owned());
            let _ = write!(row, " {c} |");
        }
        let _ = writeln!(s, "{row}");
    }
    s
}
