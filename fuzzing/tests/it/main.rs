//! The fuzz logic's integration tests, one binary (each former test file is a module).
//!
//! One binary per crate (as ripgrep's `tests/integration`): after a change to the core, cargo
//! links one test binary per crate instead of one per file. What several crates' tests share
//! is in `stcheck-testkit`.

mod kept_corpus;
mod regressions;
mod smoke;
