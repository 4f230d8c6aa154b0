//! The portable profile: strict, plus a rule for every way a mainstream reader *misreads* a
//! file that strict accepts (`PORTABLE-*` rules of `SPEC.md`, "Portable profile").
//!
//! The rules are derived from a table of observed reader behaviours, `corpus/readers.json`,
//! embedded here ([`ReaderTable::builtin`]). Each row ([`Behaviour`]) names a reader and its
//! version, an [`Effect`] (misread, crash, refuse), a stage, a [`Condition`] on the header (or
//! on a sharded set's index) and the corpus cases that show it. A misread or a crash of a
//! chosen reader is a portable finding (an error of the portable profile); a clean refusal is a
//! support note ("loads in: ...; refused by: mlx 0.32.4 (dtype F64: tensor "w")"), an error
//! only when the caller asks ([`Options::refusals_are_errors`]). A crash or a refusal of the
//! whole file ends a reader's work: its misreadings of that file do not happen. The next
//! reader version is a row of the table, not new code; a new *kind* of condition is new code.
//!
//! Entry points: [`check_file`] on a file strict accepted, [`check_set`] on a sharded set
//! (its index's `weight_map` as [`IndexFacts`] and its shards' reports), and
//! [`special_name_warning`] for the strict profile's `NAME-SPECIAL`.
//!
//! The promise is exactly "the readers in this table, at these versions": a reader or version
//! outside the table may misread a file this profile passes.
//!
//! ```
//! use stcheck::portable::{self, Options, ReaderTable};
//! use stcheck::write::{serialize, TensorSpec};
//! use stcheck::{Config, Dtype};
//!
//! let file = serialize(&[TensorSpec::new("w", Dtype::F64, &[1], &[0u8; 8])], &[]).unwrap();
//! let report = stcheck::validate(&file, &Config::default()).unwrap();
//! let table = ReaderTable::builtin().unwrap();
//! let result = portable::check_file(table, &report, &Options::all(table));
//! assert!(result.is_portable());
//! let mlx = result.support().iter().find(|s| s.reader().id() == "mlx").unwrap();
//! assert!(!mlx.loads());
//! assert!(result.support_line().contains("refused by: mlx 0.32.4 (dtype F64"));
//! ```

use std::collections::HashSet;
use std::fmt;

use crate::error::Finding;
use crate::report::Report;
use crate::rules::Rule;

pub(crate) mod table;

pub use table::*;

impl Behaviour {
    /// Whether the condition matches a file (always false for an index condition).
    pub fn matches_file(&self, report: &Report<'_>) -> bool {
        let mut any = false;
        if !self.condition().is_index() {
            file_hits(self.condition(), report, &mut |_| any = true);
        }
        any
    }
    /// Whether the condition matches an index (always false for a file condition).
    pub fn matches_index(&self, index: &dyn IndexView) -> bool {
        let mut any = false;
        if self.condition().is_index() {
            index_hits(self.condition(), index, &mut |_| any = true);
        }
        any
    }
}

/// A misreading (or, with [`Options::refusals_are_errors`], a refusal) by one chosen reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortableFinding {
    finding: Finding,
    shard: Option<String>,
    reader: String,
    version: String,
    behaviour: String,
    effect: Effect,
}

impl PortableFinding {
    /// The `PORTABLE-*` rule.
    pub fn rule(&self) -> Rule {
        self.finding.rule()
    }
    /// Rule, offset (into the file, or the index for index conditions), tensor and message.
    pub fn finding(&self) -> &Finding {
        &self.finding
    }
    /// In a sharded set, the shard a file condition matched in (the offset points into it).
    pub fn shard(&self) -> Option<&str> {
        self.shard.as_deref()
    }
    /// The reader's ID.
    pub fn reader(&self) -> &str {
        &self.reader
    }
    /// The reader's version.
    pub fn version(&self) -> &str {
        &self.version
    }
    /// The behaviour (table row) ID.
    pub fn behaviour(&self) -> &str {
        &self.behaviour
    }
    /// Misread, crash (or refuse).
    pub fn effect(&self) -> Effect {
        self.effect
    }
}

