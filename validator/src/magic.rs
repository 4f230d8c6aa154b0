//! The one table of other formats' signatures, shared by `FRAME-NOT-SAFETENSORS` (what a file
//! that is not safetensors is instead: [`not_safetensors`]) and the deep scan's
//! `DATA-POLYGLOT` (which formats a content sniffer would take a valid file for: [`sniff`]).
//!
//! Both look only at the first bytes they are given, so the whole-buffer and the streaming
//! validators, which both have the first [`HEAD_LEN`] bytes (or the whole file, if shorter)
//! when they decide, give the same answer.

use crate::limits::HEAD_LEN;
use crate::names;

/// How a format is recognised.
enum Pattern {
    /// These bytes at this offset.
    At(usize, &'static [u8]),
    /// A pickle stream of protocol 2 to 5: the PROTO opcode 0x80 and the protocol.
    Pickle,
    /// Text starting, after an optional UTF-8 byte-order mark and ASCII whitespace, with one
    /// of these prefixes (ASCII case-insensitive).
    Text(&'static [&'static str]),
    /// A JSON object (`{` then `"` or `}`) or array, after an optional BOM and whitespace.
    Json,
}

/// A format, how it is recognised, and what each rule says about it.
struct Format {
    pattern: Pattern,
    /// What `DATA-POLYGLOT` calls it (after "the magic number of a"); `None` where the deep
    /// scan does not sniff for it (text formats, which no valid file starts with, and PDF,
    /// which the deep scan searches for in its own way).
    polyglot: Option<&'static str>,
    /// What `FRAME-NOT-SAFETENSORS` says (after "this is ").
    is: &'static str,
    /// What `FRAME-NOT-SAFETENSORS` requires beyond the pattern, which content sniffers (and so
    /// `DATA-POLYGLOT`) do not: the next byte a real file of the format has.
    confirm: fn(&[u8]) -> bool,
}

/// No requirement beyond the pattern.
fn always(_: &[u8]) -> bool {
    true
}

/// A pickle's PROTO is followed by an opcode; a small safetensors length field such as
/// N = 0x480 (`80 04 00 ...`) is followed by 0x00, which is none.
fn pickle_opcode_follows(head: &[u8]) -> bool {
    head.get(2).copied().is_some_and(is_pickle_opcode)
}

/// gzip's compression method, byte 2, is 8 (deflate) in every gzip stream in use.
fn gzip_deflate(head: &[u8]) -> bool {
    head.get(2) == Some(&8)
}

const fn bin(at: usize, magic: &'static [u8], polyglot: &'static str, is: &'static str) -> Format {
    Format {
        pattern: Pattern::At(at, magic),
        polyglot: Some(polyglot),
        is,
        confirm: always,
    }
}

const fn text(pattern: Pattern, is: &'static str) -> Format {
    Format {
        pattern,
        polyglot: None,
        is,
        confirm: always,
    }
}

