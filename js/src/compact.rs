//! Records handed to JavaScript without a JSON text in between.
//!
//! A record used to cross as JSON text: written here by `serde_json`, decoded from UTF-8 by the
//! glue, parsed by `JSON.parse`. For a small header that round trip was most of the call
//! (issue 34: writing the record 46% of the module's time, its parse 1.5x `JSON.parse` of the
//! header itself). Here any `serde::Serialize` value is encoded as `serde_json` would write it,
//! but into 32-bit words and one text, which the wrapper (`js/lib/core.js`, `decode`) reads
//! straight out of the module's memory and builds into the same JavaScript value that
//! `JSON.parse` of the JSON text gives: the same keys in the same order, numbers as the same
//! doubles, `null` for non-finite floats. The record's schema stays the printer's
//! (`stcheck_print::records`); only the transport differs.
//!
//! The words, after the [`Handed`] descriptor `[words_at, words_len, text_at, text_len]` (byte
//! addresses in the module's memory, a count of words, a count of bytes):
//!
//! | words | value |
//! | --- | --- |
//! | `NULL`, `FALSE`, `TRUE` | `null`, `false`, `true` |
//! | `UINT n` | an integer up to 2^32 - 1 |
//! | `F64 lo hi` | any other number: the bits of an IEEE double, low word first |
//! | `STR at len` | a string: UTF-16 code units `at..at + len` of the text |
//! | `ARRAY n` then `n` values | an array |
//! | `OBJECT n` then `n` times a key and a value | an object |
//!
//! A key is `STR at len`, `KEY i` (the key told as the `i`-th) or `NEW_KEY i at len` (a key
//! told for the first time, as the `i`-th; a wrapper that finds a `KEY` it was not told has
//! missed an encoding, and drops the module instance). Keys are told once per module
//! instance, so a record's keys cost the wrapper an array read, not a string to build and look
//! up: [`MAX_KEYS`] at most, each at most [`MAX_KEY_LEN`] bytes (longer or later ones go as
//! strings, so hostile tensor names or metadata keys cannot grow the table without bound).
//! A string value of at most [`MAX_SHORT_VALUE`] bytes is told and named the same way (`KEY`,
//! `NEW_KEY`): the printer's words, which every record repeats.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

use serde::ser::{self, Serialize};

/// The words that start a value (and a key) in the encoding.
pub(crate) mod tag {
    pub(crate) const NULL: u32 = 0;
    pub(crate) const FALSE: u32 = 1;
    pub(crate) const TRUE: u32 = 2;
    pub(crate) const UINT: u32 = 3;
    pub(crate) const F64: u32 = 4;
    pub(crate) const STR: u32 = 5;
    pub(crate) const ARRAY: u32 = 6;
    pub(crate) const OBJECT: u32 = 7;
    pub(crate) const KEY: u32 = 8;
    pub(crate) const NEW_KEY: u32 = 9;
}

/// The most keys told to the wrapper per module instance.
pub(crate) const MAX_KEYS: usize = 4096;
/// The longest key told (longer ones go as strings each time).
pub(crate) const MAX_KEY_LEN: usize = 64;
/// The longest string value told as keys are (longer ones go as strings each time).
pub(crate) const MAX_SHORT_VALUE: usize = 16;

/// A value that could not be encoded: longer than the bound, or a map key that is not one
/// JSON allows (as `serde_json` refuses it).
#[derive(Debug)]
pub(crate) enum Error {
    TooLong,
    Other(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::TooLong => f.write_str("the record is too long"),
            Error::Other(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error::Other(msg.to_string())
    }
}

type Result<T> = std::result::Result<T, Error>;

/// FNV-1a over the key's bytes: keys are short, and SipHash's setup would cost more than the
/// lookup it protects (the table's contents are bounded, so a flooded bucket costs little).
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// The keys told to the wrapper, by text, with their index.
struct Keys {
    index: HashMap<Box<str>, u32, BuildHasherDefault<Fnv>>,
    /// The keys by index.
    text: Vec<Box<str>>,
    /// How many of them the wrapper has received (the rest belong to the encoding under way,
    /// and are forgotten if it is not handed over).
    told: u32,
    /// The index of keys recently met, by their address and length: a record's keys are
    /// mostly the printer's string literals, met again at the same address every time, so
    /// most lookups are a slot and a short comparison instead of hashing. A slot is only a
    /// hint: the key's text is compared too (another string may be at that address now).
    recent: Box<[(usize, usize, u32); RECENT]>,
}

/// Slots of [`Keys::recent`]: 2^10, for the few dozen keys and words of a record.
const RECENT_BITS: u32 = 10;
const RECENT: usize = 1 << RECENT_BITS;

impl Default for Keys {
    fn default() -> Self {
        Keys {
            index: HashMap::default(),
            text: Vec::new(),
            told: 0,
            recent: Box::new([(0, 0, u32::MAX); RECENT]),
        }
    }
}

impl Keys {
    /// The slot of `k` in [`Keys::recent`]: its address and length, mixed (Fibonacci
    /// hashing: the top bits of a multiple by 2^32 / phi).
    fn slot(k: &str) -> usize {
        let a = (k.as_ptr() as usize as u32) ^ (k.len() as u32).rotate_left(16);
        (a.wrapping_mul(0x9e37_79b9) >> (32 - RECENT_BITS)) as usize
    }

