//! The rules of the strict profile, one variant per rule of `SPEC.md`.
//!
//! The rule table below is the single source of the rule IDs: `SPEC.md`, the corpus manifest
//! and the tests cite these strings, and a test checks that every ID here has a section in
//! `SPEC.md` and files in `corpus/` on both sides.

use std::fmt;

/// What stage of checking a rule belongs to, as in wasmparser's *malformed* / *invalid* split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// The bytes cannot be decoded to one unambiguous header: framing, UTF-8, JSON syntax,
    /// duplicate keys. Found by stage 1.
    Malformed,
    /// The header decodes, but breaks a rule of the format: schema, dtype, sizes, layout,
    /// names, data. Found by stage 2 (and the deep scan).
    Invalid,
    /// The bytes are not the ones their publisher vouched for: a digest published for the
    /// file (a hub's LFS SHA-256) differs from the file's. Not a fault of the format: the
    /// file may be well formed, but it is not the file that was published.
    Integrity,
}

impl Kind {
    /// `"malformed"` or `"invalid"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Malformed => "malformed",
            Kind::Invalid => "invalid",
            Kind::Integrity => "integrity",
        }
    }
}

/// Whether breaking a rule rejects the file or is only reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Severity {
    /// The file is rejected.
    Error,
    /// The file is accepted and the finding is listed in the report; `deny_warnings` turns it
    /// into an error.
    Warning,
}

