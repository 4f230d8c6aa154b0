//! The command line's integration tests, one binary (each former test file is a module).
//!
//! One binary per crate (as ripgrep's `tests/integration`): after a change to the core, cargo
//! links one test binary per crate instead of one per file. What several crates' tests share
//! is in `stcheck-testkit`.

mod changed;
mod cli;
mod gate;
mod github;
mod hub;
mod json_doc;
mod progress;
mod readme;
mod recipes;
mod remote_cli;
mod remote_measure;
mod secrets;

/// The `stcheck` binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_stcheck");

/// A command for [`BIN`], with `HF_TOKEN` and `HF_ENDPOINT` of the environment left out (a
/// test sets what it needs).
fn stcheck() -> std::process::Command {
    stcheck_testkit::cli::command(BIN)
}
