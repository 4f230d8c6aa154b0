//! Sharded checkpoints: `*.safetensors.index.json` checked as a set (`INDEX-*` rules of
//! `SPEC.md`).
//!
//! A sharded checkpoint is a directory holding an index, a JSON object
//! `{"metadata": {"total_size": N, ...}, "weight_map": {"tensor": "shard file name", ...}}`,
//! and the shards it names. [`check_index`] checks the set:
//!
//! - the index is strict JSON: UTF-8 without a byte-order mark, RFC 8259 syntax, no duplicate
//!   key at any level (`INDEX-JSON`, the one *malformed* rule);
//! - the root is an object with a `weight_map` object of strings to strings and, optionally,
//!   a `metadata` object (`INDEX-SCHEMA`); other top-level keys are ignored;
//! - every shard name is a plain file name in the index's directory (`INDEX-SHARD-NAME`), not a
//!   link that the link policy does not follow (`INDEX-SHARD-LINK`), exists as a regular file
//!   (`INDEX-SHARD-MISSING`) and is a valid safetensors file under the same [`Config`]
//!   (`INDEX-SHARD-INVALID`, with the shard's own error as the cause);
//! - every tensor of `weight_map` is in the shard it names (`INDEX-TENSOR-MISSING`), every
//!   tensor of every named shard is in `weight_map` (`INDEX-TENSOR-UNLISTED`), and no tensor is
//!   in two shards (`INDEX-TENSOR-DUPLICATE`);
//! - `metadata.total_size`, when present, is a JSON integer equal to the sum of the tensors'
//!   byte lengths (`INDEX-TOTAL-SIZE`);
//! - a `*.safetensors` file in the directory that the index does not name is a warning
//!   (`INDEX-SHARD-UNLISTED`).
//!
//! Each shard is checked by the one [`crate::Checker`], exactly as a file named on its own
//! would be, with the same [`Config`] (deep scan, hash, deny flags); its [`Checked`] result is
//! handed to the caller as it comes (to print it) and only a summary is kept, so checking a
//! set holds one shard's report at a time. The checker reads shards only through a
//! [`ShardSource`], so it runs the same over a directory (the gate's `FsSource`), bytes in memory
//! ([`MemorySource`], for tests and fuzzing) or a remote server. It never panics, whatever the
//! index bytes and the shards hold. Every finding names the rule, the shard and the tensor
//! where they apply, and a byte offset into the index (or, for findings about a shard's own
//! tensors, into that shard; see [`Finding::location`]).
//!
//! ```
//! use stcheck::index::{check_index, MemorySource};
//! use stcheck::write::{serialize, TensorSpec};
//! use stcheck::{Config, Dtype};
//!
//! let shard = serialize(&[TensorSpec::new("w", Dtype::F32, &[2], &[0u8; 8])], &[]).unwrap();
//! let mut source = MemorySource::new();
//! source.insert("model-00001-of-00001.safetensors", shard);
//! let index = br#"{"metadata":{"total_size":8},"weight_map":{"w":"model-00001-of-00001.safetensors"}}"#;
//! let report = check_index(index, &source, &Config::default()).unwrap();
//! assert!(report.is_valid());
//! assert_eq!(report.tensors(), 1);
//! ```

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer as _, IgnoredAny, MapAccess, Visitor};

use crate::check::{Checked, Checker};
use crate::error::{Finding, ReadError, ReadErrorKind};
use crate::json::{self, reject_types, KeyCursor, KeyTable, Syntax, Text, TextSeed};
use crate::limits::Config;
use crate::report::DtypeTotal;
use crate::rules::Rule;

/// The file name suffix of an index.
pub const INDEX_SUFFIX: &str = ".safetensors.index.json";

/// The most errors (and warnings) one index reports; the rest are counted in
/// [`IndexReport::omitted`], so a hostile index cannot flood the output.
pub const MAX_FINDINGS: usize = 1000;

/// Where the shards of an index come from.
pub trait ShardSource {
    /// The file names in the index's directory that end in `.safetensors`, in any order (for
    /// `INDEX-SHARD-UNLISTED`); a name that is not UTF-8 is given lossily.
    fn list(&self) -> Result<Vec<String>, ReadError>;

