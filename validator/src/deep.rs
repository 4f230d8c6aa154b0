//! Deep scan of tensor data (`--deep`): BOOL bytes, non-finite counts, SHA-256, polyglots.
//!
//! The scan reads every tensor's bytes once, in file order. Each dtype has a kernel that first
//! ORs a branch-free "is one of these elements special?" mark over the 8-byte words of a block
//! of 4 KiB (whole-word AND, add and OR, which the compiler vectorises with the baseline
//! instruction set); only a block whose mark is set is classified element by element,
//! while it is still in L1, to count NaN, +Inf and -Inf and find the first one's offset. With
//! [`Config::sha256`] the file is hashed in chunks of 256 KiB, each chunk scanned
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
//! The scan is one state machine, `DeepScan`, that [`crate::Checker`] feeds the data region
//! in chunks of any size (carrying an element split between two chunks), or hands a whole
//! mapped data region to split across threads; every path gives the same results.

use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use crate::dtype::Dtype;
use crate::error::{Error, Finding, ReadError, Warning};
use crate::limits::Config;
use crate::progress::Progress;
use crate::report::Report;
use crate::rules::Rule;

/// Bytes per block of the kernels' fast path: the unit that is re-read (from L1) element by
/// element when it holds a special value.
pub(crate) const BLOCK: usize = 4096;

/// Bytes hashed and then scanned at a time when SHA-256 is on (fits in L2).
pub(crate) const CHUNK: usize = 256 * 1024;

/// Bytes of a mapped data region scanned (and hashed) between two reports to a [`Progress`]
/// hook: one call per 4 MiB keeps the hook's cost out of sight.
#[doc(hidden)]
pub const PROGRESS_STEP: usize = 4 << 20;

/// The smallest share of the data region given to one thread by default
/// ([`Config::min_bytes_per_thread`] = 0).
pub(crate) const DEFAULT_MIN_BYTES_PER_THREAD: u64 = 4 << 20;

/// How far from the end of the file a ZIP end-of-central-directory record can start: its 22
/// bytes plus a comment of up to 65,535 bytes.
pub(crate) const ZIP_EOCD_WINDOW: usize = 22 + 65_535;

/// How many bytes at the start of the file and of the data region are sniffed for magic
/// numbers; PDF readers look for `%PDF-` anywhere in this many bytes at the file's start.
pub(crate) const SNIFF_LEN: usize = 1024;

/// Non-finite counts of one tensor that holds at least one NaN or infinity. For C64 each F32
/// part counts on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TensorStats {
    /// The tensor's position in [`crate::Report::tensors`] (offset order).
    pub index: usize,
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
#[non_exhaustive]
pub struct DeepReport {
    /// The tensors holding a NaN or an infinity, in offset order (only those: a file of a
    /// million finite tensors costs nothing here): the first
    /// [`Config::max_warnings_per_rule`] of them, as their `DATA-NONFINITE` warnings are
    /// capped. [`DeepReport::non_finite_tensors`] counts them all.
    pub non_finite: Vec<TensorStats>,
    /// How many tensors hold a NaN or an infinity (listed in `non_finite` or not).
    pub non_finite_tensors: u64,
    /// NaN values in all tensors (C64: each F32 part counts).
    pub nan: u64,
    /// Positive infinities in all tensors.
    pub pos_inf: u64,
    /// Negative infinities in all tensors.
    pub neg_inf: u64,
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

/// Eight bytes of `lane` repeated in every `w`-byte lane of a little-endian word.
const fn splat(lane: u64, w: usize) -> u64 {
    let mut word = 0;
    let mut i = 0;
    while i < 8 {
        word |= lane << (8 * i);
        i += w;
    }
    word
}

/// One lane type of a float format. The fast path looks at the data 8 bytes at a time, as one
/// `u64` of `8 / W` whole lanes, with operations on the whole word (AND, add, OR): the
/// compiler vectorises them with the baseline instruction set (SSE2 on x86-64), where a
/// per-lane formulation let it narrow the loads to the exponent bytes and read across cache
/// lines and pages.
trait Lanes {
    /// Bytes per lane.
    const W: usize;
    /// The bits of [`Lanes::flags`] that say "special".
    const TOP: u64;
    type L: Copy;
    fn load(e: &[u8]) -> Self::L;
    /// For a word of whole lanes: `flags(word) & TOP` is non-zero exactly when one of its
    /// lanes is NaN or an infinity. Zero is finite in every format (a word is padded with
    /// zeros at the end of a piece). No lane carries into the next.
    fn flags(word: u64) -> u64;
    /// 0 (finite), NAN, POS_INF or NEG_INF.
    fn class(x: Self::L) -> u8;
}

/// `(lane & keep) + add` for every `w`-byte lane of `word`. With `keep` all bits but the sign
/// and `add` the exponent's lowest bit, a lane's top bit is set exactly when its exponent is
/// all ones; the sum never carries out of the lane.
#[inline(always)]
fn exponent_all_ones(word: u64, w: usize, keep: u64, add: u64) -> u64 {
    (word & splat(keep, w)) + splat(add, w)
}

/// The top bit of each byte of `word` that is zero is set in the result (other bits set only
/// above such a byte): the word holds a zero byte exactly when `result & splat(0x80, 1)` is
/// non-zero.
#[inline(always)]
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(splat(0x01, 1)) & !word
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
    const TOP: u64 = splat(0x8000, 2);
    type L = u16;
    fn load(e: &[u8]) -> u16 {
        u16::from_le_bytes([e[0], e[1]])
    }
    fn flags(word: u64) -> u64 {
        // |x| >= 0x7C00  <=>  |x| + 0x0400 reaches bit 15 (no overflow: |x| <= 0x7FFF).
        exponent_all_ones(word, 2, 0x7FFF, 0x0400)
    }
    fn class(x: u16) -> u8 {
        ieee_class(x & 0x7FFF, x, 0x7C00, 0xFC00)
    }
}