impl fmt::Display for PortableFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.rule().id())?;
        if let Some(sh) = &self.shard {
            write!(f, "shard \"{}\": ", sh.escape_debug())?;
        }
        if let Some(t) = self.finding.tensor() {
            write!(f, "tensor \"{}\": ", t.escape_debug())?;
        }
        write!(
            f,
            "{} [{}] (at offset {:#x})",
            self.finding.message(),
            self.behaviour,
            self.finding.offset()
        )
    }
}

/// Why a reader refuses the file: one behaviour and its first example.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The behaviour (table row) ID.
    pub behaviour: String,
    /// Short reason, e.g. `dtype F64: tensor "w"`.
    pub reason: String,
}

/// Whether one chosen reader loads the file correctly, refuses it, or misreads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaderSupport {
    reader: Reader,
    refusals: Vec<Refusal>,
    misreadings: Vec<String>,
}

impl ReaderSupport {
    /// The reader.
    pub fn reader(&self) -> &Reader {
        &self.reader
    }
    /// Whether it loads the file as the file is, as far as the table knows.
    pub fn loads(&self) -> bool {
        self.refusals.is_empty() && self.misreadings.is_empty()
    }
    /// Its refusals (empty when it loads the file).
    pub fn refusals(&self) -> &[Refusal] {
        &self.refusals
    }
    /// The behaviour IDs under which it misreads or crashes on the file.
    pub fn misreadings(&self) -> &[String] {
        &self.misreadings
    }
}

/// The portable profile's answer on one file or one sharded set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortableReport {
    findings: Vec<PortableFinding>,
    omitted: usize,
    support: Vec<ReaderSupport>,
}

impl PortableReport {
    /// Whether the portable profile accepts it: no finding.
    pub fn is_portable(&self) -> bool {
        self.findings.is_empty() && self.omitted == 0
    }
    /// The findings, behaviour by behaviour in table order; within one, in the order of the
    /// report's tensors (by data offset), index entries in index order.
    pub fn findings(&self) -> &[PortableFinding] {
        &self.findings
    }
    /// Findings beyond [`MAX_FINDINGS_PER_BEHAVIOUR`] per behaviour, counted, not listed.
    pub fn omitted(&self) -> usize {
        self.omitted
    }
    /// One entry per chosen reader, in table order.
    pub fn support(&self) -> &[ReaderSupport] {
        &self.support
    }
    /// `loads in: a 1, b 2; refused by: mlx 0.32.4 (dtype F64: tensor "w"); misread by: ...`
    /// (parts with no reader are left out).
    pub fn support_line(&self) -> String {
        let name = |s: &ReaderSupport| format!("{} {}", s.reader.id, s.reader.version);
        let loads: Vec<String> = self
            .support
            .iter()
            .filter(|s| s.loads())
            .map(name)
            .collect();
        let refused: Vec<String> = self
            .support
            .iter()
            .filter(|s| !s.refusals.is_empty())
            .map(|s| {
                let why: Vec<&str> = s.refusals.iter().map(|r| r.reason.as_str()).collect();
                format!("{} ({})", name(s), why.join("; "))
            })
            .collect();
        let misread: Vec<String> = self
            .support
            .iter()
            .filter(|s| !s.misreadings.is_empty())
            .map(name)
            .collect();
        let mut parts = Vec::new();
        for (label, list) in [
            ("loads in", loads),
            ("refused by", refused),
            ("misread by", misread),
        ] {
            if !list.is_empty() {
                parts.push(format!("{label}: {}", list.join(", ")));
            }
        }
        parts.join("; ")
    }
}

/// One match of a condition: where, which tensor, and what.
struct Hit {
    offset: u64,
    tensor: Option<String>,
    what: String,
}

/// A hit, with the shard it is in (for a sharded set's file conditions).
struct Match {
    shard: Option<String>,
    hit: Hit,
}

