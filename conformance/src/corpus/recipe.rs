//! The recipe format: short text blocks, one per case, kept in `corpus/recipes/*.txt`.
//!
//! ```text
//! # a comment
//! [invalid/layout/gap-between]
//! verdict: reject
//! rules: LAYOUT-GAP
//! description: four unused bytes between two tensors
//! header: {"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},
//! header: "b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}
//! data: repeat 00 12
//! ```
//!
//! The full grammar is documented in `corpus/README.md`; this module only parses it.

use std::fmt;

/// What the recipe's author says a strict reader must do with the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The file is valid.
    Accept,
    /// The file is malformed or invalid.
    Reject,
    /// The format leaves the answer to the implementation.
    ImplementationDefined,
}

impl Verdict {
    /// `accept`, `reject` or `implementation-defined`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Accept => "accept",
            Verdict::Reject => "reject",
            Verdict::ImplementationDefined => "implementation-defined",
        }
    }
}

/// One piece of the header text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderPiece {
    /// Text taken verbatim.
    Text(String),
    /// Text repeated a number of times.
    Repeat(u64, String),
    /// `COUNT` one-byte U8 tensors `t0`, `t1`, ... covering `[0, COUNT)` in offset order,
    /// as comma-separated members (no braces); `reverse` lists them from the last offset down.
    Tensors {
        /// How many.
        count: u64,
        /// Listed from the last offset to the first.
        reverse: bool,
    },
}

/// A text encoding for the header other than UTF-8 (`encoding:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-16, little-endian code units.
    Utf16Le,
    /// UTF-16, big-endian code units.
    Utf16Be,
    /// UTF-32, little-endian.
    Utf32Le,
    /// UTF-32, big-endian.
    Utf32Be,
}

impl Encoding {
    /// Encode `text`, with a byte-order mark first when `bom`.
    pub fn encode(self, text: &str, bom: bool) -> Vec<u8> {
        let mut out = Vec::new();
        let mut put = |c: u32| match self {
            Encoding::Utf16Le | Encoding::Utf16Be => {
                let mut units = [0u16; 2];
                let ch = char::from_u32(c).unwrap_or('\u{FFFD}');
                for u in ch.encode_utf16(&mut units) {
                    let b = if self == Encoding::Utf16Le {
                        u.to_le_bytes()
                    } else {
                        u.to_be_bytes()
                    };
                    out.extend_from_slice(&b);
                }
            }
            Encoding::Utf32Le => out.extend_from_slice(&c.to_le_bytes()),
            Encoding::Utf32Be => out.extend_from_slice(&c.to_be_bytes()),
        };
        if bom {
            put(0xFEFF);
        }
        for ch in text.chars() {
            put(u32::from(ch));
        }
        out
    }

    /// Bytes per space character in this encoding (the padding unit).
    pub fn unit(self) -> usize {
        match self {
            Encoding::Utf16Le | Encoding::Utf16Be => 2,
            Encoding::Utf32Le | Encoding::Utf32Be => 4,
        }
    }
}

/// What a case tests (`class:`); when absent, derived from its verdict and first rule (see
/// `corpus/README.md`).
pub use crate::runner::manifest::Class;

/// A shard file of an index case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShardFile {
    /// Built with stcheck's writer from these tensors.
    Tensors(Vec<WriterTensor>),
    /// These bytes.
    Raw(Vec<u8>),
    /// A symbolic link to this target (relative to the case's directory).
    Link(String),
}

/// One piece of the data region (everything after the header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataPiece {
    /// Raw bytes.
    Bytes(Vec<u8>),
    /// A byte pattern repeated a number of times.
    Repeat(Vec<u8>, u64),
}

/// How the header text is padded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pad {
    /// To a multiple of this many bytes (1 = no padding).
    Multiple(u64),
    /// To exactly this many bytes.
    To(u64),
}

/// Which writer builds a `build:` recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    /// `stcheck::write::serialize`.
    Stcheck,
    /// The reference crate's `safetensors::serialize`.
    Reference,
}

/// A tensor of a `build:` recipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterTensor {
    /// Name.
    pub name: String,
    /// Dtype name.
    pub dtype: String,
    /// Dimensions.
    pub shape: Vec<u64>,
    /// Its bytes.
    pub data: Vec<DataPiece>,
}

