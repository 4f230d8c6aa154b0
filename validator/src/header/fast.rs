//! The fast path of header parsing: "the fast path accepts, the slow path explains".
//!
//! A hand-written scanner over the header text that handles only the shape real writers
//! produce (the reference serializer, Python `safetensors`, MLX, [`crate::write`]): an object
//! of entries `"name":{"dtype":"X","shape":[d,...],"data_offsets":[b,e]}` (fields in any
//! order), with an optional `"__metadata__"` that is an object of strings or `null`, anywhere
//! among the entries; strings without any backslash escape; plain decimal integers that fit in
//! u64; JSON whitespace between tokens and after the object.
//!
//! It never reports a finding. On anything outside that shape, and on anything the serde path
//! would reject — a syntax error, a duplicate key at any level, an unknown dtype, a size
//! mismatch, a name that breaks a `NAME-*` error rule — it returns `None`, and
//! [`super::parse`] parses the header again from the start with the serde path, which gives
//! the finding, its offset and its message. So every error comes from one place and this
//! module only changes speed; the differential hook [`header_fast_vs_slow`] checks that
//! whatever it accepts, the serde path accepts with exactly the same [`Parsed`].
//!
//! Rule logic is not repeated here: dtypes go through [`Dtype::from_name`], sizes through
//! [`crate::size::check`], names through the same [`super::plain_name`] /
//! [`names::check_error`] / [`names::check_warnings`] sequence as the serde path.
//!
//! Duplicate tensor names: instead of a hash table probed per name (random memory access,
//! the dominant cost on a 100 MB header), each name's 64-bit hash is appended to a vector,
//! which is sorted once at the end. Any two equal hashes, whether a duplicate name or a
//! collision, send the header to the serde path, so the result never depends on the hash
//! function: an attacker who forces collisions only forces the slow path.

use std::hash::BuildHasher as _;

use super::{plain_name, Metadata, MetadataForm, Parsed, Record, HEADER_START, TYPICAL_ENTRY_LEN};
use crate::dtype::Dtype;
use crate::error::Finding;
use crate::json::KeyTable;
use crate::names;
use crate::warnings::Warnings;

/// Parse a header of the canonical shape; `None` when the serde path must decide.
pub(crate) fn parse(text: &str, warnings: Warnings) -> Option<Parsed> {
    let mut parsed = Parsed::new(text.len(), warnings);
    let mut hashes: Vec<u64> = Vec::with_capacity(text.len() / TYPICAL_ENTRY_LEN);
    let hasher = crate::json::key_hasher();
    let mut s = Scanner {
        text,
        b: text.as_bytes(),
        pos: 0,
    };
    let mut seen_metadata = false;

    s.ws();
    s.eat(b'{')?;
    s.ws();
    if !s.eat_if(b'}') {
        loop {
            let (quote, key, certainly_plain) = s.string()?;
            s.ws();
            s.eat(b':')?;
            s.ws();
            if key == "__metadata__" {
                if seen_metadata {
                    return None;
                }
                seen_metadata = true;
                s.metadata(&mut parsed)?;
            } else {
                let offset = HEADER_START + quote as u64;
                // The first-byte checks of `plain_name`; the rest came with the scan.
                let plain = certainly_plain
                    && key
                        .as_bytes()
                        .first()
                        .is_some_and(|&c| c != b'/' && c != b'\\');
                if !plain && !plain_name(key) {
                    if names::check_error(key).is_some() {
                        return None;
                    }
                    for (rule, message) in names::check_warnings(key) {
                        parsed
                            .warnings
                            .push(Finding::new(rule, offset, message).with_tensor(key));
                    }
                } else if let Some((rule, message)) = names::special_warning(key) {
                    parsed
                        .warnings
                        .push(Finding::new(rule, offset, message).with_tensor(key));
                }
                hashes.push(hasher.hash_one(key));
                let record = s.entry(&mut parsed.dims)?;
                parsed
                    .tensors
                    .push(record.with_plain_name(quote, key.len())?);
            }
            s.ws();
            match s.next()? {
                b',' => s.ws(),
                b'}' => break,
                _ => return None,
            }
        }
    }
    s.ws();
    if s.pos != s.b.len() {
        return None;
    }
    if has_equal(&mut hashes) {
        return None;
    }
    Some(parsed)
}