/// Every match of a file-level condition in the report, in the report's tensor order.
fn file_hits(c: &Condition, report: &Report<'_>, f: &mut dyn FnMut(Hit)) {
    match c {
        Condition::HeaderLength(b) => {
            if b.contains(report.header_len()) {
                f(Hit {
                    offset: 0,
                    tensor: None,
                    what: format!("header length {} ({b})", report.header_len()),
                });
            }
        }
        Condition::TensorCount(b) => {
            let n = report.len() as u64;
            if b.contains(n) {
                f(Hit {
                    offset: crate::frame::LENGTH_FIELD as u64,
                    tensor: None,
                    what: format!("{n} tensors ({b})"),
                });
            }
        }
        _ => {
            for t in report.tensors() {
                let what = match c {
                    Condition::TensorNameIn(names) if names.contains(t.name) => {
                        format!("tensor name {}", quoted(t.name))
                    }
                    Condition::Dimension { bounds, elements } if elements.matches(t.elements) => {
                        match t.shape.iter().position(|&d| bounds.contains(d)) {
                            Some(i) => format!(
                                "dimension {i} is {} ({bounds}), in a tensor of {} elements",
                                t.shape[i], t.elements
                            ),
                            None => continue,
                        }
                    }
                    Condition::Rank(b) if b.contains(t.shape.len() as u64) => {
                        format!("{} dimensions ({b})", t.shape.len())
                    }
                    Condition::DtypeIn(d) if d.contains(&t.dtype) => format!("dtype {}", t.dtype),
                    _ => continue,
                };
                f(Hit {
                    offset: t.header_offset,
                    tensor: Some(t.name.to_owned()),
                    what,
                });
            }
        }
    }
}

/// A sharded set's `weight_map` as the portable rules read it: its entries in index order, and
/// its distinct shards. Implemented by [`IndexFacts`] (entries held in memory) and by the index
/// checker (entries read again from the index text, so a 100 MB index costs nothing more).
pub trait IndexView {
    /// Each entry in index order: the tensor name (a `weight_map` key), the shard it names,
    /// and the byte offset of the key in the index.
    fn for_each_entry(&self, f: &mut dyn FnMut(&str, &str, u64));
    /// The number of entries.
    fn entry_count(&self) -> u64;
    /// Each distinct shard name, in order of first appearance, with its first entry's offset.
    fn for_each_shard(&self, f: &mut dyn FnMut(&str, u64));
    /// The number of distinct shard names.
    fn shard_count(&self) -> u64;
}

impl IndexView for IndexFacts {
    fn for_each_entry(&self, f: &mut dyn FnMut(&str, &str, u64)) {
        for (t, s, o) in &self.entries {
            f(t, s, *o);
        }
    }
    fn entry_count(&self) -> u64 {
        self.entries.len() as u64
    }
    fn for_each_shard(&self, f: &mut dyn FnMut(&str, u64)) {
        for (s, o) in self.shards() {
            f(s, o);
        }
    }
    fn shard_count(&self) -> u64 {
        self.shards().len() as u64
    }
}

/// The `weight_map` of a sharded set's index, as the portable rules need it: its entries in
/// index order (tensor name, shard name) with the offset of each key in the index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexFacts {
    entries: Vec<(String, String, u64)>,
}

impl IndexFacts {
    /// No entries.
    pub fn new() -> Self {
        IndexFacts::default()
    }

    /// Add an entry: the tensor name (a `weight_map` key), the shard it names, and the byte
    /// offset of the key in the index (0 if unknown).
    pub fn push(&mut self, tensor: impl Into<String>, shard: impl Into<String>, offset: u64) {
        self.entries.push((tensor.into(), shard.into(), offset));
    }

    /// The entries.
    pub fn entries(&self) -> impl ExactSizeIterator<Item = (&str, &str, u64)> + '_ {
        self.entries
            .iter()
            .map(|(t, s, o)| (t.as_str(), s.as_str(), *o))
    }

    /// The distinct shard names, in order of first appearance, each with its first entry's
    /// offset.
    pub fn shards(&self) -> Vec<(&str, u64)> {
        let mut seen = HashSet::new();
        self.entries
            .iter()
            .filter(|(_, s, _)| seen.insert(s.as_str()))
            .map(|(_, s, o)| (s.as_str(), *o))
            .collect()
    }

    /// The keys' and values' lengths in UTF-16 code units, summed.
    pub fn utf16_length(&self) -> u64 {
        self.entries.iter().fold(0u64, |acc, (t, s, _)| {
            let n = t.encode_utf16().count() + s.encode_utf16().count();
            acc.saturating_add(n as u64)
        })
    }
}

