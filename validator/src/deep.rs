//! Deep scan of tensor data (`--deep`): BOOL bytes, non-finite counts, SHA-256, polyglots.
//!
//! The scan reads every tensor's bytes once, in file order. Each dtype has a kernel that first
//! ORs a branch-free "is this element special?" mark over a block of [`BLOCK`] bytes (which
//! the compiler vectorises); only a block whose mark is set is classified element by element,
//! while it is still in L1, to count NaN, +Inf and -Inf and find the first one's offset. With
//! [`DeepOptions::sha256`] the file is hashed in chunks of [`CHUNK`] bytes, each chunk scanned
//! right after it is hashed, so the data is read from memory once.
//!
//! What counts as non-finite, per dtype:
//!
//! | dtype | NaN | +Inf / -Inf |
//! |---|---|---|
//! | F16, BF16, F32, F64 | exponent all ones, mantissa non-zero | exponent all ones, mantissa zero |
//! | C64 | each of the two F32 parts counts on its own | as F32, per part |
//! | F8_E5M2 | `0x7D..=0x7F`, `0xFD..=0xFF` | `0x7C` / `0xFC` |
//! | F8_E4M3 | `0x7F`, `0xFF` | none |
//! | F8_E4M3FNUZ, F8_E5M2FNUZ | `0x80` | none |
//! | F8_E8M0 | `0xFF` | none |
//! | F4, F6_*, integers | none | none |
//!
//! BOOL tensors must hold only `0x00` and `0x01` (`DATA-BOOL`, an error at the first other
//! byte). Non-finite values give one `DATA-NONFINITE` warning per tensor at its first
//! non-finite element, or with [`Config::deny_nonfinite`] an error there. `DATA-POLYGLOT`
//! warns when the file is also recognisable as another format (see [`sniff`]).
//!
//! The streaming path ([`validate_reader_deep`]) runs the same state machine over the chunks
//! it reads, carrying an element split between two reads, so it gives the same results.

use std::io::Read;
use std::ops::BitOr;

use sha2::{Digest, Sha256};

use crate::dtype::Dtype;
use crate::error::{Error, Finding, Warning};
use crate::frame;
use crate::limits::{Config, STREAM_BUFFER_SIZE};
use crate::report::Report;
use crate::rules::Rule;
use crate::stream::{read_full, StreamError};

/// Bytes per block of the kernels' fast path: the unit that is re-read (from L1) element by
/// element when it holds a special value.
pub const BLOCK: usize = 4096;

/// Bytes hashed and then scanned at a time when SHA-256 is on (fits in L2).
pub const CHUNK: usize = 256 * 1024;

/// The smallest share of the data region given to one thread by default
/// ([`DeepOptions::min_bytes_per_thread`] = 0).
pub const DEFAULT_MIN_BYTES_PER_THREAD: u64 = 4 << 20;

/// How far from the end of the file a ZIP end-of-central-directory record can start: its 22
/// bytes plus a comment of up to 65,535 bytes.
pub const ZIP_EOCD_WINDOW: usize = 22 + 65_535;

/// How many bytes at the start of the file and of the data region are sniffed for magic
/// numbers; PDF readers look for `%PDF-` anywhere in this many bytes at the file's start.
pub const SNIFF_LEN: usize = 1024;

/// Options of the deep scan.
#[non_exhaustive]
#[derive(Debug, Clone, Default)]
pub struct DeepOptions {
    /// Compute the SHA-256 of the whole file in the same pass. Default: `false`.
    pub sha256: bool,
    /// Threads to split one file's data region across; 0 or 1 = single-threaded. With
    /// `sha256`, one of them hashes the file while the others scan. Results are identical to
    /// the single-threaded scan. Default: 0.
    pub threads: usize,
    /// The smallest share of the data region worth a thread of its own; 0 means
    /// [`DEFAULT_MIN_BYTES_PER_THREAD`]. Default: 0.
    pub min_bytes_per_thread: u64,
}

impl DeepOptions {
    /// Single-threaded, no hash.
    pub fn new() -> Self {
        Self::default()
    }

