//! `stcheck-print`: where stcheck's verdicts go.
//!
//! - [`records`]: the JSON Lines records (`docs/json-output.md`), written line-safe by
//!   [`json_out`];
//! - [`SarifWriter`]: one SARIF 2.1.0 log for code scanning (`docs/sarif.md`; its schema types
//!   are private, as ripgrep keeps its JSON types);
//! - [`Github`]: GitHub Actions workflow commands, one annotation per finding;
//! - [`spec`]: the rule texts of `SPEC.md`, compiled in (for `--explain` and SARIF);
//! - [`Text`], [`JsonLines`] and [`SarifWriter`]: printers, sinks of the gate's events
//!   (`stcheck_gate::Sink`), which write the status and the shown text the events carry.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod github;
pub mod json_out;
mod lines;
pub mod records;
mod sarif;
pub mod spec;
mod text;

pub use github::Github;
pub use lines::JsonLines;
pub use sarif::SarifWriter;
use stcheck::Profile;
pub use text::{summary as text_summary, Text};

/// What the printers and the records show beside the verdicts (the status of each is the
/// gate's, carried by its events).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// Whose verdict the records show (`profile`, and its shape: the reference's verdict, a
    /// portable finding).
    pub profile: Profile,
    /// List every tensor (and the metadata, in JSON).
    pub verbose: bool,
    /// Text: only what failed (JSON and SARIF are always whole).
    pub quiet: bool,
    /// Show the reference crate's verdict beside the strict one.
    pub compare_reference: bool,
}

impl Options {
    /// The options of a run's printer.
    pub fn new(profile: Profile) -> Self {
        Options {
            profile,
            ..Options::default()
        }
    }

    /// Set [`Options::verbose`].
    pub fn verbose(mut self, yes: bool) -> Self {
        self.verbose = yes;
        self
    }

    /// Set [`Options::quiet`].
    pub fn quiet(mut self, yes: bool) -> Self {
        self.quiet = yes;
        self
    }

    /// Set [`Options::compare_reference`].
    pub fn compare_reference(mut self, yes: bool) -> Self {
        self.compare_reference = yes;
        self
    }
}
