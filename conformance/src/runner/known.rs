//! Known failures: per adapter, a data file listing every case whose result is not `PASS`
//! (failures, and the choices made on implementation-defined cases). A run is checked
//! against it: a new failure, a changed result, and a known failure that now passes are all
//! reported, and each fails the run, so the file changes together with the behaviour.
//!
//! ```json
//! {
//!   "adapter": "python-safe-open",
//!   "results": {
//!     "invalid/json/duplicate-key": "SHOULD_HAVE_REJECTED",
//!     "implementation-defined/dtype/f8-nan": {"result": "ACCEPTED", "note": "why"}
//!   }
//! }
//! ```

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::manifest::Manifest;
use super::outcome::Outcome;
use super::run::RunResults;

/// One entry: the result, with an optional note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Entry {
    /// Just the result.
    Plain(Outcome),
    /// The result and why.
    Noted {
        /// The result.
        result: Outcome,
        /// Why (kept when the file is re-blessed).
        note: String,
    },
}

impl Entry {
    /// The recorded result.
    pub fn result(&self) -> Outcome {
        match self {
            Entry::Plain(o) => *o,
            Entry::Noted { result, .. } => *result,
        }
    }
}

/// A known-failures file.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct KnownFailures {
    /// The adapter the file is for.
    #[serde(default)]
    pub adapter: String,
    /// Case ID -> its non-`PASS` result.
    #[serde(default)]
    pub results: BTreeMap<String, Entry>,
}

/// A difference between a run and its known-failures file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// Not listed, and not `PASS`.
    New {
        /// Case.
        id: String,
        /// Result now.
        got: Outcome,
    },
    /// Listed with another non-`PASS` result.
    Changed {
        /// Case.
        id: String,
        /// Result in the file.
        known: Outcome,
        /// Result now.
        got: Outcome,
    },
    /// Listed, and now `PASS`: remove it from the file.
    NowPasses {
        /// Case.
        id: String,
        /// Result in the file.
        known: Outcome,
    },
    /// Listed, but the manifest has no such case.
    UnknownCase {
        /// Case.
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
            Difference::UnknownCase { id } => write!(f, "listed case is not in the manifest: {id}"),
        }
    }
}

impl KnownFailures {
    /// Parse a known-failures file.
    pub fn parse(text: &str) -> Result<KnownFailures, String> {
        let k: KnownFailures = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if let Some((id, _)) = k.results.iter().find(|(_, e)| e.result() == Outcome::Pass) {
            return Err(format!("{id}: PASS is not a known failure"));
        }
        Ok(k)
    }

    /// The differences between a run and this file. Listed cases that the run did not select
    /// (`--run`/`--skip`) are not checked; listed cases missing from the manifest are.
    pub fn check(&self, results: &RunResults, manifest: &Manifest) -> Vec<Difference> {
        let mut out = Vec::new();
        for c in &results.cases {
            match (self.results.get(&c.id).map(Entry::result), c.outcome) {
                (None, Outcome::Pass) => {}
                (None, got) => out.push(Difference::New {
                    id: c.id.clone(),
                    got,
                }),
                (Some(known), Outcome::Pass) => out.push(Difference::NowPasses {
                    id: c.id.clone(),
                    known,
                }),
                (Some(known), got) if known != got => out.push(Difference::Changed {
                    id: c.id.clone(),
                    known,
                    got,
                }),
                (Some(_), _) => {}
            }
        }
        for id in self.results.keys() {
            if manifest.case(id).is_none() {
                out.push(Difference::UnknownCase { id: id.clone() });
            }
        }
        out
    }

    /// The file that records `results`: every non-`PASS` case, keeping the notes of entries
    /// whose result is unchanged, and the entries of cases the run did not select.
    pub fn bless(&self, results: &RunResults, manifest: &Manifest) -> KnownFailures {
        let mut map: BTreeMap<String, Entry> = self
            .results
            .iter()
            .filter(|(id, _)| manifest.case(id).is_some() && results.case(id).is_none())
            .map(|(id, e)| (id.clone(), e.clone()))
            .collect();
        for c in &results.cases {
            if c.outcome == Outcome::Pass {
                continue;
            }
            let entry = match self.results.get(&c.id) {
                Some(Entry::Noted { result, note }) if *result == c.outcome => Entry::Noted {
                    result: *result,
                    note: note.clone(),
                },
                _ => Entry::Plain(c.outcome),
            };
            map.insert(c.id.clone(), entry);
        }
        KnownFailures {
            adapter: results.adapter.clone(),
            results: map,
        }
    }
}
