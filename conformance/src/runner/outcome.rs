//! The result of one case, as an enum (never a string compared by hand).

use serde::{Deserialize, Serialize};

/// What happened when an adapter ran on one case.
///
/// Serialized as the upper-case names below (`"SHOULD_HAVE_REJECTED"`), the names
/// `PROTOCOL.md`, the known-failures files and the results JSON use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Outcome {
    /// The adapter did what the case expects (and reported the expected content).
    Pass,
    /// The case must be accepted; the adapter rejected it (exit 1).
    ShouldHaveAccepted,
    /// The case must be rejected; the adapter accepted it (exit 0).
    ShouldHaveRejected,
    /// The case must be rejected; the adapter rejected it and named a rule (protocol v2), but
    /// not the rule the case is about: it refused the file for a fault the file does not have
    /// (or by accident, e.g. a type error in the reader).
    WrongRule,
    /// The adapter accepted, but what it reported (tensors, metadata, bytes, warnings)
    /// differs from the expected content, or its output is not protocol JSON.
    WrongContent,
    /// Only when judging against the reference's verdicts: the reference panics on this
    /// file, the adapter did not crash.
    ShouldHaveCrashed,
    /// Any exit code other than 0 or 1, or death by a signal.
    Crash,
    /// Still running after the timeout; the runner killed it.
    Timeout,
    /// The adapter said it does not support what the case needs (exit 4, protocol v2), e.g. a
    /// dtype it has no type for. Counted apart: neither a pass nor a failure.
    Unsupported,
    /// Implementation-defined case: the adapter accepted it.
    Accepted,
    /// Implementation-defined case: the adapter rejected it.
    Rejected,
}

impl Outcome {
    /// Every outcome, in report order.
    pub const ALL: &'static [Outcome] = &[
        Outcome::Pass,
        Outcome::Accepted,
        Outcome::Rejected,
        Outcome::Unsupported,
        Outcome::ShouldHaveAccepted,
        Outcome::ShouldHaveRejected,
        Outcome::WrongRule,
        Outcome::WrongContent,
        Outcome::ShouldHaveCrashed,
        Outcome::Crash,
        Outcome::Timeout,
    ];

    /// The upper-case name, e.g. `"SHOULD_HAVE_REJECTED"`.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::ShouldHaveAccepted => "SHOULD_HAVE_ACCEPTED",
            Outcome::ShouldHaveRejected => "SHOULD_HAVE_REJECTED",
            Outcome::WrongRule => "WRONG_RULE",
            Outcome::WrongContent => "WRONG_CONTENT",
            Outcome::ShouldHaveCrashed => "SHOULD_HAVE_CRASHED",
            Outcome::Crash => "CRASH",
            Outcome::Timeout => "TIMEOUT",
            Outcome::Accepted => "ACCEPTED",
            Outcome::Rejected => "REJECTED",
            Outcome::Unsupported => "UNSUPPORTED",
        }
    }

    /// The outcome with this name.
    pub fn from_name(name: &str) -> Option<Outcome> {
        Outcome::ALL.iter().copied().find(|o| o.name() == name)
    }

    /// Whether this is a failure: the adapter broke an expectation. `PASS`, the choices on
    /// implementation-defined cases (`ACCEPTED`, `REJECTED`) and `UNSUPPORTED` (counted apart)
    /// are not.
    pub fn is_failure(self) -> bool {
        !matches!(
            self,
            Outcome::Pass | Outcome::Accepted | Outcome::Rejected | Outcome::Unsupported
        )
    }

    /// A short cell for the Markdown matrix. Failures are bold.
    pub fn cell(self) -> &'static str {
        match self {
            Outcome::Pass => "ok",
            Outcome::Accepted => "accepts",
            Outcome::Rejected => "rejects",
            Outcome::ShouldHaveAccepted => "**REJECTS**",
            Outcome::ShouldHaveRejected => "**ACCEPTS**",
            Outcome::WrongRule => "**RULE**",
            Outcome::Unsupported => "unsupported",
            Outcome::WrongContent => "**CONTENT**",
            Outcome::ShouldHaveCrashed => "**NO-PANIC**",
            Outcome::Crash => "**CRASH**",
            Outcome::Timeout => "**TIMEOUT**",
        }
    }
}

crate::harness::impl_verdict!(Outcome, pass: Pass, no_answer: Crash | Timeout);