    /// Check the shard with this plain file name (already checked by [`check_shard_name`])
    /// under `config`, with the one checker, and hand the result to `f`. A shard that is not
    /// there is a [`ReadError`] of kind `NotFound` or `NotRegular` (reported as
    /// `INDEX-SHARD-MISSING`), one the link policy refuses of kind `LinkNotFollowed`
    /// (`INDEX-SHARD-LINK`); any other read error, `Changed` among them, ends the check of
    /// the set without a verdict.
    fn check(
        &self,
        name: &str,
        config: &Config,
        f: &mut dyn FnMut(Checked<'_>),
    ) -> Result<(), ReadError>;
}

/// Shards held in memory, keyed by file name. For tests and fuzzing.
#[derive(Debug, Clone, Default)]
pub struct MemorySource {
    files: BTreeMap<String, Vec<u8>>,
}

impl MemorySource {
    /// An empty directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add (or replace) a file.
    pub fn insert(&mut self, name: impl Into<String>, bytes: Vec<u8>) {
        self.files.insert(name.into(), bytes);
    }
}

impl ShardSource for MemorySource {
    fn list(&self) -> Result<Vec<String>, ReadError> {
        Ok(self
            .files
            .keys()
            .filter(|n| n.ends_with(".safetensors"))
            .cloned()
            .collect())
    }

    fn check(
        &self,
        name: &str,
        config: &Config,
        f: &mut dyn FnMut(Checked<'_>),
    ) -> Result<(), ReadError> {
        match self.files.get(name) {
            None => Err(ReadError::new(ReadErrorKind::NotFound, "no such file")),
            Some(bytes) => {
                f(Checker::check_slice(config, bytes));
                Ok(())
            }
        }
    }
}

/// Whether `name` is a plain file name: not empty, not `.` or `..`, no `/`, `\`, `:`, control
/// character or invisible character (so no absolute path, no parent directory, no Windows
/// drive or stream, nothing that displays as another name; the characters of the
/// `NAME-CONTROL` and `NAME-INVISIBLE` rules).
/// Returns the reason it is not.
pub fn check_shard_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("empty shard file name");
    }
    if name == "." || name == ".." {
        return Err("shard file name is a directory reference");
    }
    if name.contains(['/', '\\']) {
        return Err("shard file name holds a path separator");
    }
    if name.contains(':') {
        return Err("shard file name holds ':' (a drive or stream name on Windows)");
    }
    if name.chars().any(crate::names::is_control) {
        return Err("shard file name holds a control character");
    }
    if name.chars().any(crate::names::is_invisible) {
        return Err("shard file name holds an invisible (default-ignorable) character");
    }
    Ok(())
}

/// The verdict on one shard named by the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShardStatus {
    /// Valid.
    Valid,
    /// Not a valid safetensors file.
    Invalid,
    /// Missing, not a regular file, or a bad name or link.
    Missing,
}

impl ShardStatus {
    /// `"valid"`, `"invalid"` or `"missing"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ShardStatus::Valid => "valid",
            ShardStatus::Invalid => "invalid",
            ShardStatus::Missing => "missing",
        }
    }
}

/// How many of the distinct shards an index names came out each way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShardCounts {
    /// Valid shards.
    pub valid: u64,
    /// Shards that are not valid safetensors files.
    pub invalid: u64,
    /// Shards missing, not regular files, or with a bad name or link.
    pub missing: u64,
}

impl ShardCounts {
    /// Every distinct shard the index names.
    pub fn total(&self) -> u64 {
        self.valid + self.invalid + self.missing
    }

    fn add(&mut self, status: ShardStatus) {
        match status {
            ShardStatus::Valid => self.valid += 1,
            ShardStatus::Invalid => self.invalid += 1,
            ShardStatus::Missing => self.missing += 1,
        }
    }
}

/// The result of [`check_index`].
#[derive(Debug, Clone)]
pub struct IndexReport {
    shards: ShardCounts,
    errors: Vec<Finding>,
    warnings: Vec<Finding>,
    omitted: usize,
    tensors: usize,
    totals: Vec<DtypeTotal>,
    total_size: Option<u64>,
    computed_size: Option<u64>,
    portable: Option<crate::portable::PortableReport>,
}

impl IndexReport {
    /// The portable profile's answer on the set, with [`Config::portable`] (meaningful when
    /// the set is valid).
    pub fn portable(&self) -> Option<&crate::portable::PortableReport> {
        self.portable.as_ref()
    }

