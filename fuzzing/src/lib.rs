//! Fuzzing logic shared by the `fuzz/` targets and the seeded smoke tests that ordinary
//! `cargo test` runs on stable. Not a stable API.
//!
//! Every target of `fuzz/` is one line that calls a function here:
//!
//! - [`check_validate`]: any bytes; never panics, every offset lies within the input, the
//!   verdict is deterministic and `deny_warnings` promotes exactly the first warning.
//! - [`Structured::check`]: a generated, strictly valid model written by
//!   [`stcheck::write::serialize`], then at most one [`Mutation`] whose verdict is asserted.
//! - [`check_stream`]: the streaming validator, fed through arbitrary short reads, agrees with
//!   the whole-buffer validator on verdict, rule, offset, tensor and message.
//! - [`check_differential`]: the reference crate (`safetensors` 0.8.0) on the same bytes.
//!
//! The generators ([`Structured`], [`IndexCase`]) draw every choice from a [`Source`] of
//! bytes. The fuzz targets drive them from libFuzzer's input through `arbitrary::Unstructured`
//! (their `Arbitrary` impls exist with the `arbitrary` feature); the smoke tests drive them
//! from a seeded [`Rng`] (or a fixed slice, [`ByteSource`]). So the same logic runs on stable
//! without the feature, and `arbitrary` stays an optional dependency of the library.
//! The `index` target is also here ([`IndexCase::check`]): generated shard sets checked in
//! memory by [`stcheck::index::check_index`].
//!
//! The checks panic on a broken property (that is how a fuzzer sees a finding), with a message
//! that starts with `FUZZ FINDING`.

use std::collections::HashSet;
use std::io::{self, Read};
use std::sync::Mutex;

use stcheck::reference::{self, RefTensor, Verdict};
use stcheck::write::{self, TensorSpec};
use stcheck::{Config, Dtype, Error, Report, Rule};

// ---------------------------------------------------------------------------------------------
// Sources of choices

/// Where a generator draws its choices from. Exhausted sources return zeros, which always
/// select the smallest choice, so every input generates something.
pub trait Source {
    /// The next byte.
    fn byte(&mut self) -> u8;

    /// A little-endian u32.
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }

    /// A little-endian u64.
    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }

    /// A number in `0..n` (`0` if `n` is 0). Small ranges take one byte.
    fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            0
        } else if n <= 256 {
            u64::from(self.byte()) % n
        } else if n <= 1 << 32 {
            u64::from(self.u32()) % n
        } else {
            self.u64() % n
        }
    }

    /// A number in `0..=max`.
    fn upto(&mut self, max: u64) -> u64 {
        if max == u64::MAX {
            self.u64()
        } else {
            self.below(max + 1)
        }
    }

    /// A coin with probability `num / 256`.
    fn chance(&mut self, num: u8) -> bool {
        self.byte() < num
    }

    /// One of `items` (which must not be empty).
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// A seeded pseudo-random source (SplitMix64), for the smoke tests.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
    buf: u64,
    left: u8,
}

impl Rng {
    /// A source seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng {
            state: seed,
            buf: 0,
            left: 0,
        }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.byte()).collect()
    }
}

impl Source for Rng {
    fn byte(&mut self) -> u8 {
        if self.left == 0 {
            self.buf = self.next_u64();
            self.left = 8;
        }
        let b = self.buf as u8;
        self.buf >>= 8;
        self.left -= 1;
        b
    }
}

/// A byte slice as a source: its bytes in order, then zeros.
#[derive(Debug, Clone)]
pub struct ByteSource<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> ByteSource<'a> {
    /// A source reading `data`.
    pub fn new(data: &'a [u8]) -> Self {
        ByteSource { data, pos: 0 }
    }
}

impl Source for ByteSource<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos = self.pos.saturating_add(1);
        b
    }
}

#[cfg(feature = "arbitrary")]
impl Source for arbitrary::Unstructured<'_> {
    fn byte(&mut self) -> u8 {
        <u8 as arbitrary::Arbitrary<'_>>::arbitrary(self).unwrap_or(0)
    }
}

// ---------------------------------------------------------------------------------------------
// Target `validate`: any bytes

/// A comparable summary of a verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Accepted: the owned report's tensors (name, dtype, shape, begin, end) and warnings.
    Accept {
        /// The tensors in offset order.
        tensors: Vec<(String, Dtype, Vec<u64>, u64, u64)>,
        /// The warnings.
        warnings: Vec<stcheck::Warning>,
    },
    /// Rejected with this error.
    Reject(Error),
}

/// Summarise a verdict.
pub fn outcome(result: &Result<Report<'_>, Error>) -> Outcome {
    match result {
        Ok(r) => Outcome::Accept {
            tensors: r
                .tensors()
                .map(|t| (t.name.to_owned(), t.dtype, t.shape.to_vec(), t.begin, t.end))
                .collect(),
            warnings: r.warnings().to_vec(),
        },
        Err(e) => Outcome::Reject(e.clone()),
    }
}

/// The `validate` target: never panics, every offset within the input, deterministic, and
/// `deny_warnings` promotes exactly the first warning.
pub fn check_validate(data: &[u8]) {
    let config = Config::default();
    let first = stcheck::validate(data, &config);
    let len = data.len() as u64;
    match &first {
        Err(e) => assert!(
            e.offset() <= len,
            "FUZZ FINDING: error offset {} beyond the input's {len} bytes: {e}",
            e.offset()
        ),
        Ok(r) => {
            for w in r.warnings() {
                assert!(
                    w.offset() <= len,
                    "FUZZ FINDING: warning offset beyond the input's {len} bytes: {w}"
                );
            }
            assert_eq!(
                r.file_len(),
                len,
                "FUZZ FINDING: accepted file of another length"
            );
            for t in r.tensors() {
                assert!(
                    t.file_begin <= t.file_end && t.file_end <= len && t.header_offset < len,
                    "FUZZ FINDING: tensor {:?} lies outside the file",
                    t.name
                );
                assert_eq!(t.data(data).len() as u64, t.byte_len());
            }
        }
    }
    let a = outcome(&first);
    let b = outcome(&stcheck::validate(data, &config));
    assert_eq!(a, b, "FUZZ FINDING: validating twice gave two verdicts");

    let strict = outcome(&stcheck::validate(
        data,
        &config.clone().deny_warnings(true),
    ));
    let expected = match a {
        Outcome::Accept { warnings, .. } if !warnings.is_empty() => {
            Outcome::Reject(warnings[0].clone().into())
        }
        other => other,
    };
    assert_eq!(
        strict, expected,
        "FUZZ FINDING: deny_warnings did not promote exactly the first warning"
    );
}

// ---------------------------------------------------------------------------------------------
// Target `stream`: chunked reads vs the whole buffer

/// A reader over a byte slice that returns short reads of the sizes in `schedule` (cycled),
/// and `ErrorKind::Interrupted` where a schedule byte is 0xFF.
#[derive(Debug)]
pub struct ChunkedReader<'a> {
    data: &'a [u8],
    schedule: &'a [u8],
    step: usize,
    interrupted: bool,
}

impl<'a> ChunkedReader<'a> {
    /// Read `data` in chunks given by `schedule`; an empty schedule fills every read.
    pub fn new(data: &'a [u8], schedule: &'a [u8]) -> Self {
        ChunkedReader {
            data,
            schedule,
            step: 0,
            interrupted: false,
        }
    }
}