    /// The index of `k`, if told (or being told).
    fn get(&mut self, k: &str) -> Option<u32> {
        let slot = Self::slot(k);
        let (at, len, i) = self.recent[slot];
        if at == k.as_ptr() as usize
            && len == k.len()
            && self.text.get(i as usize).is_some_and(|t| **t == *k)
        {
            return Some(i);
        }
        let i = *self.index.get(k)?;
        self.recent[slot] = (k.as_ptr() as usize, k.len(), i);
        Some(i)
    }

    fn insert(&mut self, k: &str) -> u32 {
        let i = self.text.len() as u32;
        self.text.push(k.into());
        self.index.insert(k.into(), i);
        self.recent[Self::slot(k)] = (k.as_ptr() as usize, k.len(), i);
        i
    }

    fn len(&self) -> usize {
        self.text.len()
    }

    fn commit(&mut self) {
        self.told = self.text.len() as u32;
    }

    fn roll_back(&mut self) {
        let told = self.told;
        self.index.retain(|_, i| *i < told);
        self.text.truncate(told as usize);
    }
}

/// An encoding under way.
struct Encoder<'k> {
    words: Vec<u32>,
    text: String,
    /// The text's length in UTF-16 code units.
    units: u32,
    /// The most bytes (words and text) the encoding may take.
    cap: usize,
    keys: &'k mut Keys,
}

impl<'k> Encoder<'k> {
    fn room(&self) -> Result<()> {
        if self
            .words
            .len()
            .saturating_mul(4)
            .saturating_add(self.text.len())
            > self.cap
        {
            Err(Error::TooLong)
        } else {
            Ok(())
        }
    }

    fn word(&mut self, w: u32) {
        self.words.push(w);
    }

    /// `s` appended to the text: its first code unit and its length in code units.
    fn text(&mut self, s: &str) -> Result<(u32, u32)> {
        let units = if s.is_ascii() {
            s.len()
        } else {
            s.chars().map(char::len_utf16).sum()
        };
        let units = u32::try_from(units).map_err(|_| Error::TooLong)?;
        let at = self.units;
        self.units = at.checked_add(units).ok_or(Error::TooLong)?;
        self.text.push_str(s);
        Ok((at, units))
    }

    fn str(&mut self, s: &str) -> Result<()> {
        let (at, len) = self.text(s)?;
        self.words.extend_from_slice(&[tag::STR, at, len]);
        self.room()
    }

    /// A string value: one of at most [`MAX_SHORT_VALUE`] bytes is told once and named by its
    /// index after that, as keys are. A record's short values are mostly the printer's words
    /// (`valid`, `strict`, `F32`, `map`, a rule ID), so a common record hands over no text at
    /// all, and the wrapper decodes none.
    fn value_str(&mut self, s: &str) -> Result<()> {
        if s.len() <= MAX_SHORT_VALUE {
            self.key(s)
        } else {
            self.str(s)
        }
    }

    fn uint(&mut self, n: u64) -> Result<()> {
        match u32::try_from(n) {
            Ok(n) => self.words.extend_from_slice(&[tag::UINT, n]),
            // As `JSON.parse` reads the digits: the nearest double.
            Err(_) => self.f64(n as f64),
        }
        self.room()
    }

    fn int(&mut self, n: i64) -> Result<()> {
        match u64::try_from(n) {
            Ok(n) => self.uint(n),
            Err(_) => {
                self.f64(n as f64);
                self.room()
            }
        }
    }

