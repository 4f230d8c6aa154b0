//! Parsing the JSON header: one pass of serde_json over the borrowed header text, driven by
//! visitors that know the schema.
//!
//! The visitors ask serde_json for the next value with `deserialize_any` and reject every type
//! the schema does not allow *before* serde_json descends into it, so nesting never goes deeper
//! than the schema (root object, entry object, shape array). Where a rule is broken, the visitor
//! records a structured [`Pending`] finding in the shared [`State`] and returns an empty serde
//! error to unwind; serde_json's own error only supplies the position where the structured
//! finding has none.
//!
//! Stage precedence: the single pass stops at the first fault. If that fault is a stage-2
//! (invalid) one, [`first_malformed`] walks the whole header once more looking for a stage-1
//! (malformed) fault — syntax, nesting, trailing bytes, a duplicate key at any level — and
//! reports that instead. Valid files pay for one pass only.
//!
//! What is kept is compact: a tensor's name is a position in the header text (only a name
//! with JSON escapes is decoded and kept, in [`Names`]); `__metadata__` is kept as the position
//! of its object, read again on demand ([`Metadata`]); duplicate keys are found with tables of
//! positions ([`crate::json::KeyTable`]). So what a parse allocates stays below the header's
//! own size, whatever the header holds.

use std::fmt;
use std::hash::BuildHasher as _;

use serde::de::{self, DeserializeSeed, Deserializer as _, MapAccess, SeqAccess, Visitor};

use crate::dtype::Dtype;
use crate::error::{Error, Finding};
use crate::frame::HEADER_START;
use crate::json::{self, reject_types, KeyCursor, KeyHasher, KeyTable, Syntax, Text, TextSeed};
use crate::names;
use crate::rules::{Kind, Rule};
use crate::warnings::Warnings;

/// Marks a [`Record`] whose name had escapes: `name` is then an index into [`Names`].
const ESCAPED: u32 = u32::MAX;

/// A tensor as declared in the header: 40 bytes. (Its element count is not kept: it is the
/// product of its dimensions, known not to overflow once the record exists; see
/// [`Record::elements`]. A million records are 8 MB smaller, and 2,000 fewer fresh pages.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) begin: u64,
    pub(crate) end: u64,
    /// The index of the name's opening quote in the header text, or (when `name_len` is
    /// [`ESCAPED`]) the index of the decoded name in [`Names`].
    name: u32,
    name_len: u32,
    /// Range of this tensor's dimensions in [`Parsed::dims`].
    pub(crate) dims_start: u32,
    pub(crate) dims_len: u32,
    pub(crate) dtype: Dtype,
}

/// The decoded names of tensors whose names had JSON escapes, with their key offsets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Names {
    arena: String,
    spans: Vec<(u64, u32, u32)>,
}

impl Names {
    fn push(&mut self, offset: u64, name: &str) -> Option<u32> {
        let start = u32::try_from(self.arena.len()).ok()?;
        let len = u32::try_from(name.len()).ok()?;
        let index = u32::try_from(self.spans.len()).ok()?;
        self.arena.push_str(name);
        self.spans.push((offset, start, len));
        Some(index)
    }
}

impl Record {
    /// The record of an entry, before its name is known.
    fn unnamed(dtype: Dtype, dims: (u32, u32), begin: u64, end: u64) -> Self {
        Record {
            begin,
            end,
            name: 0,
            name_len: 0,
            dims_start: dims.0,
            dims_len: dims.1,
            dtype,
        }
    }

    /// Name a record by the position of its key's opening quote in the text (a name without
    /// escapes).
    fn with_plain_name(mut self, quote: usize, len: usize) -> Option<Self> {
        self.name = u32::try_from(quote).ok()?;
        self.name_len = u32::try_from(len).ok().filter(|&l| l != ESCAPED)?;
        Some(self)
    }