/// Bits per radix digit in [`has_equal`].
const DIGIT: u32 = 12;

/// Whether two of the hashes are equal; reorders them. Small inputs are sorted. Large ones are
/// ordered by their top 24 bits with two counting-sort passes (sequential reads, and writes to
/// 4,096 streams whose ends stay in cache), then each run with the same top bits, about one
/// element long for random hashes, is sorted and checked. Exact whatever the hashes are: runs
/// of any length are sorted, never compared pairwise.
fn has_equal(hashes: &mut [u64]) -> bool {
    if hashes.len() < 1 << 14 {
        hashes.sort_unstable();
        return hashes.windows(2).any(|w| w[0] == w[1]);
    }
    let mut tmp = vec![0u64; hashes.len()];
    radix_pass(hashes, &mut tmp, 64 - 2 * DIGIT);
    radix_pass(&tmp, hashes, 64 - DIGIT);
    hashes
        .chunk_by_mut(|a, b| a >> (64 - 2 * DIGIT) == b >> (64 - 2 * DIGIT))
        .any(|run| {
            run.sort_unstable();
            run.windows(2).any(|w| w[0] == w[1])
        })
}

/// One stable counting-sort pass of `src` into `dst` (same length) by the digit at `shift`.
fn radix_pass(src: &[u64], dst: &mut [u64], shift: u32) {
    let digit = |h: u64| (h >> shift) as usize & ((1 << DIGIT) - 1);
    let mut next = vec![0usize; 1 << DIGIT];
    for &h in src {
        if let Some(c) = next.get_mut(digit(h)) {
            *c += 1;
        }
    }
    let mut sum = 0;
    for c in &mut next {
        let n = *c;
        *c = sum;
        sum += n;
    }
    for &h in src {
        if let Some(c) = next.get_mut(digit(h)) {
            if let Some(slot) = dst.get_mut(*c) {
                *slot = h;
            }
            *c += 1;
        }
    }
}

/// Scan a string's contents: the index of the first byte of `b` that ends or escapes a JSON
/// string or cannot appear in one raw (`"`, `\\`, a control byte below 0x20), and whether the
/// bytes before it are *certainly* free of what makes [`super::plain_name`] false in its
/// middle: a byte outside 0x20..=0x7E, or two dots in a row.
///
/// Eight bytes at a time (SWAR). For each byte predicate, the classic "has zero byte"
/// expression `(v - 0x01..) & !v & 0x80..` sets the high bit of every matching byte, and may
/// also set it on bytes *above* a matching byte (borrows), never below the lowest match. So the
/// lowest set bit of the stop mask is exactly the first stop byte; and within the bytes before
/// it, a set bit of the DEL mask implies a real DEL at or below it, while the dot mask is a
/// superset of the real dots, so "no two flagged bytes in a row" implies no `..`: the plainness
/// answer can only err towards "not certain", which sends the name to `plain_name` itself.
#[inline(always)]
fn scan_string(b: &[u8]) -> Option<(usize, bool)> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let matches = |w: u64, c: u8| {
        let x = w ^ (LO * u64::from(c));
        x.wrapping_sub(LO) & !x & HI
    };
    let mut i = 0;
    // Bits of bytes outside 0x20..=0x7E, and of adjacent dots, before the stop byte.
    let mut odd = 0u64;
    let mut prev_dots = 0u64;
    let mut chunks = b.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let stop = (matches(w, b'"') | matches(w, b'\\') | (w.wrapping_sub(LO * 0x20) & !w)) & HI;
        // The bytes before the stop byte (all eight if there is none).
        let k = stop.trailing_zeros() / 8;
        let before = if k >= 8 {
            u64::MAX
        } else {
            (1u64 << (8 * k)) - 1
        };
        let dots = matches(w, b'.') & before;
        odd |= ((w & HI) | matches(w, 0x7f)) & before;
        odd |= dots & (dots >> 8);
        odd |= (prev_dots >> 56) & dots & 0x80;
        prev_dots = dots;
        if stop != 0 {
            return Some((i + k as usize, odd == 0));
        }
        i += 8;
    }
    let tail = chunks.remainder();
    tail.iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|j| (i + j, false))
}