/// Every format, in the order they are tried: binary signatures first, then text, the most
/// specific first.
const FORMATS: &[Format] = &[
    bin(
        0,
        b"PK\x03\x04",
        "ZIP archive (local file header PK\\x03\\x04)",
        "a ZIP archive, not a safetensors file (PyTorch's torch.save writes .bin and .pt files as ZIP archives of pickles)",
    ),
    bin(
        0,
        b"PK\x05\x06",
        "ZIP archive (empty archive, PK\\x05\\x06)",
        "an empty ZIP archive, not a safetensors file",
    ),
    bin(
        0,
        b"PK\x07\x08",
        "ZIP archive (spanned archive, PK\\x07\\x08)",
        "a spanned ZIP archive, not a safetensors file",
    ),
    Format {
        pattern: Pattern::Pickle,
        polyglot: Some("pickle stream"),
        is: "a Python pickle, not a safetensors file (legacy PyTorch .bin and .pt files are pickles; loading one can run code)",
        confirm: pickle_opcode_follows,
    },
    bin(
        0,
        b"GGUF",
        "GGUF model file",
        "a GGUF model file (llama.cpp's format), not a safetensors file",
    ),
    Format {
        confirm: gzip_deflate,
        ..bin(
            0,
            b"\x1f\x8b",
            "gzip stream",
            "a gzip-compressed file, not a safetensors file (decompress it and check the result)",
        )
    },
    bin(
        0,
        b"BZh",
        "bzip2 stream",
        "a bzip2-compressed file, not a safetensors file (decompress it and check the result)",
    ),
    bin(
        0,
        b"\xfd7zXZ\x00",
        "xz stream",
        "an xz-compressed file, not a safetensors file (decompress it and check the result)",
    ),
    bin(
        0,
        b"\x28\xb5\x2f\xfd",
        "Zstandard frame",
        "a Zstandard-compressed file, not a safetensors file (decompress it and check the result)",
    ),
    bin(
        0,
        b"7z\xbc\xaf\x27\x1c",
        "7-Zip archive",
        "a 7-Zip archive, not a safetensors file",
    ),
    bin(
        0,
        b"\x89PNG\r\n\x1a\n",
        "PNG image",
        "a PNG image, not a safetensors file",
    ),
    bin(
        0,
        b"\x89HDF\r\n\x1a\n",
        "HDF5 file",
        "an HDF5 file (the format of Keras .h5 weights), not a safetensors file",
    ),
    bin(
        0,
        b"\x93NUMPY",
        "NumPy .npy array",
        "a NumPy .npy array, not a safetensors file",
    ),
    bin(
        0,
        b"\x7fELF",
        "ELF executable",
        "an ELF executable, not a safetensors file",
    ),
    bin(
        257,
        b"ustar",
        "tar archive (ustar at offset 257)",
        "a tar archive, not a safetensors file",
    ),
    text(
        Pattern::At(0, b"%PDF-"),
        "a PDF document, not a safetensors file",
    ),
    text(
        Pattern::Text(&["version https://git-lfs"]),
        "a Git LFS pointer file; the weights were not downloaded (`git lfs pull` fetches them)",
    ),
    text(
        Pattern::Text(&["<!doctype html", "<html", "<head", "<body"]),
        "an HTML page, not a safetensors file (an error or login page saved in place of the file?)",
    ),
    text(
        Pattern::Text(&["<?xml"]),
        "an XML document, not a safetensors file (a storage service's error response saved in place of the file?)",
    ),
    text(
        Pattern::Json,
        "a JSON document, not a safetensors file (one starts with an 8-byte length field, not with JSON)",
    ),
];

/// The bytes that follow an optional UTF-8 byte-order mark and ASCII whitespace.
fn text_start(head: &[u8]) -> &[u8] {
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let ws = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    &head[ws..]
}

/// Whether `b` is a pickle opcode (protocols 0 to 5).
fn is_pickle_opcode(b: u8) -> bool {
    matches!(b, 0x80..=0x98) || b"()0123BCFGIJKLMNPQRSTUVXabcdeghijloprstu}].".contains(&b)
}

fn is_json_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The first byte after JSON whitespace, if any.
fn after_json_ws(bytes: &[u8]) -> Option<u8> {
    bytes.iter().copied().find(|&b| !is_json_ws(b))
}