/// `decodeURIComponent`: `%XX` escapes decoded as UTF-8; `None` where JavaScript throws a
/// `URIError` (a `%` not followed by two hex digits, or escapes that are not UTF-8).
pub fn decode_uri_component(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    let hex = |i: usize| -> Option<u8> {
        let h = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
        if !h.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        u8::from_str_radix(h, 16).ok()
    };
    while i < b.len() {
        if b[i] != b'%' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        // A run of escapes must decode to whole UTF-8 sequences: JavaScript reads the lead
        // byte's sequence length and requires that many escaped continuation bytes.
        let lead = hex(i)?;
        let len = match lead {
            0x00..=0x7f => 1,
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf7 => 4,
            _ => return None,
        };
        let mut seq = vec![lead];
        i += 3;
        for _ in 1..len {
            if b.get(i) != Some(&b'%') {
                return None;
            }
            seq.push(hex(i)?);
            i += 3;
        }
        std::str::from_utf8(&seq).ok()?;
        out.extend_from_slice(&seq);
    }
    String::from_utf8(out).ok()
}

/// Why a reader refuses this shard name under
/// [`Condition::IndexShardNameUnsafeAfterPercentDecoding`] with `rounds`, or `None` if it
/// accepts it: `decodeURIComponent` is applied until the name stops changing, at most
/// `rounds` times (a failure is "malformed percent-encoding"); then the name and its decoding
/// must hold no control character (U+0000-U+001F, U+007F), no backslash, no leading `/`, no
/// `:` before the first `/` and no `.` or `..` segment.
pub fn shard_name_refusal(name: &str, rounds: u32) -> Option<&'static str> {
    if name.is_empty() {
        return Some("empty");
    }
    let mut decoded = name.to_owned();
    for _ in 0..rounds {
        match decode_uri_component(&decoded) {
            Some(next) if next == decoded => break,
            Some(next) => decoded = next,
            None => return Some("malformed percent-encoding"),
        }
    }
    for candidate in [name, decoded.as_str()] {
        if candidate
            .chars()
            .any(|c| (c as u32) <= 31 || c as u32 == 127)
        {
            return Some("control character");
        }
        if candidate.contains('\\') {
            return Some("backslash");
        }
        if candidate.starts_with('/') {
            return Some("absolute path");
        }
        if candidate.split('/').next().is_some_and(|s| s.contains(':')) {
            return Some("scheme-like first path segment");
        }
        if candidate.split('/').any(|s| s == "." || s == "..") {
            return Some("dot segment");
        }
    }
    None
}

/// Every match of an index-level condition.
fn index_hits(c: &Condition, index: &dyn IndexView, f: &mut dyn FnMut(Hit)) {
    match c {
        Condition::IndexTensorNameIn(names) => index.for_each_entry(&mut |t, _, o| {
            if names.iter().any(|n| n == t) {
                f(Hit {
                    offset: o,
                    tensor: Some(t.to_owned()),
                    what: format!("weight_map key {}", quoted(t)),
                });
            }
        }),
        Condition::IndexEntryCount(b) => {
            let n = index.entry_count();
            if b.contains(n) {
                f(Hit {
                    offset: 0,
                    tensor: None,
                    what: format!("{n} weight_map entries ({b})"),
                });
            }
        }
        Condition::IndexWeightMapUtf16Length(b) => {
            let mut n = 0u64;
            index.for_each_entry(&mut |t, s, _| {
                let k = t.encode_utf16().count() + s.encode_utf16().count();
                n = n.saturating_add(k as u64);
            });
            if b.contains(n) {
                f(Hit {
                    offset: 0,
                    tensor: None,
                    what: format!("weight_map keys and values of {n} UTF-16 code units ({b})"),
                });
            }
        }
        Condition::IndexShardCount(b) => {
            let n = index.shard_count();
            if b.contains(n) {
                f(Hit {
                    offset: 0,
                    tensor: None,
                    what: format!("{n} shards ({b})"),
                });
            }
        }
        Condition::IndexShardNameUnsafeAfterPercentDecoding { rounds } => {
            index.for_each_shard(&mut |s, o| {
                if let Some(why) = shard_name_refusal(s, *rounds) {
                    f(Hit {
                        offset: o,
                        tensor: None,
                        what: format!("shard name {} ({why} after percent-decoding)", quoted(s)),
                    });
                }
            });
        }
        _ => {}
    }
}

