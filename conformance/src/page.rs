//! The results page: one static HTML file with the readers' matrix (cases x implementations)
//! and the writers' (tasks x writers), one coloured cell per result with the outcome and the
//! reason on hover, and filters by class, outcome and ID. It needs no server and loads
//! nothing: the styles and the few lines of script are in the file. `run-all.sh` writes it
//! next to `CONFORMANCE.md`, as JSONTestSuite publishes its matrix.
//!
//! The filters also read the page's address: `#class=security&outcome=failures&id=frame`
//! opens it filtered (a link can point at a view; the tests use it); an address that is not
//! a filter (`#readers-matrix`, `#case=ID`'s row) filters nothing.
//!
//! Each matrix is in a box of its own that scrolls both ways, with the header row and the
//! ID column kept in view (sticky), so every column is reachable at any window width (1,280
//! px: 16 reader columns). The script records, for the page checks, whether each box fits the
//! window (`data-fits`) and how it overflows (`data-overflow`).
//!
//! The page scrolls inside one box (`#page`, the window's height), not the document: opened
//! at an anchor, the browser scrolls that box. When the document itself scrolled, headless
//! Chromium's screenshot painted the content at its unscrolled place and left the area above
//! the table blank (the whole window, at `#writers-matrix`).

use std::fmt::Write as _;

use crate::harness::Verdict;
use crate::runner::classify::Judge;
use crate::runner::manifest::{Manifest, Verdict as CaseVerdict};
use crate::runner::report::no_reason_given;
use crate::runner::{CaseResult, Outcome, RunResults};
use crate::writers::{Task, TaskResult, WriterOutcome, WriterResults};

/// Text for HTML: `&`, `<`, `>`, `"` and `'` escaped, control characters shown as `\u{..}`.
pub fn esc(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            '\'' => s.push_str("&#39;"),
            c if c.is_control() => {
                let _ = write!(s, "\\u{{{:x}}}", c as u32);
            }
            c => s.push(c),
        }
    }
    s
}

const STYLE: &str = r#"
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #222; }
#page { height: 100vh; overflow: auto; padding: 0 1.5em; box-sizing: border-box;
        scroll-padding-top: 3em; }
