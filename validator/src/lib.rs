//! `stcheck`: a strict validator for the safetensors format.
//!
//! ```
//! let file = stcheck::write::serialize(
//!     &[stcheck::write::TensorSpec::new("w", stcheck::Dtype::F32, &[2], &[0u8; 8])],
//!     &[],
//! )
//! .unwrap();
//! let report = stcheck::validate(&file, &stcheck::Config::default()).unwrap();
//! assert_eq!(report.len(), 1);
//!
//! let err = stcheck::validate(&file[..20], &stcheck::Config::default()).unwrap_err();
//! assert_eq!(err.rule().id(), "FRAME-HEADER-BOUNDS");
//! ```
//!
//! Checking happens in two stages, as in wasmparser. Stage 1, *framing*, can only find a file
//! **malformed**: the length field, the header's bounds, UTF-8, JSON syntax and duplicate keys.
//! Stage 2, *rules*, finds a decodable file **invalid**: the schema, dtypes, sizes, layout,
//! names and the data region's length. A file with faults of both kinds is reported with its
//! first malformed fault. Every finding names a rule of `SPEC.md` ([`Rule`]), a byte offset
//! into the file and, where one applies, the tensor.
//!
//! The crate forbids `unsafe`; memory-mapping lives in the binary.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod deep;
pub mod dtype;
pub mod error;
pub mod frame;
#[doc(hidden)]
pub mod fuzzing;
mod header;
#[doc(hidden)]
pub use header::fast::{header_fast_vs_slow, FastVsSlow};
pub mod index;
pub mod limits;
pub mod names;
pub mod portable;
/// The reference profile.
pub mod reference;
pub mod report;
pub mod rules;
pub mod size;
/// The streaming validator.
pub mod stream;
/// The canonical writer.
pub mod write;

pub use dtype::Dtype;
pub use error::{Error, Finding, Warning};
pub use header::MetadataForm;
pub use limits::Config;
pub use report::{DtypeTotal, Report, TensorInfo};
pub use rules::{Kind, Rule, Severity};

/// Validate a whole file held in memory (or memory-mapped) under the strict profile.
///
/// Returns the report of a valid file, or the first error: malformed faults before invalid
/// ones, each kind in file order, errors before warnings promoted by `deny_warnings`.
pub fn validate<'a>(file: &'a [u8], config: &Config) -> Result<Report<'a>, Error> {
    let n = frame::header_length(file, config)?;
    let file_len = file.len() as u64;
    frame::header_bounds(n, file_len)?;
    // header_bounds proved 8 + n <= file.len(), so both conversions and the slice hold.
    let end =
        frame::LENGTH_FIELD + usize::try_from(n).map_err(|_| frame::bounds_error(n, file_len))?;
    let header = file
        .get(frame::LENGTH_FIELD..end)
        .ok_or_else(|| frame::bounds_error(n, file_len))?;
    let report = validate_header(header, config)?;
    report.check_data_len(file_len - end as u64)?;
    report.finish(config)
}

/// Stages 1 and 2 on the header bytes alone (the N bytes after the length field), without the
/// data-length check: the streaming validator's entry point, and the header benchmark's.
pub fn validate_header<'a>(header: &'a [u8], _config: &Config) -> Result<Report<'a>, Error> {
    let n = header.len() as u64;
    let (text, mut warnings) = frame::header_text(header)?;
    let parsed = header::parse(text)?;
    warnings.extend(frame::align_warning(n));
    warnings.extend(frame::padding_warning(header));
    Report::from_parsed(n, parsed, warnings)
}
