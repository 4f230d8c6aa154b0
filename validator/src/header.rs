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

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::hash::{BuildHasher as _, Hasher as _};
use std::sync::OnceLock;

use serde::de::{self, DeserializeSeed, Deserializer as _, MapAccess, SeqAccess, Visitor};

use crate::dtype::Dtype;
use crate::error::{Error, Finding, Warning};
use crate::names;
use crate::rules::{Kind, Rule};

/// File offset of the first header byte.
pub(crate) const HEADER_START: u64 = 8;

/// A tensor as declared in the header.
#[derive(Debug, Clone)]
pub(crate) struct Record<'a> {
    pub(crate) name: Cow<'a, str>,
    /// File offset of the tensor's key (its opening quote where known).
    pub(crate) offset: u64,
    pub(crate) dtype: Dtype,
    /// Range of this tensor's dimensions in [`Parsed::dims`].
    pub(crate) dims_start: u32,
    pub(crate) dims_len: u32,
    pub(crate) begin: u64,
    pub(crate) end: u64,
    pub(crate) elements: u64,
}

/// What `__metadata__` was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataForm {
    /// No `__metadata__` key.
    Absent,
    /// `"__metadata__": null` (warning `SCHEMA-METADATA-NULL`).
    Null,
    /// An object of strings.
    Map,
}

/// The decoded header, before the layout checks.
#[derive(Debug)]
pub(crate) struct Parsed<'a> {
    pub(crate) tensors: Vec<Record<'a>>,
    pub(crate) dims: Vec<u64>,
    pub(crate) metadata_form: MetadataForm,
    pub(crate) metadata: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    /// File offset of each metadata value (for `SIZE-TOTAL-PARAMETERS`).
    pub(crate) metadata_offsets: Vec<u64>,
    pub(crate) warnings: Vec<Warning>,
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
    parsed: Parsed<'a>,
    /// The tensor names seen so far, as indices into `parsed.tensors` (the name being checked
    /// gets the index its record will have): one word per slot instead of a whole `Cow`, so the
    /// table of a 100 MB header stays in the last-level cache.
    names: hashbrown::HashTable<usize>,
    name_hasher: NameHasher,
    seen_metadata: bool,
    /// Header index of the previous root-level key's opening quote (for [`State::root_key_offset`]).
    last_root_key: Option<usize>,
}

impl<'a> State<'a> {
    /// File offset of a string borrowed from the header text: its opening quote.
    fn offset_of(&self, s: &str) -> Option<u64> {
        let base = self.text.as_ptr() as usize;
        let p = s.as_ptr() as usize;
        if p > base && p <= base + self.text.len() {
            Some(HEADER_START + (p - base - 1) as u64)
        } else {
            None
        }
    }

    /// File offset of a root-level key's opening quote. A key without escapes is borrowed and
    /// points into the text; an escaped key is found by skipping, from the previous root key,
    /// that key, its value and the comma (text serde_json has already accepted).
    fn root_key_offset(&mut self, key: &str) -> Option<u64> {
        let at = match self.offset_of(key) {
            Some(o) => usize::try_from(o - HEADER_START).ok(),
            None => next_key_quote(self.text.as_bytes(), self.last_root_key),
        };
        if at.is_some() {
            self.last_root_key = at;
        }
        at.map(|i| HEADER_START + i as u64)
    }