impl Pattern {
    /// Whether `head` matches; for a pickle, its protocol.
    fn matches(&self, head: &[u8]) -> Option<u8> {
        match self {
            Pattern::At(at, magic) => {
                (head.get(*at..at + magic.len()) == Some(*magic)).then_some(0)
            }
            Pattern::Pickle => match head {
                [0x80, p @ 2..=5, ..] => Some(*p),
                _ => None,
            },
            Pattern::Text(prefixes) => {
                let t = text_start(head);
                prefixes
                    .iter()
                    .any(|p| {
                        t.get(..p.len())
                            .is_some_and(|s| s.eq_ignore_ascii_case(p.as_bytes()))
                    })
                    .then_some(0)
            }
            Pattern::Json => {
                let t = text_start(head);
                let ok = match t {
                    [b'{', rest @ ..] => matches!(after_json_ws(rest), Some(b'"' | b'}')),
                    [b'[', rest @ ..] => matches!(
                        after_json_ws(rest),
                        Some(b'{' | b'[' | b']' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n')
                    ),
                    _ => false,
                };
                ok.then_some(0)
            }
        }
    }
}

/// A well-known format whose magic number starts `bytes`, if any: what the deep scan's
/// `DATA-POLYGLOT` reports.
///
/// Recognised: ZIP (local file header, empty archive, spanned archive), pickle protocols 2 to
/// 5, GGUF, gzip, bzip2, xz, zstd, 7-Zip, tar (`ustar` at 257),
/// PNG, HDF5, NumPy `.npy`, ELF. (PDF is found separately: its readers search the first 1024
/// bytes.)
pub fn sniff(bytes: &[u8]) -> Option<String> {
    FORMATS.iter().find_map(|f| {
        let name = f.polyglot?;
        let p = f.pattern.matches(bytes)?;
        Some(match f.pattern {
            Pattern::Pickle => format!("{name} (protocol {p} header 0x80 {p:#04x})"),
            _ => name.to_owned(),
        })
    })
}

/// What a file is by its first bytes ([`format_of`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileFormat {
    /// A safetensors header (whatever the file is named).
    Safetensors,
    /// Another format, as a noun phrase: `"a Python pickle (protocol 4; loading one can run
    /// code)"`, `"a GGUF model file (llama.cpp's format)"`, `"an ONNX model (protobuf)"`, `"a
    /// text file"`...
    Other(String),
}

impl std::fmt::Display for FileFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileFormat::Safetensors => f.write_str("a safetensors file"),
            FileFormat::Other(noun) => f.write_str(noun),
        }
    }
}

/// What a file is, named by its first bytes, for a file that a name alone would take for
/// another weight format (a walk's `pytorch_model.bin`), or `None` when the bytes match no
/// format this table knows. Only `head`'s first [`HEAD_LEN`] bytes are looked at.
///
/// Recognised beyond [`sniff`]'s formats: a safetensors header, text formats (HTML, JSON, a
/// Git LFS pointer...), and ONNX's protobuf (`ir_version` then one of `ModelProto`'s fields).
pub fn format_of(head: &[u8]) -> Option<FileFormat> {
    let head = &head[..head.len().min(HEAD_LEN)];
    if head.len() >= 10 && starts_like_header(head) {
        return Some(FileFormat::Safetensors);
    }
    let other = |noun: String| Some(FileFormat::Other(noun));
    if let Some(f) = FORMATS
        .iter()
        .find(|f| f.pattern.matches(head).is_some() && (f.confirm)(head))
    {
        return other(match (&f.pattern, f.pattern.matches(head)) {
            (Pattern::Pickle, Some(p)) => {
                format!("a Python pickle (protocol {p}; loading one can run code)")
            }
            (Pattern::At(0, b"PK\x03\x04"), _) => {
                "a ZIP archive (the format of torch.save, whose pickles run code when loaded)"
                    .to_owned()
            }
            _ => noun(f.is).to_owned(),
        });
    }
    if is_onnx(head) {
        return other("an ONNX model (protobuf)".to_owned());
    }
    as_text(head).and_then(|_| other("a text file".to_owned()))
}

