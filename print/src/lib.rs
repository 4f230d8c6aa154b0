//! `stcheck-print`: where stcheck's verdicts go.
//!
//! - [`records`]: the JSON Lines records (`docs/json-output.md`), written line-safe by
//!   [`json_out`];
//! - [`sarif`]: one SARIF 2.1.0 log for code scanning (`docs/sarif.md`);
//! - `Github` (feature `gate`): GitHub Actions workflow commands, one annotation per finding;
//! - [`spec`]: the rule texts of `SPEC.md`, compiled in (for `--explain` and SARIF);
//! - `Text`, `JsonLines` and `sarif::SarifWriter` (feature `gate`, on by default): printers,
//!   sinks of the gate's events (`stcheck_gate::Sink`).
//!
//! Without the `gate` feature the records and the rule texts build alone, on the core only:
//! for faces that get their bytes elsewhere (the WebAssembly package, `js/`).
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "gate")]
mod github;
pub mod json_out;
#[cfg(feature = "gate")]
mod lines;
pub mod records;
#[cfg(feature = "gate")]
pub mod sarif;
pub mod spec;
#[cfg(feature = "gate")]
mod text;

#[cfg(feature = "gate")]
pub use github::Github;
#[cfg(feature = "gate")]
pub use lines::JsonLines;
pub use stcheck::Profile;
#[cfg(feature = "gate")]
pub use text::{summary as text_summary, Text};

/// What the printers show beside the verdicts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// Whose verdict decides a record's status.
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
