//! The HTML results page: every result is a cell with its outcome and reason, nothing an
//! adapter wrote can break out of its attribute, and the page needs nothing from outside.

use std::collections::BTreeMap;

use stcheck_conformance::page::{esc, page};
use stcheck_conformance::runner::classify::Expect;
use stcheck_conformance::runner::{CaseResult, Outcome, RunResults};

fn case(
    id: &str,
    outcome: Outcome,
    expected: Expect,
    rule: Option<&str>,
    detail: &str,
) -> CaseResult {
    CaseResult {
        id: id.into(),
        outcome,
        expected,
        class: None,
        detail: detail.into(),
        exit_code: None,
        stderr: String::new(),
        rule: rule.map(str::to_owned),
        message: None,
        millis: 1,
    }
}

fn run(adapter: &str, cases: Vec<CaseResult>) -> RunResults {
    // Through the results JSON, as `stconform page` reads them.
    let mut summary = BTreeMap::new();
    for c in &cases {
        *summary.entry(c.outcome).or_insert(0) += 1;
    }
    serde_json::from_value(serde_json::json!({
        "version": "2", "adapter": adapter, "corpus_version": "1.0.0", "command": [],
        "judge": "strict", "deep": false, "timeout_ms": 1, "summary": summary, "cases": cases,
    }))
    .expect("a results document")
}

#[test]
fn cells_carry_the_outcome_and_reason_and_escape_what_adapters_wrote() {
    let hostile = "\"><script>alert(1)</script>";
    let a = run(
        "reader-a",
        vec![
            case(
                "invalid/x",
                Outcome::Pass,
                Expect::Reject,
                Some("LAYOUT-GAP"),
                "",
            ),
            case("invalid/y", Outcome::Pass, Expect::Reject, None, ""),
            case("valid/z", Outcome::Crash, Expect::Accept, None, hostile),
        ],
    );
    let b = run(
        "reader-b",
        vec![case(
            "invalid/x",
            Outcome::WrongRule,
            Expect::Reject,
            Some("SCHEMA-ROOT"),
            "rejected for SCHEMA-ROOT",
        )],
    );
    let html = page(&[a, b], None, &[], &[]);
    assert!(html.starts_with("<!doctype html>"));
    assert!(
        !html.contains("<script>alert"),
        "an adapter's text is escaped"
    );
    assert!(html.contains(&esc(hostile)));
    // One cell per (implementation, case) that ran, and a "not run" cell otherwise.
    assert!(html.contains(r#"data-outcome="PASS" data-failure="0" data-case="invalid/x" data-impl="reader-a" title="PASS [LAYOUT-GAP]""#), "{html}");
    assert!(html.contains(
        r#"data-outcome="WRONG_RULE" data-failure="1" data-case="invalid/x" data-impl="reader-b""#
    ));
    assert!(html.contains(r#"data-case="invalid/y" data-impl="reader-b" title="not run""#));
    // A rejection without a rule is shown apart from one with the right rule.
    assert!(html.contains(
        r#"<td class="cell o-noreason" data-outcome="PASS" data-failure="0" data-case="invalid/y""#
    ));
    // Nothing is loaded from elsewhere.
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
    assert!(html.contains("corpus 1.0.0"));
}

#[test]
fn the_matrix_scrolls_in_its_box_links_nothing_and_explains_every_cell_text() {
    let a = run(
        "reader-a",
        vec![case("invalid/x", Outcome::Pass, Expect::Reject, None, "")],
    );
    let html = page(&[a], None, &[], &[]);
    // Every matrix is in a box that scrolls, its case column sticky; rows are anchors.
    assert!(
        html.contains(
            r#"<div class="scroll" id="readers-box"><table class="matrix" id="readers-matrix">"#
        ),
        "{html}"
    );
    assert!(html.contains("table.matrix td.id { position: sticky; left: 0;"));
    assert!(
        html.contains(r#"<tr id="invalid/x" data-id="invalid/x""#),
        "{html}"
    );
    // No link to a file a user's own page does not have (CONFORMANCE.md was one).
    assert!(!html.contains("href="), "{html}");
    // The legend explains the writer cells' "(nc)" and "+metadata".
    assert!(html.contains("ok (nc)</span>") && html.contains("+metadata</span>"));
}