    /// The tensor's dimensions, from the parse's `dims`.
    pub(crate) fn shape<'d>(&self, dims: &'d [u64]) -> &'d [u64] {
        let s = self.dims_start as usize;
        dims.get(s..s + self.dims_len as usize).unwrap_or(&[])
    }

    /// The tensor's element count: the product of its dimensions, which the size check made
    /// sure does not overflow.
    pub(crate) fn elements(&self, dims: &[u64]) -> u64 {
        crate::size::element_count(self.shape(dims)).unwrap_or(0)
    }

    /// The tensor's name.
    pub(crate) fn name<'t>(&self, text: &'t str, names: &'t Names) -> &'t str {
        if self.name_len == ESCAPED {
            let Some(&(_, start, len)) = names.spans.get(self.name as usize) else {
                return "";
            };
            names
                .arena
                .get(start as usize..(start + len) as usize)
                .unwrap_or("")
        } else {
            let start = self.name as usize + 1;
            text.get(start..start + self.name_len as usize)
                .unwrap_or("")
        }
    }

    /// File offset of the tensor's key (its opening quote where known).
    pub(crate) fn offset(&self, names: &Names) -> u64 {
        if self.name_len == ESCAPED {
            names
                .spans
                .get(self.name as usize)
                .map_or(HEADER_START, |s| s.0)
        } else {
            HEADER_START + u64::from(self.name)
        }
    }
}

/// What `__metadata__` was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetadataForm {
    /// No `__metadata__` key.
    Absent,
    /// `"__metadata__": null` (warning `SCHEMA-METADATA-NULL`).
    Null,
    /// An object of strings.
    Map,
}

impl MetadataForm {
    /// `"absent"`, `"null"` or `"map"`.
    pub fn as_str(self) -> &'static str {
        match self {
            MetadataForm::Absent => "absent",
            MetadataForm::Null => "null",
            MetadataForm::Map => "map",
        }
    }
}

/// `__metadata__` as found: its form, where its object starts in the header text (it is read
/// again from there on demand) and how many entries it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Metadata {
    pub(crate) form: MetadataForm,
    /// The index of the object's `{` in the header text.
    pub(crate) open: Option<u32>,
    pub(crate) len: u64,
    /// The header index of the `total_parameters` key's opening quote, if present.
    pub(crate) total_parameters: Option<u32>,
}

impl Metadata {
    const ABSENT: Metadata = Metadata {
        form: MetadataForm::Absent,
        open: None,
        len: 0,
        total_parameters: None,
    };
}

/// The decoded header, before the layout checks.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub(crate) tensors: Vec<Record>,
    pub(crate) dims: Vec<u64>,
    pub(crate) names: Names,
    pub(crate) metadata: Metadata,
    pub(crate) warnings: Warnings,
}

impl Parsed {
    /// An empty parse of a text of this length, with the warnings found before it.
    fn new(text_len: usize, warnings: Warnings) -> Self {
        let capacity = text_len / TYPICAL_ENTRY_LEN;
        Parsed {
            tensors: Vec::with_capacity(capacity),
            dims: Vec::with_capacity(2 * capacity),
            names: Names::default(),
            metadata: Metadata::ABSENT,
            warnings,
        }
    }
}

/// The `__metadata__` entries of a parsed header, read again from the text: decoded key and
/// value, in header order.
pub(crate) fn metadata_entries<'t>(
    text: &'t str,
    open: Option<u32>,
) -> impl Iterator<Item = (std::borrow::Cow<'t, str>, std::borrow::Cow<'t, str>)> + 't {
    let b = text.as_bytes();
    let ws = move |mut i: usize| {
        while b
            .get(i)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            i += 1;
        }
        i
    };
    let mut pos = open.map(|o| o as usize + 1);
    std::iter::from_fn(move || {
        let i = ws(pos?);
        if b.get(i) != Some(&b'"') {
            pos = None;
            return None;
        }
        let key = json::string_at(text, i)?;
        let v = KeyCursor::value_start(text, i)?;
        let value = json::string_at(text, v)?;
        let mut after = v + 1;
        while after < b.len() && b[after] != b'"' {
            after += if b[after] == b'\\' { 2 } else { 1 };
        }
        let next = ws(after + 1);
        pos = (b.get(next) == Some(&b',')).then_some(next + 1);
        Some((key, value))
    })
}

/// A finding raised inside a visitor; the offset is filled from serde_json's position when the
/// visitor could not point at the fault itself.
struct Pending {
    rule: Rule,
    offset: Option<u64>,
    tensor: Option<String>,
    message: String,
}

/// The state shared by the visitors of one parse.
struct State<'a> {
    /// The header text; borrowed strings point into it, which gives their exact offsets.
    text: &'a str,
    pending: Option<Pending>,
    parsed: Parsed,
    /// The tensor names seen so far, as indices into `parsed.tensors` (the name being checked
    /// gets the index its record will have): one word per slot instead of a whole name, so the
    /// table of a 100 MB header stays small.
    names: hashbrown::HashTable<u32>,
    name_hasher: KeyHasher,
    seen_metadata: bool,
    /// Positions of the root object's keys.
    root: KeyCursor,
}