    /// Whether the set is valid: no errors (warnings allowed, unless denied).
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty() && self.omitted == 0
    }

    /// The errors, index-level first, then per shard in the index's order. Each is a
    /// [`Finding`] whose [`Finding::location`] says whether its offset is into the index or
    /// into the shard [`Finding::shard`]; `INDEX-SHARD-INVALID` carries the shard's own error
    /// as [`Finding::cause`].
    pub fn errors(&self) -> &[Finding] {
        &self.errors
    }

    /// The warnings (`INDEX-SHARD-UNLISTED`).
    pub fn warnings(&self) -> &[Finding] {
        &self.warnings
    }

    /// Errors left out beyond [`MAX_FINDINGS`].
    pub fn omitted(&self) -> usize {
        self.omitted
    }

    /// How many distinct shards the index names, and how each came out (each shard's own
    /// result goes to the `on_shard` hook of [`check_index_with`] as it is checked: a report
    /// keeps no list of them, so an index naming millions of shards costs counts).
    pub fn shards(&self) -> ShardCounts {
        self.shards
    }

    /// Tensors over all valid shards.
    pub fn tensors(&self) -> usize {
        self.tensors
    }

    /// Parameters over all valid shards (saturating).
    pub fn parameters(&self) -> u64 {
        self.totals
            .iter()
            .fold(0u64, |a, t| a.saturating_add(t.parameters))
    }

    /// Totals per dtype over all valid shards, in the reference's dtype order.
    pub fn totals_by_dtype(&self) -> &[DtypeTotal] {
        &self.totals
    }

    /// `metadata.total_size`, if it is present and an integer.
    pub fn total_size(&self) -> Option<u64> {
        self.total_size
    }

    /// The sum of the tensors' byte lengths, if every named shard is valid.
    pub fn computed_size(&self) -> Option<u64> {
        self.computed_size
    }
}

struct Findings<'c> {
    config: &'c Config,
    errors: Vec<Finding>,
    warnings: Vec<Finding>,
    omitted: usize,
}

impl Findings<'_> {
    fn push(&mut self, f: Finding) {
        let rule = f.rule();
        if self.config.allows(rule) {
            return;
        }
        let warning =
            rule.severity() == crate::rules::Severity::Warning && !self.config.denies(rule);
        let list = if warning {
            &mut self.warnings
        } else {
            &mut self.errors
        };
        if list.len() < MAX_FINDINGS {
            list.push(f);
        } else if !warning {
            self.omitted += 1;
        }
    }
}

/// Check a sharded checkpoint: the index's bytes, and its shards through `source`.
///
/// Returns the report (valid or not), or a read error if a shard or the directory listing
/// could not be read. Never panics.
pub fn check_index(
    index: &[u8],
    source: &dyn ShardSource,
    config: &Config,
) -> Result<IndexReport, ReadError> {
    check_index_with(index, source, config, &mut |_, _| {})
}