    /// Record a tensor name, whose record will be pushed next; `false` if it is a duplicate.
    fn insert_name(&mut self, key: &str) -> bool {
        let tensors = &self.parsed.tensors;
        let hasher = &self.name_hasher;
        let hash_of = |i: &usize| tensors.get(*i).map_or(0, |t| hasher.hash_one(&*t.name));
        let same = |i: &usize| tensors.get(*i).is_some_and(|t| *t.name == *key);
        match self.names.entry(hasher.hash_one(key), same, hash_of) {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert(tensors.len());
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

/// The hasher of the tensor-name table, which sees every name of every header, so it is the
/// single hottest piece of the parse. std's SipHash-1-3 took a third of a valid header's time;
/// foldhash (fast variant) takes a fraction of that. The trade-off: foldhash only claims
/// "minimal" HashDoS resistance. Its outputs depend on secret seeds, so no list of names
/// collides for every seed; here both seeds come from std's `RandomState` (OS randomness),
/// fresh per header for the per-hasher seed, instead of foldhash's own address-and-clock
/// seeding. An attacker who only submits files and never sees hash values cannot aim
/// collisions at an unknown seed; one who could learn the seeds (e.g. by timing a long-lived
/// process) could make the table quadratic, which SipHash would prevent. Measured on a
/// 100,000-tensor header: SipHash with growth 43 ms per validation, foldhash with reserved
/// capacity 27 ms, and the index table below 24 ms.
type NameHasher = foldhash::fast::SeedableRandomState;

fn name_hasher() -> NameHasher {
    static SHARED: OnceLock<foldhash::SharedSeed> = OnceLock::new();
    let shared = SHARED.get_or_init(|| foldhash::SharedSeed::from_u64(random_u64()));
    foldhash::fast::SeedableRandomState::with_seed(random_u64(), shared)
}

/// 64 random bits: std's `RandomState` keys come from the OS (once per thread, then varied per
/// call), and SipHash of nothing under them is uniform.
fn random_u64() -> u64 {
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

/// Header bytes per tensor entry in real checkpoints (about 100-130): the initial capacity of
/// the name table and the record vectors is the header length divided by this, so a typical
/// header never rehashes or regrows. A header that is mostly metadata reserves at most about
/// 1.1 x N bytes it does not use (a 72-byte record, two 8-byte dimensions and up to two 9-byte
/// table slots per 96 header bytes), within [`crate::limits::MEMORY_FACTOR_PER_HEADER_BYTE`];
/// of that, only the table's control bytes (about N / 48) are written before use.
const TYPICAL_ENTRY_LEN: usize = 96;

/// A JSON key or string value as decoded: borrowed when it had no escapes.
struct Text<'a>(Cow<'a, str>);

struct TextSeed;

impl<'de> DeserializeSeed<'de> for TextSeed {
    type Value = Text<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Text<'de>, D::Error> {
        d.deserialize_str(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Owned(v)))
    }
}

pub(crate) mod fast;

/// Parse the header text (stage 1 JSON syntax and stage 2 schema, in one pass): the fast path
/// ([`fast`]) for headers of the canonical shape, else, from the start, the serde path, which
/// alone reports findings.
pub(crate) fn parse(text: &str) -> Result<Parsed<'_>, Error> {
    match fast::parse(text) {
        Some(parsed) => Ok(parsed),
        None => parse_slow(text),
    }
}

/// The serde path of [`parse`].
pub(crate) fn parse_slow(text: &str) -> Result<Parsed<'_>, Error> {
    let mut state = State {
        text,
        pending: None,
        parsed: Parsed {
            tensors: Vec::with_capacity(text.len() / TYPICAL_ENTRY_LEN),
            dims: Vec::with_capacity(2 * (text.len() / TYPICAL_ENTRY_LEN)),
            metadata_form: MetadataForm::Absent,
            metadata: Vec::new(),
            metadata_offsets: Vec::new(),
            warnings: Vec::new(),
        },
        names: hashbrown::HashTable::with_capacity(text.len() / TYPICAL_ENTRY_LEN),
        name_hasher: name_hasher(),
        seen_metadata: false,
        last_root_key: None,
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
                        key_start_before(text, serde_offset(text, &e))
                    });
                    let f = Finding::new(p.rule, offset, p.message);
                    match &p.tensor {
                        Some(t) => f.with_tensor(t),
                        None => f,
                    }
                }
                None => from_serde(text, &e),
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

/// File offset of a serde_json error's position (line and byte column in the header text).
fn serde_offset(text: &str, e: &serde_json::Error) -> u64 {
    let bytes = text.as_bytes();
    let mut line_start = 0usize;
    if e.line() > 1 {
        let mut seen = 1usize;
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\n' {
                seen += 1;
                if seen == e.line() {
                    line_start = i + 1;
                    break;
                }
            }
        }
    }
    // serde_json's columns are 1-based: column 1 is the line's first byte.
    let at = line_start
        .saturating_add(e.column().saturating_sub(1))
        .min(bytes.len());
    HEADER_START + at as u64
}

/// Given the file offset of a key's closing quote, the file offset of its opening quote (the
/// nearest `"` before it not escaped by a backslash). Returns `at` unchanged if it is not on a
/// quote.
fn key_start_before(text: &str, at: u64) -> u64 {
    let b = text.as_bytes();
    let Some(close) = at
        .checked_sub(HEADER_START)
        .and_then(|i| usize::try_from(i).ok())
        .filter(|&i| b.get(i) == Some(&b'"'))
    else {
        return at;
    };
    let mut j = close;
    while j > 0 {
        j -= 1;
        if b[j] == b'"' {
            let backslashes = b[..j].iter().rev().take_while(|&&c| c == b'\\').count();
            if backslashes % 2 == 0 {
                return HEADER_START + j as u64;
            }
        }
    }
    at
}

