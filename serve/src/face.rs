//! The service's one use of the gate, the core and the printers: a stream's bytes fed to the
//! core's one streaming [`Checker`] (the path `stcheck -` takes), its verdict given to the
//! gate, and the record written by the printer crate's JSON Lines sink, exactly as
//! `stcheck --json` writes the record of standard input. Everything the protocols answer
//! comes from an [`Outcome`].

use stcheck::{Checker, Need, ReadError, ReadMode};
use stcheck_gate::options::RunOptions;
use stcheck_gate::{Gate, Place, Shown, Status};
use stcheck_print::JsonLines;

/// What every record of the service is shown as (its `path`).
pub(crate) const SHOWN: &str = "stream";

/// A run's options, resolved once (for the service's own options, at start-up; for a
/// request's, per request).
#[derive(Debug)]
pub(crate) struct Check {
    gate: Gate,
}

impl Check {
    /// The check of `options`, or why they cannot be used.
    pub(crate) fn new(options: RunOptions) -> Result<Check, String> {
        if let Some(why) = crate::options::refusal(&options) {
            return Err(why);
        }
        let gate = Gate::new(options).map_err(|e| e.0)?;
        Ok(Check { gate })
    }

    /// A stream to feed.
    pub(crate) fn stream(&self) -> Stream {
        Stream {
            checker: Checker::new(self.gate.config()),
        }
    }

    /// The verdict of a stream that ended whole.
    pub(crate) fn finish(&self, stream: Stream) -> Outcome {
        match stream.checker.try_finish() {
            // `expected-sha256` is compared by the gate, in the one integrity decision.
            Ok(mut checked) => self.record(|gate, at, sink| {
                gate.checked(
                    at,
                    &mut checked,
                    &stcheck_gate::Via::Local(ReadMode::Stream),
                    sink,
                )
            }),
            Err(e) => self.unchecked(&e),
        }
    }

    /// The answer for a stream with no verdict: over the limit, past a deadline, cut off.
    pub(crate) fn unchecked(&self, why: &ReadError) -> Outcome {
        self.record(|_, at, sink| stcheck_gate::not_checked(at, why, sink))
    }

    fn record(
        &self,
        write: impl FnOnce(&Gate, &Shown<'_>, &mut JsonLines<Vec<u8>>) -> stcheck_gate::Done,
    ) -> Outcome {
        let at = Shown {
            text: SHOWN,
            place: Place::Stdin,
        };
        let mut sink = JsonLines::new(Vec::new(), stcheck_print::Options::new(self.gate.profile()))
            .with_rows();
        let done = write(&self.gate, &at, &mut sink);
        let row = sink.take_rows().pop();
        let verdict = match done.status {
            Status::Valid => Verdict::Valid,
            Status::Invalid => Verdict::Invalid,
            Status::IoError | Status::NotChecked => Verdict::NotChecked,
        };
        Outcome {
            verdict,
            rule: row.as_ref().and_then(|r| r.rule),
            message: row.and_then(|r| r.message),
            record: sink.into_inner(),
        }
    }
}

/// A stream being checked.
#[derive(Debug)]
pub(crate) struct Stream {
    checker: Checker<'static>,
}

impl Stream {
    /// Feed the next bytes; `true` once the verdict is known (the rest need not be read).
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> bool {
        self.checker.feed(bytes) == Need::Done
    }
}

/// A verdict as the protocols tell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Valid under the profile.
    Valid,
    /// Invalid.
    Invalid,
    /// No verdict (never valid).
    NotChecked,
}

impl Verdict {
    /// The record's word for it (`status`, and `not_checked` for `io_error`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verdict::Valid => "valid",
            Verdict::Invalid => "invalid",
            Verdict::NotChecked => "not_checked",
        }
    }
}

/// What a check ended with.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// The verdict.
    pub(crate) verdict: Verdict,
    /// The rule of the error (of an invalid file).
    pub(crate) rule: Option<&'static str>,
    /// The error's message, or why there is no verdict.
    pub(crate) message: Option<String>,
    /// The JSON Lines record (`{"type": "file", "data": {...}}` and a newline).
    pub(crate) record: Vec<u8>,
}

/// The `--explain` text of the rule named `id` (any case), or why there is none.
pub(crate) fn explain(id: &str) -> Result<&'static str, String> {
    let rule = stcheck_gate::options::rule_arg("rule", id)?;
    stcheck_print::spec::RuleText::of(rule)
        .map(|t| t.section)
        .ok_or_else(|| format!("SPEC.md has no section for {rule}"))
}
