//! From a case's expectation and what the adapter did, to an [`Outcome`].

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::manifest::{Case, Expected, ReferenceVerdict, Verdict};
use super::outcome::Outcome;
use super::protocol::{self, Reason, Reported};
use super::values;

/// Which verdicts a run judges against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Judge {
    /// The strict verdicts (`verdict` in the manifest). The default.
    #[default]
    Strict,
    /// The reference crate's verdicts (`reference` in the manifest): for checking that an
    /// implementation behaves exactly like `safetensors` 0.8.0.
    Reference,
    /// The portable profile's verdicts (`portable` in the manifest where it differs from
    /// `verdict`): for an implementation that promises what every reader of the reader table
    /// reads alike.
    Portable,
}

/// What an adapter must do with a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expect {
    /// Accept (exit 0).
    Accept,
    /// Reject (exit 1).
    Reject,
    /// Crash (only when judging against the reference, which panics on some files).
    Crash,
    /// Either accept or reject: an implementation-defined case.
    Either,
}

/// A case's expectation for one adapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation<'a> {
    /// The verdict.
    pub expect: Expect,
    /// Content to compare when the adapter accepts, where the manifest has it.
    pub content: Option<&'a Expected>,
    /// Warning rule IDs to compare when the adapter reports warnings.
    pub warnings: Option<Vec<String>>,
    /// For a rejection: the rules a correct reader may name (empty: none is compared),
    /// compared when the adapter names one.
    pub rules: Vec<&'a str>,
}

/// What an adapter answered on one case, whichever mode it runs in.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// It accepted the file: its answer as JSON, or why that is not JSON.
    Accepted(Result<serde_json::Value, String>),
    /// It refused the file (exit 1), with the reason it gave, if any.
    Rejected(Reason),
    /// It does not support what the file needs (exit 4).
    Unsupported(Reason),
    /// Anything else: another exit code, a signal, a crash it reported, a protocol error.
    Crashed(String),
    /// Still running at the timeout.
    TimedOut,
}

/// The detail of a pass on an accepted file whose adapter reported no content
/// (`"tensors": null`): judged on the verdict alone, counted apart.
pub const VERDICT_ONLY: &str = "verdict only: no content reported";

/// Rules only a scan of the data region can find; header-only readers never report them.
pub const DEEP_RULES: &[&str] = &["DATA-BOOL", "DATA-NONFINITE", "DATA-POLYGLOT"];