/// What [`check_index_with`] hands over for each shard, in the index's order.
#[derive(Debug, Clone, Copy)]
pub enum ShardOutcome<'c, 'a> {
    /// The shard was checked: its full result.
    Checked(&'c Checked<'a>),
    /// The shard was not checked: the finding that says why (`INDEX-SHARD-NAME`,
    /// `INDEX-SHARD-MISSING`, `INDEX-SHARD-LINK`).
    NotChecked(&'c Finding),
}

/// [`check_index`], handing each shard's outcome to `on_shard` (with the shard's name as the
/// index writes it) as soon as it is known, for output; only a summary is kept.
pub fn check_index_with(
    index: &[u8],
    source: &dyn ShardSource,
    config: &Config,
    on_shard: &mut dyn FnMut(&str, ShardOutcome<'_, '_>),
) -> Result<IndexReport, ReadError> {
    let mut found = Findings {
        config,
        errors: Vec::new(),
        warnings: Vec::new(),
        omitted: 0,
    };
    // Findings about the shards' tensors, reported after those about the shards themselves.
    let mut later = Findings {
        config,
        errors: Vec::new(),
        warnings: Vec::new(),
        omitted: 0,
    };
    let mut report = IndexReport {
        shards: ShardCounts::default(),
        errors: Vec::new(),
        warnings: Vec::new(),
        omitted: 0,
        tensors: 0,
        totals: Vec::new(),
        total_size: None,
        computed_size: None,
        portable: None,
    };
    let (text, parsed) = match parse(index, config) {
        Ok(p) => p,
        Err(f) => {
            found.push(*f);
            report.errors = found.errors;
            return Ok(report);
        }
    };
    let Parsed {
        entries,
        shards,
        shard_names,
        total_size,
    } = parsed;
    // The lookup from tensor name to entry, built (with its exact size) when a shard is first
    // valid: a set whose shards are all missing never pays for it.
    let mut lookup: Option<KeyTable> = None;
    let view = View {
        text,
        entries: &entries,
        shards: &shards,
    };
    let mut portable = config.portable.as_ref().and_then(|options| {
        let table = crate::portable::ReaderTable::builtin().ok()?;
        Some(crate::portable::SetCheck::new(table, &view, options))
    });

    // Per entry: whether the shard it names holds the tensor, and the first shard that does.
    let mut in_own_shard = vec![false; entries.len()];
    let mut home: Vec<u32> = Vec::new();
    // Tensors of shards that weight_map does not list: their first shard.
    let mut unlisted_home: HashMap<Box<str>, u32> = HashMap::new();
    let entry_of = |lookup: &KeyTable, name: &str| -> Option<usize> {
        let pos = lookup.find(text, name)?;
        let pos = u32::try_from(pos).ok()?;
        entries.binary_search_by_key(&pos, |e| e.key).ok()
    };

    let mut totals = crate::report::DtypeTotals::new();
    let mut computed = 0u64;
    let mut all_valid = true;
    let mut tensors = 0usize;
    let mut statuses = Vec::with_capacity(shards.len());
    for (id, shard) in shards.iter().enumerate() {
        let name = &*shard.name(text);
        let id = u32::try_from(id).unwrap_or(u32::MAX);
        let mut status = ShardStatus::Missing;
        if let Err(why) = check_shard_name(name) {
            all_valid = false;
            let f = Finding::new(Rule::IndexShardName, shard.offset(), why)
                .in_index()
                .about_shard(name);
            on_shard(name, ShardOutcome::NotChecked(&f));
            found.push(f);
            report.shards.add(status);
            statuses.push(status);
            continue;
        }
        let mut visit = |checked: Checked<'_>| {
            on_shard(name, ShardOutcome::Checked(&checked));
            match checked.verdict {
                Ok(r) => {
                    if let Some(p) = portable.as_mut() {
                        p.add_shard(name, &r);
                    }
                    status = ShardStatus::Valid;
                    let lookup = lookup.get_or_insert_with(|| {
                        let mut table = KeyTable::with_capacity(entries.len());
                        for e in &entries {
                            if let Some(name) = json::string_at(text, e.key as usize) {
                                table.insert(text, e.key as usize, &name);
                            }
                        }
                        table
                    });
                    for t in r.tensors() {
                        let entry = entry_of(lookup, t.name);
                        let first = match entry {
                            Some(e) => {
                                if entries[e].shard == id {
                                    in_own_shard[e] = true;
                                }
                                if home.is_empty() {
                                    home = vec![u32::MAX; entries.len()];
                                }
                                let h = home[e];
                                if h == u32::MAX {
                                    home[e] = id;
                                    None
                                } else {
                                    Some(h)
                                }
                            }
                            None => match unlisted_home.get(t.name) {
                                Some(&h) => Some(h),
                                None => {
                                    unlisted_home.insert(t.name.into(), id);
                                    None
                                }
                            },
                        };
                        if let Some(first) = first {
                            let first = shards
                                .get(first as usize)
                                .map(|s| s.name(text))
                                .unwrap_or_default();
                            later.push(
                                Finding::new(
                                    Rule::IndexTensorDuplicate,
                                    t.header_offset,
                                    format!("tensor is also in shard \"{}\"", first.escape_debug()),
                                )
                                .with_tensor(t.name)
                                .in_shard(name),
                            );
                            continue;
                        }
                        tensors += 1;
                        computed = computed.saturating_add(t.byte_len());
                        totals.add(&t);
                        if entry.is_none() {
                            later.push(
                                Finding::new(
                                    Rule::IndexTensorUnlisted,
                                    t.header_offset,
                                    "tensor of the shard is not in weight_map",
                                )
                                .with_tensor(t.name)
                                .in_shard(name),
                            );
                        }
                    }
                }
                Err(e) => {
                    status = ShardStatus::Invalid;
                    let mut f = Finding::new(
                        Rule::IndexShardInvalid,
                        shard.offset(),
                        "shard is not a valid safetensors file",
                    )
                    .in_index()
                    .about_shard(name);
                    if let Some(t) = e.tensor() {
                        f = f.with_tensor(t);
                    }
                    found.push(f.with_cause(e));
                }
            }
        };
        match source.check(name, config, &mut visit) {
            Ok(()) => {}
            Err(e) => {
                let rule = match e.kind() {
                    ReadErrorKind::LinkNotFollowed => Rule::IndexShardLink,
                    ReadErrorKind::NotFound | ReadErrorKind::NotRegular | ReadErrorKind::Loop => {
                        Rule::IndexShardMissing
                    }
                    // A shard that changed while it was read (truncated, extended, rewritten,
                    // replaced after it was found) has no verdict, as a file alone has none
                    // (SPEC §3): the set is not checked either, never invalid.
                    _ => return Err(e.with_shard(name)),
                };
                let f = Finding::new(rule, shard.offset(), e.message())
                    .in_index()
                    .about_shard(name);
                on_shard(name, ShardOutcome::NotChecked(&f));
                found.push(f);
            }
        }
        all_valid &= status == ShardStatus::Valid;
        statuses.push(status);
        report.shards.add(status);
    }