impl State<'_> {
    /// File offset of a string borrowed from the header text: its opening quote.
    fn offset_of(&self, s: &str) -> Option<u64> {
        json::quote_of(self.text, s).map(|q| HEADER_START + q as u64)
    }

    /// Record a tensor name, whose record will be pushed next; `false` if it is a duplicate.
    fn insert_name(&mut self, key: &str) -> bool {
        let (text, tensors, names) = (self.text, &self.parsed.tensors, &self.parsed.names);
        let hasher = &self.name_hasher;
        let name_of = |i: &u32| tensors.get(*i as usize).map(|t| t.name(text, names));
        let hash_of = |i: &u32| name_of(i).map_or(0, |n| hasher.hash_one(n));
        let same = |i: &u32| name_of(i) == Some(key);
        let Ok(index) = u32::try_from(tensors.len()) else {
            return false;
        };
        match self.names.entry(hasher.hash_one(key), same, hash_of) {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert(index);
                true
            }
        }
    }

    fn fail<E: de::Error>(
        &mut self,
        rule: Rule,
        offset: Option<u64>,
        tensor: Option<&str>,
        message: impl Into<String>,
    ) -> E {
        self.pending = Some(Pending {
            rule,
            offset,
            tensor: tensor.map(str::to_owned),
            message: message.into(),
        });
        E::custom("")
    }
}

/// Header bytes per tensor entry in real checkpoints (about 100-130): the initial capacity of
/// the name table and the record vectors is the header length divided by this, so a typical
/// header never rehashes or regrows. A header that is mostly metadata reserves at most about
/// 0.8 x N bytes it does not use (a 40-byte record, two 8-byte dimensions and up to two 5-byte
/// table slots per 96 header bytes), within [`crate::limits::MEMORY_FACTOR_PER_HEADER_BYTE`];
/// of that, only the table's control bytes (about N / 96) are written before use.
pub(crate) const TYPICAL_ENTRY_LEN: usize = 96;

pub(crate) mod fast;

/// Parse the header text (stage 1 JSON syntax and stage 2 schema, in one pass): the fast path
/// ([`fast`]) for headers of the canonical shape, else, from the start, the serde path, which
/// alone reports findings.
///
/// `warnings` holds what framing found before the parse; the parse adds its own.
pub(crate) fn parse(text: &str, warnings: Warnings) -> Result<Parsed, Error> {
    match fast::parse(text, warnings.clone()) {
        Some(parsed) => Ok(parsed),
        None => parse_slow(text, warnings),
    }
}