impl Severity {
    /// `"error"` or `"warning"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

macro_rules! rules {
    ($( $(#[$doc:meta])* $variant:ident = $id:literal, $kind:ident, $sev:ident; )*) => {
        /// A rule of the strict profile. See `SPEC.md` for each rule's statement, rationale and
        /// the reference implementation's behaviour.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Rule {
            $( $(#[$doc])* $variant, )*
        }

        impl Rule {
            /// Every rule, in the order of `SPEC.md`.
            pub const ALL: &'static [Rule] = &[ $( Rule::$variant, )* ];

            /// The stable ID, e.g. `"FRAME-SHORT"`.
            pub fn id(self) -> &'static str {
                match self { $( Rule::$variant => $id, )* }
            }

            /// Malformed (stage 1) or invalid (stage 2).
            pub fn kind(self) -> Kind {
                match self { $( Rule::$variant => Kind::$kind, )* }
            }

            /// Error or warning, in the strict profile without `deny_warnings`.
            pub fn severity(self) -> Severity {
                match self { $( Rule::$variant => Severity::$sev, )* }
            }

            /// The rule with this ID, if there is one.
            pub fn from_id(id: &str) -> Option<Rule> {
                match id { $( $id => Some(Rule::$variant), )* _ => None }
            }
        }
    };
}

rules! {
    /// The file is shorter than the 8-byte length field.
    FrameShort = "FRAME-SHORT", Malformed, Error;
    /// The header length N is 0.
    FrameEmptyHeader = "FRAME-EMPTY-HEADER", Malformed, Error;
    /// The header length N is above the configured limit.
    FrameHeaderLimit = "FRAME-HEADER-LIMIT", Malformed, Error;
    /// 8 + N is beyond the end of the file.
    FrameHeaderBounds = "FRAME-HEADER-BOUNDS", Malformed, Error;
    /// The length field cannot be a header length (above the limit or past the end of the
    /// file) and the first bytes are another format's: a pickle, a ZIP archive, a Git LFS
    /// pointer, GGUF, HTML, JSON, ... Reported instead of `FRAME-HEADER-LIMIT` or
    /// `FRAME-HEADER-BOUNDS`.
    FrameNotSafetensors = "FRAME-NOT-SAFETENSORS", Malformed, Error;
    /// N is not a multiple of 8, so the data region is not 8-aligned (warning).
    FrameAlign = "FRAME-ALIGN", Invalid, Warning;
    /// The header bytes are not valid UTF-8.
    Utf8Invalid = "UTF8-INVALID", Malformed, Error;
    /// The header starts with a byte-order mark.
    JsonBom = "JSON-BOM", Malformed, Error;
    /// The header is not RFC 8259 JSON.
    JsonSyntax = "JSON-SYNTAX", Malformed, Error;
    /// The JSON nests deeper than the limit.
    JsonDepth = "JSON-DEPTH", Malformed, Error;
    /// Bytes other than JSON whitespace follow the header object.
    JsonTrailing = "JSON-TRAILING", Malformed, Error;
    /// An object has the same key twice (compared after unescaping).
    JsonDuplicateKey = "JSON-DUPLICATE-KEY", Malformed, Error;
    /// Whitespace precedes the header object (warning).
    JsonLeadingWhitespace = "JSON-LEADING-WHITESPACE", Malformed, Warning;
    /// The padding after the object holds whitespace other than 0x20 (warning).
    JsonPaddingWhitespace = "JSON-PADDING-WHITESPACE", Malformed, Warning;
    /// The header is not a JSON object.
    SchemaRoot = "SCHEMA-ROOT", Invalid, Error;
    /// `__metadata__` is not an object whose values are all strings.
    SchemaMetadata = "SCHEMA-METADATA", Invalid, Error;
    /// `__metadata__` is `null` (warning).
    SchemaMetadataNull = "SCHEMA-METADATA-NULL", Invalid, Warning;
    /// A tensor entry is not a JSON object.
    SchemaEntry = "SCHEMA-ENTRY", Invalid, Error;
    /// A tensor entry lacks `dtype`, `shape` or `data_offsets`.
    SchemaMissingField = "SCHEMA-MISSING-FIELD", Invalid, Error;
    /// A tensor entry has a field other than `dtype`, `shape`, `data_offsets`.
    SchemaUnknownField = "SCHEMA-UNKNOWN-FIELD", Invalid, Error;
    /// `shape` is not an array of integers.
    SchemaShape = "SCHEMA-SHAPE", Invalid, Error;
    /// `data_offsets` is not an array of exactly two integers.
    SchemaOffsets = "SCHEMA-OFFSETS", Invalid, Error;
    /// A shape or offset number is not a plain non-negative decimal integer <= 2^64-1.
    SchemaInteger = "SCHEMA-INTEGER", Invalid, Error;
    /// `dtype` is not a JSON string.
    DtypeType = "DTYPE-TYPE", Invalid, Error;
    /// `dtype` is not one of the 22 names, spelled exactly.
    DtypeUnknown = "DTYPE-UNKNOWN", Invalid, Error;
    /// product(shape) x bits per element overflows u64.
    SizeOverflow = "SIZE-OVERFLOW", Invalid, Error;
    /// product(shape) x bits per element is not a whole number of bytes.
    SizeBits = "SIZE-BITS", Invalid, Error;
    /// The tensor's byte length (end - begin) differs from its shape and dtype.
    SizeMismatch = "SIZE-MISMATCH", Invalid, Error;
    /// `__metadata__.total_parameters` differs from the computed count (warning).
    SizeTotalParameters = "SIZE-TOTAL-PARAMETERS", Invalid, Warning;
    /// `data_offsets` has begin > end.
    LayoutOrder = "LAYOUT-ORDER", Invalid, Error;
    /// The tensors leave a gap in the data region.
    LayoutGap = "LAYOUT-GAP", Invalid, Error;
    /// Two tensors share bytes, or a zero-size tensor lies strictly inside another.
    LayoutOverlap = "LAYOUT-OVERLAP", Invalid, Error;
    /// A tensor's begin offset is not a multiple of its element size (warning).
    LayoutAlign = "LAYOUT-ALIGN", Invalid, Warning;
    /// A tensor name contains a control character or a line or paragraph separator (U+2028,
    /// U+2029).
    NameControl = "NAME-CONTROL", Invalid, Error;
    /// A tensor name is empty (warning).
    NameEmpty = "NAME-EMPTY", Invalid, Warning;
    /// A tensor name contains a default-ignorable code point: a bidirectional control, a
    /// zero-width character, the soft hyphen, a tag character, ... (warning).
    NameInvisible = "NAME-INVISIBLE", Invalid, Warning;
    /// A tensor name looks like a path: a `..` segment or a leading `/` (warning).
    NamePath = "NAME-PATH", Invalid, Warning;
    /// A tensor name is special to a reader of the portable profile's table, which loses or
    /// misreads a tensor of that name, e.g. `__proto__` (warning).
    NameSpecial = "NAME-SPECIAL", Invalid, Warning;
    /// The data region is longer than the last tensor's end.
    DataTrailing = "DATA-TRAILING", Invalid, Error;
    /// The data region is shorter than the last tensor's end.
    DataTruncated = "DATA-TRUNCATED", Invalid, Error;
    /// A BOOL tensor holds a byte other than 0x00 or 0x01 (deep scan).
    DataBool = "DATA-BOOL", Invalid, Error;
    /// A floating-point tensor holds NaN or an infinity (deep scan; an error only with
    /// `deny_nonfinite`).
    DataNonFinite = "DATA-NONFINITE", Invalid, Warning;
    /// The file is also recognisable as another format (deep scan, warning).
    DataPolyglot = "DATA-POLYGLOT", Invalid, Warning;
    /// A sharded checkpoint's `*.safetensors.index.json` is not strict JSON (UTF-8, syntax,
    /// duplicate keys).
    IndexJson = "INDEX-JSON", Malformed, Error;
    /// The index is not an object with a `weight_map` of strings to strings and an optional
    /// `metadata` object.
    IndexSchema = "INDEX-SCHEMA", Invalid, Error;
    /// A shard named by the index is not a plain file name in the index's directory.
    IndexShardName = "INDEX-SHARD-NAME", Invalid, Error;
    /// A shard named by the index is a symbolic link that leaves the index's directory.
    IndexShardLink = "INDEX-SHARD-LINK", Invalid, Error;
    /// A shard named by the index does not exist (or is not a regular file).
    IndexShardMissing = "INDEX-SHARD-MISSING", Invalid, Error;
    /// A shard named by the index is not a valid safetensors file.
    IndexShardInvalid = "INDEX-SHARD-INVALID", Invalid, Error;
    /// A tensor of `weight_map` is not in the shard it names.
    IndexTensorMissing = "INDEX-TENSOR-MISSING", Invalid, Error;
    /// A tensor of a shard is not in `weight_map`.
    IndexTensorUnlisted = "INDEX-TENSOR-UNLISTED", Invalid, Error;
    /// A tensor is in two shards.
    IndexTensorDuplicate = "INDEX-TENSOR-DUPLICATE", Invalid, Error;
    /// `metadata.total_size` is not an integer, or differs from the sum of the tensors' byte
    /// lengths.
    IndexTotalSize = "INDEX-TOTAL-SIZE", Invalid, Error;
    /// A `*.safetensors` file in the index's directory is not named by the index (warning).
    IndexShardUnlisted = "INDEX-SHARD-UNLISTED", Invalid, Warning;
    /// Portable profile: a reader of the table loses or mangles a tensor of this name.
    PortableName = "PORTABLE-NAME", Invalid, Error;
    /// Portable profile: a reader of the table misreads a dimension of this size.
    PortableDimension = "PORTABLE-DIMENSION", Invalid, Error;
    /// Portable profile: a reader of the table misreads, or crashes on, a tensor of this many
    /// dimensions.
    PortableRank = "PORTABLE-RANK", Invalid, Error;
    /// Portable profile: a reader of the table loads this dtype as another type.
    PortableDtype = "PORTABLE-DTYPE", Invalid, Error;
    /// Portable profile: a reader of the table crashes on a file of this many tensors.
    PortableTensorCount = "PORTABLE-TENSOR-COUNT", Invalid, Error;
    /// Portable profile: a reader of the table loses a sharded index's `weight_map` entry of
    /// this name.
    PortableIndexName = "PORTABLE-INDEX-NAME", Invalid, Error;
    /// Portable profile: a reader of the table drops a `weight_map` this large.
    PortableIndexSize = "PORTABLE-INDEX-SIZE", Invalid, Error;
    /// Portable profile: a chosen reader refuses the file (a support note; a warning, an error
    /// only when the caller asks for refusals to count).
    PortableRefused = "PORTABLE-REFUSED", Invalid, Warning;
    /// The file's SHA-256 differs from the one its server publishes for it (the hub's LFS
    /// object id, `X-Linked-Etag`): checked with `sha256` when a digest is published.
    IntegritySha256 = "INTEGRITY-SHA256", Integrity, Error;
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl Rule {
    /// The rule with this ID, in any case (`layout-gap` is `LAYOUT-GAP`).
    pub fn from_id_any_case(id: &str) -> Option<Rule> {
        rule_from_id_any_case(id)
    }

    /// The rules whose IDs are near `word`, for "did you mean" in usage errors: IDs that
    /// contain it in any case (`frame-`, `GAP`) and IDs within a small edit distance
    /// (`LAYOUT-GAPS`). At most five, in the order of [`Rule::ALL`].
    pub fn near(word: &str) -> Vec<Rule> {
        near_rules(word)
    }

    /// Whether the rule belongs to the portable profile (`PORTABLE-*`): the strict profile
    /// never reports it; `stcheck::portable` does.
    pub fn is_portable(self) -> bool {
        self.id().starts_with("PORTABLE-")
    }

    /// How the reference implementation (`safetensors` 0.8.0) treats a file whose only fault
    /// is this rule, in a few words; `None` where it also rejects such a file.
    ///
    /// This is the summary of the "Differences from the reference" section of `SPEC.md`.
    pub fn reference_divergence(self) -> Option<&'static str> {
        Some(match self {
            Rule::JsonDuplicateKey => {
                "the reference loads it: for duplicate tensor names or metadata keys the last one wins"
            }
            Rule::SchemaUnknownField => "the reference ignores unknown fields",
            Rule::SchemaEntry => {
                "the reference also accepts a tensor entry written as an array [dtype, shape, offsets]"
            }
            Rule::DtypeType => r#"the reference also accepts a dtype written as {"NAME": null}"#,
            Rule::NameControl => "the reference loads names with control characters",
            Rule::SizeOverflow => {
                "the reference multiplies the shape left to right, so it loads a shape whose \
                 overflow follows a zero dimension, e.g. [0, 2^63, 2^63]"
            }
            Rule::DataTruncated => {
                "when the last end offset is near 2^64 the reference's unchecked final length \
                 addition panics in debug builds (it rejects in release builds)"
            }
            Rule::DataBool => "the reference never reads tensor data; it loads BOOL bytes other than 0 and 1",
            _ => return None,
        })
    }
}

/// The rules whose IDs are near `word` (for "did you mean" in usage errors): IDs that contain
/// it in any case (`frame-`, `GAP`) and IDs within a small edit distance (`LAYOUT-GAPS`). At most five, in the order of [`Rule::ALL`].
pub(crate) fn near_rules(word: &str) -> Vec<Rule> {
    let w = word.to_ascii_uppercase();
    if w.is_empty() {
        return Vec::new();
    }
    let limit = (w.len() / 4).clamp(1, 3);
    let mut out: Vec<Rule> = Rule::ALL
        .iter()
        .copied()
        .filter(|r| {
            let id = r.id();
            (w.len() >= 3 && id.contains(w.as_str())) || edit_distance(id, &w) <= limit
        })
        .collect();
    // The closest first when there are many.
    out.sort_by_key(|r| edit_distance(r.id(), &w));
    out.truncate(5);
    out.sort();
    out
}

/// Levenshtein distance over bytes (the IDs are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, &x) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, &y) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(x != y);
            cur[j + 1] = substitute.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The rule with this ID, in any case (`layout-gap` is `LAYOUT-GAP`).
pub(crate) fn rule_from_id_any_case(id: &str) -> Option<Rule> {
    Rule::from_id(&id.to_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_matches() {
        assert_eq!(near_rules("LAYOUT-GAPS"), vec![Rule::LayoutGap]);
        assert_eq!(near_rules("layout-gap"), vec![Rule::LayoutGap]);
        assert!(near_rules("FRAME-").contains(&Rule::FrameShort));
        assert!(near_rules("DTYPE").contains(&Rule::DtypeUnknown));
        assert!(near_rules("ZZZZZZZZZZZZZZ").is_empty());
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
