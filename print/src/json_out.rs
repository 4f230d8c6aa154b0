//! JSON output that line splitters cannot break.
//!
//! RFC 8259 lets a string hold U+0085 (NEXT LINE), U+2028 (LINE SEPARATOR) and U+2029
//! (PARAGRAPH SEPARATOR) unescaped, and `serde_json` writes them raw. Python's
//! `str.splitlines()`, many editors and JavaScript before ES2019 treat them as line ends, so
//! one JSON line holding a hostile tensor name or path would be split in two. Everything here
//! writes compact JSON exactly as `serde_json` does, except that these three characters are
//! written as `\u0085`, `\u2028` and `\u2029`. `serde_json` already escapes every character
//! below U+0020, which covers the rest of Python's line boundaries (`\n`, `\r`, `\x0b`,
//! `\x0c`, `\x1c`-`\x1e`). The output is still valid JSON and decodes to the same value.
//!
//! ```
//! let line = stcheck_print::json_out::to_string(&["a\u{2028}b"]).unwrap();
//! assert_eq!(line, r#"["a\u2028b"]"#);
//! ```

use std::io;

use serde::Serialize;
use serde_json::ser::{Formatter, Serializer};

/// A `serde_json` formatter that writes compact JSON with U+0085, U+2028 and U+2029 escaped
/// inside strings (object keys included).
#[derive(Debug, Clone, Copy, Default)]
pub struct LineSafeFormatter;

/// The characters this module escapes on top of what `serde_json` escapes.
fn is_line_break(c: char) -> bool {
    matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}')
}

impl Formatter for LineSafeFormatter {
    fn write_string_fragment<W>(&mut self, writer: &mut W, fragment: &str) -> io::Result<()>
    where
        W: ?Sized + io::Write,
    {
        let mut rest = fragment;
        while let Some((at, c)) = rest.char_indices().find(|&(_, c)| is_line_break(c)) {
            writer.write_all(&rest.as_bytes()[..at])?;
            write!(writer, "\\u{:04x}", c as u32)?;
            rest = &rest[at + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }
}

/// Write `value` as one line of compact JSON (no trailing newline) with [`LineSafeFormatter`].
pub fn to_writer<W: io::Write, T: ?Sized + Serialize>(
    writer: W,
    value: &T,
) -> serde_json::Result<()> {
    value.serialize(&mut Serializer::with_formatter(writer, LineSafeFormatter))
}

/// [`to_writer`] into a byte vector.
pub fn to_vec<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    to_writer(&mut out, value)?;
    Ok(out)
}

/// [`to_writer`] into a string.
pub fn to_string<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<String> {
    let bytes = to_vec(value)?;
    // The serializer writes UTF-8 only: strings as given, escapes as ASCII.
    String::from_utf8(bytes).map_err(|_| {
        serde_json::Error::io(io::Error::new(
            io::ErrorKind::InvalidData,
            "serializer produced invalid UTF-8",
        ))
    })
}