    /// A finite double; `serde_json` writes the others as `null`.
    fn f64(&mut self, v: f64) {
        if v.is_finite() {
            let bits = v.to_bits();
            self.words
                .extend_from_slice(&[tag::F64, bits as u32, (bits >> 32) as u32]);
        } else {
            self.word(tag::NULL);
        }
    }

    fn key(&mut self, k: &str) -> Result<()> {
        if let Some(i) = self.keys.get(k) {
            self.words.extend_from_slice(&[tag::KEY, i]);
            return Ok(());
        }
        if k.len() > MAX_KEY_LEN || self.keys.len() >= MAX_KEYS {
            return self.str(k);
        }
        let (at, len) = self.text(k)?;
        let next = self.keys.insert(k);
        self.words.extend_from_slice(&[tag::NEW_KEY, next, at, len]);
        self.room()
    }

    /// Open an array or object (`t`), its count written when it ends.
    fn open<'a>(&'a mut self, t: u32) -> Result<Compound<'a, 'k>> {
        self.words.extend_from_slice(&[t, 0]);
        self.room()?;
        let at = self.words.len() - 1;
        Ok(Compound {
            enc: self,
            at,
            n: 0,
        })
    }

    /// An enum's variant with a value: `{"variant": value}`, the value next.
    fn variant(&mut self, variant: &str) -> Result<()> {
        self.words.extend_from_slice(&[tag::OBJECT, 1]);
        self.key(variant)
    }
}

/// An array or object being encoded: its count is written at its end.
pub(crate) struct Compound<'a, 'k> {
    enc: &'a mut Encoder<'k>,
    at: usize,
    n: u32,
}

impl Compound<'_, '_> {
    fn close(self) -> Result<()> {
        if let Some(w) = self.enc.words.get_mut(self.at) {
            *w = self.n;
        }
        Ok(())
    }

    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        self.n += 1;
        v.serialize(&mut *self.enc)
    }
}

/// Integers, widened to `i64` (`int`) or `u64` (`uint`).
macro_rules! numbers {
    (int: $($i:ident: $it:ty),*; uint: $($u:ident: $ut:ty),*) => {
        $(fn $i(self, v: $it) -> Result<()> {
            self.int(v.into())
        })*
        $(fn $u(self, v: $ut) -> Result<()> {
            self.uint(v.into())
        })*
    };
}

impl<'a, 'k> ser::Serializer for &'a mut Encoder<'k> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a, 'k>;
    type SerializeTuple = Compound<'a, 'k>;
    type SerializeTupleStruct = Compound<'a, 'k>;
    type SerializeTupleVariant = Compound<'a, 'k>;
    type SerializeMap = Compound<'a, 'k>;
    type SerializeStruct = Compound<'a, 'k>;
    type SerializeStructVariant = Compound<'a, 'k>;

    fn serialize_bool(self, v: bool) -> Result<()> {
        self.word(if v { tag::TRUE } else { tag::FALSE });
        self.room()
    }
    numbers!(
        int: serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64;
        uint: serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64
    );
    fn serialize_i128(self, v: i128) -> Result<()> {
        match i64::try_from(v) {
            Ok(v) => self.int(v),
            Err(_) => self.serialize_f64(v as f64),
        }
    }
    fn serialize_u128(self, v: u128) -> Result<()> {
        match u64::try_from(v) {
            Ok(v) => self.uint(v),
            Err(_) => self.serialize_f64(v as f64),
        }
    }
    fn serialize_f32(self, v: f32) -> Result<()> {
        // `serde_json` writes an f32's shortest digits, which `JSON.parse` reads as a double:
        // 0.1f32 is 0.1 there, not 0.10000000149011612.
        let v = if v.is_finite() {
            v.to_string().parse().unwrap_or(f64::NAN)
        } else {
            f64::NAN
        };
        self.f64(v);
        self.room()
    }
    fn serialize_f64(self, v: f64) -> Result<()> {
        self.f64(v);
        self.room()
    }
    fn serialize_char(self, v: char) -> Result<()> {
        self.value_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<()> {
        self.value_str(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        let mut seq = ser::Serializer::serialize_seq(self, Some(v.len()))?;
        for b in v {
            ser::SerializeSeq::serialize_element(&mut seq, b)?;
        }
        seq.close()
    }
    fn serialize_none(self) -> Result<()> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<()> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<()> {
        self.word(tag::NULL);
        self.room()
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<()> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<()> {
        self.value_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        v: &T,
    ) -> Result<()> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<()> {
        self.variant(variant)?;
        v.serialize(self)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a, 'k>> {
        self.open(tag::ARRAY)
    }
    fn serialize_tuple(self, len: usize) -> Result<Compound<'a, 'k>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Compound<'a, 'k>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'a, 'k>> {
        self.variant(variant)?;
        self.serialize_seq(Some(len))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a, 'k>> {
        self.open(tag::OBJECT)
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Compound<'a, 'k>> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'a, 'k>> {
        self.variant(variant)?;
        self.serialize_map(Some(len))
    }
}

/// The sequences' impls: each element one value, the count written at the end.
macro_rules! sequence {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Compound<'_, '_> {
            type Ok = ();
            type Error = Error;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
                self.element(v)
            }
            fn end(self) -> Result<()> {
                self.close()
            }
        }
    )*};
}

