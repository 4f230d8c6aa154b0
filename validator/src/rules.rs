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
/// it in any case (`frame-`, `GAP`) and IDs within a small edit distance (`LAYOUT-GAPS`). At
/// most five, the closest, in the order of [`Rule::ALL`].
///
/// The work is bounded by the IDs, not the word: an ID that contains the word is at least as
/// long, and one within `limit` edits differs from it in length by at most `limit`, so a word
/// longer than the longest ID plus `limit` is near none, and an ID of a length too far from
/// the word's is skipped without measuring (the fuzzer's `rule_table` ran at 7 inputs a
/// second measuring every ID).
pub(crate) fn near_rules(word: &str) -> Vec<Rule> {
    let n = word.len();
    if n == 0 {
        return Vec::new();
    }
    let limit = (n / 4).clamp(1, 3);
    let longest = Rule::ALL.iter().map(|r| r.id().len()).max().unwrap_or(0);
    if n > longest + limit {
        return Vec::new();
    }
    let w = word.to_ascii_uppercase();
    let mut near: Vec<(usize, Rule)> = Rule::ALL
        .iter()
        .filter_map(|&r| {
            let id = r.id();
            if n >= 3 && id.contains(w.as_str()) {
                // Its distance: the characters around the word, inserted.
                Some((id.len() - n, r))
            } else {
                edit_distance_within(id.as_bytes(), w.as_bytes(), limit).map(|d| (d, r))
            }
        })
        .collect();
    // The closest first when there are many (a stable sort: ties keep the order of the table).
    near.sort_by_key(|&(d, _)| d);
    near.truncate(5);
    let mut out: Vec<Rule> = near.into_iter().map(|(_, r)| r).collect();
    out.sort();
    out
}

/// The Levenshtein distance of `a` and `b` over bytes (the IDs are ASCII) if it is at most
/// `limit`. Only the cells within `limit` of the diagonal are computed (any other is further
/// than `limit`), and the measure stops at a row whose every cell is past `limit`.
fn edit_distance_within(a: &[u8], b: &[u8], limit: usize) -> Option<usize> {
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    // Every value is capped at `far`: past the limit, how far no longer matters.
    let far = limit + 1;
    let mut prev: Vec<usize> = (0..=b.len()).map(|j| j.min(far)).collect();
    let mut cur = vec![far; b.len() + 1];
    for (i, &x) in a.iter().enumerate() {
        let row = i + 1;
        let (lo, hi) = (row.saturating_sub(limit), (row + limit).min(b.len()));
        let mut best = far;
        if lo == 0 {
            cur[0] = row.min(far);
            best = cur[0];
        } else {
            cur[lo - 1] = far;
        }
        for j in lo.max(1)..=hi {
            let substitute = prev[j - 1] + usize::from(x != b[j - 1]);
            let d = substitute.min(prev[j] + 1).min(cur[j - 1] + 1).min(far);
            cur[j] = d;
            best = best.min(d);
        }
        if hi < b.len() {
            cur[hi + 1] = far;
        }
        if best > limit {
            return None;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    Some(prev[b.len()]).filter(|&d| d <= limit)
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
        assert_eq!(edit_distance_within(b"kitten", b"sitting", 3), Some(3));
        assert_eq!(edit_distance_within(b"kitten", b"sitting", 2), None);
    }

    /// The measure over the whole table, as `near_rules` was before it skipped IDs and bounded
    /// the work: the answer it must keep giving.
    fn near_plain(word: &str) -> Vec<Rule> {
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
        out.sort_by_key(|r| edit_distance(r.id(), &w));
        out.truncate(5);
        out.sort();
        out
    }

    /// Levenshtein distance over bytes, every cell.
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

    /// Words near and far from the IDs: every ID with one edit at each place (a byte deleted,
    /// replaced, doubled; one inserted: ASCII or not, in turn), with two and four edits, in
    /// any case, its prefixes and suffixes, with non-ASCII bytes, empty, and long words up to
    /// past the bound.
    fn words() -> Vec<String> {
        let mut words = vec![String::new(), "é".into(), "ÉÉÉÉ".into(), "-".into()];
        let extra = ['X', '-', 'é', 'a', '\u{1F600}'];
        for &r in Rule::ALL {
            let id = r.id();
            words.push(id.to_string());
            words.push(id.to_ascii_lowercase());
            for i in 0..=id.len() {
                let (c, d) = (extra[i % extra.len()], extra[(i + 2) % extra.len()]);
                if i % 3 == 0 {
                    words.push(id[..i].to_string());
                    words.push(id[i..].to_string());
                }
                words.push(format!("{}{c}{}", &id[..i], &id[i..]));
                if i < id.len() {
                    words.push(format!("{}{}", &id[..i], &id[i + 1..]));
                    words.push(format!("{}{d}{}", &id[..i], &id[i + 1..]));
                    words.push(format!("{}{}", &id[..=i], &id[i..]));
                    // Two edits, then four.
                    let two = format!("{d}{}", &id[..i]) + &id[i + 1..];
                    words.push(format!("{two}{c}{c}"));
                    words.push(two);
                }
            }
        }
        for len in [1, 2, 3, 4, 8, 12, 20, 23, 24, 26, 27, 30, 80, 1000] {
            words.push("A".repeat(len));
            words.push("INDEX-SHARD-".repeat(len).chars().take(len).collect());
            words.push("é".repeat(len));
        }
        // Bytes of a small generator, as text: what a fuzzer would send.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 30) as usize;
            let alphabet = b"ADEFGHILMNOPRSTUXY-ae\xc3";
            let word: String = (0..len)
                .map(|k| alphabet[((x >> (k % 60)) % alphabet.len() as u64) as usize] as char)
                .collect();
            words.push(word);
        }
        words.sort();
        words.dedup();
        words
    }

    #[test]
    fn near_gives_what_the_whole_measure_gives() {
        let words = words();
        assert!(words.len() > 7_000, "{}", words.len());
        for w in &words {
            assert_eq!(near_rules(w), near_plain(w), "{w:?}");
        }
    }

    #[test]
    fn the_bounded_distance_is_the_distance_within_the_limit() {
        let words = words();
        for w in words.iter().step_by(37) {
            for &r in Rule::ALL {
                let d = edit_distance(r.id(), w);
                for limit in 0..=4 {
                    let within = edit_distance_within(r.id().as_bytes(), w.as_bytes(), limit);
                    assert_eq!(within, Some(d).filter(|&d| d <= limit), "{r} {w:?} {limit}");
                }
            }
        }
    }

    #[test]
    fn a_word_longer_than_any_id_and_the_limit_is_near_none() {
        // Past the longest ID (23 bytes) plus the limit (3): no ID is near, measured or not.
        let longest = Rule::ALL.iter().map(|r| r.id().len()).max().unwrap_or(0);
        assert_eq!(longest, 23);
        let w = format!("{}XXX", Rule::JsonLeadingWhitespace.id());
        assert_eq!(near_rules(&w), vec![Rule::JsonLeadingWhitespace]);
        assert!(near_rules(&format!("{w}X")).is_empty());
        assert!(near_rules(&"JSON-LEADING-WHITESPACE".repeat(10_000)).is_empty());
    }
}