impl Read for ChunkedReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() || self.data.is_empty() {
            return Ok(0);
        }
        let limit = if self.schedule.is_empty() {
            buf.len()
        } else {
            let s = self.schedule[self.step % self.schedule.len()];
            self.step = self.step.wrapping_add(1);
            // Never two interruptions in a row, so every schedule makes progress.
            if s == 0xFF && !std::mem::replace(&mut self.interrupted, true) {
                return Err(io::Error::new(io::ErrorKind::Interrupted, "fuzz"));
            }
            self.interrupted = false;
            // 1..=128 bytes, or a multiple of 4 KiB for large regions.
            if s < 0x80 {
                usize::from(s) + 1
            } else {
                usize::from(s - 0x7F) * 4096
            }
        };
        let k = limit.min(buf.len()).min(self.data.len());
        buf[..k].copy_from_slice(&self.data[..k]);
        self.data = &self.data[k..];
        Ok(k)
    }
}

/// Split a `stream` target input: the last byte L (mod 64) is the length of the chunk schedule
/// `fast_path` target: the header fast path accepts only what the serde path accepts, and with
/// the same records, metadata and warnings. `header` is the N bytes after the length field.
pub fn check_fast_path(header: &[u8]) {
    if let Err(difference) = stcheck::internal::header_fast_vs_slow(header) {
        panic!("the header fast path differs from the serde path: {difference}");
    }
}

/// that precedes it; the rest is the file. Seeds are files with one 0x00 byte appended.
pub fn split_stream_input(data: &[u8]) -> (&[u8], &[u8]) {
    let Some((&last, rest)) = data.split_last() else {
        return (&[], &[]);
    };
    let l = usize::from(last % 64).min(rest.len());
    let (file, schedule) = rest.split_at(rest.len() - l);
    (file, schedule)
}

/// The `stream` target on a split input (see [`split_stream_input`]).
pub fn check_stream_input(data: &[u8]) {
    let (file, schedule) = split_stream_input(data);
    check_stream(file, schedule);
}

/// The one checker, fed `file` through reads in the chunks of `schedule`, gives the same
/// verdict, rule, offset, tensor and message, the same report, deep counts and hash as when it
/// is handed the whole buffer ([`stcheck::Checker::check_slice`]).
pub fn check_stream(file: &[u8], schedule: &[u8]) {
    for config in [
        Config::default(),
        Config::default().deny_warnings(true),
        Config::default().deep(true).sha256(true),
    ] {
        let whole = stcheck::Checker::check_slice(&config, file);
        let streamed = match stcheck::check_reader(ChunkedReader::new(file, schedule), &config) {
            Ok(c) => c,
            Err(e) => panic!("FUZZ FINDING: the streaming checker failed to read a slice: {e}"),
        };
        assert_eq!(
            (outcome(&streamed.verdict), &streamed.deep, streamed.sha256),
            (outcome(&whole.verdict), &whole.deep, whole.sha256),
            "FUZZ FINDING: streamed and whole-buffer checks differ ({config:?})"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Target `differential`: the reference crate

/// What the differential check saw on one input, when it is no violation of the contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Differential {
    /// Both accept and read the same tensors.
    BothAccept,
    /// Both reject.
    BothReject,
    /// The reference accepts, strict rejects under a rule documented as a difference.
    Documented(Rule),
    /// The reference panicked (a finding in the reference crate); strict rejected the input
    /// with this rule.
    ReferencePanic {
        /// The panic message.
        message: String,
        /// Strict's rule.
        strict: Rule,
    },
}

/// Run the reference with the panic hook silenced, so a panic in the reference is caught by
/// [`reference::verdict`] even under libFuzzer, whose hook aborts the process on any panic.
fn reference_verdict_quiet(file: &[u8]) -> Verdict {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let v = reference::verdict(file);
    std::panic::set_hook(previous);
    v
}

/// Strict's tensors in the reference's form, sorted as [`reference::verdict`] sorts.
fn as_ref_tensors(report: &Report<'_>) -> Vec<RefTensor> {
    let mut v: Vec<RefTensor> = report
        .tensors()
        .map(|t| RefTensor {
            name: t.name.to_owned(),
            dtype: t.dtype.name().to_owned(),
            shape: t.shape.to_vec(),
            file_begin: t.file_begin,
            file_end: t.file_end,
        })
        .collect();
    v.sort_by(|a, b| (a.file_begin, a.file_end, &a.name).cmp(&(b.file_begin, b.file_end, &b.name)));
    v
}

/// The differential check. Panics (a finding against the documented contract) when strict
/// accepts and the reference does not accept the same tensors, when the reference accepts
/// and strict rejects under a rule not on the documented list, or when the reference panics
/// and strict accepts. A reference panic on an input strict rejects is returned, not raised.
pub fn check_differential(file: &[u8]) -> Differential {
    let strict = stcheck::validate(file, &Config::default());
    let reference = reference_verdict_quiet(file);
    match (&strict, reference) {
        (Ok(report), Verdict::Accept(theirs)) => {
            let ours = as_ref_tensors(report);
            assert_eq!(
                ours, theirs,
                "FUZZ FINDING: strict and the reference accept with different tensors"
            );
            Differential::BothAccept
        }
        (Ok(_), other) => {
            panic!("FUZZ FINDING: strict accepts a file the reference does not load: {other:?}")
        }
        (Err(e), Verdict::Accept(_)) => {
            assert!(
                e.rule().reference_divergence().is_some(),
                "FUZZ FINDING: the reference accepts, strict rejects under {} which is not on \
                 the documented list of differences: {e}",
                e.rule()
            );
            Differential::Documented(e.rule())
        }
        (Err(_), Verdict::Reject(_)) => Differential::BothReject,
        (Err(e), Verdict::Panic(message)) => Differential::ReferencePanic {
            message,
            strict: e.rule(),
        },
    }
}

static REFERENCE_PANICS: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// The `differential` target: [`check_differential`], reporting each distinct reference panic
/// once on stderr as `REFERENCE FINDING: ...`, and saving the input under
/// `$STCHECK_FINDINGS_DIR` when that is set. The harness keeps running.
pub fn differential_target(file: &[u8]) {
    if let Differential::ReferencePanic { message, strict } = check_differential(file) {
        let mut seen = REFERENCE_PANICS.lock().unwrap_or_else(|p| p.into_inner());
        if seen
            .get_or_insert_with(HashSet::new)
            .insert(message.clone())
        {
            eprintln!(
                "REFERENCE FINDING: safetensors 0.8.0 panicked ({message:?}) on a {}-byte input \
                 that strict rejects with {strict}",
                file.len()
            );
            if let Some(dir) = std::env::var_os("STCHECK_FINDINGS_DIR") {
                let path = std::path::Path::new(&dir)
                    .join(format!("reference-panic-{}.safetensors", seen_hash(file)));
                if let Err(e) = std::fs::write(&path, file) {
                    eprintln!("could not save {}: {e}", path.display());
                }
            }
        }
    }
}

fn seen_hash(data: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(data);
    d.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

// ---------------------------------------------------------------------------------------------
// The generator of valid models

/// Swarm-style upper bounds, drawn first: each case explores a corner of the space.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Most tensors.
    pub max_tensors: u64,
    /// Highest rank.
    pub max_rank: u64,
    /// Largest dimension.
    pub max_dim: u64,
    /// Longest name, in characters.
    pub max_name_len: u64,
    /// Which name alphabets are on (bit 0 ASCII letters, 1 digits and `._-/`, 2 JSON
    /// characters that need escapes, 3 common non-ASCII, 4 any Unicode scalar).
    pub name_classes: u8,
    /// Which dtypes may appear (bit i = `Dtype::ALL[i]`).
    pub dtypes: u32,
    /// Most metadata entries.
    pub max_metadata: u64,
    /// Most data bytes in all.
    pub data_budget: u64,
}

impl Bounds {
    /// Draw bounds.
    pub fn generate(src: &mut impl Source) -> Self {
        let mut dtypes = src.u32() & ((1 << Dtype::ALL.len()) - 1);
        if dtypes == 0 {
            dtypes = (1 << Dtype::ALL.len()) - 1;
        }
        let mut name_classes = src.byte() & 0x1F;
        if name_classes == 0 {
            name_classes = 1;
        }
        Bounds {
            max_tensors: src.pick(&[0, 1, 2, 3, 4, 6, 8, 12, 16, 32]),
            max_rank: src.upto(6),
            max_dim: src.pick(&[0, 1, 2, 3, 4, 5, 8, 16, 64, 255, 1000]),
            max_name_len: src.pick(&[0, 1, 2, 4, 8, 16, 40]),
            name_classes,
            dtypes,
            max_metadata: src.upto(5),
            data_budget: src.pick(&[0, 8, 64, 512, 4096, 65536]),
        }
    }
}

/// One generated tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenTensor {
    /// Name.
    pub name: String,
    /// Dtype.
    pub dtype: Dtype,
    /// Shape.
    pub shape: Vec<u64>,
    /// Bytes.
    pub data: Vec<u8>,
}

/// A generated model: tensors and metadata the canonical writer accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    /// Tensors, in generation order.
    pub tensors: Vec<GenTensor>,
    /// Metadata entries, keys unique.
    pub metadata: Vec<(String, String)>,
}