sequence!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<()> {
        self.n += 1;
        k.serialize(MapKey(&mut *self.enc))
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        v.serialize(&mut *self.enc)
    }
    fn end(self) -> Result<()> {
        self.close()
    }
}

impl ser::SerializeStruct for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, k: &'static str, v: &T) -> Result<()> {
        self.n += 1;
        self.enc.key(k)?;
        v.serialize(&mut *self.enc)
    }
    fn end(self) -> Result<()> {
        self.close()
    }
}

impl ser::SerializeStructVariant for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, k: &'static str, v: &T) -> Result<()> {
        ser::SerializeStruct::serialize_field(self, k, v)
    }
    fn end(self) -> Result<()> {
        self.close()
    }
}

/// Map keys that are numbers: their decimal text, as `serde_json` writes them.
macro_rules! key_as_text {
    ($($method:ident: $t:ty),*) => {$(
        fn $method(self, v: $t) -> Result<()> {
            self.0.key(&v.to_string())
        }
    )*};
}

/// Map keys `serde_json` refuses.
macro_rules! not_a_key {
    ($($method:ident: $t:ty),*) => {$(
        fn $method(self, _: $t) -> Result<()> {
            Err(not_a_key())
        }
    )*};
}

/// A map's key: what `serde_json` accepts as one (strings, and numbers, booleans and
/// characters as their text), refusing the rest as it does.
struct MapKey<'a, 'k>(&'a mut Encoder<'k>);

fn not_a_key() -> Error {
    Error::Other("key must be a string".to_owned())
}