/// One case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipe {
    /// `valid/dtype/f4-even`: also the path without `.safetensors`.
    pub id: String,
    /// Recipe file and line of the `[id]` line, for messages.
    pub origin: String,
    /// The author's verdict.
    pub verdict: Verdict,
    /// For implementation-defined cases: stcheck's strict choice (`accept` or `reject`).
    pub strict: Option<Verdict>,
    /// Why the case is implementation-defined.
    pub reason: Option<String>,
    /// The portable profile's verdict where it differs from strict's (`reject` on a file
    /// strict accepts).
    pub portable: Option<Verdict>,
    /// Rule IDs exercised; for a rejected file the first is the rule that rejects it.
    pub rules: Vec<String>,
    /// Warnings a strict reader reports (in file order).
    pub warnings: Vec<String>,
    /// `also:` other rules a correct reader may name when it rejects the file (a rejected
    /// case's acceptable rules are its first rule and these).
    pub also: Vec<String>,
    /// Only the deep scan (tensor bytes) can see the fault or the warning.
    pub deep: bool,
    /// Generated only on demand (`--large`), never committed.
    pub large: bool,
    /// One line.
    pub description: String,
    /// The whole file as bytes (overrides everything below).
    pub raw: Option<Vec<u8>>,
    /// Header text pieces, concatenated.
    pub header: Vec<HeaderPiece>,
    /// Marker text in the header replaced by raw bytes.
    pub splices: Vec<(String, Vec<u8>)>,
    /// Padding of the header.
    pub pad: Pad,
    /// The padding byte (default 0x20).
    pub pad_byte: u8,
    /// Raw value of the length field, instead of the header's length.
    pub length: Option<u64>,
    /// The data region.
    pub data: Vec<DataPiece>,
    /// Built by a writer instead of from header text.
    pub writer: Option<Writer>,
    /// The writer's tensors.
    pub tensors: Vec<WriterTensor>,
    /// The writer's metadata.
    pub meta: Vec<(String, String)>,
    /// `class:`, when the author sets it.
    pub class: Option<Class>,
    /// `encoding:` of the header text (UTF-8 when absent), with `bom:`.
    pub encoding: Option<Encoding>,
    /// A byte-order mark before the header text in `encoding`.
    pub bom: bool,
    /// `values: NAME V V ...`: decoded values of a tensor, for the manifest.
    pub values: Vec<(String, Vec<String>)>,
    /// An index case: the text of the index (`index:` lines).
    pub index: Option<String>,
    /// An index case's files in the case directory, in recipe order.
    pub shards: Vec<(String, ShardFile)>,
}

/// The file name of the index in an index case's directory.
pub const INDEX_FILE: &str = "model.safetensors.index.json";

/// A recipe that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecipeError(pub String);

impl fmt::Display for RecipeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RecipeError {}

fn err<T>(origin: &str, msg: impl fmt::Display) -> Result<T, RecipeError> {
    Err(RecipeError(format!("{origin}: {msg}")))
}

/// Decode hex digits; spaces and `_` between byte pairs are allowed.
pub fn parse_hex(s: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = s
        .bytes()
        .filter(|b| !matches!(b, b' ' | b'_' | b'\t'))
        .collect();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks(2)
        .map(|pair| {
            let hi = (pair[0] as char).to_digit(16)?;
            let lo = (pair[1] as char).to_digit(16)?;
            u8::try_from(hi * 16 + lo).ok()
        })
        .collect()
}

/// A data piece: `hex HEX`, `repeat HEX COUNT`, `ascii TEXT`.
fn parse_data(origin: &str, v: &str) -> Result<DataPiece, RecipeError> {
    let (kind, rest) = v.split_once(' ').unwrap_or((v, ""));
    match kind {
        "hex" => match parse_hex(rest) {
            Some(b) => Ok(DataPiece::Bytes(b)),
            None => err(origin, format!("bad hex {rest:?}")),
        },
        "ascii" => Ok(DataPiece::Bytes(rest.as_bytes().to_vec())),
        "repeat" => {
            let Some((pattern, count)) = rest.rsplit_once(' ') else {
                return err(origin, "repeat needs HEX COUNT");
            };
            let (Some(p), Ok(c)) = (parse_hex(pattern), count.trim().parse::<u64>()) else {
                return err(origin, format!("bad repeat {rest:?}"));
            };
            Ok(DataPiece::Repeat(p, c))
        }
        "none" => Ok(DataPiece::Bytes(Vec::new())),
        _ => err(origin, format!("unknown data kind {kind:?}")),
    }
}