/// The header index of the opening quote of the root-level key after the one at `prev` (or of
/// the first key when `prev` is `None`), by skipping that key, its value and the comma. Only
/// used on text serde_json has already parsed up to that key; `None` if the text is not shaped
/// as expected.
fn next_key_quote(b: &[u8], prev: Option<usize>) -> Option<usize> {
    let is_ws = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r');
    let skip_ws = |mut i: usize| {
        while b.get(i).copied().is_some_and(is_ws) {
            i += 1;
        }
        i
    };
    // From an opening quote to just after the closing one.
    let skip_str = |i: usize| -> Option<usize> {
        let mut j = i + 1;
        loop {
            match *b.get(j)? {
                b'\\' => j += 2,
                b'"' => return Some(j + 1),
                _ => j += 1,
            }
        }
    };
    let i = match prev {
        None => {
            let i = skip_ws(0);
            (*b.get(i)? == b'{').then_some(i + 1)?
        }
        Some(p) => {
            let mut i = skip_ws(skip_str(p)?);
            if *b.get(i)? != b':' {
                return None;
            }
            i = skip_ws(i + 1);
            match *b.get(i)? {
                b'"' => i = skip_str(i)?,
                b'{' | b'[' => {
                    let mut depth = 0usize;
                    loop {
                        match *b.get(i)? {
                            b'"' => {
                                i = skip_str(i)?;
                                continue;
                            }
                            b'{' | b'[' => depth += 1,
                            b'}' | b']' => {
                                depth = depth.checked_sub(1)?;
                                if depth == 0 {
                                    i += 1;
                                    break;
                                }
                            }
                            _ => {}
                        }
                        i += 1;
                    }
                }
                _ => {
                    while b
                        .get(i)
                        .is_some_and(|&c| !matches!(c, b',' | b'}' | b']') && !is_ws(c))
                    {
                        i += 1;
                    }
                }
            }
            i = skip_ws(i);
            if *b.get(i)? != b',' {
                return None;
            }
            i + 1
        }
    };
    let i = skip_ws(i);
    (*b.get(i)? == b'"').then_some(i)
}

/// A serde_json syntax error as a finding.
fn from_serde(text: &str, e: &serde_json::Error) -> Finding {
    let full = e.to_string();
    let message = match full.rfind(" at line ") {
        Some(i) => &full[..i],
        None => &full[..],
    };
    let rule = if message == "trailing characters" {
        Rule::JsonTrailing
    } else if message == "recursion limit exceeded" {
        Rule::JsonDepth
    } else {
        Rule::JsonSyntax
    };
    let message = match rule {
        Rule::JsonTrailing => "bytes other than JSON whitespace after the header object".to_owned(),
        Rule::JsonDepth => format!(
            "JSON nesting reaches {} levels (at most {} are followed)",
            crate::limits::MAX_JSON_DEPTH,
            crate::limits::MAX_JSON_DEPTH - 1
        ),
        _ => format!("invalid JSON: {message}"),
    };
    Finding::new(rule, serde_offset(text, e), message)
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
            let key_offset = st.root_key_offset(&key);
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
                map.next_value_seed(MetadataSeed { st: &mut *st })?;
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
            }
            let record = map.next_value_seed(EntrySeed {
                st: &mut *st,
                name: &key,
                offset: key_offset,
            })?;
            st.parsed.tensors.push(Record {
                name: key,
                offset,
                ..record
            });
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

/// Whether a tensor name is certain to break and warn on no `NAME-*` rule, in one cheap pass:
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

/// The `visit_*` methods of a schema visitor for the JSON types it does not accept. Each calls
/// the visitor's `reject(what, at)` with the type's name and, for an unescaped string, its exact
/// offset (`None` lets serde_json's position stand in).
macro_rules! reject_types {
    ($de:lifetime; $($ty:ident),* $(,)?) => { $( reject_types!(@ $de $ty); )* };
    (@ $de:lifetime bool) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Err(self.reject("a boolean", None))
        }
    };
    (@ $de:lifetime number) => {
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Err(self.reject("a number", None))
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Err(self.reject("a number", None))
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Err(self.reject("a number", None))
        }
    };
    (@ $de:lifetime null) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Err(self.reject("null", None))
        }
    };
    (@ $de:lifetime array) => {
        fn visit_seq<A: SeqAccess<$de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(self.reject("an array", None))
        }
    };
    (@ $de:lifetime object) => {
        fn visit_map<A: MapAccess<$de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(self.reject("an object", None))
        }
    };
    (@ $de:lifetime string) => {
        fn visit_borrowed_str<E: de::Error>(self, v: &$de str) -> Result<Self::Value, E> {
            let at = self.st.offset_of(v);
            Err(self.reject("a string", at))
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Err(self.reject("a string", None))
        }
    };
}