    /// Set [`DeepOptions::sha256`].
    pub fn sha256(mut self, yes: bool) -> Self {
        self.sha256 = yes;
        self
    }

    /// Set [`DeepOptions::threads`].
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n;
        self
    }

    /// Set [`DeepOptions::min_bytes_per_thread`].
    pub fn min_bytes_per_thread(mut self, bytes: u64) -> Self {
        self.min_bytes_per_thread = bytes;
        self
    }
}

/// Non-finite counts of one tensor. For C64 each F32 part counts on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorStats {
    /// The tensor's name.
    pub name: String,
    /// Its dtype.
    pub dtype: Dtype,
    /// NaN values (every encoding).
    pub nan: u64,
    /// Positive infinities.
    pub pos_inf: u64,
    /// Negative infinities.
    pub neg_inf: u64,
}

impl TensorStats {
    /// NaN + Inf of either sign.
    pub fn non_finite(&self) -> u64 {
        self.nan + self.pos_inf + self.neg_inf
    }
}

/// The result of a deep scan of a valid file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeepReport {
    /// Every tensor (all dtypes; the counts are 0 where a dtype has no NaN/Inf), in offset order.
    pub tensors: Vec<TensorStats>,
    /// SHA-256 of the whole file, with [`DeepOptions::sha256`].
    pub sha256: Option<[u8; 32]>,
    /// Bytes of tensor data the scan went through (the data region's length).
    pub bytes_scanned: u64,
}

// ---------------------------------------------------------------------------------------------
// Kernels

const NAN: u8 = 1;
const POS_INF: u8 = 2;
const NEG_INF: u8 = 3;

fn class_name(c: u8) -> &'static str {
    match c {
        NAN => "NaN",
        POS_INF => "+Inf",
        NEG_INF => "-Inf",
        _ => "finite",
    }
}

/// Per-tensor accumulator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Acc {
    nan: u64,
    pos_inf: u64,
    neg_inf: u64,
    /// File offset of the first special element, and its class (floats) or byte (BOOL).
    first: Option<(u64, u8)>,
}

impl Acc {
    fn merge(&mut self, later: &Acc) {
        self.nan += later.nan;
        self.pos_inf += later.pos_inf;
        self.neg_inf += later.neg_inf;
        if self.first.is_none() {
            self.first = later.first;
        }
    }
}

/// One lane type of a float format.
trait Lanes {
    /// Bytes per lane.
    const W: usize;
    type L: Copy + Default + PartialEq + BitOr<Output = Self::L>;
    fn load(e: &[u8]) -> Self::L;
    /// Non-zero exactly when the lane is NaN or an infinity; branch-free so blocks vectorise.
    fn mark(x: Self::L) -> Self::L;
    /// 0 (finite), NAN, POS_INF or NEG_INF.
    fn class(x: Self::L) -> u8;
}

fn ieee_class<T: Copy + PartialOrd + PartialEq>(abs: T, x: T, inf: T, neg_inf: T) -> u8 {
    if abs > inf {
        NAN
    } else if x == inf {
        POS_INF
    } else if x == neg_inf {
        NEG_INF
    } else {
        0
    }
}

struct F16K;
impl Lanes for F16K {
    const W: usize = 2;
    type L = u16;
    fn load(e: &[u8]) -> u16 {
        u16::from_le_bytes([e[0], e[1]])
    }
    fn mark(x: u16) -> u16 {
        // |x| >= 0x7C00  <=>  |x| + 0x0400 reaches bit 15 (no overflow: |x| <= 0x7FFF).
        ((x & 0x7FFF) + 0x0400) & 0x8000
    }
    fn class(x: u16) -> u8 {
        ieee_class(x & 0x7FFF, x, 0x7C00, 0xFC00)
    }
}

struct Bf16K;
impl Lanes for Bf16K {
    const W: usize = 2;
    type L = u16;
    fn load(e: &[u8]) -> u16 {
        u16::from_le_bytes([e[0], e[1]])
    }
    fn mark(x: u16) -> u16 {
        ((x & 0x7FFF) + 0x0080) & 0x8000
    }
    fn class(x: u16) -> u8 {
        ieee_class(x & 0x7FFF, x, 0x7F80, 0xFF80)
    }
}