/// A cursor over the header text. Every read is bounds-checked (`get`), so malformed input
/// can only make it return `None`.
struct Scanner<'a> {
    text: &'a str,
    b: &'a [u8],
    pos: usize,
}

impl<'a> Scanner<'a> {
    /// Skip JSON whitespace (the four bytes RFC 8259 and serde_json allow).
    #[inline]
    fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.pos) {
            if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    /// The next byte, consumed.
    #[inline]
    fn next(&mut self) -> Option<u8> {
        let c = *self.b.get(self.pos)?;
        self.pos += 1;
        Some(c)
    }

    /// Consume `c`, or decline.
    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    /// Consume `c` if it is next.
    #[inline]
    fn eat_if(&mut self, c: u8) -> bool {
        let hit = self.b.get(self.pos) == Some(&c);
        if hit {
            self.pos += 1;
        }
        hit
    }

    /// A string without escapes or raw control characters: the index of its opening quote, its
    /// contents borrowed from the text, and whether it is certainly a plain name (see
    /// [`scan_string`]) apart from the checks on its first byte.
    #[inline(always)]
    fn string(&mut self) -> Option<(usize, &'a str, bool)> {
        let quote = self.pos;
        if self.b.get(quote) != Some(&b'"') {
            return None;
        }
        let start = quote + 1;
        let (len, plain) = scan_string(self.b.get(start..)?)?;
        let end = start + len;
        if self.b.get(end) != Some(&b'"') {
            return None;
        }
        self.pos = end + 1;
        // Both ends are ASCII bytes of valid UTF-8, so they are character boundaries.
        Some((quote, self.text.get(start..end)?, plain))
    }

    /// A plain non-negative decimal integer that fits in u64 (no sign, no leading zero, no
    /// fraction or exponent).
    #[inline]
    fn uint(&mut self) -> Option<u64> {
        let start = self.pos;
        let mut i = start;
        let mut v = 0u64;
        while let Some(&c) = self.b.get(i) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            // Cannot overflow within 19 digits (10^19 - 1 < 2^64); longer runs are redone
            // below with checked arithmetic.
            v = v.wrapping_mul(10).wrapping_add(u64::from(d));
            i += 1;
        }
        let digits = self.b.get(start..i)?;
        match digits {
            [] => return None,
            [b'0', _, ..] => return None,
            _ if digits.len() >= 20 => {
                v = digits.iter().try_fold(0u64, |acc, &c| {
                    acc.checked_mul(10)?.checked_add(u64::from(c - b'0'))
                })?;
            }
            _ => {}
        }
        if matches!(self.b.get(i), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        self.pos = i;
        Some(v)
    }

    /// A key of a tensor entry: 0 for `"dtype"`, 1 for `"shape"`, 2 for `"data_offsets"`
    /// (exact bytes, so an escaped spelling is declined like any other key).
    #[inline]
    fn field(&mut self) -> Option<u8> {
        let rest = self.b.get(self.pos..)?;
        let (field, len) = if rest.starts_with(b"\"dtype\"") {
            (0, 7)
        } else if rest.starts_with(b"\"shape\"") {
            (1, 7)
        } else if rest.starts_with(b"\"data_offsets\"") {
            (2, 14)
        } else {
            return None;
        };
        self.pos += len;
        Some(field)
    }

    /// The value of `__metadata__`: `null` or an object of strings with distinct keys.
    fn metadata(&mut self, parsed: &mut Parsed) -> Option<()> {
        if self.b.get(self.pos..)?.starts_with(b"null") {
            self.pos += 4;
            parsed.metadata.form = MetadataForm::Null;
            return Some(());
        }
        let open = self.pos;
        self.eat(b'{')?;
        let mut meta = Metadata {
            form: MetadataForm::Map,
            open: u32::try_from(open).ok(),
            len: 0,
            total_parameters: None,
        };
        self.ws();
        if !self.eat_if(b'}') {
            let mut keys = KeyTable::new();
            loop {
                let (quote, key, _) = self.string()?;
                if keys.insert(self.text, quote, key).is_some() {
                    return None;
                }
                if key == "total_parameters" {
                    meta.total_parameters = Some(u32::try_from(quote).ok()?);
                }
                self.ws();
                self.eat(b':')?;
                self.ws();
                self.string()?;
                meta.len += 1;
                self.ws();
                match self.next()? {
                    b',' => self.ws(),
                    b'}' => break,
                    _ => return None,
                }
            }
        }
        parsed.metadata = meta;
        Some(())
    }

    /// A tensor entry with exactly `dtype`, `shape` and `data_offsets`, in any order, whose
    /// size checks pass; its dimensions are appended to `dims`.
    fn entry(&mut self, dims: &mut Vec<u64>) -> Option<Record> {
        self.eat(b'{')?;
        let mut dtype: Option<Dtype> = None;
        let mut shape: Option<(usize, usize)> = None;
        let mut offsets: Option<(u64, u64)> = None;
        loop {
            self.ws();
            let field = self.field()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            match field {
                0 if dtype.is_none() => {
                    let (_, v, _) = self.string()?;
                    dtype = Some(Dtype::from_name(v)?);
                }
                1 if shape.is_none() => {
                    self.eat(b'[')?;
                    let start = dims.len();
                    self.ws();
                    if !self.eat_if(b']') {
                        loop {
                            dims.push(self.uint()?);
                            self.ws();
                            match self.next()? {
                                b',' => self.ws(),
                                b']' => break,
                                _ => return None,
                            }
                        }
                    }
                    shape = Some((start, dims.len() - start));
                }
                2 if offsets.is_none() => {
                    self.eat(b'[')?;
                    self.ws();
                    let begin = self.uint()?;
                    self.ws();
                    self.eat(b',')?;
                    self.ws();
                    let end = self.uint()?;
                    self.ws();
                    self.eat(b']')?;
                    offsets = Some((begin, end));
                }
                // An unknown or repeated field.
                _ => return None,
            }
            self.ws();
            match self.next()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
        }
        let (dtype, (start, len), (begin, end)) = (dtype?, shape?, offsets?);
        crate::size::check(dtype, dims.get(start..start + len)?, begin, end).ok()?;
        let dims = (u32::try_from(start).ok()?, u32::try_from(len).ok()?);
        Some(Record::unnamed(dtype, dims, begin, end))
    }
}