// ---------------------------------------------------------------------------------------------
// __metadata__

struct MetadataSeed<'s, 'a> {
    st: &'s mut State<'a>,
}

impl<'de> DeserializeSeed<'de> for MetadataSeed<'_, 'de> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(MetadataVisitor { st: self.st })
    }
}

struct MetadataVisitor<'s, 'a> {
    st: &'s mut State<'a>,
}

impl MetadataVisitor<'_, '_> {
    fn reject<E: de::Error>(self, what: &str, at: Option<u64>) -> E {
        self.st.fail(
            Rule::SchemaMetadata,
            at,
            None,
            format!("__metadata__ is {what}, not an object of strings"),
        )
    }
}

impl<'de> Visitor<'de> for MetadataVisitor<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of strings")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.st.parsed.metadata_form = MetadataForm::Null;
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.st;
        st.parsed.metadata_form = MetadataForm::Map;
        let mut keys: HashSet<Cow<'de, str>> = HashSet::new();
        while let Some(Text(key)) = map.next_key_seed(TextSeed)? {
            let key_offset = st.offset_of(&key);
            if !keys.insert(key.clone()) {
                return Err(st.fail(
                    Rule::JsonDuplicateKey,
                    key_offset,
                    None,
                    format!("duplicate __metadata__ key \"{}\"", key.escape_debug()),
                ));
            }
            let value = map.next_value_seed(MetadataValueSeed {
                st: &mut *st,
                key: &key,
            })?;
            let value_offset = st.offset_of(&value).or(key_offset).unwrap_or(HEADER_START);
            st.parsed.metadata.push((key, value));
            st.parsed.metadata_offsets.push(value_offset);
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
    type Value = Cow<'de, str>;
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
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
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
    type Value = Record<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl EntrySeed<'_, '_, '_> {
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
    type Value = Record<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tensor entry object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Record<'de>, A::Error> {
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
        let (Some(dtype), Some((dims_start, dims_len)), Some((begin, end))) =
            (dtype, dims, offsets)
        else {
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
        let shape = &st.parsed.dims[dims_start as usize..(dims_start + dims_len) as usize];
        let elements = match crate::size::check(dtype, shape, begin, end) {
            Ok(elements) => elements,
            Err((rule, message)) => return Err(st.fail(rule, offset, Some(name), message)),
        };
        Ok(Record {
            name: Cow::Borrowed(""),
            offset: 0,
            dtype,
            dims_start,
            dims_len,
            begin,
            end,
            elements,
        })
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

// ---------------------------------------------------------------------------------------------
// Stage 1 alone: the first malformed fault anywhere in the header.

/// Walk the whole header as generic JSON and return its first stage-1 fault in file order: a
/// syntax error, nesting beyond [`crate::limits::MAX_JSON_DEPTH`], trailing bytes, or a
/// duplicate key in any object. `None` if the header is well-formed JSON with unique keys.
pub(crate) fn first_malformed(text: &str) -> Option<Finding> {
    let mut dup: Option<(Option<u64>, String)> = None;
    let mut de = serde_json::Deserializer::from_str(text);
    let result = (&mut de)
        .deserialize_any(AnyVisitor {
            text,
            dup: &mut dup,
        })
        .and_then(|()| de.end());
    match result {
        Ok(()) => None,
        Err(e) => Some(match dup.take() {
            Some((at, message)) => Finding::new(
                Rule::JsonDuplicateKey,
                at.unwrap_or_else(|| key_start_before(text, serde_offset(text, &e))),
                message,
            ),
            None => from_serde(text, &e),
        }),
    }
}

struct AnyVisitor<'s, 'a> {
    text: &'a str,
    dup: &'s mut Option<(Option<u64>, String)>,
}

impl<'de> DeserializeSeed<'de> for AnyVisitor<'_, 'de> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for AnyVisitor<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(AnyVisitor {
                text: self.text,
                dup: &mut *self.dup,
            })?
            .is_some()
        {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys: HashSet<Cow<'de, str>> = HashSet::new();
        while let Some(Text(key)) = map.next_key_seed(TextSeed)? {
            if keys.contains(&key) {
                let base = self.text.as_ptr() as usize;
                let p = key.as_ptr() as usize;
                let at = (p > base && p <= base + self.text.len())
                    .then(|| HEADER_START + (p - base - 1) as u64);
                *self.dup = Some((at, format!("duplicate key \"{}\"", key.escape_debug())));
                return Err(de::Error::custom(""));
            }
            keys.insert(key);
            map.next_value_seed(AnyVisitor {
                text: self.text,
                dup: &mut *self.dup,
            })?;
        }
        Ok(())
    }
}
