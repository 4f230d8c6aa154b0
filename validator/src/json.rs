//! The JSON machinery shared by the header parser and the index parser: borrowed-or-owned
//! string seeds, positions of what serde_json hands back, the mapping of serde_json's errors to
//! faults (one tested function), the stage-1 walk for the first malformed fault, and a compact
//! duplicate-key table.
//!
//! Positions here are byte indices into the document text; each parser adds its own base (the
//! header starts at file offset 8, the index at 0) and chooses its own rule IDs.

use std::borrow::Cow;
use std::fmt;
use std::hash::BuildHasher as _;
use std::sync::OnceLock;

use serde::de::{self, DeserializeSeed, Deserializer as _, MapAccess, SeqAccess, Visitor};

/// A JSON key or string value as decoded: borrowed when it had no escapes.
pub(crate) struct Text<'a>(pub(crate) Cow<'a, str>);

/// The seed of a [`Text`].
pub(crate) struct TextSeed;

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

/// The index of the opening quote of `s` in `text`, if `s` was borrowed from `text` (a string
/// without escapes); `None` for a decoded (owned) string.
pub(crate) fn quote_of(text: &str, s: &str) -> Option<usize> {
    let base = text.as_ptr() as usize;
    let p = s.as_ptr() as usize;
    // A borrowed string lies wholly inside the text, between two quotes; a decoded one lives in
    // an allocation of its own, which may sit right before or after the text's.
    let inside = p > base && p.checked_add(s.len())? < base + text.len();
    (inside && text.as_bytes().get(p - base - 1) == Some(&b'"')).then(|| p - base - 1)
}

/// The index in `text` of a serde_json error's position (its line and 1-based byte column).
pub(crate) fn error_pos(text: &str, e: &serde_json::Error) -> usize {
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
    line_start
        .saturating_add(e.column().saturating_sub(1))
        .min(bytes.len())
}

/// Given the index of a string's closing quote, the index of its opening quote (the nearest
/// `"` before it not escaped by a backslash). Returns `at` unchanged if it is not on a quote.
pub(crate) fn quote_before(text: &str, at: usize) -> usize {
    let b = text.as_bytes();
    if b.get(at) != Some(&b'"') {
        return at;
    }
    let mut j = at;
    while j > 0 {
        j -= 1;
        if b[j] == b'"' {
            let backslashes = b[..j].iter().rev().take_while(|&&c| c == b'\\').count();
            if backslashes % 2 == 0 {
                return j;
            }
        }
    }
    at
}

fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).copied().is_some_and(is_ws) {
        i += 1;
    }
    i
}

/// From a string's opening quote to just after its closing one.
fn skip_string(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        match *b.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
}