    found.omitted += later.omitted;
    for f in later.errors.into_iter().chain(later.warnings) {
        found.push(f);
    }

    // weight_map entries whose shard is valid but does not hold the tensor.
    for (i, e) in entries.iter().enumerate() {
        if statuses.get(e.shard as usize) != Some(&ShardStatus::Valid) || in_own_shard[i] {
            continue;
        }
        let tensor = json::string_at(text, e.key as usize).unwrap_or_default();
        let message = match home.get(i).filter(|&&h| h != u32::MAX) {
            Some(&h) => format!(
                "weight_map puts the tensor in this shard, but it is in shard \"{}\"",
                shards
                    .get(h as usize)
                    .map(|s| s.name(text))
                    .unwrap_or_default()
                    .escape_debug()
            ),
            None => "weight_map puts the tensor in this shard, which does not hold it".to_owned(),
        };
        let shard = shards
            .get(e.shard as usize)
            .map(|s| s.name(text))
            .unwrap_or_default();
        found.push(
            Finding::new(Rule::IndexTensorMissing, u64::from(e.key), message)
                .in_index()
                .about_shard(&shard)
                .with_tensor(&tensor),
        );
    }

    // metadata.total_size.
    if let Some((value, offset)) = &total_size {
        match value {
            TotalSize::NotInteger(raw) => found.push(
                Finding::new(
                    Rule::IndexTotalSize,
                    *offset,
                    format!(
                        "metadata.total_size is {}, not a non-negative JSON integer",
                        crate::clip::clip(raw)
                    ),
                )
                .in_index(),
            ),
            TotalSize::Integer(declared) => {
                report.total_size = Some(*declared);
                if all_valid && *declared != computed {
                    found.push(
                        Finding::new(
                            Rule::IndexTotalSize,
                            *offset,
                            format!(
                                "metadata.total_size is {declared}, but the tensors of the shards take {computed} bytes"
                            ),
                        )
                        .in_index(),
                    );
                }
            }
        }
    }
    if all_valid {
        report.computed_size = Some(computed);
    }

    // Shards in the directory that the index does not name.
    let mut listed = source.list()?;
    listed.sort();
    for name in listed {
        if shard_names.find(text, &name).is_none() {
            found.push(
                Finding::new(
                    Rule::IndexShardUnlisted,
                    0,
                    "a .safetensors file in the index's directory that the index does not name",
                )
                .in_index()
                .about_shard(&name),
            );
        }
    }

    report.portable = portable.map(crate::portable::SetCheck::finish);
    report.tensors = tensors;
    report.totals = totals.finish();
    report.errors = found.errors;
    report.warnings = found.warnings;
    report.omitted = found.omitted;
    Ok(report)
}

// ---------------------------------------------------------------------------------------------
// Parsing the index.
//
// What is kept per weight_map entry is 8 bytes (the key's position and the shard's number)
// plus a slot of the key table (about 5 bytes): names are read again from the index text.

/// The weight_map as the portable rules read it: names read again from the index text.
struct View<'v> {
    text: &'v str,
    entries: &'v [Entry],
    shards: &'v [Shard],
}