struct F32K;
impl Lanes for F32K {
    const W: usize = 4;
    type L = u32;
    fn load(e: &[u8]) -> u32 {
        u32::from_le_bytes([e[0], e[1], e[2], e[3]])
    }
    fn mark(x: u32) -> u32 {
        ((x & 0x7FFF_FFFF) + 0x0080_0000) & 0x8000_0000
    }
    fn class(x: u32) -> u8 {
        ieee_class(x & 0x7FFF_FFFF, x, 0x7F80_0000, 0xFF80_0000)
    }
}

struct F64K;
impl Lanes for F64K {
    const W: usize = 8;
    type L = u64;
    fn load(e: &[u8]) -> u64 {
        u64::from_le_bytes([e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]])
    }
    fn mark(x: u64) -> u64 {
        ((x & 0x7FFF_FFFF_FFFF_FFFF) + 0x0010_0000_0000_0000) & 0x8000_0000_0000_0000
    }
    fn class(x: u64) -> u8 {
        ieee_class(
            x & 0x7FFF_FFFF_FFFF_FFFF,
            x,
            0x7FF0_0000_0000_0000,
            0xFFF0_0000_0000_0000,
        )
    }
}

struct E5M2K;
impl Lanes for E5M2K {
    const W: usize = 1;
    type L = u8;
    fn load(e: &[u8]) -> u8 {
        e[0]
    }
    fn mark(x: u8) -> u8 {
        ((x & 0x7F) + 0x04) & 0x80
    }
    fn class(x: u8) -> u8 {
        ieee_class(x & 0x7F, x, 0x7C, 0xFC)
    }
}

struct E4M3K;
impl Lanes for E4M3K {
    const W: usize = 1;
    type L = u8;
    fn load(e: &[u8]) -> u8 {
        e[0]
    }
    fn mark(x: u8) -> u8 {
        ((x & 0x7F) + 0x01) & 0x80
    }
    fn class(x: u8) -> u8 {
        if x & 0x7F == 0x7F {
            NAN
        } else {
            0
        }
    }
}

/// Bit 7 set exactly when `y == 0` (per byte, branch-free).
fn zero_byte(y: u8) -> u8 {
    y.wrapping_sub(1) & !y & 0x80
}

struct FnuzK;
impl Lanes for FnuzK {
    const W: usize = 1;
    type L = u8;
    fn load(e: &[u8]) -> u8 {
        e[0]
    }
    fn mark(x: u8) -> u8 {
        zero_byte(x ^ 0x80)
    }
    fn class(x: u8) -> u8 {
        if x == 0x80 {
            NAN
        } else {
            0
        }
    }
}

struct E8M0K;
impl Lanes for E8M0K {
    const W: usize = 1;
    type L = u8;
    fn load(e: &[u8]) -> u8 {
        e[0]
    }
    fn mark(x: u8) -> u8 {
        zero_byte(!x)
    }
    fn class(x: u8) -> u8 {
        if x == 0xFF {
            NAN
        } else {
            0
        }
    }
}

/// Count the special lanes of `bytes` (a whole number of lanes starting at file offset `at`)
/// into `acc`. `elem` is the element size and `tbegin` the tensor's first byte, used to report
/// the offset of the element (not the lane) for C64.
#[inline(always)]
fn scan_lanes<K: Lanes>(bytes: &[u8], at: u64, elem: u64, tbegin: u64, acc: &mut Acc) {
    for (bi, block) in bytes.chunks(BLOCK).enumerate() {
        let mut m = K::L::default();
        for e in block.chunks_exact(K::W) {
            m = m | K::mark(K::load(e));
        }
        if m == K::L::default() {
            continue;
        }
        let base = at + (bi * BLOCK) as u64;
        for (i, e) in block.chunks_exact(K::W).enumerate() {
            let c = K::class(K::load(e));
            match c {
                NAN => acc.nan += 1,
                POS_INF => acc.pos_inf += 1,
                NEG_INF => acc.neg_inf += 1,
                _ => continue,
            }
            if acc.first.is_none() {
                let lane = base + (i * K::W) as u64;
                let element = tbegin + (lane - tbegin) / elem * elem;
                acc.first = Some((element, c));
            }
        }
    }
}

