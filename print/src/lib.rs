//! `stcheck-print`: where stcheck's verdicts go.
//!
//! - [`records`]: the JSON Lines records (`docs/json-output.md`), written line-safe by
//!   [`json_out`];
//! - [`sarif`]: one SARIF 2.1.0 log for code scanning (`docs/sarif.md`);
//! - [`spec`]: the rule texts of `SPEC.md`, compiled in (for `--explain` and SARIF).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod json_out;
pub mod records;
pub mod sarif;
pub mod spec;
