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
//!
//! // The same file fed in pieces, with the deep scan and the hash.
//! let config = stcheck::Config::default().deep(true).sha256(true);
//! let mut checker = stcheck::Checker::new(&config);
//! for piece in file.chunks(5) {
//!     checker.feed(piece);
//! }
//! let checked = checker.finish();
//! assert!(checked.is_valid());
//! assert!(checked.sha256.is_some());
//! ```
//!
//! Checking happens in two stages, as in wasmparser. Stage 1, *framing*, can only find a file
//! **malformed**: the length field, the header's bounds, UTF-8, JSON syntax and duplicate keys.
//! Stage 2, *rules*, finds a decodable file **invalid**: the schema, dtypes, sizes, layout,
//! names and the data region's length. A file with faults of both kinds is reported with its
//! first malformed fault. Every finding names a rule of `SPEC.md` ([`Rule`]), a byte offset
//! into the file and, where one applies, the tensor.
//!
//! One [`Checker`] owns the order of the stages, the deep scan, the hash, the warning caps and
//! `deny_warnings`; every entry point — [`validate`], [`check_file`], [`check_reader`], the
//! shards of a sharded checkpoint ([`index`]) — is a thin source of bytes for it.
//!
//! The crate denies `unsafe` code, except the one memory-map call in [`map`], documented
//! where it stands.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod cache;
mod check;
mod clip;
pub mod deep;
mod dtype;
mod error;
mod frame;
mod header;
pub mod index;
#[doc(hidden)]
pub mod internal;
mod json;
pub mod limits;
mod magic;
mod mmap;
mod names;
pub mod portable;
mod profile;
mod progress;
pub mod reference;
mod report;
mod rules;
mod size;
mod source;
mod warnings;
pub mod write;

pub use check::{check_header_bytes, Checked, Checker, Need};
pub use dtype::Dtype;
pub use error::{Error, Finding, Location, ReadError, ReadErrorKind, UnknownName, Warning};
pub use header::MetadataForm;
pub use json::seed_hashes;
pub use limits::{Config, OptionNames};
pub use magic::{format_of, FileFormat};
pub use mmap::{map, Mapped};
pub use names::escape;
pub use profile::Profile;
pub use progress::Progress;
pub use report::{DtypeTotal, Report, TensorInfo};
pub use rules::{Kind, Rule, Severity};
pub use source::{
    check_file, check_file_with, check_opened, check_reader, check_reader_with, read_head,
    FileStamp, ReadMode,
};

/// Validate a whole file held in memory (or memory-mapped) under `config`.
///
/// Returns the report of a valid file, or the first error: malformed faults before invalid
/// ones, each kind in file order, errors before warnings promoted by `deny_warnings`. For the
/// deep scan's counts and the hash, use [`Checker::check_slice`].
pub fn validate<'a>(file: &'a [u8], config: &Config) -> Result<Report<'a>, Error> {
    Checker::check_slice(config, file).verdict
}