impl crate::portable::IndexView for View<'_> {
    fn for_each_entry(&self, f: &mut dyn FnMut(&str, &str, u64)) {
        for e in self.entries {
            let name = json::string_at(self.text, e.key as usize).unwrap_or_default();
            let shard = self
                .shards
                .get(e.shard as usize)
                .map(|s| s.name(self.text))
                .unwrap_or_default();
            f(&name, &shard, u64::from(e.key));
        }
    }
    fn entry_count(&self) -> u64 {
        self.entries.len() as u64
    }
    fn for_each_shard(&self, f: &mut dyn FnMut(&str, u64)) {
        for s in self.shards {
            f(&s.name(self.text), s.offset());
        }
    }
    fn shard_count(&self) -> u64 {
        self.shards.len() as u64
    }
}

/// One weight_map entry.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// The index of the tensor name's opening quote in the index text.
    key: u32,
    /// The shard's number in [`Parsed::shards`].
    shard: u32,
}

/// A distinct shard name: the position of the first entry naming it (its key's opening
/// quote). Its name is read again from the index text (the entry's value), so an index naming
/// millions of shards keeps 4 bytes for each.
#[derive(Debug, Clone, Copy)]
struct Shard {
    key: u32,
}

impl Shard {
    /// The shard's name, decoded from the value of its first entry.
    fn name<'t>(&self, text: &'t str) -> Cow<'t, str> {
        KeyCursor::value_start(text, self.key as usize)
            .and_then(|v| json::string_at(text, v))
            .unwrap_or_default()
    }

    /// The offset of its first entry's key in the index.
    fn offset(&self) -> u64 {
        u64::from(self.key)
    }
}

#[derive(Debug)]
enum TotalSize {
    Integer(u64),
    /// Not a non-negative integer: the value's text.
    NotInteger(String),
}

#[derive(Debug)]
struct Parsed {
    /// In index order (increasing `key`).
    entries: Vec<Entry>,
    shards: Vec<Shard>,
    /// The shards' names, found by name (positions of the values naming them).
    shard_names: KeyTable,
    total_size: Option<(TotalSize, u64)>,
}

struct State<'a> {
    text: &'a str,
    pending: Option<Finding>,
    root: KeyCursor,
    weight_map: bool,
    entries: Vec<Entry>,
    shards: Vec<Shard>,
    /// The distinct shard names, by the position of the value that first names each.
    shard_names: KeyTable,
    total_size: Option<(TotalSize, u64)>,
}

impl State<'_> {
    fn fail<E: de::Error>(&mut self, f: Finding) -> E {
        self.pending = Some(f.in_index());
        E::custom("")
    }
}

fn index_json(offset: usize, message: impl Into<String>) -> Box<Finding> {
    Box::new(Finding::new(Rule::IndexJson, offset as u64, message).in_index())
}

fn parse<'t>(bytes: &'t [u8], config: &Config) -> Result<(&'t str, Parsed), Box<Finding>> {
    let n = bytes.len() as u64;
    if n > config.header_limit() {
        return Err(index_json(
            0,
            format!(
                "index is {n} bytes, above the limit of {} bytes",
                config.header_limit()
            ),
        ));
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|e| index_json(e.valid_up_to(), "index is not valid UTF-8"))?;
    if text.starts_with('\u{feff}') {
        return Err(index_json(
            0,
            "index starts with a byte-order mark (U+FEFF)",
        ));
    }
    // Syntax, depth, trailing bytes and duplicate keys at every level.
    if let Some((fault, at)) = json::first_fault(text) {
        let message = match fault {
            Syntax::Invalid(m) => format!("invalid JSON: {m}"),
            Syntax::Trailing => "bytes other than JSON whitespace after the index object".into(),
            Syntax::Depth => format!(
                "JSON nesting reaches {} levels (at most {} are followed)",
                crate::limits::MAX_JSON_DEPTH,
                crate::limits::MAX_JSON_DEPTH - 1
            ),
            Syntax::DuplicateKey(k) => format!("duplicate key \"{}\"", k.escape_debug()),
        };
        return Err(index_json(at, message));
    }
    let open = text
        .bytes()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        .unwrap_or(0);
    let mut st = State {
        text,
        pending: None,
        root: KeyCursor::new(open),
        weight_map: false,
        entries: Vec::new(),
        shards: Vec::new(),
        shard_names: KeyTable::new(),
        total_size: None,
    };
    let mut de = serde_json::Deserializer::from_str(text);
    if let Err(e) = (&mut de).deserialize_any(RootVisitor { st: &mut st }) {
        let at = json::error_pos(text, &e);
        return Err(Box::new(
            st.pending
                .take()
                .unwrap_or_else(|| *index_json(at, format!("invalid JSON: {e}"))),
        ));
    }
    if !st.weight_map {
        return Err(Box::new(
            Finding::new(Rule::IndexSchema, 0, "index has no \"weight_map\" object").in_index(),
        ));
    }
    Ok((
        text,
        Parsed {
            entries: st.entries,
            shards: st.shards,
            shard_names: st.shard_names,
            total_size: st.total_size,
        },
    ))
}

