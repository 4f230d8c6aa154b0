//! The result of one writer task, as an enum.

use serde::{Deserialize, Serialize};

/// What happened when a writer adapter ran one task.
///
/// Serialized as the upper-case names (`"SHOULD_HAVE_REFUSED"`) that `WRITER-PROTOCOL.md`,
/// the known-failures files and the results JSON use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WriterOutcome {
    /// Did what the task expects: wrote a valid file with exactly the task's content, the
    /// same bytes twice; or refused a task it must refuse.
    Pass,
    /// `either` task: wrote a file (judged like a `write` task, and it passed).
    Wrote,
    /// `either` task: refused.
    Refused,
    /// The adapter cannot give this task to the writer (exit 77): the writer's API has no way
    /// to say it (a dtype it lacks, a duplicate key in a dictionary, a number where it takes
    /// strings).
    Unsupported,
    /// Wrote a file for a task it must refuse: the worst outcome.
    ShouldHaveRefused,
    /// Wrote a file that stcheck's strict profile rejects (or no file, or not a regular file).
    InvalidFile,
    /// Wrote a valid file whose tensors, bytes or metadata differ from the task's.
    WrongContent,
    /// Wrote a valid file with exactly the task's tensors and metadata, plus metadata keys of
    /// its own (`"format": "pt"`, a version): not corruption, not the task's file either.
    /// Counted apart, not a failure.
    AddedMetadata,
    /// Refused a task it must write (exit 1).
    ShouldHaveWritten,
    /// Any other exit code, or death by a signal.
    Crash,
    /// Still running at the timeout.
    Timeout,
    /// A second run on the same task wrote other bytes (or ended otherwise).
    NotDeterministic,
}

impl WriterOutcome {
    /// Every outcome, worst first, then the non-failures.
    pub const ALL: &'static [WriterOutcome] = &[
        WriterOutcome::ShouldHaveRefused,
        WriterOutcome::WrongContent,
        WriterOutcome::InvalidFile,
        WriterOutcome::Crash,
        WriterOutcome::Timeout,
        WriterOutcome::NotDeterministic,
        WriterOutcome::ShouldHaveWritten,
        WriterOutcome::Unsupported,
        WriterOutcome::AddedMetadata,
        WriterOutcome::Wrote,
        WriterOutcome::Refused,
        WriterOutcome::Pass,
    ];

    /// The upper-case name.
    pub fn name(self) -> &'static str {
        match self {
            WriterOutcome::Pass => "PASS",
            WriterOutcome::Wrote => "WROTE",
            WriterOutcome::Refused => "REFUSED",
            WriterOutcome::Unsupported => "UNSUPPORTED",
            WriterOutcome::ShouldHaveRefused => "SHOULD_HAVE_REFUSED",
            WriterOutcome::InvalidFile => "INVALID_FILE",
            WriterOutcome::WrongContent => "WRONG_CONTENT",
            WriterOutcome::AddedMetadata => "ADDED_METADATA",
            WriterOutcome::ShouldHaveWritten => "SHOULD_HAVE_WRITTEN",
            WriterOutcome::Crash => "CRASH",
            WriterOutcome::Timeout => "TIMEOUT",
            WriterOutcome::NotDeterministic => "NOT_DETERMINISTIC",
        }
    }

    /// Whether the writer broke an expectation. `PASS`, the choices on `either` tasks and
    /// `UNSUPPORTED` are not failures (the last is still recorded and shown).
    pub fn is_failure(self) -> bool {
        !matches!(
            self,
            WriterOutcome::Pass
                | WriterOutcome::Wrote
                | WriterOutcome::Refused
                | WriterOutcome::Unsupported
                | WriterOutcome::AddedMetadata
        )
    }

    /// Rank for "worst outcome": 0 is the worst.
    pub fn severity(self) -> usize {
        WriterOutcome::ALL
            .iter()
            .position(|o| *o == self)
            .unwrap_or(usize::MAX)
    }

    /// A short cell for the Markdown matrix; failures in bold.
    pub fn cell(self) -> &'static str {
        match self {
            WriterOutcome::Pass => "ok",
            WriterOutcome::Wrote => "writes",
            WriterOutcome::Refused => "refuses",
            WriterOutcome::Unsupported => "n/a",
            WriterOutcome::ShouldHaveRefused => "**WRITES!**",
            WriterOutcome::InvalidFile => "**INVALID**",
            WriterOutcome::WrongContent => "**CONTENT**",
            WriterOutcome::AddedMetadata => "+metadata",
            WriterOutcome::ShouldHaveWritten => "**REFUSES**",
            WriterOutcome::Crash => "**CRASH**",
            WriterOutcome::Timeout => "**TIMEOUT**",
            WriterOutcome::NotDeterministic => "**NONDET**",
        }
    }
}

crate::harness::impl_verdict!(WriterOutcome, pass: Pass, no_answer: Crash | Timeout);