const COMMON_NON_ASCII: &[char] = &[
    'é', 'ß', 'ø', 'Ω', 'ж', '中', '文', 'ｆ', 'ﬁ', '😀', '𝔘', '\u{a0}', '\u{ad}', '\u{2028}',
    '\u{301}',
];

fn gen_char(src: &mut impl Source, classes: u8) -> char {
    let mut class = src.below(5) as u8;
    if classes & (1 << class) == 0 {
        // Fall back to the lowest class that is on.
        class = classes.trailing_zeros() as u8;
    }
    match class {
        0 => char::from(b'a' + src.below(26) as u8),
        1 => src.pick(&['0', '7', '.', '_', '-', '/', '9']),
        2 => src.pick(&['"', '\\', '\u{7f}', '\u{1}', '\n', '\u{1f}']),
        3 => src.pick(COMMON_NON_ASCII),
        _ => char::from_u32(src.below(0x11_0000) as u32).unwrap_or('\u{fffd}'),
    }
}

fn gen_string(src: &mut impl Source, max_len: u64, classes: u8) -> String {
    let len = src.upto(max_len);
    (0..len).map(|_| gen_char(src, classes)).collect()
}

/// Make a name the writer accepts (no `NAME-*` error or warning, not `__metadata__`).
fn sanitize_name(raw: String) -> String {
    let mut name: String = raw
        .chars()
        .map(|c| {
            if stcheck::internal::is_control(c) || stcheck::internal::is_invisible(c) {
                '~'
            } else {
                c
            }
        })
        .collect();
    if name.is_empty() || name == "__metadata__" || stcheck::portable::special_name(&name).is_some()
    {
        name.insert(0, 't');
    }
    if stcheck::internal::is_path_like(&name) {
        name = name.replace(['/', '\\'], "|");
        if name == ".." {
            name.push('|');
        }
    }
    name
}

/// Bytes for a tensor: drawn from the source for the first 64, then a cheap pattern.
fn gen_data(src: &mut impl Source, len: usize) -> Vec<u8> {
    let head: Vec<u8> = (0..len.min(64)).map(|_| src.byte()).collect();
    let mut data = head.clone();
    let mut x = head.first().copied().unwrap_or(0);
    while data.len() < len {
        x = x.wrapping_mul(31).wrapping_add(7);
        data.push(x);
    }
    data
}

impl Model {
    /// Draw bounds, then a model within them.
    pub fn generate(src: &mut impl Source) -> Self {
        let b = Bounds::generate(src);
        Self::generate_within(src, &b)
    }

    /// A model within `b`.
    pub fn generate_within(src: &mut impl Source, b: &Bounds) -> Self {
        let allowed: Vec<Dtype> = Dtype::ALL
            .iter()
            .enumerate()
            .filter(|(i, _)| b.dtypes & (1 << i) != 0)
            .map(|(_, &d)| d)
            .collect();
        let count = src.upto(b.max_tensors);
        let mut budget = b.data_budget;
        let mut names = HashSet::new();
        let mut tensors = Vec::new();
        for i in 0..count {
            let mut name = sanitize_name(gen_string(src, b.max_name_len, b.name_classes));
            if !names.insert(name.clone()) {
                name.push_str(&format!("#{i}"));
                names.insert(name.clone());
            }
            let dtype = src.pick(&allowed);
            let rank = src.upto(b.max_rank);
            let mut shape: Vec<u64> = (0..rank).map(|_| src.upto(b.max_dim)).collect();
            let bytes = loop {
                match stcheck::internal::byte_length(dtype, &shape) {
                    Ok(n) if n <= budget => break n,
                    // Too large: give the tensor no elements.
                    Ok(_) => {
                        if let Some(d) = shape.first_mut() {
                            *d = 0;
                        } else {
                            shape.push(0);
                        }
                    }
                    // Sub-byte types: 4 more elements make any count whole bytes.
                    Err((Rule::SizeBits, _)) => shape.push(4),
                    Err(_) => shape = vec![0],
                }
            };
            budget -= bytes;
            let data = gen_data(src, bytes as usize);
            tensors.push(GenTensor {
                name,
                dtype,
                shape,
                data,
            });
        }
        let mut metadata: Vec<(String, String)> = Vec::new();
        let meta_count = src.upto(b.max_metadata);
        let params: u64 = tensors
            .iter()
            .map(|t| stcheck::internal::element_count(&t.shape).unwrap_or(0))
            .fold(0, u64::saturating_add);
        for _ in 0..meta_count {
            let key = if src.chance(24) {
                "total_parameters".to_owned()
            } else {
                gen_string(src, b.max_name_len, b.name_classes | 1)
            };
            if metadata.iter().any(|(k, _)| *k == key) {
                continue;
            }
            let value = if key == "total_parameters" {
                params.to_string()
            } else {
                gen_string(src, 12, b.name_classes | 1)
            };
            metadata.push((key, value));
        }
        Model { tensors, metadata }
    }

    /// Write the model with the canonical writer. Panics if the writer refuses it (a bug in
    /// the generator or the writer).
    pub fn serialize(&self) -> Vec<u8> {
        let specs: Vec<TensorSpec<'_>> = self
            .tensors
            .iter()
            .map(|t| TensorSpec::new(&t.name, t.dtype, &t.shape, &t.data))
            .collect();
        let meta: Vec<(&str, &str)> = self
            .metadata
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        match write::serialize(&specs, &meta) {
            Ok(f) => f,
            Err(e) => panic!("FUZZ FINDING: the writer refused a generated model: {e}"),
        }
    }