h1 { font-size: 1.5em; } h2 { margin-top: 2em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; }
th { background: #f4f4f4; position: sticky; top: 0; z-index: 1; }
.scroll { overflow: auto; max-width: 100%; max-height: 85vh; border: 1px solid #ddd; }
.scroll table { margin: 0; }
table.matrix td.id { position: sticky; left: 0; background: #fff; z-index: 1; }
/* A row opened by its anchor stops below the sticky header row, not under it. */
table.matrix tbody tr { scroll-margin-top: 5em; }
table.matrix th:first-child { position: sticky; left: 0; z-index: 2; }
td.id { font-family: ui-monospace, monospace; font-size: 12px; white-space: nowrap; }
td.cell { text-align: center; font-size: 12px; min-width: 4.5em; }
.o-ok { background: #c8efc8; }
.o-noreason { background: #e6f5d0; }
.o-choice { background: #d6e6f7; }
.o-unsupported { background: #e4e4e4; color: #555; }
.o-wrongrule { background: #ffd59a; }
.o-fail { background: #f7a8a8; font-weight: bold; }
.o-crash { background: #b50000; color: #fff; font-weight: bold; }
.o-worst { background: #6a0000; color: #fff; font-weight: bold; }
.o-none { color: #aaa; }
#filters { position: sticky; top: 0; background: #fff; padding: 0.5em 0; z-index: 3; }
#filters label { margin-right: 1em; }
.legend span { display: inline-block; padding: 0 6px; margin: 2px; border: 1px solid #ccc; }
.count { color: #555; }
"#;

const SCRIPT: &str = r#"
function params() {
  // An address that is not a filter (an element's anchor) filters nothing.
  const hash = location.hash.slice(1);
  const p = new URLSearchParams(hash.includes("=") ? hash : "");
  return { cls: p.get("class") || "", outcome: p.get("outcome") || "", id: p.get("id") || "" };
}
function measure() {
  for (const box of document.querySelectorAll("div.scroll")) {
    const r = box.getBoundingClientRect();
    box.dataset.fits = r.right <= window.innerWidth + 1 ? "1" : "0";
    box.dataset.overflow = getComputedStyle(box).overflowX;
    const first = box.querySelector("td.id");
    box.dataset.sticky = first ? getComputedStyle(first).position : "";
  }
}
function apply() {
  const cls = document.getElementById("f-class").value;
  const outcome = document.getElementById("f-outcome").value;
  const id = document.getElementById("f-id").value.toLowerCase();
  for (const table of document.querySelectorAll("table.matrix")) {
    let shown = 0;
    for (const row of table.tBodies[0].rows) {
      const cells = Array.from(row.querySelectorAll("td.cell"));
      const okClass = !cls || row.dataset.class === cls;
      const okId = !id || row.dataset.id.toLowerCase().includes(id);
      const okOutcome = !outcome ||
        (outcome === "failures" ? cells.some(c => c.dataset.failure === "1")
                                : cells.some(c => c.dataset.outcome === outcome));
      const show = okClass && okId && okOutcome;
      row.hidden = !show;
      if (show) shown++;
    }
    const counter = document.getElementById(table.id + "-shown");
    if (counter) counter.textContent = shown + " of " + table.tBodies[0].rows.length + " rows shown";
  }
}
window.addEventListener("DOMContentLoaded", () => {
  const p = params();
  document.getElementById("f-class").value = p.cls;
  document.getElementById("f-outcome").value = p.outcome;
  document.getElementById("f-id").value = p.id;
  for (const id of ["f-class", "f-outcome", "f-id"]) {
    document.getElementById(id).addEventListener("input", apply);
  }
  // A value the select does not offer shows everything, not an empty table.
  for (const id of ["f-class", "f-outcome"]) {
    const el = document.getElementById(id);
    if (el.selectedIndex < 0) el.value = "";
  }
  apply();
  measure();
  const target = location.hash.length > 1 && !location.hash.includes("=")
    ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
  if (target) target.scrollIntoView();
  document.body.dataset.ready = "1";
});
"#;

/// The CSS class of a reader's cell.
fn reader_style(c: &CaseResult) -> &'static str {
    match c.outcome {
        Outcome::Pass if no_reason_given(c) => "o-noreason",
        Outcome::Pass => "o-ok",
        Outcome::Accepted | Outcome::Rejected => "o-choice",
        Outcome::Unsupported => "o-unsupported",
        Outcome::WrongRule => "o-wrongrule",
        Outcome::Crash | Outcome::Timeout => "o-crash",
        _ => "o-fail",
    }
}

/// The CSS class of a writer's cell.
fn writer_style(t: &TaskResult) -> &'static str {
    match t.outcome {
        WriterOutcome::Pass => "o-ok",
        WriterOutcome::Wrote | WriterOutcome::Refused => "o-choice",
        WriterOutcome::Unsupported => "o-unsupported",
        WriterOutcome::AddedMetadata => "o-choice",
        WriterOutcome::ShouldHaveRefused => "o-worst",
        WriterOutcome::Crash | WriterOutcome::Timeout => "o-crash",
        _ => "o-fail",
    }
}

/// A short text for a reader's cell.
fn reader_text(c: &CaseResult) -> &'static str {
    if no_reason_given(c) {
        "ok?"
    } else {
        c.outcome.cell().trim_matches('*')
    }
}

/// One cell of a matrix.
struct Cell<'a> {
    outcome: &'a str,
    failure: bool,
    style: &'a str,
    text: &'a str,
    title: &'a str,
    case: &'a str,
    imp: &'a str,
}

fn cell(s: &mut String, c: Cell<'_>) {
    let Cell {
        outcome,
        failure,
        style,
        text,
        title,
        case,
        imp,
    } = c;
    let _ = write!(
        s,
        "<td class=\"cell {style}\" data-outcome=\"{}\" data-failure=\"{}\" data-case=\"{}\" \
         data-impl=\"{}\" title=\"{}\">{}</td>",
        esc(outcome),
        u8::from(failure),
        esc(case),
        esc(imp),
        esc(title),
        esc(text)
    );
}

fn not_run(s: &mut String, case: &str, imp: &str) {
    cell(
        s,
        Cell {
            outcome: "",
            failure: false,
            style: "o-none",
            text: "-",
            title: "not run",
            case,
            imp,
        },
    );
}

fn title_of(outcome: &str, rule: Option<&str>, detail: &str, stderr: &str) -> String {
    let mut t = outcome.to_owned();
    if let Some(r) = rule {
        let _ = write!(t, " [{r}]");
    }
    if !detail.is_empty() {
        let _ = write!(t, ": {detail}");
    }
    if !stderr.is_empty() && detail.is_empty() {
        let _ = write!(t, " (stderr: {stderr})");
    }
    t
}

fn options<V: Verdict>(s: &mut String, seen: &mut Vec<&'static str>) {
    for o in V::ALL {
        if !seen.contains(&o.name()) {
            seen.push(o.name());
            let _ = write!(s, "<option value=\"{0}\">{0}</option>", o.name());
        }
    }
}

/// The whole page for reader runs (with their manifest, when known) and writer runs (with
/// their tasks).
pub fn page(
    readers: &[RunResults],
    manifest: Option<&Manifest>,
    writers: &[WriterResults],
    tasks: &[Task],
) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>safetensors conformance</title><style>{STYLE}</style>\
         <script>{SCRIPT}</script></head><body><div id=\"page\">\n"
    );
    let corpus = readers
        .iter()
        .find_map(|r| r.corpus_version.as_deref())
        .map(|v| format!(" (corpus {})", esc(v)))
        .unwrap_or_default();
    let _ = write!(
        s,
        "<h1>Conformance of safetensors readers and writers</h1>\n<p>{} readers over the \
         stcheck corpus{corpus}, {} writers over its writer tasks, from the results files given \
         to <code>stconform page</code>. Hover a cell for the outcome and the reason; the \
         tables scroll sideways with the case column kept in view.</p>\n",
        readers.len(),
        writers.len()
    );
    let mut seen = Vec::new();
    let mut outcome_options = String::new();
    options::<Outcome>(&mut outcome_options, &mut seen);
    options::<WriterOutcome>(&mut outcome_options, &mut seen);
    let _ = writeln!(
        s,
        "<div id=\"filters\"><label>class <select id=\"f-class\"><option value=\"\">all\
         </option><option>security</option><option>interoperability</option><option>\
         strictness</option></select></label><label>outcome <select id=\"f-outcome\">\
         <option value=\"\">all</option><option value=\"failures\">any failure</option>\
         {outcome_options}</select></label><label>ID contains <input id=\"f-id\" size=\"24\">\
         </label></div>"
    );
    let _ = writeln!(
        s,
        "<p class=\"legend\"><span class=\"o-ok\">ok</span> as expected \
         <span class=\"o-noreason\">ok?</span> rejected as expected, no reason given \
         <span class=\"o-choice\">accepts / rejects</span> a choice where either conforms \
         <span class=\"o-unsupported\">unsupported</span> \
         <span class=\"o-wrongrule\">RULE</span> rejected for another rule \
         <span class=\"o-fail\">ACCEPTS, REJECTS, CONTENT...</span> a failure \
         <span class=\"o-crash\">CRASH, TIMEOUT</span> \
         <span class=\"o-worst\">WRITES!</span> wrote what it must refuse \
         <span class=\"o-ok\">ok (nc)</span> a writer's file with the task's content, not \
         canonical (warnings of the writer's own form, shown on hover) \
         <span class=\"o-choice\">+metadata</span> the task's content plus metadata keys of \
         the writer's own</p>"
    );
    readers_section(&mut s, readers, manifest);
    writers_section(&mut s, writers, tasks);
    s.push_str("</div></body></html>\n");
    s
}

fn readers_section(s: &mut String, runs: &[RunResults], manifest: Option<&Manifest>) {
    let _ = write!(s, "<h2>Readers</h2>\n<table id=\"readers-summary\"><thead><tr><th>reader</th><th>judged against</th><th>cases</th><th>PASS</th><th>PASS (no reason given)</th><th>WRONG_RULE</th><th>failures</th><th>unsupported</th></tr></thead><tbody>\n");
    for r in runs {
        let n = |o: Outcome| r.cases.iter().filter(|c| c.outcome == o).count();
        let unexplained = r.cases.iter().filter(|c| no_reason_given(c)).count();
        let fails = r.cases.iter().filter(|c| c.outcome.is_failure()).count();
        let _ = writeln!(
            s,
            "<tr data-impl=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.adapter),
            esc(&r.adapter),
            match r.judge {
                Judge::Strict => "strict",
                Judge::Reference => "reference",
                Judge::Portable => "portable",
            },
            r.cases.len(),
            n(Outcome::Pass) - unexplained,
            unexplained,
            n(Outcome::WrongRule),
            fails,
            n(Outcome::Unsupported)
        );
    }
    s.push_str("</tbody></table>\n");
    let _ = write!(
        s,
        "<p class=\"count\" id=\"readers-matrix-shown\"></p><div class=\"scroll\" \
         id=\"readers-box\"><table class=\"matrix\" id=\"readers-matrix\"><thead><tr>\
         <th>case</th><th>verdict</th><th>class</th>"
    );
    for r in runs {
        let _ = write!(s, "<th>{}</th>", esc(&r.adapter));
    }
    s.push_str("</tr></thead><tbody>\n");
    let ids: Vec<String> = match manifest {
        Some(m) => m
            .cases
            .iter()
            .chain(&m.large)
            .filter(|c| runs.iter().any(|r| r.case(&c.id).is_some()))
            .map(|c| c.id.clone())
            .collect(),
        None => {
            let mut v: Vec<String> = Vec::new();
            for c in runs.iter().flat_map(|r| &r.cases) {
                if !v.contains(&c.id) {
                    v.push(c.id.clone());
                }
            }
            v
        }
    };
    for id in ids {
        let case = manifest.and_then(|m| m.case(&id));
        let class = runs
            .iter()
            .find_map(|r| r.case(&id).and_then(|c| c.class))
            .map(|c| c.name())
            .unwrap_or("");
        let verdict = case.map_or("?", |c| match c.verdict {
            CaseVerdict::Accept => "accept",
            CaseVerdict::Reject => "reject",
            CaseVerdict::ImplementationDefined => "either",
        });
        let about = case.map(|c| c.description.as_str()).unwrap_or("");
        let _ = write!(
            s,
            "<tr id=\"{0}\" data-id=\"{0}\" data-class=\"{class}\"><td class=\"id\" title=\"{1}\">{0}</td><td>{verdict}</td><td>{class}</td>",
            esc(&id),
            esc(about),
        );
        for r in runs {
            match r.case(&id) {
                Some(c) => cell(
                    s,
                    Cell {
                        outcome: c.outcome.name(),
                        failure: c.outcome.is_failure(),
                        style: reader_style(c),
                        text: reader_text(c),
                        title: &title_of(c.outcome.name(), c.rule.as_deref(), &c.detail, &c.stderr),
                        case: &id,
                        imp: &r.adapter,
                    },
                ),
                None => not_run(s, &id, &r.adapter),
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table></div>\n");
}

fn writers_section(s: &mut String, runs: &[WriterResults], tasks: &[Task]) {
    if runs.is_empty() {
        return;
    }
    let _ = write!(s, "<h2>Writers</h2>\n<table id=\"writers-summary\"><thead><tr><th>writer</th><th>tasks</th><th>PASS</th><th>failures</th><th>worst outcome</th><th>unsupported</th></tr></thead><tbody>\n");
    for r in runs {
        let n = |o: WriterOutcome| r.tasks.iter().filter(|t| t.outcome == o).count();
        let fails = r.tasks.iter().filter(|t| t.outcome.is_failure()).count();
        let worst = r
            .worst()
            .filter(|o| o.is_failure())
            .map_or("none", |o| o.name());
        let _ = writeln!(
            s,
            "<tr data-impl=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{worst}</td><td>{}</td></tr>",
            esc(&r.adapter),
            esc(&r.adapter),
            r.tasks.len(),
            n(WriterOutcome::Pass),
            fails,
            n(WriterOutcome::Unsupported)
        );
    }
    s.push_str("</tbody></table>\n");
    let _ = write!(
        s,
        "<p class=\"count\" id=\"writers-matrix-shown\"></p><div class=\"scroll\" \
         id=\"writers-box\"><table class=\"matrix\" id=\"writers-matrix\"><thead><tr>\
         <th>task</th><th>expect</th>"
    );
    for r in runs {
        let _ = write!(s, "<th>{}</th>", esc(&r.adapter));
    }
    s.push_str("</tr></thead><tbody>\n");
    for task in tasks {
        if !runs.iter().any(|r| r.task(&task.id).is_some()) {
            continue;
        }
        let _ = write!(
            s,
            "<tr data-id=\"{}\" data-class=\"\"><td class=\"id\" title=\"{}\">{}</td><td>{}</td>",
            esc(&task.id),
            esc(&task.description),
            esc(&task.id),
            task.expect.name()
        );
        for r in runs {
            match r.task(&task.id) {
                Some(t) => {
                    let mut text = t.outcome.cell().trim_matches('*').to_owned();
                    if t.wrote_valid() && !t.form.is_empty() {
                        text.push_str(" (nc)");
                    }
                    let mut title = title_of(t.outcome.name(), None, &t.detail, &t.stderr);
                    if !t.form.is_empty() {
                        let _ = write!(title, " [form: {}]", t.form.join(", "));
                    }
                    cell(
                        s,
                        Cell {
                            outcome: t.outcome.name(),
                            failure: t.outcome.is_failure(),
                            style: writer_style(t),
                            text: &text,
                            title: &title,
                            case: &task.id,
                            imp: &r.adapter,
                        },
                    );
                }
                None => not_run(s, &task.id, &r.adapter),
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table></div>\n");
}