/// The noun phrase that starts a format's `FRAME-NOT-SAFETENSORS` text: up to ", not a
/// safetensors file" or "; ".
fn noun(is: &'static str) -> &'static str {
    let end = [", not a safetensors file", "; "]
        .iter()
        .filter_map(|sep| is.find(sep))
        .min()
        .unwrap_or(is.len());
    &is[..end]
}

/// ONNX's `ModelProto` as its writers lay it out: field 1 (`ir_version`, a varint; versions 1
/// to 15 so far and soon), then the key of another of its fields (2 `producer_name`, 3
/// `producer_version`, 4 `domain`, 5 `model_version`, 6 `doc_string`, 7 `graph`, 8
/// `opset_import`, 14 `metadata_props`).
fn is_onnx(head: &[u8]) -> bool {
    matches!(
        head,
        [
            0x08,
            1..=15,
            0x12 | 0x1a | 0x22 | 0x28 | 0x32 | 0x3a | 0x42 | 0x72,
            ..
        ]
    )
}

/// Whether the bytes after the 8-byte length field begin as a safetensors header does: JSON
/// whitespace, `{`, whitespace, then `"` or `}` -- or end before that is decided. A file that
/// does is taken for a safetensors file with a bad length field (a truncated download, a
/// header above the limit), whatever its first 8 bytes spell.
fn starts_like_header(head: &[u8]) -> bool {
    let after = head.get(8..).unwrap_or_default();
    let Some(i) = after.iter().position(|&b| !is_json_ws(b)) else {
        return true;
    };
    match after[i] {
        b'{' => matches!(after_json_ws(&after[i + 1..]), None | Some(b'"' | b'}')),
        _ => false,
    }
}

/// How many characters of a text file's first line `FRAME-NOT-SAFETENSORS` quotes.
const QUOTE_CHARS: usize = 60;

/// Whether the first bytes are text: UTF-8 (a sequence cut off at the end is allowed) without
/// control characters other than tab, line feed, form feed and carriage return.
fn as_text(head: &[u8]) -> Option<&str> {
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
        Err(_) => return None,
    };
    let control = |c: char| names::is_control(c) && !matches!(c, '\t' | '\n' | '\x0c' | '\r');
    (!text.is_empty() && !text.chars().any(control)).then_some(text)
}

/// What `head` is instead of a safetensors file, as the message of `FRAME-NOT-SAFETENSORS`:
/// `None` when it is not recognisable or begins like a safetensors file after all.
///
/// `head` is the first [`HEAD_LEN`] bytes of the file, or the whole file if it is shorter;
/// bytes past [`HEAD_LEN`] are ignored, so callers that have more may pass them.
pub(crate) fn not_safetensors(head: &[u8]) -> Option<String> {
    let head = &head[..head.len().min(HEAD_LEN)];
    if starts_like_header(head) {
        return None;
    }
    let found = FORMATS
        .iter()
        .find(|f| f.pattern.matches(head).is_some() && (f.confirm)(head));
    if let Some(f) = found {
        return Some(format!("this is {}", f.is));
    }
    let text = as_text(head)?;
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or(text);
    let line = line.trim();
    let shown: String = line.chars().take(QUOTE_CHARS).collect();
    let more = if line.chars().nth(QUOTE_CHARS).is_some() {
        "..."
    } else {
        ""
    };
    Some(format!(
        "this is a text file, not a safetensors file; it begins \"{}{more}\"",
        names::escape(&shown)
    ))
}

#[cfg(test)]
mod tests {
    use super::format_of;

    #[test]
    fn formats_are_named_by_their_bytes() {
        let name = |b: &[u8]| format_of(b).map(|f| f.to_string());
        for p in 2..=5u8 {
            assert_eq!(
                name(&[0x80, p, 0x95, 0, 0]).as_deref(),
                Some(format!("a Python pickle (protocol {p}; loading one can run code)").as_str())
            );
        }
        assert!(name(b"PK\x03\x04\x14\x00")
            .is_some_and(|n| n.starts_with("a ZIP archive (the format of torch.save")));
        assert_eq!(
            name(b"GGUF\x03\0\0\0").as_deref(),
            Some("a GGUF model file (llama.cpp's format)")
        );
        assert_eq!(
            name(b"\x89HDF\r\n\x1a\n\0").as_deref(),
            Some("an HDF5 file (the format of Keras .h5 weights)")
        );
        assert_eq!(
            name(b"\x08\x07\x12\x07pytorch").as_deref(),
            Some("an ONNX model (protobuf)")
        );
        assert_eq!(
            format_of(b"\x02\0\0\0\0\0\0\0{}"),
            Some(super::FileFormat::Safetensors)
        );
        assert_eq!(
            name(b"version https://git-lfs.github.com/spec/v1\n").as_deref(),
            Some("a Git LFS pointer file")
        );
        assert_eq!(name(b"hello\n").as_deref(), Some("a text file"));
        // Random bytes, a protocol-1 pickle's start, and nothing: no format.
        assert_eq!(
            name(&[0xde, 0xad, 0xbe, 0xef, 0x01, 0x9c, 0x00, 0xff, 0x10]),
            None
        );
        assert_eq!(name(b""), None);
    }
}
