//! Known failures of a writer: every task whose result is not `PASS`, and the form warnings
//! (non-canonical files) of the tasks it writes correctly. A run that differs in either fails,
//! so a change of behaviour always comes with a change of this file.
//!
//! ```json
//! {
//!   "adapter": "mlx",
//!   "results": {
//!     "refuse/name-metadata": "SHOULD_HAVE_REFUSED",
//!     "dtype/f8-e4m3": {"result": "UNSUPPORTED", "note": "MLX has no 8-bit float"}
//!   },
//!   "form": {"metadata/one": ["FRAME-ALIGN"]}
//! }
//! ```

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::outcome::WriterOutcome;
use super::run::WriterResults;
use super::task::Task;

/// One entry: the result, with an optional note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Entry {
    /// Just the result.
    Plain(WriterOutcome),
    /// The result and why.
    Noted {
        /// The result.
        result: WriterOutcome,
        /// Why (kept when the file is re-blessed).
        note: String,
    },
}

impl Entry {
    /// The recorded result.
    pub fn result(&self) -> WriterOutcome {
        match self {
            Entry::Plain(o) => *o,
            Entry::Noted { result, .. } => *result,
        }
    }
}

/// A writer's known-failures file.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriterKnown {
    /// The adapter.
    #[serde(default)]
    pub adapter: String,
    /// Task ID -> its non-`PASS` result.
    #[serde(default)]
    pub results: BTreeMap<String, Entry>,
    /// Task ID -> the form warnings of the file it writes (tasks with a canonical file are
    /// not listed).
    #[serde(default)]
    pub form: BTreeMap<String, Vec<String>>,
}

/// A difference between a run and the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// Not listed, and not `PASS`.
    New {
        /// Task.
        id: String,
        /// Result now.
        got: WriterOutcome,
    },
    /// Listed with another result.
    Changed {
        /// Task.
        id: String,
        /// Result in the file.
        known: WriterOutcome,
        /// Result now.
        got: WriterOutcome,
    },
    /// Listed, now `PASS`.
    NowPasses {
        /// Task.
        id: String,
        /// Result in the file.
        known: WriterOutcome,
    },
    /// The written file's form warnings changed.
    Form {
        /// Task.
        id: String,
        /// Warnings in the file.
        known: Vec<String>,
        /// Warnings now.
        got: Vec<String>,
    },
    /// Listed, but there is no such task.
    UnknownTask {
        /// Task.
        id: String,
    },
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Difference::New { id, got } => write!(f, "new result {got}: {id}"),
            Difference::Changed { id, known, got } => {
                write!(f, "result changed from {known} to {got}: {id}")
            }
            Difference::NowPasses { id, known } => {
                write!(
                    f,
                    "known {known} now passes (remove it from the file): {id}"
                )
            }
            Difference::Form { id, known, got } => write!(
                f,
                "form warnings changed from [{}] to [{}]: {id}",
                known.join(", "),
                got.join(", ")
            ),
            Difference::UnknownTask { id } => write!(f, "listed task does not exist: {id}"),
        }
    }
}

impl WriterKnown {
    /// Parse a known-failures file.
    pub fn parse(text: &str) -> Result<WriterKnown, String> {
        let k: WriterKnown = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if let Some((id, _)) = k
            .results
            .iter()
            .find(|(_, e)| e.result() == WriterOutcome::Pass)
        {
            return Err(format!("{id}: PASS is not a known failure"));
        }
        if let Some((id, _)) = k.form.iter().find(|(_, w)| w.is_empty()) {
            return Err(format!(
                "{id}: an empty form list (leave canonical tasks out)"
            ));
        }
        Ok(k)
    }

    /// The differences between a run and this file. Tasks the run did not select are not
    /// checked; listed tasks that do not exist are.
    pub fn check(&self, results: &WriterResults, tasks: &[Task]) -> Vec<Difference> {
        let mut out = Vec::new();
        for r in &results.tasks {
            match (self.results.get(&r.id).map(Entry::result), r.outcome) {
                (None, WriterOutcome::Pass) => {}
                (None, got) => out.push(Difference::New {
                    id: r.id.clone(),
                    got,
                }),
                (Some(known), WriterOutcome::Pass) => out.push(Difference::NowPasses {
                    id: r.id.clone(),
                    known,
                }),
                (Some(known), got) if known != got => out.push(Difference::Changed {
                    id: r.id.clone(),
                    known,
                    got,
                }),
                (Some(_), _) => {}
            }
            if r.wrote_valid() {
                let known = self.form.get(&r.id).cloned().unwrap_or_default();
                if known != r.form {
                    out.push(Difference::Form {
                        id: r.id.clone(),
                        known,
                        got: r.form.clone(),
                    });
                }
            }
        }
        let exists = |id: &str| tasks.iter().any(|t| t.id == id);
        for id in self.results.keys().chain(self.form.keys()) {
            if !exists(id) {
                out.push(Difference::UnknownTask { id: id.clone() });
            }
        }
        out
    }

    /// The file that records `results`, keeping the notes of unchanged entries and the entries
    /// of existing tasks the run did not select.
    pub fn bless(&self, results: &WriterResults, tasks: &[Task]) -> WriterKnown {
        let kept = |id: &String| tasks.iter().any(|t| t.id == *id) && results.task(id).is_none();
        let mut map: BTreeMap<String, Entry> = self
            .results
            .iter()
            .filter(|(id, _)| kept(id))
            .map(|(id, e)| (id.clone(), e.clone()))
            .collect();
        let mut form: BTreeMap<String, Vec<String>> = self
            .form
            .iter()
            .filter(|(id, _)| kept(id))
            .map(|(id, w)| (id.clone(), w.clone()))
            .collect();
        for r in &results.tasks {
            if r.wrote_valid() && !r.form.is_empty() {
                form.insert(r.id.clone(), r.form.clone());
            }
            if r.outcome == WriterOutcome::Pass {
                continue;
            }
            let entry = match self.results.get(&r.id) {
                Some(Entry::Noted { result, note }) if *result == r.outcome => Entry::Noted {
                    result: *result,
                    note: note.clone(),
                },
                _ => Entry::Plain(r.outcome),
            };
            map.insert(r.id.clone(), entry);
        }
        WriterKnown {
            adapter: results.adapter.clone(),
            results: map,
            form,
        }
    }
}
