//! Known failures of a writer: every task whose result is not `PASS`, and the form warnings
//! (non-canonical files) of the tasks it writes correctly, in the format of
//! [`crate::harness::known`]. A run that differs in either fails, so a change of behaviour
//! always comes with a change of this file.
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

use super::outcome::WriterOutcome;
use super::task::Task;
use crate::harness::known::{self, Form, Universe};

/// One entry: the result, with an optional note.
pub type Entry = known::Entry<WriterOutcome>;

/// A writer's known-failures file.
pub type WriterKnown = known::Known<WriterOutcome, Form>;

/// A difference between a run and the file.
pub type Difference = known::Difference<WriterOutcome>;

impl Universe for [Task] {
    fn has(&self, id: &str) -> bool {
        self.iter().any(|t| t.id == id)
    }
    const UNKNOWN: &'static str = "listed task does not exist";
}

impl Universe for Vec<Task> {
    fn has(&self, id: &str) -> bool {
        self.as_slice().has(id)
    }
    const UNKNOWN: &'static str = <[Task] as Universe>::UNKNOWN;
}
