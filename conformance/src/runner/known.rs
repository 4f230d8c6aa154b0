//! Known failures of a reader: every case whose result is not `PASS` (failures, and the
//! choices made on implementation-defined cases), in the format of [`crate::harness::known`].

use super::manifest::Manifest;
use super::outcome::Outcome;
use crate::harness::known::{self, Universe};

/// One entry: the result, with an optional note.
pub type Entry = known::Entry<Outcome>;

/// A reader's known-failures file.
pub type KnownFailures = known::Known<Outcome>;

/// A difference between a run and its known-failures file.
pub type Difference = known::Difference<Outcome>;

impl Universe for Manifest {
    fn has(&self, id: &str) -> bool {
        self.case(id).is_some()
    }
    const UNKNOWN: &'static str = "listed case is not in the manifest";
}