struct RootVisitor<'s, 'a> {
    st: &'s mut State<'a>,
}

impl RootVisitor<'_, '_> {
    fn quote(&self, _: &str) -> Option<u64> {
        None
    }
    fn reject<E: de::Error>(self, got: &str, _: Option<u64>) -> E {
        self.st.fail(Finding::new(
            Rule::IndexSchema,
            0,
            format!("index is {got}, not a JSON object"),
        ))
    }
}

impl<'de> Visitor<'de> for RootVisitor<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the index object")
    }
    reject_types!('de; bool, number, null, array, string);
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.st;
        while let Some(Text(key)) = map.next_key_seed(TextSeed)? {
            let quote = st.root.next(st.text, &key);
            let at = quote.map_or(0, |q| q as u64);
            match &*key {
                "weight_map" => {
                    let open = quote.and_then(|q| KeyCursor::value_start(st.text, q));
                    map.next_value_seed(WeightMapSeed {
                        st: &mut *st,
                        at,
                        open,
                    })?;
                }
                "metadata" => {
                    let open = quote.and_then(|q| KeyCursor::value_start(st.text, q));
                    map.next_value_seed(MetadataSeed {
                        st: &mut *st,
                        at,
                        open,
                    })?
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct WeightMapSeed<'s, 'a> {
    st: &'s mut State<'a>,
    at: u64,
    open: Option<usize>,
}

impl WeightMapSeed<'_, '_> {
    fn quote(&self, _: &str) -> Option<u64> {
        None
    }
    fn reject<E: de::Error>(self, got: &str, _: Option<u64>) -> E {
        let f = Finding::new(
            Rule::IndexSchema,
            self.at,
            format!("\"weight_map\" is {got}, not an object"),
        );
        self.st.fail(f)
    }
}

impl<'de> DeserializeSeed<'de> for WeightMapSeed<'_, 'de> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for WeightMapSeed<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the weight_map object")
    }
    reject_types!('de; bool, number, null, array, string);
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.st;
        let mut cursor = self.open.map(KeyCursor::new);
        let mut last = self.at;
        while let Some(Text(key)) = map.next_key_seed(TextSeed)? {
            let quote = cursor.as_mut().and_then(|c| c.next(st.text, &key));
            let at = quote.map_or(last, |q| q as u64);
            last = at;
            let shard = map.next_value_seed(ShardValueSeed {
                st: &mut *st,
                tensor: &key,
                at,
            })?;
            // Keys are unique (the stage-1 walk rejected repeats): only their positions are kept.
            let (Some(_), Ok(key_pos)) = (quote, u32::try_from(at)) else {
                return Err(st.fail(Finding::new(
                    Rule::IndexJson,
                    at,
                    "index too large to index",
                )));
            };
            let value = quote.and_then(|q| KeyCursor::value_start(st.text, q));
            let first = match value {
                Some(v) => st.shard_names.insert(st.text, v, &shard),
                None => None,
            };
            let id = match first {
                // The entry that first named this shard: the last shard whose key comes before
                // that value (shards are in order of first appearance, so sorted by key).
                Some(v) => st.shards.partition_point(|s| s.key as usize <= v) - 1,
                None => {
                    st.shards.push(Shard { key: key_pos });
                    st.shards.len() - 1
                }
            };
            let id = u32::try_from(id).unwrap_or(u32::MAX);
            st.entries.push(Entry {
                key: key_pos,
                shard: id,
            });
        }
        st.weight_map = true;
        Ok(())
    }
}

struct ShardValueSeed<'s, 'a, 'k> {
    st: &'s mut State<'a>,
    tensor: &'k str,
    at: u64,
}

impl ShardValueSeed<'_, '_, '_> {
    fn reject<E: de::Error>(self, got: &str, _: Option<u64>) -> E {
        let f = Finding::new(
            Rule::IndexSchema,
            self.at,
            format!("weight_map value is {got}, not a shard file name (a string)"),
        )
        .with_tensor(self.tensor);
        self.st.fail(f)
    }
}

