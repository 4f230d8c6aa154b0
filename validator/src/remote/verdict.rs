//! The one place where `stcheck::remote` calls the validator library. Everything else in the
//! module moves bytes; these functions turn bytes into verdicts, and re-pointing them at
//! another validator API changes nothing else.
//!
//! The header-level verdict is the validator fed the file's first bytes in order (the length
//! field, then the header) plus the file's length, as the server announced it: the same steps,
//! in the same order, as [`crate::validate`] on the whole file.

use std::io::{self, Read};

use crate::deep::{self, DeepOptions, DeepReport};
use crate::error::Error;
use crate::frame;
use crate::index::{self, IndexIoError, IndexReport, ShardSource};
use crate::limits::Config;
use crate::report::Report;
use crate::stream::StreamError;

/// How many bytes from the start of a file of `file_len` bytes the header-level verdict
/// needs, given its first bytes `prefix` (at least `min(8, file_len)` of them): 8 + N when the
/// length field is acceptable and the header fits the file, otherwise only what is at hand
/// (the prefix alone decides).
pub(super) fn bytes_needed(prefix: &[u8], file_len: u64, config: &Config) -> u64 {
    let field = (frame::LENGTH_FIELD as u64).min(file_len);
    match frame::header_length(prefix, config) {
        Ok(n) if frame::header_bounds(n, file_len).is_ok() => frame::LENGTH_FIELD as u64 + n,
        _ => field,
    }
}

/// The header-level verdict on a file of `file_len` bytes whose first bytes are `head` (at
/// least [`bytes_needed`] of them). `None` if `head` is too short (a caller's bug, reported as
/// "could not check").
pub(super) fn header_verdict(
    head: &[u8],
    file_len: u64,
    config: &Config,
) -> Option<Result<Report<'static>, Error>> {
    let field = head.get(..frame::LENGTH_FIELD).unwrap_or(head);
    let n = match frame::header_length(field, config) {
        Ok(n) => n,
        Err(e) => return Some(Err(e)),
    };
    if let Err(e) = frame::header_bounds(n, file_len) {
        return Some(Err(e));
    }
    let end = usize::try_from(n).ok()?.checked_add(frame::LENGTH_FIELD)?;
    let header = head.get(frame::LENGTH_FIELD..end)?;
    let report = match crate::validate_header(header, config) {
        Ok(r) => r.into_owned(),
        Err(e) => return Some(Err(e)),
    };
    Some(
        report
            .check_data_len(file_len - end as u64)
            .and_then(|()| report.finish(config)),
    )
}

/// The whole file, streamed once in bounded memory: strict verdict and deep scan. `Err` is a
/// read error (the verdict is unknown).
pub(super) fn stream_verdict<R: Read>(
    reader: R,
    config: &Config,
    sha256: bool,
) -> io::Result<Result<(Report<'static>, DeepReport), Error>> {
    match deep::validate_reader_deep(reader, config, &DeepOptions::new().sha256(sha256)) {
        Ok(r) => Ok(Ok(r)),
        Err(StreamError::Invalid(e)) => Ok(Err(e)),
        Err(StreamError::Io(e)) => Err(e),
    }
}

/// A sharded checkpoint: the index's bytes and its shards through `source`.
pub(super) fn index_verdict(
    index_bytes: &[u8],
    source: &dyn ShardSource,
    config: &Config,
) -> Result<IndexReport, IndexIoError> {
    index::check_index(index_bytes, source, config)
}

/// The most bytes of an index read: one past the limit, so a longer one is rejected as the
/// local check rejects it.
pub(super) fn index_read_limit(config: &Config) -> u64 {
    config.max_header_size.saturating_add(1)
}

/// Whether `name` (as the index writes it) ends like an index.
pub(super) fn is_index_name(name: &str) -> bool {
    name.ends_with(index::INDEX_SUFFIX)
}
