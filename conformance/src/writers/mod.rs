//! The writer conformance suite behind `stwrite` (see `conformance/WRITER-PROTOCOL.md`).
//!
//! A writer plugs in as a program (an *adapter*) that is given a prepared task and an output
//! path: it writes the file and exits 0, refuses with exit 1, or exits 77 when its API cannot
//! express the task. The runner judges every written file with stcheck's strict profile, reads
//! every tensor back, runs the writer twice for determinism, and records the warnings the
//! writer's form causes.
//!
//! Stages, each a module: [`task`] (the task files and their generators), [`prepared`] (what
//! an adapter is given), [`stcheck_api`] (every call into the stcheck library), [`judge`]
//! (one written file), [`run`] (running and classifying), [`outcome`], [`known`] (known
//! failures) and [`report`].

pub mod adapter;
pub mod judge;
pub mod known;
pub mod outcome;
pub mod prepared;
pub mod report;
pub mod run;
pub mod stcheck_api;
pub mod task;

pub use outcome::WriterOutcome;
pub use run::{TaskResult, WriterResults, WriterRunOptions};
pub use task::{Expect, Task};