/// BOOL: the first byte other than 0x00/0x01 (an OR of `x & 0xFE` per block, then a search).
#[inline(always)]
fn scan_bool(bytes: &[u8], at: u64, acc: &mut Acc) {
    if acc.first.is_some() {
        return;
    }
    for (bi, block) in bytes.chunks(BLOCK).enumerate() {
        let m = block.iter().fold(0u8, |m, &x| m | x);
        if m & 0xFE == 0 {
            continue;
        }
        if let Some((i, &b)) = block.iter().enumerate().find(|(_, &b)| b > 1) {
            acc.first = Some((at + (bi * BLOCK) as u64 + i as u64, b));
            return;
        }
    }
}

/// Lane width the scan reads a dtype in; 0 for dtypes it does not look into.
fn lane_width(dtype: Dtype) -> usize {
    match dtype {
        Dtype::BOOL
        | Dtype::F8_E5M2
        | Dtype::F8_E4M3
        | Dtype::F8_E8M0
        | Dtype::F8_E4M3FNUZ
        | Dtype::F8_E5M2FNUZ => 1,
        Dtype::F16 | Dtype::BF16 => 2,
        Dtype::F32 | Dtype::C64 => 4,
        Dtype::F64 => 8,
        _ => 0,
    }
}

fn kernel(span: &Span, bytes: &[u8], at: u64, acc: &mut Acc) {
    let elem = span.dtype.alignment();
    let tb = span.begin;
    match span.dtype {
        Dtype::BOOL => scan_bool(bytes, at, acc),
        Dtype::F16 => scan_lanes::<F16K>(bytes, at, elem, tb, acc),
        Dtype::BF16 => scan_lanes::<Bf16K>(bytes, at, elem, tb, acc),
        Dtype::F32 | Dtype::C64 => scan_lanes::<F32K>(bytes, at, elem, tb, acc),
        Dtype::F64 => scan_lanes::<F64K>(bytes, at, elem, tb, acc),
        Dtype::F8_E5M2 => scan_lanes::<E5M2K>(bytes, at, elem, tb, acc),
        Dtype::F8_E4M3 => scan_lanes::<E4M3K>(bytes, at, elem, tb, acc),
        Dtype::F8_E4M3FNUZ | Dtype::F8_E5M2FNUZ => scan_lanes::<FnuzK>(bytes, at, elem, tb, acc),
        Dtype::F8_E8M0 => scan_lanes::<E8M0K>(bytes, at, elem, tb, acc),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// The state machine shared by the mmap, threaded and streaming paths

/// A tensor's bytes in the file.
#[derive(Debug, Clone, Copy)]
struct Span {
    begin: u64,
    end: u64,
    dtype: Dtype,
}

fn spans(report: &Report<'_>) -> Vec<Span> {
    report
        .tensors()
        .map(|t| Span {
            begin: t.file_begin,
            end: t.file_end,
            dtype: t.dtype,
        })
        .collect()
}

/// Consumes the data region in order, in chunks of any size.
struct Feeder<'s> {
    spans: &'s [Span],
    idx: usize,
    pos: u64,
    carry: [u8; 8],
    carry_len: usize,
    carry_at: u64,
    accs: Vec<Acc>,
    deny_nonfinite: bool,
    /// Index of the tensor whose `first` is a fault (stops the scan).
    fault: Option<usize>,
}

impl<'s> Feeder<'s> {
    /// A feeder whose next byte is at file offset `pos`, which must be an element boundary.
    fn new(spans: &'s [Span], pos: u64, deny_nonfinite: bool) -> Self {
        let idx = spans.partition_point(|s| s.end <= pos);
        Feeder {
            spans,
            idx,
            pos,
            carry: [0; 8],
            carry_len: 0,
            carry_at: 0,
            accs: vec![Acc::default(); spans.len()],
            deny_nonfinite,
            fault: None,
        }
    }

    fn feed(&mut self, mut rest: &[u8]) {
        while !rest.is_empty() && self.fault.is_none() {
            let Some(&span) = self.spans.get(self.idx) else {
                return;
            };
            if self.pos >= span.end {
                self.idx += 1;
                self.carry_len = 0;
                continue;
            }
            if self.pos < span.begin {
                // Cannot happen in a valid file (the tensors tile the data region).
                let skip = usize::try_from(span.begin - self.pos)
                    .unwrap_or(usize::MAX)
                    .min(rest.len());
                rest = &rest[skip..];
                self.pos += skip as u64;
                continue;
            }
            let take = usize::try_from(span.end - self.pos)
                .unwrap_or(usize::MAX)
                .min(rest.len());
            let (part, tail) = rest.split_at(take);
            self.part(span, part);
            self.pos += take as u64;
            rest = tail;
        }
    }

    fn part(&mut self, span: Span, mut part: &[u8]) {
        let w = lane_width(span.dtype);
        if w == 0 {
            return;
        }
        let Some(acc) = self.accs.get_mut(self.idx) else {
            return;
        };
        let mut at = self.pos;
        if self.carry_len > 0 {
            let n = (w - self.carry_len).min(part.len());
            self.carry[self.carry_len..self.carry_len + n].copy_from_slice(&part[..n]);
            self.carry_len += n;
            part = &part[n..];
            at += n as u64;
            if self.carry_len == w {
                kernel(&span, &self.carry[..w], self.carry_at, acc);
                self.carry_len = 0;
            }
        }
        let bulk = part.len() / w * w;
        kernel(&span, &part[..bulk], at, acc);
        let rem = &part[bulk..];
        if !rem.is_empty() {
            self.carry[..rem.len()].copy_from_slice(rem);
            self.carry_len = rem.len();
            self.carry_at = at + bulk as u64;
        }
        if acc.first.is_some() && (span.dtype == Dtype::BOOL || self.deny_nonfinite) {
            self.fault = Some(self.idx);
        }
    }
}

/// Outcome of feeding the data region: per-tensor accumulators and the first fault.
struct Scanned {
    accs: Vec<Acc>,
    fault: Option<usize>,
}

impl Scanned {
    fn merge(parts: Vec<Scanned>, n: usize) -> Scanned {
        let mut accs = vec![Acc::default(); n];
        let mut fault = None;
        for p in parts {
            if fault.is_some() {
                break;
            }
            for (a, b) in accs.iter_mut().zip(&p.accs) {
                a.merge(b);
            }
            fault = p.fault;
        }
        Scanned { accs, fault }
    }
}

fn feed_all(spans: &[Span], data: &[u8], data_start: u64, deny: bool) -> Scanned {
    let mut f = Feeder::new(spans, data_start, deny);
    f.feed(data);
    Scanned {
        accs: f.accs,
        fault: f.fault,
    }
}

/// Split `[data_start, file_len)` into up to `n` ranges whose inner boundaries fall on element
/// boundaries.
fn split(spans: &[Span], data_start: u64, file_len: u64, n: usize) -> Vec<(u64, u64)> {
    let total = file_len - data_start;
    let mut cuts = vec![data_start];
    for i in 1..n as u64 {
        let target = data_start + (u128::from(total) * u128::from(i) / n as u128) as u64;
        let i = spans.partition_point(|s| s.end <= target);
        let cut = match spans.get(i) {
            Some(s) if s.begin < target => {
                let elem = s.dtype.alignment().max(8);
                s.begin + (target - s.begin) / elem * elem
            }
            _ => target,
        };
        if cut > *cuts.last().unwrap_or(&data_start) && cut < file_len {
            cuts.push(cut);
        }
    }
    cuts.push(file_len);
    cuts.windows(2).map(|w| (w[0], w[1])).collect()
}

// ---------------------------------------------------------------------------------------------
// Findings

fn fault_error(report: &Report<'_>, idx: usize, acc: &Acc) -> Option<Error> {
    let t = report.tensors().nth(idx)?;
    let (offset, v) = acc.first?;
    let f = if t.dtype == Dtype::BOOL {
        Finding::new(
            Rule::DataBool,
            offset,
            format!("BOOL tensor holds the byte {v:#04x}; only 0x00 and 0x01 are booleans"),
        )
    } else {
        Finding::new(
            Rule::DataNonFinite,
            offset,
            format!(
                "{} tensor holds {} (non-finite values are denied)",
                t.dtype,
                class_name(v)
            ),
        )
    };
    Some(f.with_tensor(t.name).into())
}

fn nonfinite_warnings(report: &Report<'_>, accs: &[Acc]) -> Vec<Warning> {
    report
        .tensors()
        .zip(accs)
        .filter(|(t, _)| t.dtype != Dtype::BOOL)
        .filter_map(|(t, a)| {
            let (offset, _) = a.first?;
            let part = if t.dtype == Dtype::C64 {
                " (counting each F32 part of a C64 element)"
            } else {
                ""
            };
            Some(
                Finding::new(
                    Rule::DataNonFinite,
                    offset,
                    format!(
                        "{} NaN, {} +Inf, {} -Inf among {} {} elements{part}; first at this offset",
                        a.nan, a.pos_inf, a.neg_inf, t.elements, t.dtype
                    ),
                )
                .with_tensor(t.name),
            )
        })
        .collect()
}

pub use crate::magic::sniff;

/// The bytes `DATA-POLYGLOT` looks at.
struct PolyglotView<'b> {
    /// The first up to [`SNIFF_LEN`] bytes of the file.
    head: &'b [u8],
    /// The first up to [`SNIFF_LEN`] bytes of the data region.
    data_head: &'b [u8],
    data_start: u64,
    /// The last up to [`ZIP_EOCD_WINDOW`] bytes of the file, and the file offset of its first.
    tail: &'b [u8],
    tail_start: u64,
    file_len: u64,
}