impl<'a> Expectation<'a> {
    /// The expectation of `case` for an adapter judged by `judge`; `deep` when the adapter
    /// scans the data region (otherwise a `deep` case is expected to be accepted).
    pub fn of(case: &'a Case, judge: Judge, deep: bool) -> Expectation<'a> {
        let header_warnings = || {
            Some(
                case.warnings
                    .iter()
                    .filter(|w| deep || !DEEP_RULES.contains(&w.as_str()))
                    .cloned()
                    .collect(),
            )
        };
        match judge {
            Judge::Portable if case.portable == Some(Verdict::Reject) => Expectation {
                expect: Expect::Reject,
                content: None,
                warnings: None,
                rules: case
                    .rules
                    .iter()
                    .find(|r| r.starts_with("PORTABLE-"))
                    .map(String::as_str)
                    .into_iter()
                    .collect(),
            },
            Judge::Strict | Judge::Portable => match case.verdict {
                Verdict::Accept => Expectation {
                    expect: Expect::Accept,
                    content: case.expected.as_ref(),
                    warnings: header_warnings(),
                    rules: Vec::new(),
                },
                Verdict::Reject if case.deep && !deep => Expectation {
                    expect: Expect::Accept,
                    content: case.expected.as_ref(),
                    warnings: None,
                    rules: Vec::new(),
                },
                Verdict::Reject => Expectation {
                    expect: Expect::Reject,
                    content: None,
                    warnings: None,
                    rules: case.acceptable(),
                },
                Verdict::ImplementationDefined => Expectation {
                    expect: Expect::Either,
                    content: None,
                    warnings: None,
                    rules: Vec::new(),
                },
            },
            Judge::Reference => {
                let expect = match case.reference {
                    Some(ReferenceVerdict::Accept) => Expect::Accept,
                    Some(ReferenceVerdict::Reject) => Expect::Reject,
                    Some(ReferenceVerdict::Panic) => Expect::Crash,
                    None => Expect::Either,
                };
                // Strictly valid files read the same under both; for the others the
                // manifest has no reference content, so only the verdict is compared.
                let content = if expect == Expect::Accept && case.verdict == Verdict::Accept {
                    case.expected.as_ref()
                } else {
                    None
                };
                // The reference's errors name no SPEC rule: no rule is compared.
                Expectation {
                    expect,
                    content,
                    warnings: None,
                    rules: Vec::new(),
                }
            }
        }
    }
}

/// Classify one answer. The detail says what differed (empty for a plain pass).
pub fn classify(exp: &Expectation<'_>, answer: &Answer) -> (Outcome, String) {
    match answer {
        Answer::TimedOut => (Outcome::Timeout, "killed after the timeout".to_owned()),
        Answer::Crashed(how) if exp.expect == Expect::Crash => (
            Outcome::Pass,
            format!("crashed ({how}) as the reference does"),
        ),
        Answer::Crashed(how) => (Outcome::Crash, how.clone()),
        Answer::Unsupported(reason) => (Outcome::Unsupported, show_reason(reason)),
        Answer::Accepted(json) => match exp.expect {
            Expect::Reject => (Outcome::ShouldHaveRejected, String::new()),
            Expect::Crash => (Outcome::ShouldHaveCrashed, "accepted".to_owned()),
            Expect::Either => match json
                .as_ref()
                .map_err(Clone::clone)
                .and_then(protocol::parse_value)
            {
                Ok(_) => (Outcome::Accepted, String::new()),
                Err(e) => (Outcome::WrongContent, e),
            },
            Expect::Accept => match json
                .as_ref()
                .map_err(Clone::clone)
                .and_then(protocol::parse_value)
            {
                Err(e) => (Outcome::WrongContent, e),
                Ok(reported) if reported.verdict_only => (Outcome::Pass, VERDICT_ONLY.to_owned()),
                Ok(reported) => match compare(exp, &reported) {
                    Ok(()) => (Outcome::Pass, String::new()),
                    Err(e) => (Outcome::WrongContent, e),
                },
            },
        },
        Answer::Rejected(reason) => match exp.expect {
            Expect::Reject => match &reason.rule {
                Some(got) if !exp.rules.is_empty() && !exp.rules.contains(&got.as_str()) => (
                    Outcome::WrongRule,
                    match exp.rules.as_slice() {
                        [one] => format!("rejected for {} (the case is {one})", show(got)),
                        many => format!(
                            "rejected for {} (the case accepts {})",
                            show(got),
                            many.join(", ")
                        ),
                    },
                ),
                _ => (Outcome::Pass, show_reason(reason)),
            },
            Expect::Accept => (Outcome::ShouldHaveAccepted, show_reason(reason)),
            Expect::Either => (Outcome::Rejected, show_reason(reason)),
            Expect::Crash => (Outcome::ShouldHaveCrashed, "rejected".to_owned()),
        },
    }
}

/// `[RULE] message`, `[RULE]` or `message`, for reports.
pub fn show_reason(reason: &Reason) -> String {
    match (&reason.rule, &reason.message) {
        (Some(r), Some(m)) => format!("[{r}] {m}"),
        (Some(r), None) => format!("[{r}]"),
        (None, Some(m)) => m.clone(),
        (None, None) => String::new(),
    }
}

/// A name for messages: escaped and cut, so a hostile name cannot flood or forge output.
fn show(s: &str) -> String {
    let escaped: String = s.escape_debug().collect();
    match escaped.char_indices().nth(80) {
        Some((i, _)) => format!("\"{}...\"", &escaped[..i]),
        None => format!("\"{escaped}\""),
    }
}

/// At most this many differences of a `WRONG_CONTENT` are spelled out; the rest are counted.
pub const DIFFERENCES_SHOWN: usize = 20;

/// Compare what the adapter reported with the expectation; only the fields it reported.
/// Every difference is listed (`; `-separated, the first [`DIFFERENCES_SHOWN`] spelled out).
pub fn compare(exp: &Expectation<'_>, reported: &Reported) -> Result<(), String> {
    let mut diffs: Vec<String> = Vec::new();
    if let Some(content) = exp.content {
        content_differences(content, reported, &mut diffs);
    }
    if let Err(e) = compare_warnings(exp, reported) {
        diffs.push(e);
    }
    if diffs.is_empty() {
        return Ok(());
    }
    let more = diffs.len().saturating_sub(DIFFERENCES_SHOWN);
    diffs.truncate(DIFFERENCES_SHOWN);
    let mut text = diffs.join("; ");
    if more > 0 {
        text.push_str(&format!("; and {more} more"));
    }
    Err(text)
}

/// Every way the reported tensors and metadata differ from the manifest's.
fn content_differences(
    content: &super::manifest::Expected,
    reported: &Reported,
    diffs: &mut Vec<String>,
) {
    let mut by_name: BTreeMap<&str, &protocol::ReportedTensor> = BTreeMap::new();
    for t in &reported.tensors {
        if by_name.insert(t.name.as_str(), t).is_some() {
            diffs.push(format!("reports tensor {} twice", show(&t.name)));
        }
    }
    let listed = content.tensors.len().to_string();
    let count = content.tensor_count.as_deref().unwrap_or(&listed);
    if count != listed {
        // Too many tensors to list in the manifest: compare the count only.
        if by_name.len().to_string() != count {
            diffs.push(format!(
                "reports {} tensors (expected {count})",
                by_name.len()
            ));
        }
        return;
    }
    let mut wanted = BTreeSet::new();
    for e in &content.tensors {
        wanted.insert(e.name.as_str());
        let Some(r) = by_name.get(e.name.as_str()) else {
            diffs.push(format!("tensor {} is missing", show(&e.name)));
            continue;
        };
        let name = show(&e.name);
        if r.dtype != e.dtype {
            diffs.push(format!(
                "tensor {name}: dtype {} (expected {})",
                show(&r.dtype),
                e.dtype
            ));
        }
        if r.shape != e.shape {
            diffs.push(format!(
                "tensor {name}: shape [{}] (expected [{}])",
                r.shape.join(", "),
                e.shape.join(", ")
            ));
        }
        if let (Some(r_off), Some(e_off)) = (&r.data_offsets, &e.data_offsets) {
            if r_off != e_off {
                diffs.push(format!(
                    "tensor {name}: data_offsets [{}] (expected [{}])",
                    r_off.join(", "),
                    e_off.join(", ")
                ));
            }
        }
        if let (Some(r_sha), Some(e_sha)) = (&r.sha256, &e.sha256) {
            if !r_sha.eq_ignore_ascii_case(e_sha) {
                diffs.push(format!(
                    "tensor {name}: the bytes differ (sha256 {r_sha}, expected {e_sha})"
                ));
            }
        }
        if let (Some(r_shard), Some(e_shard)) = (&r.shard, &e.shard) {
            if r_shard != e_shard {
                diffs.push(format!(
                    "tensor {name}: read from shard {} (expected {})",
                    show(r_shard),
                    show(e_shard)
                ));
            }
        }
        if let (Some(r_val), Some(e_val)) = (&r.values, &e.values) {
            if let Err(e) = values::compare(r_val, e_val) {
                diffs.push(format!("tensor {name}: {e}"));
            }
        }
    }
    for extra in by_name.keys().filter(|n| !wanted.contains(*n)) {
        diffs.push(format!(
            "reports tensor {} that the file does not have",
            show(extra)
        ));
    }
    if let Some(meta) = &reported.metadata {
        let empty = BTreeMap::new();
        let want = content.metadata.as_ref().unwrap_or(&empty);
        for (k, v) in want {
            if meta.get(k) != Some(v) {
                diffs.push(format!(
                    "metadata differs: key {} differs or is missing",
                    show(k)
                ));
            }
        }
        for k in meta.keys().filter(|k| !want.contains_key(*k)) {
            diffs.push(format!("metadata differs: extra key {}", show(k)));
        }
    }
}

fn compare_warnings(exp: &Expectation<'_>, reported: &Reported) -> Result<(), String> {
    if let (Some(got), Some(want)) = (&reported.warnings, &exp.warnings) {
        let got: BTreeSet<&str> = got.iter().map(String::as_str).collect();
        let want: BTreeSet<&str> = want.iter().map(String::as_str).collect();
        if got != want {
            let list = |s: &BTreeSet<&str>| s.iter().copied().collect::<Vec<_>>().join(", ");
            return Err(format!(
                "warnings [{}] (expected [{}])",
                list(&got),
                list(&want)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod portable_judge {
    use super::*;

    fn case(portable: Option<Verdict>) -> Case {
        serde_json::from_value(serde_json::json!({
            "id": "valid/portable/x", "path": "valid/portable/x.safetensors",
            "verdict": "accept", "rules": ["NAME-SPECIAL", "PORTABLE-NAME"],
            "portable": portable,
        }))
        .expect("a case")
    }

    #[test]
    fn the_portable_judge_uses_the_portable_verdict_where_there_is_one() {
        let rejected = case(Some(Verdict::Reject));
        let e = Expectation::of(&rejected, Judge::Portable, false);
        assert_eq!(e.expect, Expect::Reject);
        assert_eq!(e.rules, ["PORTABLE-NAME"]);
        // The strict judge still expects it accepted.
        assert_eq!(
            Expectation::of(&rejected, Judge::Strict, false).expect,
            Expect::Accept
        );
        // Without a portable verdict, the portable judge is the strict one.
        let plain = case(None);
        assert_eq!(
            Expectation::of(&plain, Judge::Portable, false).expect,
            Expect::Accept
        );
    }
}
