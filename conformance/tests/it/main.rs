//! The conformance runners' integration tests, one binary (each former test file is a module).
//!
//! One binary per crate (as ripgrep's `tests/integration`): after a change to the core, cargo
//! links one test binary per crate instead of one per file. What several crates' tests share
//! is in `stcheck-testkit`.

mod corpus;
mod hostile;
mod installed;
mod page;
mod portable_probes;
mod protocol_doc;
mod release;
mod runner;
mod shipped_data;
mod verdicts;
mod writers;
