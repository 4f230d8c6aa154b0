//! The service's one use of the gate, the core and the printers: a stream's bytes fed to the
//! core's one streaming [`Checker`] (the path `stcheck -` takes), its verdict given to the
//! gate, and the record written by the printer crate's JSON Lines sink, exactly as
//! `stcheck --json` writes the record of standard input. Everything the protocols answer
//! comes from an [`Outcome`].
//!
//! The reference crate's verdict (`profile=reference`, `compare-reference`) needs the file's
//! length, which a stream knows at its end: such a stream goes to the core's one reader of a
//! stream of unknown length, the one `stcheck --profile reference -` uses
//! ([`stcheck::check_reader_with`]), on a blocking thread fed through a bounded channel; the
//! end of the stream is the reader's end of input.

use bytes::{Buf, Bytes};
use stcheck::{Checked, Checker, Need, ReadError, ReadErrorKind, ReadMode};
use stcheck_gate::options::RunOptions;
use stcheck_gate::{Gate, Place, Shown, Status};
use stcheck_print::JsonLines;

/// What every record of the service is shown as (its `path`).
pub(crate) const SHOWN: &str = "stream";

/// The clamd signature of a file the reference crate rejects (the reference profile): its
/// record's error has no rule ID.
pub(crate) const REFERENCE_REJECT: &str = "REFERENCE-REJECT";

/// Chunks of a reference stream waiting for its reader thread.
const CHANNEL_CHUNKS: usize = 4;

/// A run's options, resolved once (for the service's own options, at start-up; for a
/// request's, per request).
#[derive(Debug)]
pub(crate) struct Check {
    gate: Gate,
}

impl Check {
    /// The check of `options`, or why they cannot be used.
    pub(crate) fn new(options: RunOptions) -> Result<Check, String> {
        let gate = Gate::new(options).map_err(|e| e.0)?;
        Ok(Check { gate })
    }

    /// A stream to feed.
    pub(crate) fn stream(&self) -> Stream {
        let config = self.gate.config();
        if !config.reference {
            return Stream::Fed(Box::new(Checker::new(config)));
        }
        let (tx, rx) = tokio::sync::mpsc::channel(CHANNEL_CHUNKS);
        let config = config.clone();
        let read = tokio::task::spawn_blocking(move || {
            let input = Channel {
                rx,
                at: Bytes::new(),
            };
            stcheck::check_reader_with(input, &config, &|_: u64| {})
        });
        Stream::Read { tx: Some(tx), read }
    }

    /// The verdict of a stream that ended whole; `record`: whether the answer needs the JSON
    /// record (HTTP) or only the verdict, rule and message (clamd).
    pub(crate) async fn finish(&self, stream: Stream, record: bool) -> Outcome {
        let checked = match stream {
            Stream::Fed(checker) => checker.try_finish(),
            Stream::Read { tx, read } => {
                // The end of the stream: the reader's end of input.
                drop(tx);
                read.await.unwrap_or_else(|e| {
                    Err(ReadError::new(
                        ReadErrorKind::Io,
                        format!("the check did not end: {e}"),
                    ))
                })
            }
        };
        match checked {
            // `expected-sha256` is compared by the gate, in the one integrity decision.
            Ok(mut checked) => self.checked(&mut checked, record),
            Err(e) => self.unchecked(&e, record),
        }
    }

    fn checked(&self, checked: &mut Checked<'_>, record: bool) -> Outcome {
        self.record(record, |gate, at, sink| {
            gate.checked(
                at,
                checked,
                &stcheck_gate::Via::Local(ReadMode::Stream),
                sink,
            )
        })
    }

    /// The answer for a stream with no verdict: over the limit, past a deadline, cut off.
    pub(crate) fn unchecked(&self, why: &ReadError, record: bool) -> Outcome {
        self.record(record, |_, at, sink| {
            stcheck_gate::not_checked(at, why, sink)
        })
    }

    fn record(
        &self,
        record: bool,
        write: impl FnOnce(&Gate, &Shown<'_>, &mut JsonLines<Vec<u8>>) -> stcheck_gate::Done,
    ) -> Outcome {
        let at = Shown {
            text: SHOWN,
            place: Place::Stdin,
        };
        let sink = JsonLines::new(Vec::new(), stcheck_print::Options::new(self.gate.profile()));
        // The clamd answer needs the row alone: no JSON is written.
        let mut sink = if record {
            sink.with_rows()
        } else {
            sink.rows_only()
        };
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
pub(crate) enum Stream {
    /// Fed to the core's streaming checker, on the connection's task.
    Fed(Box<Checker<'static>>),
    /// Read by the core's reader of a stream on a blocking thread (the reference verdict,
    /// which needs the stream's end).
    Read {
        /// The stream's bytes; dropped at its end.
        tx: Option<tokio::sync::mpsc::Sender<Bytes>>,
        read: tokio::task::JoinHandle<Result<Checked<'static>, ReadError>>,
    },
}

impl Stream {
    /// Feed the next bytes; `true` once the verdict is known (the rest need not be read).
    pub(crate) async fn feed(&mut self, bytes: &[u8]) -> bool {
        match self {
            Stream::Fed(checker) => checker.feed(bytes) == Need::Done,
            Stream::Read { tx, .. } => match tx {
                // The reader stopped reading: it has every byte its verdicts need.
                Some(t) => t.send(Bytes::copy_from_slice(bytes)).await.is_err(),
                None => true,
            },
        }
    }
}

/// A reference stream's bytes as the core's reader reads them: the end of input when the
/// stream ended (its sender is dropped).
struct Channel {
    rx: tokio::sync::mpsc::Receiver<Bytes>,
    at: Bytes,
}

impl std::io::Read for Channel {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at.is_empty() {
            match self.rx.blocking_recv() {
                Some(b) => self.at = b,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.at.len());
        buf[..n].copy_from_slice(&self.at[..n]);
        self.at.advance(n);
        Ok(n)
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
    /// The JSON Lines record (`{"type": "file", "data": {...}}` and a newline), when asked
    /// for.
    pub(crate) record: Vec<u8>,
}

impl Outcome {
    /// The signature of an invalid file: its error's rule, or [`REFERENCE_REJECT`].
    pub(crate) fn signature(&self) -> &'static str {
        self.rule.unwrap_or(REFERENCE_REJECT)
    }
}

/// The `--explain` text of the rule named `id` (any case), or why there is none.
pub(crate) fn explain(id: &str) -> Result<&'static str, String> {
    let rule = stcheck_gate::options::rule_arg("rule", id)?;
    stcheck_print::spec::RuleText::of(rule)
        .map(|t| t.section)
        .ok_or_else(|| format!("SPEC.md has no section for {rule}"))
}