/// What is checked: a sharded set's index (if any) and files (one, or the set's shards).
struct Subject<'s, 'r> {
    index: Option<&'s dyn IndexView>,
    files: &'s [(&'s str, &'s Report<'r>)],
}

/// The matches of one behaviour: the first [`MAX_FINDINGS_PER_BEHAVIOUR`], and how many more.
fn hits(b: &Behaviour, subject: &Subject<'_, '_>) -> (Vec<Match>, usize) {
    let mut hits = Vec::new();
    let mut extra = 0usize;
    let mut add = |shard: Option<&str>, h: Hit| {
        if hits.len() < MAX_FINDINGS_PER_BEHAVIOUR {
            hits.push(Match {
                shard: shard.map(str::to_owned),
                hit: h,
            });
        } else {
            extra += 1;
        }
    };
    if b.condition.is_index() {
        if let Some(index) = subject.index {
            index_hits(&b.condition, index, &mut |h| add(None, h));
        }
    } else {
        let in_set = subject.index.is_some();
        for (name, report) in subject.files {
            let shard = in_set.then_some(*name);
            file_hits(&b.condition, report, &mut |h| add(shard, h));
        }
    }
    (hits, extra)
}

/// The behaviours that happen for one reader, given which of its behaviours' conditions
/// match: the earliest crash or file-scope refusal ends its work (those at that stage happen,
/// nothing else does); without one, every matching behaviour happens.
fn happening<'t>(table: &'t ReaderTable, reader: &str, matched: &[bool]) -> Vec<&'t Behaviour> {
    let rows: Vec<&Behaviour> = table
        .behaviours_of(reader)
        .into_iter()
        .filter(|b| {
            table
                .behaviours
                .iter()
                .position(|x| x.id == b.id)
                .is_some_and(|i| matched[i])
        })
        .collect();
    match rows.iter().filter(|b| b.is_stop()).map(|b| b.stage).min() {
        Some(stop) => rows
            .into_iter()
            .filter(|b| b.is_stop() && b.stage == stop)
            .collect(),
        None => rows,
    }
}

/// Whether behaviour `b` belongs to a chosen reader.
fn applies(table: &ReaderTable, b: &Behaviour, options: &Options) -> bool {
    options
        .readers
        .iter()
        .any(|r| table.behaviours_of(r).iter().any(|x| x.id == b.id))
}

fn evaluate(table: &ReaderTable, subject: Subject<'_, '_>, options: &Options) -> PortableReport {
    // Every behaviour that applies to a chosen reader, evaluated once, in table order.
    let matched: Vec<(Vec<Match>, usize)> = table
        .behaviours
        .iter()
        .map(|b| {
            if applies(table, b, options) {
                hits(b, &subject)
            } else {
                (Vec::new(), 0)
            }
        })
        .collect();
    conclude(table, matched, options)
}

/// The portable profile on a sharded set, fed as the set is checked: the index first, then
/// each shard strict accepted, one at a time (so no two shards' reports are held at once).
/// Gives the same answer as [`check_set`] on the same set.
#[derive(Debug)]
pub struct SetCheck<'t> {
    table: &'t ReaderTable,
    options: Options,
    matched: Vec<(Vec<Match>, usize)>,
}

impl std::fmt::Debug for Match {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Match({:?}, {})", self.shard, self.hit.what)
    }
}

impl<'t> SetCheck<'t> {
    /// The check of a set with this index.
    pub fn new(table: &'t ReaderTable, index: &dyn IndexView, options: &Options) -> Self {
        let matched = table
            .behaviours
            .iter()
            .map(|b| {
                if applies(table, b, options) && b.condition.is_index() {
                    hits(
                        b,
                        &Subject {
                            index: Some(index),
                            files: &[],
                        },
                    )
                } else {
                    (Vec::new(), 0)
                }
            })
            .collect();
        SetCheck {
            table,
            options: options.clone(),
            matched,
        }
    }

