//! Stage 1, framing: the length field, the header's bounds, UTF-8, and the bytes around the
//! JSON object. Shared by the whole-buffer and the streaming validators, so both give the same
//! finding for the same bytes.

use crate::error::{Error, Finding, Warning};
use crate::limits::Config;
use crate::magic;
use crate::rules::Rule;

/// File offset of the first header byte.
pub(crate) const HEADER_START: u64 = 8;

/// Size of the length field.
pub(crate) const LENGTH_FIELD: usize = 8;

/// Decode and bound the header length N from the first bytes of a file (`FRAME-SHORT`,
/// `FRAME-EMPTY-HEADER`, `FRAME-HEADER-LIMIT`). `prefix` is all the file has if shorter than 8.
/// A `FRAME-HEADER-LIMIT` error still goes through [`identify`].
pub(crate) fn header_length(prefix: &[u8], config: &Config) -> Result<u64, Error> {
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
    if n > config.header_limit() {
        return Err(Finding::new(
            Rule::FrameHeaderLimit,
            0,
            format!(
                "header length {n} is above the limit of {} bytes",
                config.header_limit()
            ),
        )
        .into());
    }
    Ok(n)
}

/// `FRAME-HEADER-BOUNDS`: the header of length `n` must end within a file of `file_len` bytes.
/// The error still goes through [`identify`].
pub(crate) fn header_bounds(n: u64, file_len: u64) -> Result<(), Error> {
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

/// Whether [`identify`] may turn `e` into `FRAME-NOT-SAFETENSORS`: the length field cannot be
/// a header length (`FRAME-HEADER-LIMIT`, `FRAME-HEADER-BOUNDS`).
pub(crate) fn refinable(e: &Error) -> bool {
    matches!(e.rule(), Rule::FrameHeaderLimit | Rule::FrameHeaderBounds)
}

/// `FRAME-NOT-SAFETENSORS`: when `cause` is [`refinable`] and `head` -- the first
/// [`HEAD_LEN`](crate::limits::HEAD_LEN) bytes of the file, or the whole file if it is shorter -- is recognisably another
/// format (a pickle, a ZIP archive, a Git LFS pointer, HTML, JSON, ...), the error that names
/// it; otherwise `cause`.
///
/// The decision depends on those bytes only, never on how they were read, so every path gives
/// the same finding. A file whose bytes after the length field begin like a safetensors header
/// (`{"` or `{}`) keeps `cause`: it is a safetensors file with a bad length field.
pub(crate) fn identify(cause: Error, head: &[u8]) -> Error {
    if !refinable(&cause) {
        return cause;
    }
    match magic::not_safetensors(head) {
        Some(what) => Finding::new(Rule::FrameNotSafetensors, 0, what).into(),
        None => cause,
    }
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

/// `UTF8-INVALID`: the header bytes are not UTF-8.
pub(crate) fn utf8_error(e: std::str::Utf8Error) -> Error {
    let at = e.valid_up_to();
    let message = match e.error_len() {
        Some(len) => format!("invalid UTF-8: a bad sequence of {len} byte(s)"),
        None => "invalid UTF-8: a sequence cut off at the end of the header".to_owned(),
    };
    Finding::new(Rule::Utf8Invalid, HEADER_START + at as u64, message).into()
}

/// The byte-order mark and whitespace before the object: everything about the header text
/// that precedes JSON parsing. Returns the warnings.
pub(crate) fn text_warnings(text: &str) -> Result<Vec<Warning>, Error> {
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
    if text.as_bytes().first().copied().is_some_and(is_ws) {
        warnings.push(Finding::new(
            Rule::JsonLeadingWhitespace,
            HEADER_START,
            "whitespace before the header object",
        ));
    }
    Ok(warnings)
}

/// UTF-8 and [`text_warnings`] on the header bytes: the text and its warnings.
pub(crate) fn header_text(header: &[u8]) -> Result<(&str, Vec<Warning>), Error> {
    let text = std::str::from_utf8(header).map_err(utf8_error)?;
    Ok((text, text_warnings(text)?))
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