impl<'a, 'k> ser::Serializer for MapKey<'a, 'k> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = ser::Impossible<(), Error>;
    type SerializeTuple = ser::Impossible<(), Error>;
    type SerializeTupleStruct = ser::Impossible<(), Error>;
    type SerializeTupleVariant = ser::Impossible<(), Error>;
    type SerializeMap = ser::Impossible<(), Error>;
    type SerializeStruct = ser::Impossible<(), Error>;
    type SerializeStructVariant = ser::Impossible<(), Error>;

    fn serialize_str(self, v: &str) -> Result<()> {
        self.0.key(v)
    }
    fn serialize_char(self, v: char) -> Result<()> {
        self.0.key(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_bool(self, v: bool) -> Result<()> {
        self.0.key(if v { "true" } else { "false" })
    }
    key_as_text!(
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_i128: i128,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_u128: u128
    );
    not_a_key!(
        serialize_f32: f32,
        serialize_f64: f64,
        serialize_bytes: &[u8],
        serialize_unit_struct: &'static str
    );
    fn serialize_none(self) -> Result<()> {
        Err(not_a_key())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<()> {
        Err(not_a_key())
    }
    fn serialize_unit(self) -> Result<()> {
        Err(not_a_key())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<()> {
        self.0.key(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<()> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<()> {
        Err(not_a_key())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(not_a_key())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> {
        Err(not_a_key())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(not_a_key())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(not_a_key())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        Err(not_a_key())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        Err(not_a_key())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(not_a_key())
    }
}

/// The last encoding handed over: its descriptor, and the buffers it points into (kept until
/// the next one, and reused by it).
#[derive(Default)]
struct Handed {
    desc: [u32; 4],
    words: Vec<u32>,
    text: String,
}

thread_local! {
    static HANDED: RefCell<Handed> = RefCell::new(Handed::default());
    static KEYS: RefCell<Keys> = RefCell::new(Keys::default());
}

/// Buffers grown past this by a long record (a verbose one lists every tensor) are let go
/// rather than kept for the next, small one.
const KEEP: usize = 1 << 20;

/// Encode `value` in at most `cap` bytes and hand it over: the address of its descriptor in
/// the module's memory, valid until the next encoding. On an error nothing is handed over:
/// the keys it would have told are forgotten.
pub(crate) fn hand_over<T: Serialize + ?Sized>(value: &T, cap: usize) -> Result<u32> {
    let (mut words, mut text) =
        HANDED.with_borrow_mut(|h| (std::mem::take(&mut h.words), std::mem::take(&mut h.text)));
    if words.capacity() > KEEP / 4 {
        words = Vec::new();
    }
    if text.capacity() > KEEP {
        text = String::new();
    }
    words.clear();
    text.clear();
    let encoded = KEYS.with_borrow_mut(|keys| {
        let mut enc = Encoder {
            words,
            text,
            units: 0,
            cap,
            keys,
        };
        let r = value.serialize(&mut enc);
        match r {
            Ok(()) => enc.keys.commit(),
            Err(_) => enc.keys.roll_back(),
        }
        (r, enc.words, enc.text)
    });
    let (result, words, text) = encoded;
    HANDED.with_borrow_mut(|h| {
        h.words = words;
        h.text = text;
        result?;
        h.desc = [
            h.words.as_ptr() as usize as u32,
            h.words.len() as u32,
            h.text.as_ptr() as usize as u32,
            h.text.len() as u32,
        ];
        Ok(h.desc.as_ptr() as usize as u32)
    })
}

#[cfg(test)]
thread_local! {
    /// The keys the test decoder has been told, as the wrapper keeps them.
    static TOLD: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Forget the keys told, on both sides (a fresh module instance, for tests).
#[cfg(test)]
pub(crate) fn forget_keys() {
    KEYS.set(Keys::default());
    TOLD.set(Vec::new());
}

/// The last encoding handed over, decoded as the wrapper decodes it (`js/lib/core.js`), for
/// tests.
#[cfg(test)]
pub(crate) fn decoded() -> serde_json::Value {
    let (words, text) = HANDED.with_borrow(|h| (h.words.clone(), h.text.clone()));
    TOLD.with_borrow_mut(|keys| {
        let mut d = tests::Decoder {
            words: &words,
            text: text.encode_utf16().collect(),
            keys,
            at: 0,
        };
        let v = d.value();
        assert_eq!(d.at, words.len(), "every word read");
        v
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// The wrapper's decoder, over `words` and `text` (as UTF-16), with its told `keys`.
    pub(super) struct Decoder<'a> {
        pub(super) words: &'a [u32],
        pub(super) text: Vec<u16>,
        pub(super) keys: &'a mut Vec<String>,
        pub(super) at: usize,
    }

    impl Decoder<'_> {
        fn next(&mut self) -> u32 {
            self.at += 1;
            self.words[self.at - 1]
        }

        fn slice(&mut self) -> String {
            let (at, len) = (self.next() as usize, self.next() as usize);
            String::from_utf16(&self.text[at..at + len]).expect("UTF-16")
        }

        fn key(&mut self) -> String {
            match self.next() {
                tag::KEY => {
                    let i = self.next() as usize;
                    self.keys[i].clone()
                }
                tag::NEW_KEY => {
                    let i = self.next() as usize;
                    assert_eq!(i, self.keys.len(), "keys told in order");
                    let k = self.slice();
                    self.keys.push(k.clone());
                    k
                }
                tag::STR => self.slice(),
                t => panic!("not a key: {t}"),
            }
        }

        pub(super) fn value(&mut self) -> Value {
            match self.next() {
                tag::NULL => Value::Null,
                tag::FALSE => Value::Bool(false),
                tag::TRUE => Value::Bool(true),
                tag::UINT => json!(self.next()),
                tag::F64 => {
                    let lo = u64::from(self.next());
                    let hi = u64::from(self.next());
                    json!(f64::from_bits(hi << 32 | lo))
                }
                tag::STR => Value::String(self.slice()),
                tag::KEY | tag::NEW_KEY => {
                    self.at -= 1;
                    Value::String(self.key())
                }
                tag::ARRAY => {
                    let n = self.next();
                    Value::Array((0..n).map(|_| self.value()).collect())
                }
                tag::OBJECT => {
                    let n = self.next();
                    let mut m = serde_json::Map::new();
                    for _ in 0..n {
                        let k = self.key();
                        let v = self.value();
                        m.insert(k, v);
                    }
                    Value::Object(m)
                }
                t => panic!("not a value: {t}"),
            }
        }
    }

    fn round_trip<T: Serialize + ?Sized>(v: &T) -> Value {
        hand_over(v, usize::MAX).expect("encoded");
        decoded()
    }

    fn told() -> Vec<String> {
        TOLD.with_borrow(Vec::clone)
    }

    /// Numbers as JSON.parse reads serde_json's digits: as doubles (in serde_json's `Value`,
    /// an integer that fits in 53 bits compares equal to the same double only as f64).
    fn as_doubles(v: Value) -> Value {
        match v {
            Value::Number(n) => json!(n.as_f64()),
            Value::Array(a) => Value::Array(a.into_iter().map(as_doubles).collect()),
            Value::Object(m) => {
                Value::Object(m.into_iter().map(|(k, v)| (k, as_doubles(v))).collect())
            }
            v => v,
        }
    }

    #[derive(serde::Serialize)]
    enum E {
        Unit,
        New(u8),
        Tuple(u8, &'static str),
        Struct { a: bool },
    }

    /// Every kind of value decodes to what JSON.parse makes of serde_json's text of it: keys in
    /// order (told once, then by index), strings beyond the BMP and the line separators,
    /// integers past 2^32 and below 0, non-finite floats as null, f32 by its shortest digits,
    /// enums as serde_json writes them.
    #[test]
    fn values_decode_as_json_parse_reads_their_json() {
        forget_keys();
        let mut metadata = BTreeMap::new();
        metadata.insert("__proto__", "x");
        metadata.insert("k\u{2028}\u{1F600}", "v\u{85}\u{1F600}é");
        let value = json!({
            "path": "dir/é\u{1F600}.safetensors",
            "n": [0, 1, 4_294_967_295_u64, 4_294_967_296_u64, 9_007_199_254_740_993_u64, u64::MAX, -1, i64::MIN],
            "f": [0.5, -0.0, 1e300],
            "t": true, "f2": false, "z": null,
            "nested": {"a": [], "b": {}, "c": [[1], {"d": "e"}]},
            "metadata": metadata,
        });
        let want = as_doubles(serde_json::from_str(&value.to_string()).expect("JSON"));
        assert_eq!(as_doubles(round_trip(&value)), want);
        let n = told().len();
        assert!(n > 5, "{:?}", told());
        // Again: the same keys, now by index, and none told twice.
        assert_eq!(as_doubles(round_trip(&value)), want);
        assert_eq!(told().len(), n);

        let others = (
            f64::NAN,
            f32::INFINITY,
            0.1_f32,
            'c',
            [E::Unit, E::New(1), E::Tuple(2, "x"), E::Struct { a: true }],
            BTreeMap::from([(7_u32, "seven")]),
            (),
            Some(3_i8),
        );
        let text = serde_json::to_string(&others).expect("JSON");
        let want = as_doubles(serde_json::from_str(&text).expect("JSON"));
        assert_eq!(as_doubles(round_trip(&others)), want, "{text}");
    }

    use std::collections::BTreeMap;

    /// A value past the bound is not handed over, and the keys it would have told are
    /// forgotten, so the next encoding tells them again (else the wrapper would read a key it
    /// never received).
    #[test]
    fn a_value_past_the_bound_tells_no_keys() {
        forget_keys();
        let long = json!({"first": "x".repeat(1000)});
        assert!(matches!(hand_over(&long, 100), Err(Error::TooLong)));
        let small = json!({"first": 1});
        assert_eq!(round_trip(&small), small);
        assert_eq!(told(), ["first"]);
    }

    /// Keys past [`MAX_KEY_LEN`] or past [`MAX_KEYS`] told go as strings: a header's names
    /// cannot grow the table without bound.
    #[test]
    fn the_key_table_is_bounded() {
        forget_keys();
        let long = "k".repeat(MAX_KEY_LEN + 1);
        let many: BTreeMap<String, u32> = (0..MAX_KEYS as u32 + 10)
            .map(|i| (format!("key{i:05}"), i))
            .chain([(long.clone(), 0)])
            .collect();
        let got = round_trip(&many);
        assert_eq!(got, serde_json::to_value(&many).expect("value"));
        assert_eq!(told().len(), MAX_KEYS);
        assert!(!told().contains(&long));
        assert_eq!(round_trip(&many), got);
        assert_eq!(told().len(), MAX_KEYS);
    }
}