    /// A shard strict accepted, with its name as the index names it.
    pub fn add_shard(&mut self, name: &str, report: &Report<'_>) {
        for (b, (hits, extra)) in self.table.behaviours.iter().zip(&mut self.matched) {
            if b.condition.is_index() || !applies(self.table, b, &self.options) {
                continue;
            }
            file_hits(&b.condition, report, &mut |h| {
                if hits.len() < MAX_FINDINGS_PER_BEHAVIOUR {
                    hits.push(Match {
                        shard: Some(name.to_owned()),
                        hit: h,
                    });
                } else {
                    *extra += 1;
                }
            });
        }
    }

    /// The answer on the set.
    pub fn finish(self) -> PortableReport {
        conclude(self.table, self.matched, &self.options)
    }
}

fn conclude(
    table: &ReaderTable,
    matched: Vec<(Vec<Match>, usize)>,
    options: &Options,
) -> PortableReport {
    let any: Vec<bool> = matched.iter().map(|(h, _)| !h.is_empty()).collect();

    let mut support = Vec::new();
    let mut reported: HashSet<&str> = HashSet::new();
    for id in &options.readers {
        let Some(reader) = table.reader(id) else {
            continue;
        };
        let mut entry = ReaderSupport {
            reader: reader.clone(),
            refusals: Vec::new(),
            misreadings: Vec::new(),
        };
        for b in happening(table, id, &any) {
            let Some((hits, extra)) = table
                .behaviours
                .iter()
                .position(|x| x.id == b.id)
                .and_then(|i| matched.get(i))
            else {
                continue;
            };
            let Some(Match { shard, hit: first }) = hits.first() else {
                continue;
            };
            if b.effect.is_misreading() || options.refusals_are_errors {
                reported.insert(b.id.as_str());
            }
            if b.effect.is_misreading() {
                entry.misreadings.push(b.id.clone());
                continue;
            }
            let mut reason = first.what.clone();
            if let Some(t) = &first.tensor {
                reason.push_str(&format!(": tensor {}", quoted(t)));
            }
            if let Some(sh) = shard {
                reason.push_str(&format!(" in shard {}", quoted(sh)));
            }
            let more = hits.len() - 1 + extra;
            if more > 0 {
                reason.push_str(&format!(" and {more} more"));
            }
            entry.refusals.push(Refusal {
                behaviour: b.id.clone(),
                reason,
            });
        }
        support.push(entry);
    }

    let mut findings = Vec::new();
    let mut omitted = 0usize;
    for (b, (hits, extra)) in table.behaviours.iter().zip(&matched) {
        if !reported.contains(b.id.as_str()) {
            continue;
        }
        for Match { shard, hit: h } in hits {
            let message = format!("{}: {} {} {}", h.what, b.reader, b.version, b.effect.verb());
            let mut f = Finding::new(b.rule, h.offset, message);
            if let Some(t) = &h.tensor {
                f = f.with_tensor(t);
            }
            findings.push(PortableFinding {
                finding: f,
                shard: shard.clone(),
                reader: b.reader.clone(),
                version: b.version.clone(),
                behaviour: b.id.clone(),
                effect: b.effect,
            });
        }
        omitted += extra;
    }
    PortableReport {
        findings,
        omitted,
        support,
    }
}

/// The portable profile on one file strict accepted: findings for every misreading by a
/// chosen reader, support notes for every refusal.
pub fn check_file(table: &ReaderTable, report: &Report<'_>, options: &Options) -> PortableReport {
    evaluate(
        table,
        Subject {
            index: None,
            files: &[("", report)],
        },
        options,
    )
}

/// The portable profile on a sharded set that strict accepted: its index's `weight_map` and
/// its shards' reports (each with the shard's name as the index names it), as one subject, so
/// that a reader that refuses the set (its index, or any shard) misreads none of it. Findings
/// about a shard name it ([`PortableFinding::shard`]); their offsets point into that shard,
/// those of index conditions into the index.
pub fn check_set(
    table: &ReaderTable,
    index: &dyn IndexView,
    shards: &[(&str, &Report<'_>)],
    options: &Options,
) -> PortableReport {
    evaluate(
        table,
        Subject {
            index: Some(index),
            files: shards,
        },
        options,
    )
}