/// The serde path of [`parse`].
pub(crate) fn parse_slow(text: &str, warnings: Warnings) -> Result<Parsed, Error> {
    let open = text
        .bytes()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        .unwrap_or(0);
    let mut state = State {
        text,
        pending: None,
        parsed: Parsed::new(text.len(), warnings),
        names: hashbrown::HashTable::with_capacity(text.len() / TYPICAL_ENTRY_LEN),
        name_hasher: json::key_hasher(),
        seen_metadata: false,
        root: KeyCursor::new(open),
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let result = (&mut de)
        .deserialize_any(RootVisitor { st: &mut state })
        .and_then(|()| de.end());
    match result {
        Ok(()) => Ok(state.parsed),
        Err(e) => {
            let finding = match state.pending.take() {
                Some(p) => {
                    let offset = p.offset.unwrap_or_else(|| {
                        // Raised right after an escaped (owned) string: serde_json stands on
                        // its closing quote; point at the opening one.
                        let at = json::quote_before(text, json::error_pos(text, &e));
                        HEADER_START + at as u64
                    });
                    let f = Finding::new(p.rule, offset, p.message);
                    match &p.tensor {
                        Some(t) => f.with_tensor(t),
                        None => f,
                    }
                }
                None => {
                    let (fault, at) = json::syntax_of(text, &e);
                    malformed(fault, at)
                }
            };
            if finding.kind() == Kind::Invalid {
                if let Some(malformed) = first_malformed(text) {
                    return Err(malformed.into());
                }
            }
            Err(finding.into())
        }
    }
}

/// A stage-1 fault of the header text as a finding (`JSON-*` rules).
fn malformed(fault: Syntax, at: usize) -> Finding {
    let offset = HEADER_START + at as u64;
    match fault {
        Syntax::Trailing => Finding::new(
            Rule::JsonTrailing,
            offset,
            "bytes other than JSON whitespace after the header object",
        ),
        Syntax::Depth => Finding::new(
            Rule::JsonDepth,
            offset,
            format!(
                "JSON nesting reaches {} levels (at most {} are followed)",
                crate::limits::MAX_JSON_DEPTH,
                crate::limits::MAX_JSON_DEPTH - 1
            ),
        ),
        Syntax::Invalid(message) => {
            Finding::new(Rule::JsonSyntax, offset, format!("invalid JSON: {message}"))
        }
        Syntax::DuplicateKey(key) => Finding::new(
            Rule::JsonDuplicateKey,
            offset,
            format!("duplicate key \"{}\"", key.escape_debug()),
        ),
    }
}

/// The first stage-1 fault anywhere in the header, in file order: a syntax error, nesting
/// beyond [`crate::limits::MAX_JSON_DEPTH`], trailing bytes, or a duplicate key in any object.
/// `None` if the header is well-formed JSON with unique keys.
pub(crate) fn first_malformed(text: &str) -> Option<Finding> {
    json::first_fault(text).map(|(fault, at)| malformed(fault, at))
}

struct RootVisitor<'s, 'a> {
    st: &'s mut State<'a>,
}

impl<'de> Visitor<'de> for RootVisitor<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the header object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.st;
        while let Some(Text(key)) = map.next_key_seed(TextSeed)? {
            let key_quote = st.root.next(st.text, &key);
            let key_offset = key_quote.map(|q| HEADER_START + q as u64);
            if key == "__metadata__" {
                if st.seen_metadata {
                    return Err(st.fail(
                        Rule::JsonDuplicateKey,
                        key_offset,
                        None,
                        "duplicate key \"__metadata__\"",
                    ));
                }
                st.seen_metadata = true;
                let open = key_quote.and_then(|q| KeyCursor::value_start(st.text, q));
                map.next_value_seed(MetadataSeed { st: &mut *st, open })?;
                continue;
            }
            if !st.insert_name(&key) {
                return Err(st.fail(
                    Rule::JsonDuplicateKey,
                    key_offset,
                    Some(&key),
                    "duplicate tensor name",
                ));
            }
            let offset = key_offset.unwrap_or(HEADER_START);
            if !plain_name(&key) {
                if let Some((rule, message)) = names::check_error(&key) {
                    return Err(st.fail(rule, key_offset, Some(&key), message));
                }
                for (rule, message) in names::check_warnings(&key) {
                    st.parsed
                        .warnings
                        .push(Finding::new(rule, offset, message).with_tensor(&key));
                }
            } else if let Some((rule, message)) = names::special_warning(&key) {
                st.parsed
                    .warnings
                    .push(Finding::new(rule, offset, message).with_tensor(&key));
            }
            let record = map.next_value_seed(EntrySeed {
                st: &mut *st,
                name: &key,
                offset: key_offset,
            })?;
            let plain =
                json::quote_of(st.text, &key).and_then(|q| record.with_plain_name(q, key.len()));
            let record = match plain {
                Some(r) => r,
                None => {
                    let Some(index) = st.parsed.names.push(offset, &key) else {
                        return Err(st.fail(
                            Rule::FrameHeaderLimit,
                            Some(0),
                            None,
                            "header too large to index",
                        ));
                    };
                    Record {
                        name: index,
                        name_len: ESCAPED,
                        ..record
                    }
                }
            };
            st.parsed.tensors.push(record);
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(self.st.fail(
            Rule::SchemaRoot,
            Some(HEADER_START),
            None,
            "the header is a JSON array, not an object",
        ))
    }
    fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<(), E> {
        Err(root_not_object(self.st, "a string"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(root_not_object(self.st, "a string"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(root_not_object(self.st, "a number"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(root_not_object(self.st, "a number"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(root_not_object(self.st, "a number"))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(root_not_object(self.st, "a boolean"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(root_not_object(self.st, "null"))
    }
}

/// Whether a tensor name is certain to break and warn on no `NAME-*` rule but `NAME-SPECIAL`
/// (checked on its own, [`names::special_warning`]), in one cheap pass:
/// non-empty printable ASCII (no control, bidirectional or zero-width character is ASCII
/// printable), no leading `/` or `\`, and no `..` anywhere (so no `..` segment). Every other
/// name goes through [`names::check_error`] and [`names::check_warnings`].
fn plain_name(name: &str) -> bool {
    let b = name.as_bytes();
    // A fold without early exit, so the compiler vectorises it: bit 0 set on any byte outside
    // 0x20..=0x7E.
    let outside = b
        .iter()
        .fold(0u8, |acc, &c| acc | u8::from(c.wrapping_sub(0x20) > 0x5e));
    match b.first() {
        Some(&first) => outside == 0 && first != b'/' && first != b'\\' && !name.contains(".."),
        None => false,
    }
}

fn root_not_object<E: de::Error>(st: &mut State<'_>, what: &str) -> E {
    st.fail(
        Rule::SchemaRoot,
        None,
        None,
        format!("the header is {what}, not a JSON object"),
    )
}

// ---------------------------------------------------------------------------------------------
// __metadata__

struct MetadataSeed<'s, 'a> {
    st: &'s mut State<'a>,
    /// The index of the value's first byte in the text.
    open: Option<usize>,
}

impl<'de> DeserializeSeed<'de> for MetadataSeed<'_, 'de> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl MetadataSeed<'_, '_> {
    fn quote(&self, s: &str) -> Option<u64> {
        self.st.offset_of(s)
    }
    fn reject<E: de::Error>(self, what: &str, at: Option<u64>) -> E {
        self.st.fail(
            Rule::SchemaMetadata,
            at,
            None,
            format!("__metadata__ is {what}, not an object of strings"),
        )
    }
}

impl<'de> Visitor<'de> for MetadataSeed<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of strings")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.st.parsed.metadata.form = MetadataForm::Null;
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.st;
        let open = self.open;
        st.parsed.metadata = Metadata {
            form: MetadataForm::Map,
            open: open.and_then(|o| u32::try_from(o).ok()),
            len: 0,
            total_parameters: None,
        };
        let mut cursor = open.map(KeyCursor::new);
        let mut keys = KeyTable::new();
        while let Some(Text(key)) = map.next_key_seed(TextSeed)? {
            let quote = cursor.as_mut().and_then(|c| c.next(st.text, &key));
            let key_offset = quote.map(|q| HEADER_START + q as u64);
            let repeated = match quote {
                Some(q) => keys.insert(st.text, q, &key).is_some(),
                None => keys.insert_unplaced(st.text, &key),
            };
            if repeated {
                return Err(st.fail(
                    Rule::JsonDuplicateKey,
                    key_offset,
                    None,
                    format!("duplicate __metadata__ key \"{}\"", key.escape_debug()),
                ));
            }
            map.next_value_seed(MetadataValueSeed {
                st: &mut *st,
                key: &key,
            })?;
            st.parsed.metadata.len += 1;
            if key == "total_parameters" {
                st.parsed.metadata.total_parameters = quote.and_then(|q| u32::try_from(q).ok());
            }
        }
        Ok(())
    }
    reject_types!('de; bool, number, array, string);
}

struct MetadataValueSeed<'s, 'a, 'k> {
    st: &'s mut State<'a>,
    key: &'k str,
}

impl<'de> DeserializeSeed<'de> for MetadataValueSeed<'_, 'de, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl MetadataValueSeed<'_, '_, '_> {
    fn reject<E: de::Error>(self, what: &str, at: Option<u64>) -> E {
        let message = format!(
            "__metadata__ value of \"{}\" is {what}, not a string",
            self.key.escape_debug()
        );
        self.st.fail(Rule::SchemaMetadata, at, None, message)
    }
}

impl<'de> Visitor<'de> for MetadataValueSeed<'_, 'de, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<Self::Value, E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(())
    }
    reject_types!('de; bool, number, null, array, object);
}

// ---------------------------------------------------------------------------------------------
// Tensor entries

struct EntrySeed<'s, 'a, 'k> {
    st: &'s mut State<'a>,
    name: &'k str,
    offset: Option<u64>,
}

impl<'de> DeserializeSeed<'de> for EntrySeed<'_, 'de, '_> {
    type Value = Record;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl EntrySeed<'_, '_, '_> {
    fn quote(&self, _: &str) -> Option<u64> {
        // An entry that is a string is reported at its key, like every other wrong type.
        None
    }
    fn reject<E: de::Error>(self, what: &str, _at: Option<u64>) -> E {
        let message = if what == "an array" {
            "tensor entry is an array, not an object with dtype, shape and data_offsets".to_owned()
        } else {
            format!("tensor entry is {what}, not an object")
        };
        self.st
            .fail(Rule::SchemaEntry, self.offset, Some(self.name), message)
    }
}

#[derive(Clone, Copy)]
enum Field {
    Dtype,
    Shape,
    DataOffsets,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::Dtype => "dtype",
            Field::Shape => "shape",
            Field::DataOffsets => "data_offsets",
        }
    }
}

impl<'de> Visitor<'de> for EntrySeed<'_, 'de, '_> {
    type Value = Record;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tensor entry object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Record, A::Error> {
        let EntrySeed { st, name, offset } = self;
        let mut dtype: Option<Dtype> = None;
        let mut dims: Option<(u32, u32)> = None;
        let mut offsets: Option<(u64, u64)> = None;
        while let Some(Text(key)) = map.next_key_seed(TextSeed)? {
            let key_offset = st.offset_of(&key);
            let field = match &*key {
                "dtype" => Field::Dtype,
                "shape" => Field::Shape,
                "data_offsets" => Field::DataOffsets,
                other => {
                    let message = format!(
                        "unknown field \"{}\" (only dtype, shape, data_offsets)",
                        other.escape_debug()
                    );
                    return Err(st.fail(Rule::SchemaUnknownField, key_offset, Some(name), message));
                }
            };
            let seen = match field {
                Field::Dtype => dtype.is_some(),
                Field::Shape => dims.is_some(),
                Field::DataOffsets => offsets.is_some(),
            };
            if seen {
                let message = format!("duplicate field \"{}\"", field.name());
                return Err(st.fail(Rule::JsonDuplicateKey, key_offset, Some(name), message));
            }
            match field {
                Field::Dtype => {
                    dtype = Some(map.next_value_seed(DtypeSeed { st: &mut *st, name })?)
                }
                Field::Shape => {
                    let start = st.parsed.dims.len();
                    map.next_value_seed(ArraySeed {
                        st: &mut *st,
                        name,
                        field: Field::Shape,
                        out: ArrayOut::Dims,
                    })?;
                    let len = st.parsed.dims.len() - start;
                    let (Ok(start), Ok(len)) = (u32::try_from(start), u32::try_from(len)) else {
                        return Err(st.fail(
                            Rule::SchemaShape,
                            key_offset,
                            Some(name),
                            "more than 2^32 dimensions in one header",
                        ));
                    };
                    dims = Some((start, len));
                }
                Field::DataOffsets => {
                    let mut pair = [0u64; 2];
                    map.next_value_seed(ArraySeed {
                        st: &mut *st,
                        name,
                        field: Field::DataOffsets,
                        out: ArrayOut::Pair(&mut pair),
                    })?;
                    offsets = Some((pair[0], pair[1]));
                }
            }
        }
        let (Some(dtype), Some(dims), Some((begin, end))) = (dtype, dims, offsets) else {
            let missing: Vec<&str> = [
                (dtype.is_none(), "dtype"),
                (dims.is_none(), "shape"),
                (offsets.is_none(), "data_offsets"),
            ]
            .iter()
            .filter(|(m, _)| *m)
            .map(|(_, n)| *n)
            .collect();
            let message = format!("tensor entry lacks {}", missing.join(", "));
            return Err(st.fail(Rule::SchemaMissingField, offset, Some(name), message));
        };
        let shape = &st.parsed.dims[dims.0 as usize..(dims.0 + dims.1) as usize];
        if let Err((rule, message)) = crate::size::check(dtype, shape, begin, end) {
            return Err(st.fail(rule, offset, Some(name), message));
        }
        Ok(Record::unnamed(dtype, dims, begin, end))
    }
    reject_types!('de; bool, number, null, array, string);
}

// dtype

struct DtypeSeed<'s, 'a, 'k> {
    st: &'s mut State<'a>,
    name: &'k str,
}

impl<'de> DeserializeSeed<'de> for DtypeSeed<'_, 'de, '_> {
    type Value = Dtype;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Dtype, D::Error> {
        d.deserialize_any(self)
    }
}