fn polyglot_warnings(v: &PolyglotView<'_>) -> Vec<Warning> {
    let mut out = Vec::new();
    if let Some(what) = sniff(v.head) {
        out.push(Finding::new(
            Rule::DataPolyglot,
            0,
            format!("the file starts with the magic number of a {what}; content sniffers will take it for that format"),
        ));
    }
    if !v.data_head.is_empty() {
        if let Some(what) = sniff(v.data_head) {
            out.push(Finding::new(
                Rule::DataPolyglot,
                v.data_start,
                format!("the data region starts with the magic number of a {what}"),
            ));
        }
    }
    // PDF readers accept the header anywhere in the first 1024 bytes of the file.
    if let Some(i) = v.head.windows(5).position(|w| w == b"%PDF-") {
        out.push(Finding::new(
            Rule::DataPolyglot,
            i as u64,
            "PDF header %PDF- within the first 1024 bytes of the file, where PDF readers look for it",
        ));
    }
    // ZIP readers search backwards from the end for the end-of-central-directory record.
    let eocd = v
        .tail
        .windows(4)
        .enumerate()
        .rev()
        .find(|(i, w)| *w == b"PK\x05\x06" && i + 22 <= v.tail.len());
    if let Some((i, _)) = eocd {
        let at = v.tail_start + i as u64;
        let comment = v
            .tail
            .get(i + 20..i + 22)
            .map_or(0, |c| u16::from_le_bytes([c[0], c[1]]));
        let exact = at + 22 + u64::from(comment) == v.file_len;
        let how = if exact {
            "its comment length reaches exactly the end of the file, so ZIP readers will open the file as an archive"
        } else {
            "ZIP readers that search the last 64 KiB for it may open the file as an archive"
        };
        out.push(Finding::new(
            Rule::DataPolyglot,
            at,
            format!("ZIP end-of-central-directory record (PK\\x05\\x06) near the end of the file: {how}"),
        ));
    }
    out
}