/// How the two paths agreed on one header (see [`header_fast_vs_slow`]).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FastVsSlow {
    /// The fast path accepted, and the serde path gave exactly the same result.
    FastAccepted,
    /// The fast path declined and the serde path accepted (e.g. an escaped string).
    SlowOnlyAccepted,
    /// The fast path declined and the serde path rejected.
    BothRejected,
    /// Not UTF-8 text without a byte-order mark: neither path sees it.
    NotText,
}

/// Differential check of the fast path against the serde path on one header (the N bytes
/// after the length field), for tests and fuzzing: both paths run on the text. `Err` (a bug
/// in the fast path, described) when the fast path accepts and the serde path rejects or
/// gives a different result in any respect: tensors, names, dtypes, dimensions, offsets,
/// element counts, metadata and its offsets, warnings with their offsets and messages.
#[doc(hidden)]
pub fn header_fast_vs_slow(header: &[u8]) -> Result<FastVsSlow, String> {
    let Ok((text, _)) = crate::frame::header_text(header) else {
        return Ok(FastVsSlow::NotText);
    };
    let none = Warnings::new(crate::limits::DEFAULT_MAX_WARNINGS_PER_RULE);
    let fast = parse(text, none.clone());
    let slow = super::parse_slow(text, none);
    match (fast, slow) {
        (None, Ok(_)) => Ok(FastVsSlow::SlowOnlyAccepted),
        (None, Err(_)) => Ok(FastVsSlow::BothRejected),
        (Some(_), Err(e)) => Err(format!(
            "the fast path accepts a header the serde path rejects: {e}"
        )),
        (Some(fast), Ok(slow)) => compare(text, &fast, &slow).map(|()| FastVsSlow::FastAccepted),
    }
}