impl DtypeSeed<'_, '_, '_> {
    fn reject<E: de::Error>(self, what: &str, at: Option<u64>) -> E {
        let message = format!("dtype is {what}, not a string");
        self.st.fail(Rule::DtypeType, at, Some(self.name), message)
    }
    fn lookup<E: de::Error>(self, v: &str, at: Option<u64>) -> Result<Dtype, E> {
        Dtype::from_name(v).ok_or_else(|| {
            let message = format!("unknown dtype \"{}\"", v.escape_debug());
            self.st
                .fail(Rule::DtypeUnknown, at, Some(self.name), message)
        })
    }
}

impl<'de> Visitor<'de> for DtypeSeed<'_, 'de, '_> {
    type Value = Dtype;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a dtype name")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        let at = self.st.offset_of(v);
        self.lookup(v, at)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        self.lookup(v, None)
    }
    reject_types!('de; bool, number, null, array, object);
}

// shape and data_offsets

enum ArrayOut<'p> {
    Dims,
    Pair(&'p mut [u64; 2]),
}

struct ArraySeed<'s, 'a, 'k, 'p> {
    st: &'s mut State<'a>,
    name: &'k str,
    field: Field,
    out: ArrayOut<'p>,
}

impl<'de> DeserializeSeed<'de> for ArraySeed<'_, 'de, '_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl ArraySeed<'_, '_, '_, '_> {
    fn rule(&self) -> Rule {
        match self.field {
            Field::DataOffsets => Rule::SchemaOffsets,
            _ => Rule::SchemaShape,
        }
    }
    fn quote(&self, s: &str) -> Option<u64> {
        self.st.offset_of(s)
    }
    fn reject<E: de::Error>(self, what: &str, at: Option<u64>) -> E {
        let rule = self.rule();
        let message = match self.field {
            Field::DataOffsets => format!("data_offsets is {what}, not an array of two integers"),
            _ => format!("shape is {what}, not an array of integers"),
        };
        self.st.fail(rule, at, Some(self.name), message)
    }
}