/// Turn the scan into findings: the fault (error) if any, then the warnings (errors under
/// `deny_warnings`), then the report.
fn conclude(
    report: &mut Report<'_>,
    scanned: Scanned,
    view: &PolyglotView<'_>,
    config: &Config,
    sha256: Option<[u8; 32]>,
) -> Result<DeepReport, Error> {
    if let Some(idx) = scanned.fault {
        if let Some(e) = scanned
            .accs
            .get(idx)
            .and_then(|a| fault_error(report, idx, a))
        {
            return Err(e);
        }
    }
    let mut warnings = nonfinite_warnings(report, &scanned.accs);
    warnings.extend(polyglot_warnings(view));
    warnings.sort_by_key(Finding::offset);
    if config.deny_warnings {
        if let Some(w) = warnings.first() {
            return Err(w.clone().into());
        }
    }
    for w in warnings {
        report.push_warning(w);
    }
    let tensors = report
        .tensors()
        .zip(&scanned.accs)
        .map(|(t, a)| {
            let (nan, pos_inf, neg_inf) = if t.dtype == Dtype::BOOL {
                (0, 0, 0)
            } else {
                (a.nan, a.pos_inf, a.neg_inf)
            };
            TensorStats {
                name: t.name.to_string(),
                dtype: t.dtype,
                nan,
                pos_inf,
                neg_inf,
            }
        })
        .collect();
    Ok(DeepReport {
        tensors,
        sha256,
        bytes_scanned: report.data_len(),
    })
}

