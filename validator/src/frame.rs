//! Stage 1, framing: the length field, the header's bounds, UTF-8, and the bytes around the
//! JSON object. Shared by the whole-buffer and the streaming validators, so both give the same
//! finding for the same bytes.

use std::io::{self, Read};

use crate::error::{Error, Finding, Warning};
use crate::header::HEADER_START;
use crate::limits::Config;
use crate::magic;
use crate::rules::Rule;

/// Size of the length field.
pub const LENGTH_FIELD: usize = 8;

pub use crate::limits::HEAD_LEN;

/// Decode and bound the header length N from the first bytes of a file (`FRAME-SHORT`,
/// `FRAME-EMPTY-HEADER`, `FRAME-HEADER-LIMIT`). `prefix` is all the file has if shorter than 8.
/// A `FRAME-HEADER-LIMIT` error still goes through [`identify`] (or [`identify_from`]);
/// [`check_length`] does all of it for a file whose first bytes are at hand.
pub fn header_length(prefix: &[u8], config: &Config) -> Result<u64, Error> {
    let Some(field) = prefix.get(..LENGTH_FIELD) else {
        return Err(Finding::new(
            Rule::FrameShort,
            0,
            format!(
                "file is {} bytes long, shorter than the 8-byte header length field",
                prefix.len()
            ),
        )
        .into());
    };
    let mut le = [0u8; LENGTH_FIELD];
    le.copy_from_slice(field);
    let n = u64::from_le_bytes(le);
    if n == 0 {
        return Err(Finding::new(Rule::FrameEmptyHeader, 0, "header length is 0").into());
    }
    if n > config.max_header_size {
        return Err(Finding::new(
            Rule::FrameHeaderLimit,
            0,
            format!(
                "header length {n} is above the limit of {} bytes",
                config.max_header_size
            ),
        )
        .into());
    }
    Ok(n)
}

/// `FRAME-HEADER-BOUNDS`: the header of length `n` must end within a file of `file_len` bytes.
/// The error still goes through [`identify`] (or [`identify_from`]).
pub fn header_bounds(n: u64, file_len: u64) -> Result<(), Error> {
    match n.checked_add(LENGTH_FIELD as u64) {
        Some(end) if end <= file_len => Ok(()),
        _ => Err(bounds_error(n, file_len)),
    }
}

pub(crate) fn bounds_error(n: u64, file_len: u64) -> Error {
    Finding::new(
        Rule::FrameHeaderBounds,
        0,
        format!("header length {n} runs past the end of the file ({file_len} bytes)"),
    )
    .into()
}

/// Stage 1 on a file whose first bytes are at hand: [`header_length`], [`header_bounds`] and
/// [`identify`]. `head` is the first [`HEAD_LEN`] bytes of the file, or the whole file if it
/// is shorter (more is fine: a whole mapped file can be passed); `file_len` is the file's length.
pub fn check_length(head: &[u8], file_len: u64, config: &Config) -> Result<u64, Error> {
    header_length(head, config)
        .and_then(|n| header_bounds(n, file_len).map(|()| n))
        .map_err(|e| identify(e, head))
}

/// `FRAME-NOT-SAFETENSORS`: when `cause` is `FRAME-HEADER-LIMIT` or `FRAME-HEADER-BOUNDS`
/// (the length field cannot be a header length) and `head` -- the first [`HEAD_LEN`] bytes of
/// the file, or the whole file if it is shorter -- is recognisably another format (a pickle, a
/// ZIP archive, a Git LFS pointer, HTML, JSON, ...), the error that names it; otherwise `cause`.
///
/// The decision depends on those bytes only, never on how they were read, so every path gives
/// the same finding. A file whose bytes after the length field begin like a safetensors header
/// (`{"` or `{}`) keeps `cause`: it is a safetensors file with a bad length field.
pub fn identify(cause: Error, head: &[u8]) -> Error {
    if !matches!(
        cause.rule(),
        Rule::FrameHeaderLimit | Rule::FrameHeaderBounds
    ) {
        return cause;
    }
    match magic::not_safetensors(head) {
        Some(what) => Finding::new(Rule::FrameNotSafetensors, 0, what).into(),
        None => cause,
    }
}

/// [`identify`] for a reader: `prefix` is what was read of the file so far (from its start),
/// and up to [`HEAD_LEN`] bytes in all are read from `reader` to decide, only when `cause` is
/// one [`identify`] may refine. A reader that ends early is a file that ends there.
pub fn identify_from<R: Read>(cause: Error, prefix: &[u8], reader: &mut R) -> io::Result<Error> {
    if !matches!(
        cause.rule(),
        Rule::FrameHeaderLimit | Rule::FrameHeaderBounds
    ) || prefix.len() >= HEAD_LEN
    {
        return Ok(identify(cause, prefix));
    }
    let mut head = [0u8; HEAD_LEN];
    head[..prefix.len()].copy_from_slice(prefix);
    let got = crate::stream::read_full(reader, &mut head[prefix.len()..])?;
    Ok(identify(cause, &head[..prefix.len() + got]))
}

/// `FRAME-ALIGN`: a warning when N is not a multiple of 8.
pub(crate) fn align_warning(n: u64) -> Option<Warning> {
    (!n.is_multiple_of(8)).then(|| {
        Finding::new(
            Rule::FrameAlign,
            0,
            format!("header length {n} is not a multiple of 8: the data region is not 8-aligned"),
        )
    })
}

/// UTF-8, the byte-order mark, and whitespace around the object: everything about the header
/// text that precedes JSON parsing. Returns the text and the warnings.
pub(crate) fn header_text(header: &[u8]) -> Result<(&str, Vec<Warning>), Error> {
    let text = std::str::from_utf8(header).map_err(|e| {
        let at = e.valid_up_to();
        let message = match e.error_len() {
            Some(len) => format!("invalid UTF-8: a bad sequence of {len} byte(s)"),
            None => "invalid UTF-8: a sequence cut off at the end of the header".to_owned(),
        };
        Error::from(Finding::new(
            Rule::Utf8Invalid,
            HEADER_START + at as u64,
            message,
        ))
    })?;
    if text.starts_with('\u{feff}') {
        return Err(Finding::new(
            Rule::JsonBom,
            HEADER_START,
            "header starts with a byte-order mark (U+FEFF)",
        )
        .into());
    }
    let mut warnings = Vec::new();
    let is_ws = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    if header.first().copied().is_some_and(is_ws) {
        warnings.push(Finding::new(
            Rule::JsonLeadingWhitespace,
            HEADER_START,
            "whitespace before the header object",
        ));
    }
    Ok((text, warnings))
}

/// `JSON-PADDING-WHITESPACE`: after a successful parse, the bytes after the object are JSON
/// whitespace; warn if any of them is not 0x20.
pub(crate) fn padding_warning(header: &[u8]) -> Option<Warning> {
    let end = header
        .iter()
        .rposition(|&b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .map_or(0, |i| i + 1);
    let at = header[end..].iter().position(|&b| b != b' ')?;
    Some(Finding::new(
        Rule::JsonPaddingWhitespace,
        HEADER_START + (end + at) as u64,
        format!(
            "padding after the header object holds {:?}, not only spaces (0x20)",
            header[end + at] as char
        ),
    ))
}