    /// Assert that `file` validates to exactly this model, with no warning.
    pub fn assert_reads_back(&self, file: &[u8], what: &str) {
        let report = match stcheck::validate(file, &Config::default()) {
            Ok(r) => r,
            Err(e) => panic!("FUZZ FINDING: {what}: a valid file is rejected: {e}"),
        };
        assert!(
            report.warnings().is_empty(),
            "FUZZ FINDING: {what}: warnings on a valid file: {:?}",
            report.warnings()
        );
        let mut got: Vec<GenTensor> = report
            .tensors()
            .map(|t| GenTensor {
                name: t.name.to_owned(),
                dtype: t.dtype,
                shape: t.shape.to_vec(),
                data: t.data(file).to_vec(),
            })
            .collect();
        got.sort_by(|a, b| a.name.cmp(&b.name));
        let mut want = self.tensors.clone();
        want.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(got, want, "FUZZ FINDING: {what}: tensors read back differ");
        let mut meta: Vec<(String, String)> = report
            .metadata()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        meta.sort();
        let mut want_meta = self.metadata.clone();
        want_meta.sort();
        assert_eq!(
            meta, want_meta,
            "FUZZ FINDING: {what}: metadata read back differs"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// A small scanner over the writer's header JSON, to find what to mutate

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Str,
    Num,
    Open,
    Close,
    Colon,
    Comma,
    Other,
}

/// A token of the header text: kind, byte range, and nesting depth before it.
#[derive(Debug, Clone, Copy)]
struct Token {
    kind: Tok,
    start: usize,
    end: usize,
    depth: usize,
}

fn scan(text: &[u8]) -> Vec<Token> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut depth = 0usize;
    while i < text.len() {
        let c = text[i];
        let start = i;
        let kind = match c {
            b'"' => {
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    i += if text[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                Tok::Str
            }
            b'-' | b'0'..=b'9' => {
                while i < text.len()
                    && matches!(text[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                Tok::Num
            }
            b'{' | b'[' => {
                i += 1;
                Tok::Open
            }
            b'}' | b']' => {
                i += 1;
                Tok::Close
            }
            b':' => {
                i += 1;
                Tok::Colon
            }
            b',' => {
                i += 1;
                Tok::Comma
            }
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            _ => {
                i += 1;
                Tok::Other
            }
        };
        if kind == Tok::Close {
            depth = depth.saturating_sub(1);
        }
        out.push(Token {
            kind,
            start,
            end: i.min(text.len()),
            depth,
        });
        if kind == Tok::Open {
            depth += 1;
        }
    }
    out
}

/// A top-level `"key": value` of the header: token indices and byte ranges.
#[derive(Debug, Clone, Copy)]
struct Entry {
    key: (usize, usize),
    /// Byte range of the whole `"key":value`.
    span: (usize, usize),
    /// Token index range of the value.
    value_toks: (usize, usize),
}

fn entries(toks: &[Token]) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 2 < toks.len() {
        let t = toks[i];
        if t.kind == Tok::Str && t.depth == 1 && toks[i + 1].kind == Tok::Colon {
            let vstart = i + 2;
            let mut j = vstart;
            if toks[j].kind == Tok::Open {
                j += 1;
                while j < toks.len() && !(toks[j].kind == Tok::Close && toks[j].depth == 1) {
                    j += 1;
                }
            }
            let j = j.min(toks.len() - 1);
            out.push(Entry {
                key: (t.start, t.end),
                span: (t.start, toks[j].end),
                value_toks: (vstart, j + 1),
            });
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// The value token following a field key `field` inside an entry's value.
fn field_tokens(toks: &[Token], text: &[u8], e: &Entry, field: &str) -> Vec<Token> {
    let quoted = format!("\"{field}\"");
    let (a, b) = e.value_toks;
    let mut out = Vec::new();
    for i in a..b {
        let t = toks[i];
        if t.kind == Tok::Str && t.depth == 2 && &text[t.start..t.end] == quoted.as_bytes() {
            let mut j = i + 2;
            if j < b && toks[j].kind == Tok::Open {
                j += 1;
                while j < b && toks[j].kind != Tok::Close {
                    out.push(toks[j]);
                    j += 1;
                }
            } else if j < b {
                out.push(toks[j]);
            }
        }
    }
    out.retain(|t| t.kind != Tok::Comma);
    out
}

// ---------------------------------------------------------------------------------------------
// Mutations

/// One mutation of a written file. Its numbers are raw choices, reduced against the file when
/// it is applied; a mutation that does not apply to a file leaves it unmutated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// Copy a top-level entry (a tensor or `__metadata__`) to after entry `at`.
    DuplicateKey {
        /// Which entry.
        which: u64,
        /// After which entry.
        at: u64,
    },
    /// Shift both offsets of a non-empty tensor by `delta` (down if `down`).
    ShiftOffsets {
        /// Which tensor.
        which: u64,
        /// By how much.
        delta: u64,
        /// Downwards.
        down: bool,
    },
    /// Change only a tensor's end offset.
    ShiftEnd {
        /// Which tensor.
        which: u64,
        /// By how much (non-zero).
        delta: u64,
        /// Downwards.
        down: bool,
    },
    /// Insert `len` bytes into the data region at a tensor's begin (or the end), moving the
    /// tensors from there on.
    InsertGap {
        /// Which position.
        which: u64,
        /// How many bytes (>= 1).
        len: u64,
    },
    /// Respell one number of a shape or `data_offsets`.
    Respell {
        /// Which number.
        which: u64,
        /// Which spelling.
        spelling: u8,
    },
    /// Append bytes to the file.
    Append {
        /// How many (>= 1).
        len: u64,
    },
    /// Truncate the file.
    Truncate {
        /// New length (mod the old one).
        to: u64,
    },
    /// Replace the length field.
    LengthField {
        /// Which kind of new value.
        kind: u8,
        /// A raw number for it.
        raw: u64,
    },
    /// Put a byte-order mark before the header object.
    Bom,
    /// Lower-case one tensor's dtype.
    DtypeCase {
        /// Which tensor.
        which: u64,
    },
    /// Add an unknown field to a tensor entry.
    UnknownField {
        /// Which tensor.
        which: u64,
    },
    /// Swap two top-level entries (the meaning is unchanged).
    Reorder {
        /// One.
        a: u64,
        /// The other.
        b: u64,
    },
    /// Write one character of a key as a `\u` escape (the meaning is unchanged).
    EscapeKey {
        /// Which key.
        which: u64,
        /// Which character.
        at: u64,
    },
    /// Insert JSON whitespace after a structural token (the meaning is unchanged).
    Whitespace {
        /// After which token.
        which: u64,
        /// Which whitespace.
        ws: u8,
    },
    /// XOR one byte; only the generic properties are checked.
    FlipByte {
        /// Which byte.
        at: u64,
        /// Non-zero mask.
        mask: u8,
    },
}

impl Mutation {
    /// The mutation's name (for counting in tests).
    pub fn name(&self) -> &'static str {
        match self {
            Mutation::DuplicateKey { .. } => "duplicate-key",
            Mutation::ShiftOffsets { .. } => "shift-offsets",
            Mutation::ShiftEnd { .. } => "shift-end",
            Mutation::InsertGap { .. } => "insert-gap",
            Mutation::Respell { .. } => "respell-number",
            Mutation::Append { .. } => "append",
            Mutation::Truncate { .. } => "truncate",
            Mutation::LengthField { .. } => "length-field",
            Mutation::Bom => "bom",
            Mutation::DtypeCase { .. } => "dtype-case",
            Mutation::UnknownField { .. } => "unknown-field",
            Mutation::Reorder { .. } => "reorder",
            Mutation::EscapeKey { .. } => "escape-key",
            Mutation::Whitespace { .. } => "whitespace",
            Mutation::FlipByte { .. } => "flip-byte",
        }
    }

    /// Every mutation's name.
    pub const NAMES: &'static [&'static str] = &[
        "duplicate-key",
        "shift-offsets",
        "shift-end",
        "insert-gap",
        "respell-number",
        "append",
        "truncate",
        "length-field",
        "bom",
        "dtype-case",
        "unknown-field",
        "reorder",
        "escape-key",
        "whitespace",
        "flip-byte",
    ];

    /// Draw a mutation.
    pub fn generate(src: &mut impl Source) -> Self {
        match src.below(15) {
            0 => Mutation::DuplicateKey {
                which: src.u32().into(),
                at: src.u32().into(),
            },
            1 => Mutation::ShiftOffsets {
                which: src.u32().into(),
                delta: 1 + src.pick(&[0, 1, 3, 7, 15, 255, 1 << 20, 1 << 40]),
                down: src.chance(128),
            },
            2 => Mutation::ShiftEnd {
                which: src.u32().into(),
                delta: 1 + src.pick(&[0, 1, 3, 7, 15, 255, 1 << 20, 1 << 40]),
                down: src.chance(128),
            },
            3 => Mutation::InsertGap {
                which: src.u32().into(),
                len: 1 + src.below(64),
            },
            4 => Mutation::Respell {
                which: src.u32().into(),
                spelling: src.byte(),
            },
            5 => Mutation::Append {
                len: 1 + src.below(64),
            },
            6 => Mutation::Truncate { to: src.u64() },
            7 => Mutation::LengthField {
                kind: src.byte(),
                raw: src.u64(),
            },
            8 => Mutation::Bom,
            9 => Mutation::DtypeCase {
                which: src.u32().into(),
            },
            10 => Mutation::UnknownField {
                which: src.u32().into(),
            },
            11 => Mutation::Reorder {
                a: src.u32().into(),
                b: src.u32().into(),
            },
            12 => Mutation::EscapeKey {
                which: src.u32().into(),
                at: src.u32().into(),
            },
            13 => Mutation::Whitespace {
                which: src.u32().into(),
                ws: src.byte(),
            },
            _ => Mutation::FlipByte {
                at: src.u64(),
                mask: src.byte().max(1),
            },
        }
    }
}

/// What a mutation implies about the verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expect {
    /// The same model, valid, with no warning.
    Same,
    /// Rejected with this rule, at this offset if given, about this tensor if given.
    Rule {
        rule: Rule,
        offset: Option<u64>,
        tensor: Option<String>,
    },
    /// Rejected with one of these rules.
    OneOf(&'static [Rule]),
    /// Nothing beyond the generic properties.
    Anything,
}

fn rule(rule: Rule) -> Expect {
    Expect::Rule {
        rule,
        offset: None,
        tensor: None,
    }
}

/// A file split at the header: its header bytes (the N after the length field) and data.
struct Parts {
    header: Vec<u8>,
    data: Vec<u8>,
}

impl Parts {
    fn of(file: &[u8]) -> Self {
        let mut le = [0u8; 8];
        le.copy_from_slice(&file[..8]);
        let n = u64::from_le_bytes(le) as usize;
        Parts {
            header: file[8..8 + n].to_vec(),
            data: file[8 + n..].to_vec(),
        }
    }

    /// The file, with the header padded with spaces to a multiple of 8.
    fn join(mut self) -> Vec<u8> {
        let padded = self.header.len().next_multiple_of(8);
        self.header.resize(padded, b' ');
        let mut out = (self.header.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(&self.header);
        out.extend_from_slice(&self.data);
        out
    }

    /// The header without its padding.
    fn json(&self) -> Vec<u8> {
        let end = self
            .header
            .iter()
            .rposition(|&b| b != b' ')
            .map_or(0, |i| i + 1);
        self.header[..end].to_vec()
    }
}

fn splice(text: &[u8], at: (usize, usize), with: &[u8]) -> Vec<u8> {
    let mut out = text[..at.0].to_vec();
    out.extend_from_slice(with);
    out.extend_from_slice(&text[at.1..]);
    out
}

/// File offset of the `k`-th (0-based) top-level key whose raw text is `key`, in `header`.
fn key_offset(header: &[u8], key: &[u8], k: usize) -> Option<u64> {
    let toks = scan(header);
    entries(&toks)
        .iter()
        .filter(|e| &header[e.key.0..e.key.1] == key)
        .nth(k)
        .map(|e| 8 + e.key.0 as u64)
}

/// A tensor entry as located in the header: the entry and the model tensor's index.
fn tensor_entries(json: &[u8], model: &Model) -> Vec<(Entry, usize)> {
    let toks = scan(json);
    entries(&toks)
        .into_iter()
        .filter_map(|e| {
            let key: String = serde_json::from_slice(&json[e.key.0..e.key.1]).ok()?;
            let i = model.tensors.iter().position(|t| t.name == key)?;
            Some((e, i))
        })
        .collect()
}

/// Replace the two offsets of a tensor entry. Returns the new JSON.
fn set_offsets(json: &[u8], e: &Entry, begin: u64, end: u64) -> Option<Vec<u8>> {
    let toks = scan(json);
    let nums = field_tokens(&toks, json, e, "data_offsets");
    let [b, en] = nums.as_slice() else {
        return None;
    };
    let mut out = splice(json, (en.start, en.end), end.to_string().as_bytes());
    out = splice(&out, (b.start, b.end), begin.to_string().as_bytes());
    Some(out)
}

/// Where the tensors of the written file lie: (model index, begin, end), from the header.
fn layout(json: &[u8], model: &Model) -> Vec<(Entry, usize, u64, u64)> {
    let toks = scan(json);
    tensor_entries(json, model)
        .into_iter()
        .filter_map(|(e, i)| {
            let nums = field_tokens(&toks, json, &e, "data_offsets");
            let [b, en] = nums.as_slice() else {
                return None;
            };
            let b: u64 = std::str::from_utf8(&json[b.start..b.end])
                .ok()?
                .parse()
                .ok()?;
            let en: u64 = std::str::from_utf8(&json[en.start..en.end])
                .ok()?
                .parse()
                .ok()?;
            Some((e, i, b, en))
        })
        .collect()
}

/// Apply `m` to the valid `file` of `model`: the mutated file and what it implies, or `None`
/// when the mutation does not apply to this file.
fn apply(model: &Model, file: &[u8], m: Mutation) -> Option<(Vec<u8>, Expect)> {
    let parts = Parts::of(file);
    let json = parts.json();
    let toks = scan(&json);
    let ents = entries(&toks);
    let with_json = |new_json: Vec<u8>| {
        Parts {
            header: new_json,
            data: parts.data.clone(),
        }
        .join()
    };
    match m {
        Mutation::DuplicateKey { which, at } => {
            if ents.is_empty() {
                return None;
            }
            let e = ents[(which % ents.len() as u64) as usize];
            let after = ents[(at % ents.len() as u64) as usize];
            let mut copy = b",".to_vec();
            copy.extend_from_slice(&json[e.span.0..e.span.1]);
            let new_json = splice(&json, (after.span.1, after.span.1), &copy);
            let key = &json[e.key.0..e.key.1];
            let offset = key_offset(&new_json, key, 1)?;
            Some((
                with_json(new_json),
                Expect::Rule {
                    rule: Rule::JsonDuplicateKey,
                    offset: Some(offset),
                    tensor: None,
                },
            ))
        }
        Mutation::ShiftOffsets { which, delta, down } => {
            let lay: Vec<_> = layout(&json, model)
                .into_iter()
                .filter(|&(_, _, b, e)| e > b)
                .collect();
            if lay.is_empty() {
                return None;
            }
            let (e, _, b, en) = lay[(which % lay.len() as u64) as usize];
            let (nb, ne) = if down {
                (b.checked_sub(delta)?, en.checked_sub(delta)?)
            } else {
                (b.checked_add(delta)?, en.checked_add(delta)?)
            };
            let new_json = set_offsets(&json, &e, nb, ne)?;
            Some((
                with_json(new_json),
                Expect::OneOf(&[
                    Rule::LayoutGap,
                    Rule::LayoutOverlap,
                    Rule::DataTruncated,
                    Rule::DataTrailing,
                ]),
            ))
        }
        Mutation::ShiftEnd { which, delta, down } => {
            let lay = layout(&json, model);
            if lay.is_empty() {
                return None;
            }
            let (e, i, b, en) = lay[(which % lay.len() as u64) as usize];
            let ne = if down {
                en.checked_sub(delta)?
            } else {
                en.checked_add(delta)?
            };
            let new_json = set_offsets(&json, &e, b, ne)?;
            let r = if ne < b {
                Rule::LayoutOrder
            } else {
                Rule::SizeMismatch
            };
            let offset = 8 + e.key.0 as u64;
            Some((
                with_json(new_json),
                Expect::Rule {
                    rule: r,
                    offset: Some(offset),
                    tensor: Some(model.tensors[i].name.clone()),
                },
            ))
        }
        Mutation::InsertGap { which, len } => {
            let lay = layout(&json, model);
            let total = parts.data.len() as u64;
            let mut positions: Vec<u64> = lay.iter().map(|&(_, _, b, _)| b).collect();
            positions.push(total);
            positions.sort_unstable();
            positions.dedup();
            let p = positions[(which % positions.len() as u64) as usize];
            // Move every tensor that begins at or after p, last entries first so spans hold.
            let mut moved: Vec<_> = lay
                .iter()
                .filter(|&&(_, _, b, _)| b >= p)
                .copied()
                .collect();
            moved.sort_by_key(|&(e, ..)| std::cmp::Reverse(e.span.0));
            let mut new_json = json.clone();
            for &(e, _, b, en) in &moved {
                new_json = set_offsets(&new_json, &e, b + len, en + len)?;
            }
            let mut data = parts.data.clone();
            let at = p as usize;
            data.splice(at..at, std::iter::repeat_n(0xA5, len as usize));
            let mutated = Parts {
                header: new_json.clone(),
                data,
            }
            .join();
            let expect = if moved.is_empty() {
                let n = mutated.len() as u64 - total - len;
                Expect::Rule {
                    rule: Rule::DataTrailing,
                    offset: Some(n + total),
                    tensor: None,
                }
            } else {
                // The first tensor in offset order after the gap: smallest (end, key offset)
                // among those that began at p.
                let first = moved
                    .iter()
                    .filter(|&&(_, _, b, _)| b == p)
                    .map(|&(_, i, _, en)| {
                        let key = serde_json::to_string(&model.tensors[i].name).unwrap_or_default();
                        (en, key_offset(&new_json, key.as_bytes(), 0), i)
                    })
                    .min()?;
                Expect::Rule {
                    rule: Rule::LayoutGap,
                    offset: first.1,
                    tensor: Some(model.tensors[first.2].name.clone()),
                }
            };
            Some((mutated, expect))
        }
        Mutation::Respell { which, spelling } => {
            let mut nums = Vec::new();
            for (e, i) in tensor_entries(&json, model) {
                for (f, r) in [
                    ("shape", Rule::SchemaShape),
                    ("data_offsets", Rule::SchemaOffsets),
                ] {
                    for t in field_tokens(&toks, &json, &e, f) {
                        nums.push((t, i, r));
                    }
                }
            }
            if nums.is_empty() {
                return None;
            }
            let (t, i, field_rule) = nums[(which % nums.len() as u64) as usize];
            let s = String::from_utf8_lossy(&json[t.start..t.end]).into_owned();
            let name = Some(model.tensors[i].name.clone());
            let integer = |rule| Expect::Rule {
                rule,
                offset: None,
                tensor: name.clone(),
            };
            let (new, expect) = match spelling % 10 {
                0 => (format!("{s}.0"), integer(Rule::SchemaInteger)),
                1 => (format!("{s}e0"), integer(Rule::SchemaInteger)),
                2 => (format!("{s}E+0"), integer(Rule::SchemaInteger)),
                3 => (format!("-{s}"), integer(Rule::SchemaInteger)),
                4 => (
                    "18446744073709551616".to_owned(),
                    integer(Rule::SchemaInteger),
                ),
                5 => (format!("0{s}"), rule(Rule::JsonSyntax)),
                6 => (format!("+{s}"), rule(Rule::JsonSyntax)),
                7 => (format!("{s}."), rule(Rule::JsonSyntax)),
                8 => (format!("\t{s} "), Expect::Same),
                _ => (format!("\"{s}\""), integer(field_rule)),
            };
            Some((
                with_json(splice(&json, (t.start, t.end), new.as_bytes())),
                expect,
            ))
        }
        Mutation::Append { len } => {
            let mut f = file.to_vec();
            f.extend(std::iter::repeat_n(0u8, len as usize));
            Some((
                f,
                Expect::Rule {
                    rule: Rule::DataTrailing,
                    offset: Some(file.len() as u64),
                    tensor: None,
                },
            ))
        }
        Mutation::Truncate { to } => {
            let len = file.len() as u64;
            let t = to % len;
            let n = parts.header.len() as u64;
            let expect = if t < 8 {
                Expect::Rule {
                    rule: Rule::FrameShort,
                    offset: Some(0),
                    tensor: None,
                }
            } else if t < 8 + n {
                Expect::Rule {
                    rule: Rule::FrameHeaderBounds,
                    offset: Some(0),
                    tensor: None,
                }
            } else {
                Expect::Rule {
                    rule: Rule::DataTruncated,
                    offset: Some(t),
                    tensor: None,
                }
            };
            Some((file[..t as usize].to_vec(), expect))
        }
        Mutation::LengthField { kind, raw } => {
            let n = parts.header.len() as u64;
            let len = file.len() as u64;
            let json_len = json.len() as u64;
            let rest = len - 8 - n;
            let new_n = match kind % 5 {
                0 => 0,
                1 => stcheck::limits::DEFAULT_MAX_HEADER_SIZE + 1 + raw % (1 << 40),
                2 => 1 + raw % n,
                3 if rest > 0 => n + 1 + raw % rest,
                _ => n.checked_add(rest + 1 + raw % (1 << 20))?,
            };
            if new_n == n {
                return None;
            }
            let mut f = file.to_vec();
            f[..8].copy_from_slice(&new_n.to_le_bytes());
            let at0 = |r| Expect::Rule {
                rule: r,
                offset: Some(0),
                tensor: None,
            };
            let expect = if new_n == 0 {
                at0(Rule::FrameEmptyHeader)
            } else if new_n > stcheck::limits::DEFAULT_MAX_HEADER_SIZE {
                at0(Rule::FrameHeaderLimit)
            } else if new_n > len - 8 {
                at0(Rule::FrameHeaderBounds)
            } else if new_n < json_len {
                Expect::OneOf(&[Rule::JsonSyntax, Rule::Utf8Invalid])
            } else if new_n < n {
                Expect::Rule {
                    rule: Rule::DataTrailing,
                    offset: Some(8 + new_n + rest),
                    tensor: None,
                }
            } else {
                Expect::OneOf(&[Rule::Utf8Invalid, Rule::JsonTrailing, Rule::DataTruncated])
            };
            Some((f, expect))
        }
        Mutation::Bom => {
            let mut new_json = "\u{feff}".as_bytes().to_vec();
            new_json.extend_from_slice(&json);
            Some((
                with_json(new_json),
                Expect::Rule {
                    rule: Rule::JsonBom,
                    offset: Some(8),
                    tensor: None,
                },
            ))
        }
        Mutation::DtypeCase { which } => {
            let te = tensor_entries(&json, model);
            if te.is_empty() {
                return None;
            }
            let (e, i) = te[(which % te.len() as u64) as usize];
            let d = *field_tokens(&toks, &json, &e, "dtype").first()?;
            let lower = json[d.start..d.end].to_ascii_lowercase();
            Some((
                with_json(splice(&json, (d.start, d.end), &lower)),
                Expect::Rule {
                    rule: Rule::DtypeUnknown,
                    offset: Some(8 + d.start as u64),
                    tensor: Some(model.tensors[i].name.clone()),
                },
            ))
        }
        Mutation::UnknownField { which } => {
            let te = tensor_entries(&json, model);
            if te.is_empty() {
                return None;
            }
            let (e, i) = te[(which % te.len() as u64) as usize];
            let close = toks[e.value_toks.1 - 1];
            let at = close.start;
            let new_json = splice(&json, (at, at), b",\"extra\":1");
            Some((
                with_json(new_json),
                Expect::Rule {
                    rule: Rule::SchemaUnknownField,
                    offset: Some(8 + at as u64 + 1),
                    tensor: Some(model.tensors[i].name.clone()),
                },
            ))
        }
        Mutation::Reorder { a, b } => {
            if ents.len() < 2 {
                return None;
            }
            let mut order: Vec<usize> = (0..ents.len()).collect();
            order.swap(
                (a % ents.len() as u64) as usize,
                (b % ents.len() as u64) as usize,
            );
            let mut new_json = b"{".to_vec();
            for (k, &i) in order.iter().enumerate() {
                if k > 0 {
                    new_json.push(b',');
                }
                new_json.extend_from_slice(&json[ents[i].span.0..ents[i].span.1]);
            }
            new_json.push(b'}');
            Some((with_json(new_json), Expect::Same))
        }
        Mutation::EscapeKey { which, at } => {
            if ents.is_empty() {
                return None;
            }
            let e = ents[(which % ents.len() as u64) as usize];
            let key: String = serde_json::from_slice(&json[e.key.0..e.key.1]).ok()?;
            let chars: Vec<char> = key.chars().collect();
            if chars.is_empty() {
                return None;
            }
            let k = (at % chars.len() as u64) as usize;
            let mut quoted = String::from("\"");
            for (j, &c) in chars.iter().enumerate() {
                if j == k {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        quoted.push_str(&format!("\\u{u:04X}"));
                    }
                } else {
                    let s = serde_json::to_string(&c.to_string()).ok()?;
                    quoted.push_str(&s[1..s.len() - 1]);
                }
            }
            quoted.push('"');
            Some((
                with_json(splice(&json, e.key, quoted.as_bytes())),
                Expect::Same,
            ))
        }
        Mutation::Whitespace { which, ws } => {
            let spots: Vec<usize> = toks
                .iter()
                .filter(|t| matches!(t.kind, Tok::Open | Tok::Colon | Tok::Comma))
                .map(|t| t.end)
                .collect();
            if spots.is_empty() {
                return None;
            }
            let at = spots[(which % spots.len() as u64) as usize];
            let w = [b' ', b'\t', b'\n', b'\r'][usize::from(ws % 4)];
            Some((with_json(splice(&json, (at, at), &[w])), Expect::Same))
        }
        Mutation::FlipByte { at, mask } => {
            let mut f = file.to_vec();
            let i = (at % f.len() as u64) as usize;
            f[i] ^= mask;
            Some((f, Expect::Anything))
        }
    }
}

/// A `structured` case: a model and at most one mutation.
#[derive(Debug, Clone)]
pub struct Structured {
    /// The model.
    pub model: Model,
    /// The mutation.
    pub mutation: Option<Mutation>,
}

impl Structured {
    /// Draw a case.
    pub fn generate(src: &mut impl Source) -> Self {
        let model = Model::generate(src);
        let mutation = if src.chance(40) {
            None
        } else {
            Some(Mutation::generate(src))
        };
        Structured { model, mutation }
    }

    /// Write, check the unmutated file, apply the mutation and check its verdict. Returns the
    /// name of the mutation that applied, if one did.
    pub fn check(&self) -> Option<&'static str> {
        let file = self.model.serialize();
        self.model.assert_reads_back(&file, "unmutated");
        assert_eq!(
            check_differential(&file),
            Differential::BothAccept,
            "FUZZ FINDING: the reference does not load a canonical file"
        );
        let m = self.mutation?;
        let (mutated, expect) = apply(&self.model, &file, m)?;
        check_validate(&mutated);
        check_differential(&mutated);
        let result = stcheck::validate(&mutated, &Config::default());
        let what = format!("after mutation {m:?}");
        match expect {
            Expect::Same => self.model.assert_reads_back(&mutated, &what),
            Expect::Anything => {}
            Expect::OneOf(rules) => match result {
                Err(e) => assert!(
                    rules.contains(&e.rule()),
                    "FUZZ FINDING: {what}: expected one of {rules:?}, got {e}"
                ),
                Ok(_) => panic!("FUZZ FINDING: {what}: accepted, expected one of {rules:?}"),
            },
            Expect::Rule {
                rule,
                offset,
                tensor,
            } => match result {
                Err(e) => {
                    assert_eq!(e.rule(), rule, "FUZZ FINDING: {what}: got {e}");
                    if let Some(o) = offset {
                        assert_eq!(e.offset(), o, "FUZZ FINDING: {what}: offset of {e}");
                    }
                    if let Some(t) = tensor {
                        assert_eq!(e.tensor(), Some(t.as_str()), "FUZZ FINDING: {what}: {e}");
                    }
                }
                Ok(_) => panic!("FUZZ FINDING: {what}: accepted, expected {rule}"),
            },
        }
        Some(m.name())
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for Structured {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Structured::generate(u))
    }
}

/// A file for the byte-level smoke tests: a generated valid file, a mutated one, or noise.
pub fn smoke_file(rng: &mut Rng) -> Vec<u8> {
    match rng.below(4) {
        0 => {
            let len = rng.below(64) as usize;
            rng.bytes(len)
        }
        1 => Model::generate(rng).serialize(),
        _ => {
            let case = Structured::generate(rng);
            let file = case.model.serialize();
            let m = Mutation::generate(rng);
            match apply(&case.model, &file, m) {
                Some((f, _)) => f,
                None => file,
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Target `index`: sharded checkpoints

/// An `index` case: generated shards, the index the canonical layout implies, and at most one
/// change to the set whose verdict is asserted.
#[derive(Debug, Clone)]
pub struct IndexCase {
    /// The shards, each a model with tensor names unique across the set.
    pub shards: Vec<Model>,
    /// The change.
    pub change: IndexChange,
    /// Raw index bytes, used by [`IndexChange::RawIndex`].
    pub raw: Vec<u8>,
}

/// A change to a valid sharded checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexChange {
    /// None: the set must be valid, with no finding.
    None,
    /// Drop a tensor from `weight_map` (`INDEX-TENSOR-UNLISTED`).
    DropEntry(u64),
    /// Declare a wrong `total_size` (`INDEX-TOTAL-SIZE`).
    WrongTotal(u64),
    /// Remove a shard file (`INDEX-SHARD-MISSING`).
    RemoveShard(u64),
    /// Truncate a shard to 4 bytes (`INDEX-SHARD-INVALID`).
    BreakShard(u64),
    /// Add a `.safetensors` file the index does not name (warning `INDEX-SHARD-UNLISTED`).
    ExtraFile,
    /// Flip one byte of the index; only the generic properties are checked.
    FlipIndexByte(u64, u8),
    /// Use the raw bytes as the index; only the generic properties are checked.
    RawIndex,
}

impl IndexCase {
    /// Draw a case.
    pub fn generate(src: &mut impl Source) -> Self {
        let b = Bounds::generate(src);
        let count = 1 + src.below(4);
        let mut names = HashSet::new();
        let mut shards = Vec::new();
        for _ in 0..count {
            let mut m = Model::generate_within(src, &b);
            m.tensors.retain(|t| names.insert(t.name.clone()));
            m.metadata.retain(|(k, _)| k != "total_parameters");
            // A shard no tensor names is no part of the set (it would be an unlisted file).
            if !m.tensors.is_empty() {
                shards.push(m);
            }
        }
        let change = match src.below(8) {
            0 => IndexChange::None,
            1 => IndexChange::DropEntry(src.u32().into()),
            2 => IndexChange::WrongTotal(1 + src.below(1 << 20)),
            3 => IndexChange::RemoveShard(src.u32().into()),
            4 => IndexChange::BreakShard(src.u32().into()),
            5 => IndexChange::ExtraFile,
            6 => IndexChange::FlipIndexByte(src.u32().into(), src.byte().max(1)),
            _ => IndexChange::RawIndex,
        };
        let raw_len = src.below(256) as usize;
        let raw = (0..raw_len).map(|_| src.byte()).collect();
        IndexCase {
            shards,
            change,
            raw,
        }
    }

    fn shard_name(i: usize, n: usize) -> String {
        format!("model-{:05}-of-{n:05}.safetensors", i + 1)
    }

    /// Build the set, apply the change, run the checker and assert what the change implies.
    pub fn check(&self) {
        use stcheck::index::{check_index, MemorySource};
        use stcheck::Location;
        let n = self.shards.len();
        let mut source = MemorySource::new();
        let mut files = Vec::new();
        let mut weight_map = serde_json::Map::new();
        let mut total = 0u64;
        for (i, m) in self.shards.iter().enumerate() {
            let name = Self::shard_name(i, n);
            for t in &m.tensors {
                weight_map.insert(t.name.clone(), serde_json::Value::String(name.clone()));
                total += t.data.len() as u64;
            }
            files.push((name, m.serialize()));
        }
        let mut expect: Option<Rule> = None;
        let mut declared_total = total;
        let all: Vec<String> = weight_map.keys().cloned().collect();
        match self.change {
            IndexChange::DropEntry(k) if !all.is_empty() => {
                let dropped = &all[(k % all.len() as u64) as usize];
                weight_map.remove(dropped);
                let alone = self
                    .shards
                    .iter()
                    .any(|m| m.tensors.len() == 1 && m.tensors[0].name == *dropped);
                // A shard no tensor names any more is not part of the set: then only its
                // bytes are missing from the total (if it had any).
                let bytes = self
                    .shards
                    .iter()
                    .flat_map(|m| &m.tensors)
                    .find(|t| t.name == *dropped)
                    .map_or(0, |t| t.data.len());
                expect = if !alone {
                    Some(Rule::IndexTensorUnlisted)
                } else if bytes > 0 {
                    Some(Rule::IndexTotalSize)
                } else {
                    None
                };
            }
            IndexChange::WrongTotal(d) => {
                declared_total = total.wrapping_add(d);
                expect = Some(Rule::IndexTotalSize);
            }
            IndexChange::RemoveShard(k) if n > 0 => {
                let i = (k % n as u64) as usize;
                if self.shards[i].tensors.is_empty() {
                    // An empty shard named by no tensor is not part of the set.
                    files[i].1.clear();
                } else {
                    files[i].1.clear();
                    expect = Some(Rule::IndexShardMissing);
                }
            }
            IndexChange::BreakShard(k) if n > 0 => {
                let i = (k % n as u64) as usize;
                if !self.shards[i].tensors.is_empty() {
                    files[i].1.truncate(4);
                    expect = Some(Rule::IndexShardInvalid);
                }
            }
            _ => {}
        }
        for (name, bytes) in files {
            // A removed shard is absent; a broken one is short but present.
            if !(bytes.is_empty() && matches!(self.change, IndexChange::RemoveShard(_))) {
                source.insert(name, bytes);
            }
        }
        if self.change == IndexChange::ExtraFile {
            source.insert("extra.safetensors", Vec::new());
        }
        let mut index = serde_json::to_vec(&serde_json::json!({
            "metadata": {"total_size": declared_total},
            "weight_map": weight_map,
        }))
        .unwrap_or_default();
        match self.change {
            IndexChange::FlipIndexByte(at, mask) if !index.is_empty() => {
                let i = (at % index.len() as u64) as usize;
                index[i] ^= mask;
            }
            IndexChange::RawIndex => index = self.raw.clone(),
            _ => {}
        }

        let config = Config::default();
        let report = match check_index(&index, &source, &config) {
            Ok(r) => r,
            Err(e) => panic!("FUZZ FINDING: in-memory index check failed with I/O: {e}"),
        };
        let again = check_index(&index, &source, &config).ok();
        assert_eq!(
            again
                .as_ref()
                .map(|r| (r.errors().to_vec(), r.warnings().to_vec())),
            Some((report.errors().to_vec(), report.warnings().to_vec())),
            "FUZZ FINDING: index verdict not deterministic"
        );
        for f in report.errors().iter().chain(report.warnings()) {
            let limit = match f.location() {
                Location::Index => index.len() as u64,
                _ => u64::MAX,
            };
            assert!(
                f.offset() <= limit,
                "FUZZ FINDING: index finding beyond the index: {f}"
            );
        }
        let rules: Vec<Rule> = report.errors().iter().map(|f| f.rule()).collect();
        let warned: Vec<Rule> = report.warnings().iter().map(|f| f.rule()).collect();
        match self.change {
            IndexChange::None => {
                assert!(
                    report.is_valid() && report.warnings().is_empty(),
                    "FUZZ FINDING: valid sharded set rejected: {:?} {:?}",
                    report.errors(),
                    report.warnings()
                );
                assert_eq!(report.tensors(), all.len());
                assert_eq!(report.total_size(), Some(total));
            }
            IndexChange::RemoveShard(_) | IndexChange::BreakShard(_) if n == 0 => {}
            IndexChange::ExtraFile => {
                assert!(report.is_valid(), "FUZZ FINDING: {:?}", report.errors());
                assert!(
                    warned.contains(&Rule::IndexShardUnlisted),
                    "FUZZ FINDING: unlisted shard not warned: {warned:?}"
                );
            }
            _ => {
                if let Some(rule) = expect {
                    assert!(
                        rules.contains(&rule),
                        "FUZZ FINDING: {:?} should give {rule}, got {:?}",
                        self.change,
                        report.errors()
                    );
                }
            }
        }
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for IndexCase {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(IndexCase::generate(u))
    }
}