/// From the first byte of a value to just after it.
fn skip_value(b: &[u8], mut i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            loop {
                match *b.get(i)? {
                    b'"' => {
                        i = skip_string(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(i + 1);
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
            Some(i)
        }
    }
}

/// The text of the value starting at `start` (in JSON that serde_json accepted).
pub(crate) fn value_text(text: &str, start: usize) -> Option<&str> {
    let end = skip_value(text.as_bytes(), start)?;
    text.get(start..end)
}

/// Positions of the keys of one object, in order, found by skipping text that serde_json has
/// already accepted: the way to locate a key that had escapes (serde_json hands it back
/// decoded, so it carries no position).
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyCursor {
    /// The object's `{`.
    open: usize,
    /// The previous key's opening quote.
    last: Option<usize>,
}

impl KeyCursor {
    /// A cursor for the object whose `{` is at `open`.
    pub(crate) fn new(open: usize) -> Self {
        KeyCursor { open, last: None }
    }

    /// The position of the next key, given the key as serde_json returned it.
    pub(crate) fn next(&mut self, text: &str, key: &str) -> Option<usize> {
        let at = quote_of(text, key).or_else(|| self.skip_to_next(text.as_bytes()));
        if at.is_some() {
            self.last = at;
        }
        at
    }

    fn skip_to_next(&self, b: &[u8]) -> Option<usize> {
        let i = match self.last {
            None => {
                (*b.get(self.open)? == b'{').then_some(())?;
                self.open + 1
            }
            Some(p) => {
                let mut i = skip_ws(b, skip_string(b, p)?);
                (*b.get(i)? == b':').then_some(())?;
                i = skip_ws(b, i + 1);
                i = skip_ws(b, skip_value(b, i)?);
                (*b.get(i)? == b',').then_some(())?;
                i + 1
            }
        };
        let i = skip_ws(b, i);
        (*b.get(i)? == b'"').then_some(i)
    }

    /// The position of the `{` or `[` of the value after the key at `key_quote`.
    pub(crate) fn value_start(text: &str, key_quote: usize) -> Option<usize> {
        let b = text.as_bytes();
        let mut i = skip_ws(b, skip_string(b, key_quote)?);
        (*b.get(i)? == b':').then_some(())?;
        i = skip_ws(b, i + 1);
        b.get(i).map(|_| i)
    }
}

/// The string whose opening quote is at `quote` in JSON text that serde_json accepted,
/// decoded: borrowed when it has no escape.
pub(crate) fn string_at(text: &str, quote: usize) -> Option<Cow<'_, str>> {
    let b = text.as_bytes();
    let end = skip_string(b, quote)?;
    let raw = text.get(quote + 1..end - 1)?;
    if !raw.contains('\\') {
        return Some(Cow::Borrowed(raw));
    }
    serde_json::from_str::<String>(text.get(quote..end)?)
        .ok()
        .map(Cow::Owned)
}

/// The hasher of the duplicate-key tables, which see every key of every document, so they are
/// the hottest part of a parse. std's SipHash-1-3 took a third of a valid header's time;
/// foldhash (fast variant) takes a fraction of that. The trade-off: foldhash only claims
/// "minimal" HashDoS resistance. Its outputs depend on secret seeds, so no list of names
/// collides for every seed; here both seeds come from std's `RandomState` (OS randomness;
/// on `wasm32-unknown-unknown`, which has none, with bits from the embedder mixed in:
/// [`seed_hashes`]), fresh per table for the per-hasher seed, instead of foldhash's own
/// address-and-clock seeding. An attacker who only submits files and never sees hash values
/// cannot aim collisions at an unknown seed; one who could learn the seeds (e.g. by timing a
/// long-lived process) could make a table quadratic, which SipHash would prevent. Measured on
/// a 100,000-tensor header: SipHash with growth 43 ms per validation, foldhash with reserved
/// capacity 27 ms, and the index table below 24 ms.
pub(crate) type KeyHasher = foldhash::fast::SeedableRandomState;

/// A fresh, randomly seeded [`KeyHasher`].
pub(crate) fn key_hasher() -> KeyHasher {
    static SHARED: OnceLock<foldhash::SharedSeed> = OnceLock::new();
    let shared = SHARED.get_or_init(|| foldhash::SharedSeed::from_u64(random_u64()));
    foldhash::fast::SeedableRandomState::with_seed(random_u64(), shared)
}

/// The bits an embedder gave [`seed_hashes`] (zero until one does).
static EMBEDDER_BITS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Mix 64 bits of the caller's own randomness into the seeds of the tables that find repeated
/// tensor names and JSON keys, for a target whose standard library has no source of randomness.
///
/// On every operating system the seeds already come from the OS, and this adds nothing that
/// is needed. On `wasm32-unknown-unknown` std's `RandomState` is built from two addresses, the
/// same in every instance of one build of a module: anyone could work out its seeds, and so a
/// header of names that all fall in one place of the table, which would make the check of a
/// large header take quadratic time. An embedder there calls this with bits from a real source
/// of randomness before the first check (the npm package does, with
/// `crypto.getRandomValues`, each time it instantiates the module); each call replaces the
/// bits of the one before. Tables made before the call keep their seeds.
pub fn seed_hashes(bits: u64) {
    EMBEDDER_BITS.store(bits, std::sync::atomic::Ordering::Relaxed);
}

/// 64 random bits: std's `RandomState` keys come from the OS (once per thread, then varied per
/// call), and SipHash of nothing under them is uniform; XORed with what [`seed_hashes`] was
/// given, for targets where they do not.
pub(crate) fn random_u64() -> u64 {
    use std::hash::Hasher as _;
    with_embedder_bits(
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish(),
    )
}

/// `bits` XOR what [`seed_hashes`] was given.
fn with_embedder_bits(bits: u64) -> u64 {
    bits ^ EMBEDDER_BITS.load(std::sync::atomic::Ordering::Relaxed)
}

/// The keys of one JSON object, for finding a repeated one: each slot holds only a 32-bit
/// position of the key's opening quote in the text (about 5 bytes per key with the table's
/// control bytes), and keys are decoded from the text to hash and compare them. So a table
/// costs less than the keys' own text, whatever the keys are.
pub(crate) struct KeyTable {
    table: hashbrown::HashTable<u32>,
    hasher: KeyHasher,
    /// Keys whose position could not be found (never for text serde_json accepted; kept so
    /// that the table stays exact whatever happens).
    unplaced: std::collections::HashSet<Box<str>>,
}

impl fmt::Debug for KeyTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyTable({} keys)", self.table.len())
    }
}