fn compare(text: &str, fast: &Parsed, slow: &Parsed) -> Result<(), String> {
    fn same<T: PartialEq + std::fmt::Debug>(what: &str, f: T, s: T) -> Result<(), String> {
        if f == s {
            Ok(())
        } else {
            Err(format!("{what} differ: fast {f:?}, serde {s:?}"))
        }
    }
    same("tensor counts", fast.tensors.len(), slow.tensors.len())?;
    for (i, (f, s)) in fast.tensors.iter().zip(&slow.tensors).enumerate() {
        let key = |r: &Record, p: &Parsed| {
            (
                r.name(text, &p.names).to_owned(),
                r.offset(&p.names),
                r.dtype,
                r.dims_start,
                r.dims_len,
                r.begin,
                r.end,
            )
        };
        same(&format!("records #{i}"), key(f, fast), key(s, slow))?;
    }
    same("dims", &fast.dims, &slow.dims)?;
    same("metadata", fast.metadata, slow.metadata)?;
    same("warnings", fast.warnings.sorted(), slow.warnings.sorted())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{plain_name, scan_string};

    fn naive(b: &[u8]) -> Option<usize> {
        b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20)
    }

    /// `has_equal` against a sort, on inputs above and below the radix threshold, with equal
    /// values planted anywhere, including values that share their top bits.
    #[test]
    fn has_equal_finds_exactly_the_equal_pairs() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for n in [0usize, 1, 2, 100, (1 << 14) - 1, 1 << 14, 50_000] {
            let base: Vec<u64> = (0..n).map(|_| next()).collect();
            let mut sorted = base.clone();
            sorted.sort_unstable();
            let expect = sorted.windows(2).any(|w| w[0] == w[1]);
            assert_eq!(super::has_equal(&mut base.clone()), expect, "n={n}");
            if n >= 2 {
                for _ in 0..20 {
                    let (i, j) = (next() as usize % n, next() as usize % n);
                    let mut v = base.clone();
                    // Same top 24 bits, different value: not a duplicate.
                    v[j] = (v[i] & !0xff) | ((v[i] & 0xff) ^ 1);
                    let mut s = v.clone();
                    s.sort_unstable();
                    let expect = s.windows(2).any(|w| w[0] == w[1]);
                    assert_eq!(super::has_equal(&mut v.clone()), expect);
                    if i != j {
                        v[j] = v[i];
                        assert!(super::has_equal(&mut v), "n={n} i={i} j={j}");
                    }
                }
            }
        }
        // Many values with the same top bits (a long run), all distinct, then one repeat.
        let mut v: Vec<u64> = (0..40_000u64).map(|i| (7u64 << 40) | i).collect();
        assert!(!super::has_equal(&mut v.clone()));
        v[39_999] = v[123];
        assert!(super::has_equal(&mut v));
    }

    /// The stop position is exact; "certainly plain" implies `plain_name` of the bytes before
    /// it (given a first byte other than `/` and `\\`).
    fn check(b: &[u8]) {
        let got = scan_string(b);
        assert_eq!(got.map(|(i, _)| i), naive(b), "{b:?}");
        if let Some((i, true)) = got {
            if let Ok(s) = std::str::from_utf8(&b[..i]) {
                let s = format!("a{s}");
                assert!(plain_name(&s), "{b:?}");
            }
            assert!(b[..i].iter().all(|&c| (0x20..0x7f).contains(&c)), "{b:?}");
            assert!(!b[..i].windows(2).any(|w| w == b".."), "{b:?}");
        }
    }

    /// Every byte value at every position of a 19-byte buffer (two words and a tail), over
    /// fillers next to the predicates' edges, with and without a second stop byte after it.
    #[test]
    fn stop_position_matches_the_naive_scan() {
        let fillers = [
            0x20u8, 0x21, 0x23, 0x2d, 0x2e, 0x2f, 0x5b, 0x5d, 0x7e, 0x7f, 0x80, 0xa2, 0xdc, 0xff,
            b'a',
        ];
        for &fill in &fillers {
            for len in 0..19 {
                let base = vec![fill; len];
                check(&base);
                for at in 0..len {
                    for byte in 0..=255u8 {
                        let mut b = base.clone();
                        b[at] = byte;
                        check(&b);
                        if at + 1 < len {
                            b[at + 1] = b'"';
                            check(&b);
                            b[at + 1] = 0x00;
                            check(&b);
                            b[at + 1] = b'.';
                            check(&b);
                        }
                    }
                }
            }
        }
    }
}