fn parse_list(v: &str) -> Vec<String> {
    v.split([' ', ','])
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn parse_verdict(origin: &str, v: &str) -> Result<Verdict, RecipeError> {
    match v {
        "accept" => Ok(Verdict::Accept),
        "reject" => Ok(Verdict::Reject),
        "implementation-defined" => Ok(Verdict::ImplementationDefined),
        _ => err(origin, format!("unknown verdict {v:?}")),
    }
}

fn parse_bool(origin: &str, v: &str) -> Result<bool, RecipeError> {
    match v {
        "true" | "yes" => Ok(true),
        "false" | "no" => Ok(false),
        _ => err(origin, format!("expected true or false, found {v:?}")),
    }
}

/// `tensor: NAME DTYPE DIMS DATA...`; DIMS is `2,3` or `-` for a scalar, DATA a data piece.
fn parse_tensor(origin: &str, v: &str) -> Result<WriterTensor, RecipeError> {
    let mut parts = v.splitn(4, ' ');
    let (Some(name), Some(dtype), Some(dims), Some(data)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return err(origin, "tensor needs NAME DTYPE DIMS DATA");
    };
    let shape = if dims == "-" {
        Vec::new()
    } else {
        let parsed: Result<Vec<u64>, _> = dims.split(',').map(str::parse::<u64>).collect();
        match parsed {
            Ok(s) => s,
            Err(_) => return err(origin, format!("bad dims {dims:?}")),
        }
    };
    Ok(WriterTensor {
        name: name.to_owned(),
        dtype: dtype.to_owned(),
        shape,
        data: vec![parse_data(origin, data)?],
    })
}

/// Parse the text of one recipe file. `file` names it in messages.
pub fn parse(file: &str, text: &str) -> Result<Vec<Recipe>, RecipeError> {
    let mut out: Vec<Recipe> = Vec::new();
    for (i, raw_line) in text.lines().enumerate() {
        let origin = format!("{file}:{}", i + 1);
        // Trailing whitespace is never significant (editors strip it): padding and raw bytes
        // are written with `pad`, `pad-byte` and `splice`.
        let line = raw_line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(id) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            out.push(Recipe {
                id: id.to_owned(),
                origin,
                verdict: Verdict::Accept,
                strict: None,
                reason: None,
                portable: None,
                rules: Vec::new(),
                warnings: Vec::new(),
                also: Vec::new(),
                deep: false,
                large: false,
                description: String::new(),
                raw: None,
                header: Vec::new(),
                splices: Vec::new(),
                pad: Pad::Multiple(8),
                pad_byte: b' ',
                length: None,
                data: Vec::new(),
                writer: None,
                tensors: Vec::new(),
                meta: Vec::new(),
                class: None,
                encoding: None,
                bom: false,
                values: Vec::new(),
                index: None,
                shards: Vec::new(),
            });
            continue;
        }
        let Some(r) = out.last_mut() else {
            return err(&origin, "a line before the first [id]");
        };
        let Some((key, value)) = line.split_once(':') else {
            return err(&origin, format!("expected `key: value`, found {line:?}"));
        };
        // Exactly one space after the colon is part of the syntax; the rest is the value.
        let value = value.strip_prefix(' ').unwrap_or(value);
        match key {
            "verdict" => r.verdict = parse_verdict(&origin, value)?,
            "strict" => r.strict = Some(parse_verdict(&origin, value)?),
            "reason" => r.reason = Some(value.to_owned()),
            "portable" => r.portable = Some(parse_verdict(&origin, value)?),
            "rules" => r.rules = parse_list(value),
            "warnings" => r.warnings = parse_list(value),
            "also" => r.also = parse_list(value),
            "deep" => r.deep = parse_bool(&origin, value)?,
            "large" => r.large = parse_bool(&origin, value)?,
            "description" => r.description = value.to_owned(),
            "raw" => match parse_hex(value) {
                Some(b) => r.raw = Some(b),
                None => return err(&origin, format!("bad hex {value:?}")),
            },
            "header" => r.header.push(HeaderPiece::Text(value.to_owned())),
            "header-repeat" => {
                let Some((count, text)) = value.split_once(' ') else {
                    return err(&origin, "header-repeat needs COUNT TEXT");
                };
                let Ok(count) = count.parse::<u64>() else {
                    return err(&origin, format!("bad count {count:?}"));
                };
                r.header.push(HeaderPiece::Repeat(count, text.to_owned()));
            }
            "splice" => {
                let Some((marker, hex)) = value.split_once(' ') else {
                    return err(&origin, "splice needs MARKER HEX");
                };
                match parse_hex(hex) {
                    Some(b) => r.splices.push((marker.to_owned(), b)),
                    None => return err(&origin, format!("bad hex {hex:?}")),
                }
            }
            "pad" => {
                r.pad = match value {
                    "none" => Pad::Multiple(1),
                    v => match v.parse::<u64>() {
                        Ok(n) if n > 0 => Pad::Multiple(n),
                        _ => return err(&origin, format!("bad pad {v:?}")),
                    },
                }
            }
            "pad-to" => match value.parse::<u64>() {
                Ok(n) => r.pad = Pad::To(n),
                Err(_) => return err(&origin, format!("bad pad-to {value:?}")),
            },
            "pad-byte" => match parse_hex(value).as_deref() {
                Some([b]) => r.pad_byte = *b,
                _ => {
                    return err(
                        &origin,
                        format!("pad-byte needs one hex byte, found {value:?}"),
                    )
                }
            },
            "length" => match value.parse::<u64>() {
                Ok(n) => r.length = Some(n),
                Err(_) => return err(&origin, format!("bad length {value:?}")),
            },
            "data" => {
                let piece = parse_data(&origin, value)?;
                r.data.push(piece);
            }
            "build" => {
                r.writer = Some(match value {
                    "stcheck" => Writer::Stcheck,
                    "reference" => Writer::Reference,
                    _ => return err(&origin, format!("unknown writer {value:?}")),
                })
            }
            "tensor" => {
                let t = parse_tensor(&origin, value)?;
                r.tensors.push(t);
            }
            "meta" => {
                let (k, v) = value.split_once(' ').unwrap_or((value, ""));
                r.meta.push((k.to_owned(), v.to_owned()));
            }
            "class" => {
                r.class = Some(match value {
                    "security" => Class::Security,
                    "interoperability" => Class::Interoperability,
                    "strictness" => Class::Strictness,
                    _ => return err(&origin, format!("unknown class {value:?}")),
                })
            }
            "encoding" => {
                r.encoding = Some(match value {
                    "utf-16le" => Encoding::Utf16Le,
                    "utf-16be" => Encoding::Utf16Be,
                    "utf-32le" => Encoding::Utf32Le,
                    "utf-32be" => Encoding::Utf32Be,
                    _ => return err(&origin, format!("unknown encoding {value:?}")),
                })
            }
            "bom" => r.bom = parse_bool(&origin, value)?,
            "header-tensors" => {
                let (count, order) = value.split_once(' ').unwrap_or((value, "forward"));
                let Ok(count) = count.parse::<u64>() else {
                    return err(&origin, format!("bad count {count:?}"));
                };
                let reverse = match order {
                    "forward" => false,
                    "reverse" => true,
                    _ => return err(&origin, "header-tensors: COUNT forward|reverse"),
                };
                r.header.push(HeaderPiece::Tensors { count, reverse });
            }
            "values" => {
                let mut words = value.split(' ').filter(|w| !w.is_empty());
                let Some(name) = words.next() else {
                    return err(&origin, "values needs NAME VALUE...");
                };
                r.values
                    .push((name.to_owned(), words.map(str::to_owned).collect()));
            }
            "index" => r.index.get_or_insert_with(String::new).push_str(value),
            "shard" => {
                let Some((file, rest)) = value.split_once(' ') else {
                    return err(&origin, "shard needs FILE NAME DTYPE DIMS DATA");
                };
                let t = parse_tensor(&origin, rest)?;
                match r.shards.iter_mut().find(|(f, _)| f == file) {
                    Some((_, ShardFile::Tensors(v))) => v.push(t),
                    Some(_) => return err(&origin, format!("{file} is already another kind")),
                    None => r
                        .shards
                        .push((file.to_owned(), ShardFile::Tensors(vec![t]))),
                }
            }
            "shard-raw" => {
                let Some((file, hex)) = value.split_once(' ') else {
                    return err(&origin, "shard-raw needs FILE HEX");
                };
                match parse_hex(hex) {
                    Some(b) => r.shards.push((file.to_owned(), ShardFile::Raw(b))),
                    None => return err(&origin, format!("bad hex {hex:?}")),
                }
            }
            "shard-link" => {
                let Some((file, target)) = value.split_once(' ') else {
                    return err(&origin, "shard-link needs FILE TARGET");
                };
                r.shards
                    .push((file.to_owned(), ShardFile::Link(target.to_owned())));
            }
            _ => return err(&origin, format!("unknown key {key:?}")),
        }
    }
    for r in &out {
        check(r)?;
    }
    Ok(out)
}