impl<'de> Visitor<'de> for ArraySeed<'_, 'de, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of integers")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let rule = self.rule();
        let ArraySeed {
            st,
            name,
            field,
            mut out,
        } = self;
        let mut count = 0usize;
        while let Some(v) = seq.next_element_seed(IntSeed {
            st: &mut *st,
            name,
            field,
        })? {
            match &mut out {
                ArrayOut::Dims => st.parsed.dims.push(v),
                ArrayOut::Pair(pair) => {
                    if count >= 2 {
                        return Err(st.fail(
                            rule,
                            None,
                            Some(name),
                            "data_offsets has more than two numbers",
                        ));
                    }
                    pair[count] = v;
                }
            }
            count += 1;
        }
        if matches!(out, ArrayOut::Pair(_)) && count != 2 {
            let message = format!("data_offsets has {count} numbers, not two");
            return Err(st.fail(rule, None, Some(name), message));
        }
        Ok(())
    }
    reject_types!('de; bool, number, null, object, string);
}

struct IntSeed<'s, 'a, 'k> {
    st: &'s mut State<'a>,
    name: &'k str,
    field: Field,
}

impl<'de> DeserializeSeed<'de> for IntSeed<'_, 'de, '_> {
    type Value = u64;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        d.deserialize_any(self)
    }
}

