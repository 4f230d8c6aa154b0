//! The core's integration tests, one binary (each former test file is a module).
//!
//! One binary per crate (as ripgrep's `tests/integration`): after a change to the core, cargo
//! links one test binary per crate instead of one per file. What several crates' tests share
//! is in `stcheck-testkit`.

mod bounds;
mod deep;
mod fast_path;
mod portable;
mod progress_hook;
mod properties;
mod read_head;
mod rules;
mod spec;
mod stream_corpus;