impl KeyTable {
    pub(crate) fn new() -> Self {
        Self::with_capacity(0)
    }

    /// A table with room for `n` keys without growing.
    pub(crate) fn with_capacity(n: usize) -> Self {
        KeyTable {
            table: hashbrown::HashTable::with_capacity(n),
            hasher: key_hasher(),
            unplaced: std::collections::HashSet::new(),
        }
    }

    /// Record the key whose opening quote is at `quote` (and whose decoded form is `key`);
    /// the position of an equal key recorded before, if any (then nothing is recorded).
    /// Positions beyond `u32::MAX` are not recorded (the header ceiling keeps them below).
    pub(crate) fn insert(&mut self, text: &str, quote: usize, key: &str) -> Option<usize> {
        let hasher = &self.hasher;
        let hash_at = |p: &u32| string_at(text, *p as usize).map_or(0, |k| hasher.hash_one(&*k));
        let same = |p: &u32| string_at(text, *p as usize).is_some_and(|k| *k == *key);
        let Ok(pos) = u32::try_from(quote) else {
            return self.insert_unplaced(text, key).then_some(quote);
        };
        if self.unplaced.contains(key) {
            return Some(quote);
        }
        match self.table.entry(hasher.hash_one(key), same, hash_at) {
            hashbrown::hash_table::Entry::Occupied(o) => Some(*o.get() as usize),
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert(pos);
                None
            }
        }
    }

    /// Record a key whose position is not known; `true` if an equal key was recorded before.
    pub(crate) fn insert_unplaced(&mut self, text: &str, key: &str) -> bool {
        self.find(text, key).is_some() || !self.unplaced.insert(key.into())
    }

    /// The position of the key equal to `key`, if recorded.
    pub(crate) fn find(&self, text: &str, key: &str) -> Option<usize> {
        let same = |p: &u32| string_at(text, *p as usize).is_some_and(|k| *k == *key);
        self.table
            .find(self.hasher.hash_one(key), same)
            .map(|&p| p as usize)
    }
}

/// A stage-1 fault of a JSON document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Syntax {
    /// Not RFC 8259 JSON (serde_json's message, without its position).
    Invalid(String),
    /// Bytes other than whitespace after the top-level value.
    Trailing,
    /// Nesting at [`crate::limits::MAX_JSON_DEPTH`] levels.
    Depth,
    /// A key repeated in one object (the key, decoded).
    DuplicateKey(String),
}

/// serde_json's error as a stage-1 fault and its position in `text`: the one place where its
/// messages are read.
pub(crate) fn syntax_of(text: &str, e: &serde_json::Error) -> (Syntax, usize) {
    let full = e.to_string();
    let message = match full.rfind(" at line ") {
        Some(i) => &full[..i],
        None => &full[..],
    };
    let fault = match message {
        "trailing characters" => Syntax::Trailing,
        "recursion limit exceeded" => Syntax::Depth,
        _ => Syntax::Invalid(message.to_owned()),
    };
    (fault, error_pos(text, e))
}