impl IntSeed<'_, '_, '_> {
    fn quote(&self, s: &str) -> Option<u64> {
        self.st.offset_of(s)
    }
    fn reject<E: de::Error>(self, what: &str, at: Option<u64>) -> E {
        let rule = match self.field {
            Field::DataOffsets => Rule::SchemaOffsets,
            _ => Rule::SchemaShape,
        };
        let message = format!("{} holds {what}, not an integer", self.field.name());
        self.st.fail(rule, at, Some(self.name), message)
    }
    fn bad_number<E: de::Error>(self, what: &str) -> E {
        let message = format!(
            "{} holds {what}: numbers must be plain non-negative decimal integers <= 2^64-1",
            self.field.name()
        );
        self.st
            .fail(Rule::SchemaInteger, None, Some(self.name), message)
    }
}

impl<'de> Visitor<'de> for IntSeed<'_, 'de, '_> {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a non-negative integer")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        Err(self.bad_number(&format!("the negative number {v}")))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        let what = if v == 0.0 && v.is_sign_negative() {
            "-0".to_owned()
        } else if v.fract() == 0.0 && (0.0..1.0e30).contains(&v) {
            format!("a number with a fraction or an exponent, or beyond 2^64-1 (read as {v})")
        } else {
            format!("the non-integer {v}")
        };
        Err(self.bad_number(&what))
    }
    reject_types!('de; bool, null, array, object, string);
}
