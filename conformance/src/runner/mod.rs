//! The conformance runner behind `stconform`.
//!
//! An implementation plugs in as a program (an *adapter*, see `conformance/PROTOCOL.md`) that
//! is given a file path: exit 0 with a JSON description on stdout accepts, exit 1 rejects
//! (with an optional reason), exit 4 says "unsupported", anything else is a crash; or, in the
//! persistent mode, one process answers one JSON request line per case. The runner runs it over every case of `corpus/manifest.json`,
//! classifies each result as an [`Outcome`], compares the run with a known-failures file and
//! renders results as a terminal summary, JSON, or a Markdown matrix.
//!
//! The stages are separate modules so that each can be tested alone:
//! [`manifest`] (what the corpus expects), [`exec`] (running one program with a timeout),
//! [`persistent`] (one process, many cases), [`values`] (decoded values),
//! [`protocol`] (decoding an adapter's answer), [`classify`](mod@classify) (expectation + answer -> outcome),
//! [`known`] (known failures), [`report`] (summaries and the matrix), [`config`] (the
//! built-in adapters) and [`run`] (everything over a corpus, in parallel).

pub mod classify;
pub use crate::harness::config;
pub mod exec;
pub mod glob;
pub mod known;
pub mod manifest;
pub mod outcome;
pub mod persistent;
pub mod protocol;
pub mod report;
pub mod run;
pub mod values;

pub use classify::{classify, Expectation};
pub use manifest::{Case, Class, Kind, Manifest};
pub use outcome::Outcome;
pub use run::{CaseResult, RunOptions, RunResults};