// ---------------------------------------------------------------------------------------------
// Entry points

/// Deep-scan `file`, which must already have passed [`crate::validate`] giving `report`.
///
/// Returns the first `DATA-BOOL` error (or `DATA-NONFINITE` with `deny_nonfinite`) in file
/// order; otherwise pushes the `DATA-NONFINITE` and `DATA-POLYGLOT` warnings into `report`
/// (under `deny_warnings` the first of them is returned as the error instead).
pub fn scan(
    file: &[u8],
    report: &mut Report<'_>,
    config: &Config,
    opts: &DeepOptions,
) -> Result<DeepReport, Error> {
    let file_len = file.len() as u64;
    let data_start = report.data_start().min(file_len);
    let ds = usize::try_from(data_start).unwrap_or(file.len());
    let data = file.get(ds..).unwrap_or(&[]);
    let spans = spans(report);
    let deny = config.deny_nonfinite;
    let threads = opts.threads.max(1);
    let min_share = match opts.min_bytes_per_thread {
        0 => DEFAULT_MIN_BYTES_PER_THREAD,
        m => m,
    };

    let (scanned, sha) = if threads == 1 {
        if opts.sha256 {
            let mut h = Sha256::new();
            h.update(&file[..ds]);
            let mut f = Feeder::new(&spans, data_start, deny);
            for chunk in data.chunks(CHUNK) {
                h.update(chunk);
                f.feed(chunk);
            }
            let scanned = Scanned {
                accs: f.accs,
                fault: f.fault,
            };
            (scanned, Some(h.finalize().into()))
        } else {
            (feed_all(&spans, data, data_start, deny), None)
        }
    } else {
        let scanners = if opts.sha256 { threads - 1 } else { threads };
        let by_size = usize::try_from(data.len() as u64 / min_share).unwrap_or(usize::MAX);
        let n = scanners.min(by_size).max(1);
        let ranges = split(&spans, data_start, file_len, n);
        std::thread::scope(|s| {
            let hasher = opts.sha256.then(|| {
                s.spawn(|| {
                    let mut h = Sha256::new();
                    h.update(file);
                    <[u8; 32]>::from(h.finalize())
                })
            });
            let workers: Vec<_> = ranges
                .iter()
                .map(|&(a, b)| {
                    let spans = &spans;
                    let bytes = file
                        .get(usize::try_from(a).unwrap_or(0)..usize::try_from(b).unwrap_or(0))
                        .unwrap_or(&[]);
                    s.spawn(move || feed_all(spans, bytes, a, deny))
                })
                .collect();
            let parts: Vec<Scanned> = workers
                .into_iter()
                .map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect();
            let sha = hasher.map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            (Scanned::merge(parts, spans.len()), sha)
        })
    };

    let tail_start = file.len().saturating_sub(ZIP_EOCD_WINDOW);
    let view = PolyglotView {
        head: &file[..file.len().min(SNIFF_LEN)],
        data_head: &data[..data.len().min(SNIFF_LEN)],
        data_start,
        tail: &file[tail_start..],
        tail_start: tail_start as u64,
        file_len,
    };
    conclude(report, scanned, &view, config, sha)
}