/// The first stage-1 fault of `text` in document order: a syntax error, nesting beyond
/// [`crate::limits::MAX_JSON_DEPTH`], trailing bytes, or a key repeated in an object (at the
/// repeat's opening quote). `None` if `text` is one well-formed JSON value with unique keys.
///
/// Two passes: serde_json walks the value (it alone decides syntax and depth, and keeps no
/// memory), then the keys before the first syntax fault are checked for repeats, one
/// [`KeyTable`] per open object.
pub(crate) fn first_fault(text: &str) -> Option<(Syntax, usize)> {
    let mut de = serde_json::Deserializer::from_str(text);
    let syntax = (&mut de)
        .deserialize_any(AnyVisitor)
        .and_then(|()| de.end())
        .err()
        .map(|e| syntax_of(text, &e));
    let stop = syntax.as_ref().map_or(text.len(), |(_, at)| *at);
    match first_duplicate(text, stop) {
        Some(d) => Some(d),
        None => syntax,
    }
}

/// Any JSON value, walked to the end with serde_json's own depth limit; keeps nothing.
struct AnyVisitor;

impl<'de> DeserializeSeed<'de> for AnyVisitor {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for AnyVisitor {
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
        while seq.next_element_seed(AnyVisitor)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(AnyVisitor)?.is_some() {
            map.next_value_seed(AnyVisitor)?;
        }
        Ok(())
    }
}