/// Consistency checks that do not need the bytes.
fn check(r: &Recipe) -> Result<(), RecipeError> {
    let o = &r.origin;
    let area_ok = matches!(
        r.id.split('/').next(),
        Some("valid" | "invalid" | "malformed" | "implementation-defined")
    ) && r.id.split('/').count() == 3;
    if !area_ok {
        return err(
            o,
            format!("id {:?} is not <verdict-dir>/<area>/<name>", r.id),
        );
    }
    if !r
        .id
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-/_".contains(&b))
    {
        return err(
            o,
            format!("id {:?}: use lowercase, digits, - and _ only", r.id),
        );
    }
    let dir_verdict = match r.id.split('/').next() {
        Some("valid") => Verdict::Accept,
        Some("implementation-defined") => Verdict::ImplementationDefined,
        _ => Verdict::Reject,
    };
    if dir_verdict != r.verdict {
        return err(
            o,
            format!(
                "id {:?} does not match verdict {}",
                r.id,
                r.verdict.as_str()
            ),
        );
    }
    if r.verdict == Verdict::ImplementationDefined {
        if r.reason.is_none() || !matches!(r.strict, Some(Verdict::Accept | Verdict::Reject)) {
            return err(
                o,
                "implementation-defined needs reason and strict: accept|reject",
            );
        }
    } else if r.reason.is_some() || r.strict.is_some() {
        return err(
            o,
            "reason and strict are only for implementation-defined cases",
        );
    }
    if let Some(p) = r.portable {
        // The portable profile is strict plus rules: it can only reject more.
        let strict_accepts = r.verdict == Verdict::Accept || r.strict == Some(Verdict::Accept);
        if p != Verdict::Reject || !strict_accepts {
            return err(
                o,
                "portable: reject is only for files strict accepts (and the only value)",
            );
        }
        if !r.rules.iter().any(|id| id.starts_with("PORTABLE-")) {
            return err(o, "portable: reject needs its PORTABLE-* rule in rules");
        }
    }
    if r.verdict == Verdict::Reject && r.rules.is_empty() {
        return err(o, "a rejected case needs its rule first in rules");
    }
    if r.verdict != Verdict::Reject && !r.also.is_empty() {
        return err(
            o,
            "also: is for rejected cases (other rules a reader may name)",
        );
    }
    for id in r.rules.iter().chain(&r.warnings).chain(&r.also) {
        if stcheck::Rule::from_id(id).is_none() {
            return err(o, format!("unknown rule {id:?}"));
        }
    }
    if r.description.is_empty() {
        return err(o, "missing description");
    }
    let sources = usize::from(r.raw.is_some())
        + usize::from(!r.header.is_empty())
        + usize::from(r.writer.is_some())
        + usize::from(r.index.is_some());
    if sources != 1 {
        return err(o, "exactly one of raw, header, build, index");
    }
    if r.index.is_none() && !r.shards.is_empty() {
        return err(o, "shard lines need an index");
    }
    for (file, _) in &r.shards {
        // A shard file is a plain name, or `DIR/NAME` one directory down (the sub-directory
        // cases of INDEX-SHARD-NAME need a file there, so a lax loader finds it).
        let parts: Vec<&str> = file.split('/').collect();
        if parts.len() > 2
            || parts
                .iter()
                .any(|p| p.is_empty() || *p == "." || *p == "..")
            || file == INDEX_FILE
        {
            return err(o, format!("bad shard file name {file:?}"));
        }
    }
    Ok(())
}