/// The last `n` bytes of the concatenation of `parts`.
fn last_bytes(parts: &[&[u8]], n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n);
    let mut need = n;
    for p in parts.iter().rev() {
        if need == 0 {
            break;
        }
        let take = p.len().min(need);
        let mut v = p[p.len() - take..].to_vec();
        v.extend_from_slice(&out);
        out = v;
        need -= take;
    }
    out
}

/// [`crate::stream::validate_reader`] followed by [`scan`], in one pass over `reader`: the
/// same verdict, rule, offset, warnings and deep report as `validate` + `scan` on the same
/// bytes (single-threaded; `opts.threads` is ignored).
pub fn validate_reader_deep<R: Read>(
    mut reader: R,
    config: &Config,
    opts: &DeepOptions,
) -> Result<(Report<'static>, DeepReport), StreamError> {
    let mut hasher = opts.sha256.then(Sha256::new);
    let mut prefix = [0u8; frame::LENGTH_FIELD];
    let got = read_full(&mut reader, &mut prefix)?;
    let prefix = &prefix[..got];
    let n = match frame::header_length(prefix, config) {
        Ok(n) => n,
        Err(e) => return Err(frame::identify_from(e, prefix, &mut reader)?.into()),
    };
    let mut header = Vec::new();
    let got = (&mut reader).take(n).read_to_end(&mut header)? as u64;
    if got < n {
        let e = frame::bounds_error(n, frame::LENGTH_FIELD as u64 + got);
        return Err(frame::identify_from(e, prefix, &mut header.as_slice())?.into());
    }
    let report = crate::validate_header(&header, config)?.into_owned();
    if let Some(h) = hasher.as_mut() {
        h.update(prefix);
        h.update(&header);
    }
    let data_start = report.data_start();
    let spans = spans(&report);
    let mut feeder = Feeder::new(&spans, data_start, config.deny_nonfinite);

    let mut bufs = [vec![0u8; STREAM_BUFFER_SIZE], vec![0u8; STREAM_BUFFER_SIZE]];
    let mut lens = [0usize; 2];
    let mut cur = 0;
    let mut data_len = 0u64;
    let mut data_head = Vec::with_capacity(SNIFF_LEN);
    loop {
        let k = read_full(&mut reader, &mut bufs[cur])?;
        if k == 0 {
            break;
        }
        let chunk = &bufs[cur][..k];
        for c in chunk.chunks(CHUNK) {
            if let Some(h) = hasher.as_mut() {
                h.update(c);
            }
            feeder.feed(c);
        }
        if data_head.len() < SNIFF_LEN {
            let more = (SNIFF_LEN - data_head.len()).min(k);
            data_head.extend_from_slice(&chunk[..more]);
        }
        data_len = data_len.saturating_add(k as u64);
        lens[cur] = k;
        cur ^= 1;
    }
    report.check_data_len(data_len)?;
    let mut report = report.finish(config)?;

    // cur now indexes the older buffer (or an unused one).
    let older = &bufs[cur][..lens[cur]];
    let last = &bufs[cur ^ 1][..lens[cur ^ 1]];
    let file_len = data_start + data_len;
    let all: [&[u8]; 4] = [prefix, &header, older, last];
    let head = {
        let mut h = Vec::with_capacity(SNIFF_LEN);
        for p in [prefix, &header[..], &data_head[..]] {
            let more = (SNIFF_LEN - h.len()).min(p.len());
            h.extend_from_slice(&p[..more]);
        }
        h
    };
    let tail = last_bytes(&all, ZIP_EOCD_WINDOW);
    let view = PolyglotView {
        head: &head,
        data_head: &data_head,
        data_start,
        tail: &tail,
        tail_start: file_len - tail.len() as u64,
        file_len,
    };
    let scanned = Scanned {
        accs: feeder.accs,
        fault: feeder.fault,
    };
    let sha = hasher.map(|h| h.finalize().into());
    let deep = conclude(&mut report, scanned, &view, config, sha)?;
    Ok((report, deep))
}