/// The first key repeated within one object, among the keys whose closing quote lies before
/// `stop`, in JSON that is well-formed up to `stop`.
fn first_duplicate(text: &str, stop: usize) -> Option<(Syntax, usize)> {
    let b = text.as_bytes();
    // One entry per open container: a key table for an object, `None` for an array.
    let mut stack: Vec<Option<KeyTable>> = Vec::new();
    let mut expect_key = false;
    let mut i = 0usize;
    while i < stop.min(b.len()) {
        match b[i] {
            b'{' => {
                stack.push(Some(KeyTable::new()));
                expect_key = true;
            }
            b'[' => {
                stack.push(None);
                expect_key = false;
            }
            b'}' | b']' => {
                stack.pop();
                expect_key = false;
            }
            b',' => expect_key = matches!(stack.last(), Some(Some(_))),
            b':' => expect_key = false,
            b'"' => {
                let end = skip_string(b, i)?;
                if end > stop {
                    return None;
                }
                if expect_key {
                    if let Some(Some(table)) = stack.last_mut() {
                        let key = string_at(text, i)?;
                        if table.insert(text, i, &key).is_some() {
                            return Some((Syntax::DuplicateKey(key.into_owned()), i));
                        }
                    }
                    expect_key = false;
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The `visit_*` methods of a schema visitor for the JSON types it does not accept. Each calls
/// the visitor's `reject(what, at)` with the type's name and, for an unescaped string, its
/// position (`None` lets serde_json's position stand in). The visitor provides
/// `fn quote(&self, s: &str) -> Option<u64>` for the string's offset.
macro_rules! reject_types {
    ($de:lifetime; $($ty:ident),* $(,)?) => { $( reject_types!(@ $de $ty); )* };
    (@ $de:lifetime bool) => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Err(self.reject("a boolean", None))
        }
    };
    (@ $de:lifetime number) => {
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Err(self.reject("a number", None))
        }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Err(self.reject("a number", None))
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Err(self.reject("a number", None))
        }
    };
    (@ $de:lifetime null) => {
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Err(self.reject("null", None))
        }
    };
    (@ $de:lifetime array) => {
        fn visit_seq<A: serde::de::SeqAccess<$de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(self.reject("an array", None))
        }
    };
    (@ $de:lifetime object) => {
        fn visit_map<A: serde::de::MapAccess<$de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(self.reject("an object", None))
        }
    };
    (@ $de:lifetime string) => {
        fn visit_borrowed_str<E: serde::de::Error>(self, v: &$de str) -> Result<Self::Value, E> {
            let at = self.quote(v);
            Err(self.reject("a string", at))
        }
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Err(self.reject("a string", None))
        }
    };
}
pub(crate) use reject_types;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedders_bits_are_mixed_into_every_seed_drawn_after_them() {
        // Another test's tables drawn meanwhile only get other seeds.
        seed_hashes(0x0123_4567_89ab_cdef);
        assert_eq!(with_embedder_bits(0), 0x0123_4567_89ab_cdef);
        assert_eq!(with_embedder_bits(u64::MAX), !0x0123_4567_89ab_cdef);
        seed_hashes(0);
        assert_eq!(with_embedder_bits(42), 42);
    }

    #[test]
    fn serde_messages_map_to_faults() {
        let cases: &[(&str, Syntax, usize)] = &[
            ("{} x", Syntax::Trailing, 3),
            ("{\"a\":}", Syntax::Invalid("expected value".into()), 5),
            ("[1,]", Syntax::Invalid("trailing comma".into()), 3),
            (
                "{\"a\":1 \"b\":2}",
                Syntax::Invalid("expected `,` or `}`".into()),
                7,
            ),
        ];
        for (text, fault, at) in cases {
            assert_eq!(first_fault(text), Some((fault.clone(), *at)), "{text}");
        }
        let deep = "[".repeat(crate::limits::MAX_JSON_DEPTH) + &"]".repeat(128);
        assert_eq!(first_fault(&deep).map(|f| f.0), Some(Syntax::Depth));
        let ok = "[".repeat(crate::limits::MAX_JSON_DEPTH - 1) + &"]".repeat(127);
        assert_eq!(first_fault(&ok), None);
    }

    #[test]
    fn duplicates_at_any_level_before_the_first_syntax_fault() {
        assert_eq!(
            first_fault(r#"{"a":1,"a":2}"#),
            Some((Syntax::DuplicateKey("a".into()), 7))
        );
        // Equal after unescaping.
        assert_eq!(
            first_fault(r#"{"x":[{"b":1,"\u0062":2}]}"#),
            Some((Syntax::DuplicateKey("b".into()), 13))
        );
        // Same key in sibling objects and in a value is not a repeat.
        assert_eq!(first_fault(r#"{"a":{"a":"a"},"b":{"a":1}}"#), None);
        // The repeat comes before the syntax fault: it wins; after: the syntax fault wins.
        assert_eq!(
            first_fault(r#"{"a":1,"a":2,}"#).map(|f| f.0),
            Some(Syntax::DuplicateKey("a".into()))
        );
        assert_eq!(
            first_fault(r#"{"a":1 x,"a":2}"#).map(|f| f.0),
            Some(Syntax::Invalid("expected `,` or `}`".into()))
        );
    }

    #[test]
    fn key_cursor_finds_escaped_keys() {
        let text = r#" { "a" : "x\"y" , "\u0062" : [1, {"c":2}] , "d":3 }"#;
        let mut c = KeyCursor::new(1);
        let a = c.next(text, &text[4..5]);
        assert_eq!(a, Some(3));
        // An owned (escaped) key: found by skipping.
        let b = c.next(text, "b");
        assert_eq!(b, Some(18));
        let d = c.next(text, "d");
        assert_eq!(d, Some(text.find("\"d\"").unwrap_or(0)));
        assert_eq!(string_at(text, 18).as_deref(), Some("b"));
        assert_eq!(string_at(text, 9).as_deref(), Some("x\"y"));
    }

    #[test]
    fn key_table_compares_decoded_keys() {
        let text = r#"{"ab":1,"a\u0062":2,"c":3}"#;
        let mut t = KeyTable::new();
        assert_eq!(t.insert(text, 1, "ab"), None);
        assert_eq!(t.insert(text, 8, "ab"), Some(1));
        assert_eq!(t.insert(text, 20, "c"), None);
        assert_eq!(t.find(text, "c"), Some(20));
        assert_eq!(t.find(text, "zz"), None);
    }
}