struct Bf16K;
impl Lanes for Bf16K {
    const W: usize = 2;
    const TOP: u64 = splat(0x8000, 2);
    type L = u16;
    fn load(e: &[u8]) -> u16 {
        u16::from_le_bytes([e[0], e[1]])
    }
    fn flags(word: u64) -> u64 {
        exponent_all_ones(word, 2, 0x7FFF, 0x0080)
    }
    fn class(x: u16) -> u8 {
        ieee_class(x & 0x7FFF, x, 0x7F80, 0xFF80)
    }
}

struct F32K;
impl Lanes for F32K {
    const W: usize = 4;
    const TOP: u64 = splat(0x8000_0000, 4);
    type L = u32;
    fn load(e: &[u8]) -> u32 {
        u32::from_le_bytes([e[0], e[1], e[2], e[3]])
    }
    fn flags(word: u64) -> u64 {
        exponent_all_ones(word, 4, 0x7FFF_FFFF, 0x0080_0000)
    }
    fn class(x: u32) -> u8 {
        ieee_class(x & 0x7FFF_FFFF, x, 0x7F80_0000, 0xFF80_0000)
    }
}

struct F64K;
impl Lanes for F64K {
    const W: usize = 8;
    const TOP: u64 = 0x8000_0000_0000_0000;
    type L = u64;
    fn load(e: &[u8]) -> u64 {
        u64::from_le_bytes([e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]])
    }
    fn flags(word: u64) -> u64 {
        exponent_all_ones(word, 8, 0x7FFF_FFFF_FFFF_FFFF, 0x0010_0000_0000_0000)
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
    const TOP: u64 = splat(0x80, 1);
    type L = u8;
    fn load(e: &[u8]) -> u8 {
        e[0]
    }
    fn flags(word: u64) -> u64 {
        exponent_all_ones(word, 1, 0x7F, 0x04)
    }
    fn class(x: u8) -> u8 {
        ieee_class(x & 0x7F, x, 0x7C, 0xFC)
    }
}

struct E4M3K;
impl Lanes for E4M3K {
    const W: usize = 1;
    const TOP: u64 = splat(0x80, 1);
    type L = u8;
    fn load(e: &[u8]) -> u8 {
        e[0]
    }
    fn flags(word: u64) -> u64 {
        // Only 0x7F and 0xFF: the low 7 bits all ones.
        exponent_all_ones(word, 1, 0x7F, 0x01)
    }
    fn class(x: u8) -> u8 {
        if x & 0x7F == 0x7F {
            NAN
        } else {
            0
        }
    }
}