impl<'de> DeserializeSeed<'de> for ShardValueSeed<'_, 'de, '_> {
    type Value = String;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ShardValueSeed<'_, 'de, '_> {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a shard file name")
    }
    reject_types!('de; bool, number, null, array, object);
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }
}

struct MetadataSeed<'s, 'a> {
    st: &'s mut State<'a>,
    at: u64,
    open: Option<usize>,
}

impl MetadataSeed<'_, '_> {
    fn quote(&self, _: &str) -> Option<u64> {
        None
    }
    fn reject<E: de::Error>(self, got: &str, _: Option<u64>) -> E {
        let f = Finding::new(
            Rule::IndexSchema,
            self.at,
            format!("\"metadata\" is {got}, not an object"),
        );
        self.st.fail(f)
    }
}

impl<'de> DeserializeSeed<'de> for MetadataSeed<'_, 'de> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// The longest `total_size` value text parsed as JSON to describe it; a longer one is not an
/// integer anyway and is shown clipped.
const TOTAL_SIZE_TEXT: usize = 64;

impl<'de> Visitor<'de> for MetadataSeed<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the metadata object")
    }
    reject_types!('de; bool, number, null, array, string);
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.st;
        let mut cursor = self.open.map(KeyCursor::new);
        let mut last = self.at;
        while let Some(Text(key)) = map.next_key_seed(TextSeed)? {
            let quote = cursor.as_mut().and_then(|c| c.next(st.text, &key));
            let at = quote.map_or(last, |q| q as u64);
            last = at;
            map.next_value::<IgnoredAny>()?;
            if key == "total_size" {
                let raw = quote
                    .and_then(|q| KeyCursor::value_start(st.text, q))
                    .and_then(|v| json::value_text(st.text, v))
                    .unwrap_or("");
                let value = if raw.len() <= TOTAL_SIZE_TEXT {
                    match serde_json::from_str::<serde_json::Value>(raw) {
                        Ok(v) => match v.as_u64() {
                            Some(n) => TotalSize::Integer(n),
                            None => TotalSize::NotInteger(v.to_string()),
                        },
                        Err(_) => TotalSize::NotInteger(raw.to_owned()),
                    }
                } else {
                    TotalSize::NotInteger(crate::clip::clip(raw).into_owned())
                };
                st.total_size = Some((value, at));
            }
        }
        Ok(())
    }
}

/// Every shard name of `weight_map`, repeats included, in the index's order, handed to `f`
/// until it breaks; nothing if the index is above the header limit or not UTF-8, and the
/// names up to the first fault if it is not a JSON object with a `weight_map` of strings.
/// Keeps nothing: for planning in step with [`check_index`] (a remote set fetches its shards
/// ahead, in the order the check asks for them).
pub fn visit_shard_names(
    index: &[u8],
    config: &Config,
    f: &mut dyn FnMut(&str) -> std::ops::ControlFlow<()>,
) {
    if index.len() as u64 > config.header_limit() {
        return;
    }
    let Ok(text) = std::str::from_utf8(index) else {
        return;
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let _ = (&mut de).deserialize_map(NamesRoot { f });
}

struct NamesRoot<'o> {
    f: &'o mut dyn FnMut(&str) -> std::ops::ControlFlow<()>,
}

impl<'de> Visitor<'de> for NamesRoot<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an index object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Text(key)) = map.next_key_seed(TextSeed)? {
            if key == "weight_map" {
                map.next_value_seed(NamesMap { f: &mut *self.f })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

struct NamesMap<'o> {
    f: &'o mut dyn FnMut(&str) -> std::ops::ControlFlow<()>,
}

impl<'de> DeserializeSeed<'de> for NamesMap<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for NamesMap<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a weight_map object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key::<IgnoredAny>()?.is_some() {
            let Text(name) = map.next_value_seed(TextSeed)?;
            if (self.f)(&name).is_break() {
                return Err(de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}
