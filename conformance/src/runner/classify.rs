//! From a case's expectation and what the adapter did, to an [`Outcome`].

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::exec::Status;
use super::manifest::{Case, Expected, ReferenceVerdict, Verdict};
use super::outcome::Outcome;
use super::protocol::{self, Reported};

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
}

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
            Judge::Strict => match case.verdict {
                Verdict::Accept => Expectation {
                    expect: Expect::Accept,
                    content: case.expected.as_ref(),
                    warnings: header_warnings(),
                },
                Verdict::Reject if case.deep && !deep => Expectation {
                    expect: Expect::Accept,
                    content: case.expected.as_ref(),
                    warnings: None,
                },
                Verdict::Reject => Expectation {
                    expect: Expect::Reject,
                    content: None,
                    warnings: None,
                },
                Verdict::ImplementationDefined => Expectation {
                    expect: Expect::Either,
                    content: None,
                    warnings: None,
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
                Expectation {
                    expect,
                    content,
                    warnings: None,
                }
            }
        }
    }
}

/// Classify one run. The detail says what differed (empty for a plain pass).
pub fn classify(exp: &Expectation<'_>, status: Status, stdout: &[u8]) -> (Outcome, String) {
    match status {
        Status::TimedOut => (Outcome::Timeout, "killed after the timeout".to_owned()),
        Status::Signaled(sig) if exp.expect == Expect::Crash => (
            Outcome::Pass,
            format!("crashed (signal {sig}) as the reference does"),
        ),
        Status::Signaled(sig) => (Outcome::Crash, format!("killed by signal {sig}")),
        Status::Exited(0) => match exp.expect {
            Expect::Reject => (Outcome::ShouldHaveRejected, String::new()),
            Expect::Crash => (Outcome::ShouldHaveCrashed, "accepted".to_owned()),
            Expect::Either => match protocol::parse(stdout) {
                Ok(_) => (Outcome::Accepted, String::new()),
                Err(e) => (Outcome::WrongContent, e),
            },
            Expect::Accept => match protocol::parse(stdout) {
                Err(e) => (Outcome::WrongContent, e),
                Ok(reported) => match compare(exp, &reported) {
                    Ok(()) => (Outcome::Pass, String::new()),
                    Err(e) => (Outcome::WrongContent, e),
                },
            },
        },
        Status::Exited(1) => match exp.expect {
            Expect::Reject => (Outcome::Pass, String::new()),
            Expect::Accept => (Outcome::ShouldHaveAccepted, String::new()),
            Expect::Either => (Outcome::Rejected, String::new()),
            Expect::Crash => (Outcome::ShouldHaveCrashed, "rejected".to_owned()),
        },
        Status::Exited(code) if exp.expect == Expect::Crash => (
            Outcome::Pass,
            format!("crashed (exit {code}) as the reference does"),
        ),
        Status::Exited(code) => (Outcome::Crash, format!("exit code {code}")),
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

/// Compare what the adapter reported with the expectation; only the fields it reported.
pub fn compare(exp: &Expectation<'_>, reported: &Reported) -> Result<(), String> {
    if let Some(content) = exp.content {
        let mut by_name: BTreeMap<&str, &protocol::ReportedTensor> = BTreeMap::new();
        for t in &reported.tensors {
            if by_name.insert(t.name.as_str(), t).is_some() {
                return Err(format!("reports tensor {} twice", show(&t.name)));
            }
        }
        let mut wanted = BTreeSet::new();
        for e in &content.tensors {
            wanted.insert(e.name.as_str());
            let Some(r) = by_name.get(e.name.as_str()) else {
                return Err(format!("tensor {} is missing", show(&e.name)));
            };
            let name = show(&e.name);
            if r.dtype != e.dtype {
                return Err(format!(
                    "tensor {name}: dtype {} (expected {})",
                    show(&r.dtype),
                    e.dtype
                ));
            }
            if r.shape != e.shape {
                return Err(format!(
                    "tensor {name}: shape [{}] (expected [{}])",
                    r.shape.join(", "),
                    e.shape.join(", ")
                ));
            }
            if let (Some(r_off), Some(e_off)) = (&r.data_offsets, &e.data_offsets) {
                if r_off != e_off {
                    return Err(format!(
                        "tensor {name}: data_offsets [{}] (expected [{}])",
                        r_off.join(", "),
                        e_off.join(", ")
                    ));
                }
            }
            if let (Some(r_sha), Some(e_sha)) = (&r.sha256, &e.sha256) {
                if !r_sha.eq_ignore_ascii_case(e_sha) {
                    return Err(format!(
                        "tensor {name}: the bytes differ (sha256 {r_sha}, expected {e_sha})"
                    ));
                }
            }
        }
        if let Some(extra) = by_name.keys().find(|n| !wanted.contains(*n)) {
            return Err(format!(
                "reports tensor {} that the file does not have",
                show(extra)
            ));
        }
        if let Some(meta) = &reported.metadata {
            let empty = BTreeMap::new();
            let want = content.metadata.as_ref().unwrap_or(&empty);
            if meta != want {
                let diff = want
                    .iter()
                    .find(|(k, v)| meta.get(*k) != Some(*v))
                    .map(|(k, _)| format!("key {} differs or is missing", show(k)))
                    .or_else(|| {
                        meta.keys()
                            .find(|k| !want.contains_key(*k))
                            .map(|k| format!("extra key {}", show(k)))
                    })
                    .unwrap_or_default();
                return Err(format!("metadata differs: {diff}"));
            }
        }
    }
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