struct FnuzK;
impl Lanes for FnuzK {
    const W: usize = 1;
    const TOP: u64 = splat(0x80, 1);
    type L = u8;
    fn load(e: &[u8]) -> u8 {
        e[0]
    }
    fn flags(word: u64) -> u64 {
        // The byte 0x80 is the one that becomes zero.
        zero_bytes(word ^ splat(0x80, 1))
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
    const TOP: u64 = splat(0x80, 1);
    type L = u8;
    fn load(e: &[u8]) -> u8 {
        e[0]
    }
    fn flags(word: u64) -> u64 {
        zero_bytes(!word)
    }
    fn class(x: u8) -> u8 {
        if x == 0xFF {
            NAN
        } else {
            0
        }
    }
}

/// The OR of `flags` over the words of `block` (whole lanes; the last word padded with zeros).
#[inline(always)]
fn block_flags(block: &[u8], flags: impl Fn(u64) -> u64) -> u64 {
    let (words, rest) = block.as_chunks::<8>();
    let mut m = words
        .iter()
        .fold(0u64, |m, w| m | flags(u64::from_le_bytes(*w)));
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        m |= flags(u64::from_le_bytes(last));
    }
    m
}

/// Count the special lanes of `bytes` (a whole number of lanes starting at file offset `at`)
/// into `acc`. `elem` is the element size and `tbegin` the tensor's first byte, used to report
/// the offset of the element (not the lane) for C64.
#[inline(always)]
fn scan_lanes<K: Lanes>(bytes: &[u8], at: u64, elem: u64, tbegin: u64, acc: &mut Acc) {
    for (bi, block) in bytes.chunks(BLOCK).enumerate() {
        if block_flags(block, K::flags) & K::TOP == 0 {
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

/// BOOL: the first byte other than 0x00/0x01 (an OR of the words per block, then a search).
#[inline(always)]
fn scan_bool(bytes: &[u8], at: u64, acc: &mut Acc) {
    if acc.first.is_some() {
        return;
    }
    for (bi, block) in bytes.chunks(BLOCK).enumerate() {
        if block_flags(block, |w| w) & splat(0xFE, 1) == 0 {
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

fn kernel(dtype: Dtype, tb: u64, bytes: &[u8], at: u64, acc: &mut Acc) {
    let elem = dtype.alignment();
    match dtype {
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
// The state machine shared by the mapped, threaded and streamed paths

/// The bytes of tensor `i` of `report`: its file offsets and dtype.
fn span(report: &Report<'_>, i: usize) -> Option<(u64, u64, Dtype)> {
    report
        .tensor_at(i)
        .map(|t| (t.file_begin, t.file_end, t.dtype))
}

/// The first index in `0..n` where `pred` holds, for a `pred` that is false and then true.
fn first_index(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// Consumes the data region in order, in chunks of any size.
#[derive(Debug)]
struct Feeder {
    idx: usize,
    pos: u64,
    carry: [u8; 8],
    carry_len: usize,
    carry_at: u64,
    tally: Tally,
    deny_nonfinite: bool,
}

impl Feeder {
    /// A feeder whose next byte is at file offset `pos`, which must be an element boundary,
    /// keeping the counts of at most `cap` tensors (see [`Tally`]).
    fn new(report: &Report<'_>, pos: u64, deny_nonfinite: bool, cap: usize) -> Self {
        let idx = first_index(report.len(), |i| span(report, i).is_none_or(|s| s.1 > pos));
        Feeder {
            idx,
            pos,
            carry: [0; 8],
            carry_len: 0,
            carry_at: 0,
            tally: Tally::new(cap),
            deny_nonfinite,
        }
    }

    fn feed(&mut self, report: &Report<'_>, mut rest: &[u8]) {
        while !rest.is_empty() && self.tally.fault.is_none() {
            let Some((begin, end, dtype)) = span(report, self.idx) else {
                return;
            };
            if self.pos >= end {
                self.idx += 1;
                self.carry_len = 0;
                continue;
            }
            if self.pos < begin {
                // Cannot happen in a valid file (the tensors tile the data region).
                let skip = usize::try_from(begin - self.pos)
                    .unwrap_or(usize::MAX)
                    .min(rest.len());
                rest = &rest[skip..];
                self.pos += skip as u64;
                continue;
            }
            let take = usize::try_from(end - self.pos)
                .unwrap_or(usize::MAX)
                .min(rest.len());
            let (part, tail) = rest.split_at(take);
            self.part(begin, dtype, part);
            self.pos += take as u64;
            rest = tail;
        }
    }

    fn part(&mut self, begin: u64, dtype: Dtype, mut part: &[u8]) {
        let w = lane_width(dtype);
        if w == 0 {
            return;
        }
        let mut local = Acc::default();
        let acc = &mut local;
        let mut at = self.pos;
        if self.carry_len > 0 {
            let n = (w - self.carry_len).min(part.len());
            self.carry[self.carry_len..self.carry_len + n].copy_from_slice(&part[..n]);
            self.carry_len += n;
            part = &part[n..];
            at += n as u64;
            if self.carry_len == w {
                kernel(dtype, begin, &self.carry[..w], self.carry_at, acc);
                self.carry_len = 0;
            }
        }
        let bulk = part.len() / w * w;
        kernel(dtype, begin, &part[..bulk], at, acc);
        let rem = &part[bulk..];
        if !rem.is_empty() {
            self.carry[..rem.len()].copy_from_slice(rem);
            self.carry_len = rem.len();
            self.carry_at = at + bulk as u64;
        }
        if local == Acc::default() {
            return;
        }
        let fault = local.first.is_some() && (dtype == Dtype::BOOL || self.deny_nonfinite);
        self.tally.add(self.idx, dtype, local, fault);
    }
}

/// Add the counts `a` of tensor `idx` to `accs`: merged into the last entry if it is the same
/// tensor, else a new entry while fewer than `cap` are kept.
fn keep(accs: &mut Vec<(usize, Acc)>, cap: usize, idx: usize, a: Acc) {
    if let Some((i, kept)) = accs.last_mut() {
        if *i == idx {
            kept.merge(&a);
            return;
        }
    }
    if accs.len() < cap {
        accs.push((idx, a));
    }
}

/// What a scan found, in bounded memory: the counts of the first `cap` tensors (in offset
/// order) that hold a NaN or an infinity, the exact number of such tensors and the exact
/// totals beside them, and the first fault. A file of a million NaN scalars keeps `cap`
/// entries, not a million (as warnings are capped, [`Config::max_warnings_per_rule`]).
#[derive(Debug)]
struct Tally {
    cap: usize,
    /// The first tensors with a special value, in offset order, with their counts: sparse,
    /// so a scan of a million clean tensors keeps nothing per tensor.
    accs: Vec<(usize, Acc)>,
    /// Tensors (other than BOOL) holding a NaN or infinity, kept in `accs` or not.
    flagged: u64,
    /// The last tensor counted in `flagged` (a tensor split between two ranges counts once).
    last_flagged: Option<usize>,
    /// NaN and infinities of every tensor.
    totals: Acc,
    /// The tensor whose `first` is a fault (stops the scan), with its counts.
    fault: Option<(usize, Acc)>,
}

impl Tally {
    fn new(cap: usize) -> Self {
        Tally {
            cap: cap.max(1),
            accs: Vec::new(),
            flagged: 0,
            last_flagged: None,
            totals: Acc::default(),
            fault: None,
        }
    }

    /// Counts `a` of tensor `idx`, which come after every count added before.
    fn add(&mut self, idx: usize, dtype: Dtype, a: Acc, fault: bool) {
        keep(&mut self.accs, self.cap, idx, a);
        if dtype != Dtype::BOOL && a.nan + a.pos_inf + a.neg_inf > 0 {
            self.totals.merge(&Acc { first: None, ..a });
            if self.last_flagged != Some(idx) {
                self.flagged += 1;
                self.last_flagged = Some(idx);
            }
        }
        if fault {
            let kept = self.acc(idx).copied().unwrap_or(a);
            self.fault = Some((idx, kept));
        }
    }

    /// The tallies of consecutive ranges, in order; a tensor split between two ranges is one.
    fn merge(parts: Vec<Tally>, cap: usize) -> Tally {
        let mut out = Tally::new(cap);
        for p in parts {
            if out.fault.is_some() {
                break;
            }
            let mut flagged = p.flagged;
            if let (Some(last), Some(&(first, _))) = (out.last_flagged, p.accs.first()) {
                if last == first && flagged > 0 {
                    flagged -= 1;
                }
            }
            for (i, b) in p.accs {
                keep(&mut out.accs, out.cap, i, b);
            }
            out.flagged += flagged;
            out.last_flagged = p.last_flagged.or(out.last_flagged);
            out.totals.merge(&p.totals);
            out.fault = p.fault;
        }
        out
    }

    fn acc(&self, i: usize) -> Option<&Acc> {
        self.accs
            .binary_search_by_key(&i, |e| e.0)
            .ok()
            .map(|k| &self.accs[k].1)
    }
}

/// Split `[data_start, file_len)` into up to `n` ranges whose inner boundaries fall on element
/// boundaries.
fn split(report: &Report<'_>, data_start: u64, file_len: u64, n: usize) -> Vec<(u64, u64)> {
    let total = file_len - data_start;
    let mut cuts = vec![data_start];
    for i in 1..n as u64 {
        let target = data_start + (u128::from(total) * u128::from(i) / n as u128) as u64;
        let i = first_index(report.len(), |i| {
            span(report, i).is_none_or(|s| s.1 > target)
        });
        let cut = match span(report, i) {
            Some((begin, _, dtype)) if begin < target => {
                let elem = dtype.alignment().max(8);
                begin + (target - begin) / elem * elem
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

/// The data region of a file, for a scan split across threads: each thread asks for its own
/// range. A buffer in memory lends its bytes ([`Slice`]); a file is read in blocks into a
/// buffer of the thread's own (`source::FileRegion`), so nothing maps the file and a file
/// that shrinks under the scan is an error, not a signal.
pub(crate) trait Region: Sync {
    /// The region's length in bytes (it starts at the data region's file offset).
    fn len(&self) -> u64;

    /// Call `f` on the bytes at file offsets `[at, at + len)`, in order, in pieces.
    fn visit(&self, at: u64, len: u64, f: &mut dyn FnMut(&[u8])) -> Result<(), ReadError>;

    /// Whether [`Region::visit`] copies the bytes (a file read into a buffer) rather than
    /// lending them from memory.
    fn copies(&self) -> bool {
        false
    }

    /// [`Region::visit`] into buffers of the caller's, for a pipeline whose next stage runs on
    /// another thread, so that each byte is copied once: `take` hands out the buffer of the
    /// next block (`None` stops the visit), `f` gets it back with the count of bytes filled
    /// (`false` stops the visit). This default copies what `visit` lends.
    fn visit_owned(
        &self,
        at: u64,
        len: u64,
        take: &mut dyn FnMut() -> Option<Vec<u8>>,
        f: &mut dyn FnMut(Vec<u8>, usize) -> bool,
    ) -> Result<(), ReadError> {
        let mut going = true;
        self.visit(at, len, &mut |piece| {
            if going {
                going = match take() {
                    Some(mut buf) => {
                        buf.clear();
                        buf.extend_from_slice(piece);
                        f(buf, piece.len())
                    }
                    None => false,
                };
            }
        })
    }
}

/// Bytes of a block of the pipeline of [`DeepScan::scan_while_hashing`]: small enough to stay
/// in the L2 cache from its read to its scan.
const PIPE_BLOCK: usize = 256 * 1024;

/// Blocks in flight between the reading and scanning thread and the hashing one.
const PIPE_DEPTH: usize = 4;

/// A data region held in memory: `bytes` start at file offset `base`.
#[derive(Debug)]
pub(crate) struct Slice<'b> {
    pub(crate) bytes: &'b [u8],
    pub(crate) base: u64,
}

impl Region for Slice<'_> {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn visit(&self, at: u64, len: u64, f: &mut dyn FnMut(&[u8])) -> Result<(), ReadError> {
        let from = usize::try_from(at - self.base).unwrap_or(usize::MAX);
        let to = usize::try_from(at - self.base + len).unwrap_or(usize::MAX);
        for piece in self
            .bytes
            .get(from..to)
            .unwrap_or(&[])
            .chunks(PROGRESS_STEP)
        {
            f(piece);
        }
        Ok(())
    }
}

/// The deep scan of one file, fed its bytes in order (or handed the whole mapped buffer), with
/// the hash computed in the same pass. Driven by [`crate::Checker`], which owns the order of
/// the stages.
#[derive(Debug)]
pub(crate) struct DeepScan {
    feeder: Feeder,
    hasher: Option<Sha256>,
    /// The first up to [`SNIFF_LEN`] bytes of the file and of the data region.
    head: Vec<u8>,
    data_head: Vec<u8>,
    /// The last bytes seen, at least [`ZIP_EOCD_WINDOW`] of them once that many came.
    tail: Vec<u8>,
    data_seen: u64,
}

impl DeepScan {
    /// A scan of the data region of `report`, after the length field and header bytes
    /// `prefix_and_header` (which are hashed first).
    pub(crate) fn new(report: &Report<'_>, config: &Config, framing: &[&[u8]]) -> Self {
        let mut hasher = config.sha256.then(Sha256::new);
        let mut head = Vec::with_capacity(SNIFF_LEN);
        for part in framing {
            if let Some(h) = hasher.as_mut() {
                h.update(part);
            }
            let more = (SNIFF_LEN - head.len()).min(part.len());
            head.extend_from_slice(&part[..more]);
        }
        let mut tail = Vec::new();
        for part in framing {
            push_tail(&mut tail, part);
        }
        DeepScan {
            feeder: Feeder::new(
                report,
                report.data_start(),
                config.deny_nonfinite,
                config.max_warnings_per_rule,
            ),
            hasher,
            head,
            data_head: Vec::new(),
            tail,
            data_seen: 0,
        }
    }

    /// The next bytes of the data region.
    pub(crate) fn feed(&mut self, report: &Report<'_>, bytes: &[u8]) {
        for c in bytes.chunks(CHUNK) {
            if let Some(h) = self.hasher.as_mut() {
                h.update(c);
            }
            self.feeder.feed(report, c);
        }
        self.note(bytes);
    }

    fn note(&mut self, bytes: &[u8]) {
        self.note_head(bytes);
        push_tail(&mut self.tail, bytes);
        self.data_seen = self.data_seen.saturating_add(bytes.len() as u64);
    }

    /// Keep the first [`SNIFF_LEN`] bytes of the data region (and of the file).
    fn note_head(&mut self, bytes: &[u8]) {
        if self.data_head.len() < SNIFF_LEN {
            let more = (SNIFF_LEN - self.data_head.len()).min(bytes.len());
            self.data_head.extend_from_slice(&bytes[..more]);
        }
        if self.head.len() < SNIFF_LEN {
            let more = (SNIFF_LEN - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..more]);
        }
    }

    /// The whole data region at once, split across `threads` (one of them hashing when the
    /// hash is on): the same result as feeding it in order. The bytes come from `region`: a
    /// buffer in memory, or a file read in blocks (see [`Region`]); a region that cannot give
    /// its bytes (a file that got shorter) stops the scan with that error. `progress` is told
    /// of the bytes done as the threads go (with the hash on, a byte is done once it is both
    /// scanned and hashed); the counts add up to the region's length.
    pub(crate) fn feed_region(
        &mut self,
        report: &Report<'_>,
        region: &dyn Region,
        threads: usize,
        min_share: u64,
        progress: &dyn Progress,
    ) -> Result<(), ReadError> {
        let data_start = report.data_start();
        let len = region.len();
        let file_len = data_start + len;
        let threads = threads.max(1);
        let min_share = if min_share == 0 {
            DEFAULT_MIN_BYTES_PER_THREAD
        } else {
            min_share
        };
        if self.hasher.is_some() && threads > 1 && region.copies() {
            return self.scan_while_hashing(report, region, progress);
        }
        let scanners = if self.hasher.is_some() {
            threads - 1
        } else {
            threads
        };
        let by_size = usize::try_from(len / min_share).unwrap_or(usize::MAX);
        let n = scanners.min(by_size).max(1);
        if threads == 1 || (n == 1 && self.hasher.is_none()) {
            region.visit(data_start, len, &mut |piece| {
                self.feed(report, piece);
                progress.advance(piece.len() as u64);
            })?;
            return Ok(());
        }
        let ranges = split(report, data_start, file_len, n);
        let deny = self.feeder.deny_nonfinite;
        let cap = self.feeder.tally.cap;
        let hasher = self.hasher.take();
        let done = Done::new(progress, hasher.is_some());
        let done = &done;
        let (scanned, hasher) = std::thread::scope(|s| {
            let hashing = hasher.map(|mut h| {
                s.spawn(move || {
                    region
                        .visit(data_start, len, &mut |piece| {
                            h.update(piece);
                            done.add(&done.hashed, piece.len());
                        })
                        .map(|()| h)
                })
            });
            let workers: Vec<_> = ranges
                .iter()
                .map(|&(a, b)| {
                    s.spawn(move || {
                        let mut f = Feeder::new(report, a, deny, cap);
                        region.visit(a, b - a, &mut |piece| {
                            f.feed(report, piece);
                            done.add(&done.scanned, piece.len());
                        })?;
                        Ok(f.tally)
                    })
                })
                .collect();
            let parts: Result<Vec<Tally>, ReadError> = workers
                .into_iter()
                .map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect();
            let h = hashing
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .transpose();
            (parts.map(|p| Tally::merge(p, cap)), h)
        });
        let (scanned, hasher) = (scanned?, hasher?);
        done.finish(len);
        self.hasher = hasher;
        self.feeder.tally = scanned;
        // What `note` keeps of the bytes: the head of the data region and the tail of the file.
        let head = len.min(SNIFF_LEN as u64);
        region.visit(data_start, head, &mut |piece| self.note_head(piece))?;
        let tail = len.min(ZIP_EOCD_WINDOW as u64);
        region.visit(file_len - tail, tail, &mut |piece| {
            push_tail(&mut self.tail, piece)
        })?;
        self.data_seen = self.data_seen.saturating_add(len);
        Ok(())
    }

    /// The data region of a file, with the hash: each block is read once, by this thread,
    /// which scans it right after its read (it is still in the cache) and hands it to a
    /// hashing thread. The hash, the slowest stage, is then the whole scan's time: the copy
    /// and the scan ride beside it (`openssl dgst` copies and hashes on one thread). The
    /// result is the same as feeding the region in order.
    fn scan_while_hashing(
        &mut self,
        report: &Report<'_>,
        region: &dyn Region,
        progress: &dyn Progress,
    ) -> Result<(), ReadError> {
        use std::sync::mpsc::sync_channel;
        let Some(mut hasher) = self.hasher.take() else {
            return Ok(());
        };
        let len = region.len();
        let size = usize::try_from(len)
            .unwrap_or(usize::MAX)
            .clamp(1, PIPE_BLOCK);
        let (full, filled) = sync_channel::<(Vec<u8>, usize)>(PIPE_DEPTH);
        let (give_back, free) = sync_channel::<Vec<u8>>(PIPE_DEPTH + 1);
        let done = Done::new(progress, true);
        let done = &done;
        let (read, hasher) = std::thread::scope(|s| {
            let hashing = s.spawn(move || {
                for (buf, n) in filled {
                    hasher.update(&buf[..n]);
                    done.add(&done.hashed, n);
                    // The reader may have stopped: the buffer is then not wanted.
                    let _ = give_back.try_send(buf);
                }
                hasher
            });
            // At most PIPE_DEPTH + 1 buffers: one being read, the others queued or hashed.
            let mut made = 0;
            let mut take = || {
                free.try_recv().ok().or_else(|| {
                    if made <= PIPE_DEPTH {
                        made += 1;
                        Some(vec![0u8; size])
                    } else {
                        free.recv().ok()
                    }
                })
            };
            let mut scan = |buf: Vec<u8>, n: usize| {
                self.feed(report, &buf[..n]);
                done.add(&done.scanned, n);
                full.send((buf, n)).is_ok()
            };
            let read = region.visit_owned(report.data_start(), len, &mut take, &mut scan);
            drop(full);
            let hasher = hashing
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            (read, hasher)
        });
        self.hasher = Some(hasher);
        read?;
        done.finish(len);
        Ok(())
    }

    /// The findings: the fault (error) if any, then the warnings pushed into `report`; the
    /// SHA-256 if it was computed.
    pub(crate) fn finish(
        self,
        report: &mut Report<'_>,
    ) -> (Result<DeepReport, Error>, Option<[u8; 32]>) {
        let sha = self.hasher.map(|h| h.finalize().into());
        let file_len = report.data_start().saturating_add(self.data_seen);
        let tail_start = file_len - self.tail.len() as u64;
        let view = PolyglotView {
            head: &self.head,
            data_head: &self.data_head,
            data_start: report.data_start(),
            tail: &self.tail,
            tail_start,
            file_len,
        };
        let scanned = self.feeder.tally;
        (conclude(report, scanned, &view, self.data_seen), sha)
    }
}

/// The bytes done by the threads of a split scan, told to a [`Progress`] hook as they grow:
/// scanned bytes, or with the hash on the fewer of the scanned and the hashed bytes (the
/// threads work on the same region at the same time).
struct Done<'p> {
    progress: &'p dyn Progress,
    hashing: bool,
    scanned: AtomicU64,
    hashed: AtomicU64,
    told: AtomicU64,
}

impl<'p> Done<'p> {
    fn new(progress: &'p dyn Progress, hashing: bool) -> Self {
        Done {
            progress,
            hashing,
            scanned: AtomicU64::new(0),
            hashed: AtomicU64::new(0),
            told: AtomicU64::new(0),
        }
    }

    /// `n` more bytes counted in `counter`; tell the hook what is newly done.
    fn add(&self, counter: &AtomicU64, n: usize) {
        counter.fetch_add(n as u64, Ordering::SeqCst);
        let scanned = self.scanned.load(Ordering::SeqCst);
        let done = if self.hashing {
            scanned.min(self.hashed.load(Ordering::SeqCst))
        } else {
            scanned
        };
        self.tell(done);
    }

    /// Tell the hook about bytes up to `done` not told yet (each byte once, whichever thread
    /// gets there first).
    fn tell(&self, done: u64) {
        let before = self.told.fetch_max(done, Ordering::SeqCst);
        if done > before {
            self.progress.advance(done - before);
        }
    }

    /// After the threads: the whole region is done.
    fn finish(&self, len: u64) {
        self.tell(len);
    }
}

/// Keep the last [`ZIP_EOCD_WINDOW`] bytes seen (amortised: trimmed when twice as long).
fn push_tail(tail: &mut Vec<u8>, bytes: &[u8]) {
    if bytes.len() >= ZIP_EOCD_WINDOW {
        tail.clear();
        tail.extend_from_slice(&bytes[bytes.len() - ZIP_EOCD_WINDOW..]);
        return;
    }
    tail.extend_from_slice(bytes);
    if tail.len() >= 2 * ZIP_EOCD_WINDOW {
        tail.drain(..tail.len() - ZIP_EOCD_WINDOW);
    }
}

// ---------------------------------------------------------------------------------------------
// Findings

fn fault_error(report: &Report<'_>, idx: usize, acc: &Acc) -> Option<Error> {
    let t = report.tensor_at(idx)?;
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

fn nonfinite_warnings(report: &Report<'_>, accs: &[(usize, Acc)]) -> Vec<Warning> {
    accs.iter()
        .filter_map(|(i, a)| Some((report.tensor_at(*i)?, a)))
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

pub(crate) use crate::magic::sniff;

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

/// Turn the scan into findings: the fault (error) if any; else the warnings, pushed into
/// `report` (capped like every warning), and the counts.
fn conclude(
    report: &mut Report<'_>,
    scanned: Tally,
    view: &PolyglotView<'_>,
    bytes_scanned: u64,
) -> Result<DeepReport, Error> {
    if let Some((idx, acc)) = &scanned.fault {
        if let Some(e) = fault_error(report, *idx, acc) {
            return Err(e);
        }
    }
    let mut warnings = nonfinite_warnings(report, &scanned.accs);
    let kept = warnings.len() as u64;
    warnings.extend(polyglot_warnings(view));
    warnings.sort_by_key(Finding::offset);
    for w in warnings {
        report.push_warning(w);
    }
    // The tensors past the cap: counted, as the warnings of every rule are.
    report.count_warnings(Rule::DataNonFinite, scanned.flagged.saturating_sub(kept));
    report.settle_warnings();
    let non_finite = scanned
        .accs
        .iter()
        .filter_map(|&(index, a)| {
            let t = report.tensor_at(index)?;
            (t.dtype != Dtype::BOOL && a.nan + a.pos_inf + a.neg_inf > 0).then_some(TensorStats {
                index,
                dtype: t.dtype,
                nan: a.nan,
                pos_inf: a.pos_inf,
                neg_inf: a.neg_inf,
            })
        })
        .collect();
    Ok(DeepReport {
        non_finite,
        non_finite_tensors: scanned.flagged,
        nan: scanned.totals.nan,
        pos_inf: scanned.totals.pos_inf,
        neg_inf: scanned.totals.neg_inf,
        bytes_scanned: bytes_scanned.min(report.data_len()),
    })
}
