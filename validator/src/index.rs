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
//!   link that leaves it (`INDEX-SHARD-LINK`), exists as a regular file
//!   (`INDEX-SHARD-MISSING`) and is a valid safetensors file under the same [`Config`]
//!   (`INDEX-SHARD-INVALID`, with the shard's own error as the cause);
//! - every tensor of `weight_map` is in the shard it names (`INDEX-TENSOR-MISSING`), every
//!   tensor of every named shard is in `weight_map` (`INDEX-TENSOR-UNLISTED`), and no tensor is
//!   in two shards (`INDEX-TENSOR-DUPLICATE`);
//! - `metadata.total_size`, when present, is a JSON integer equal to the sum of the tensors'
//!   byte lengths (`INDEX-TOTAL-SIZE`);
//! - a `*.safetensors` file in the directory that the index does not name is a warning
//!   (`INDEX-SHARD-UNLISTED`), an error under `deny_warnings`.
//!
//! The checker reads shards only through a [`ShardSource`], so it runs the same over a
//! directory ([`FsSource`]) and over bytes in memory ([`MemorySource`], for tests and fuzzing).
//! It never panics, whatever the index bytes and the shards hold. Every finding names the
//! rule, the shard and the tensor where they apply, and a byte offset into the index (or,
//! for findings about a shard's own tensors, into that shard).
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
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use serde::de::{
    self, DeserializeSeed, Deserializer as _, IgnoredAny, MapAccess, SeqAccess, Visitor,
};

use crate::error::{Error, Finding};
use crate::limits::Config;
use crate::report::{DtypeTotal, DtypeTotals, Report};
use crate::rules::{Rule, Severity};

/// The file name suffix of an index.
pub const INDEX_SUFFIX: &str = ".safetensors.index.json";

/// The most findings one index reports; the rest are counted in
/// [`IndexReport::omitted`], so a hostile index cannot flood the output.
pub const MAX_FINDINGS: usize = 1000;

/// Which file a finding's offset points into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// The index file.
    Index,
    /// The shard named by [`IndexFinding::shard_name`].
    Shard,
}

impl Location {
    /// `"index"` or `"shard"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Location::Index => "index",
            Location::Shard => "shard",
        }
    }
}

/// One finding about a sharded checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexFinding {
    finding: Finding,
    shard: Option<String>,
    location: Location,
    cause: Option<Error>,
}

impl IndexFinding {
    fn index(rule: Rule, offset: u64, message: impl Into<String>) -> Self {
        IndexFinding {
            finding: Finding::new(rule, offset, message),
            shard: None,
            location: Location::Index,
            cause: None,
        }
    }

    fn shard(mut self, shard: &str) -> Self {
        self.shard = Some(shard.to_owned());
        self
    }

    fn tensor(mut self, tensor: &str) -> Self {
        self.finding = self.finding.with_tensor(tensor);
        self
    }

    fn in_shard(mut self) -> Self {
        self.location = Location::Shard;
        self
    }

    /// The rule broken.
    pub fn rule(&self) -> Rule {
        self.finding.rule()
    }

    /// The rule ID, message, tensor and offset.
    pub fn finding(&self) -> &Finding {
        &self.finding
    }

    /// The shard the finding is about, where one applies (as the index names it).
    pub fn shard_name(&self) -> Option<&str> {
        self.shard.as_deref()
    }

    /// The tensor the finding is about, where one applies.
    pub fn tensor_name(&self) -> Option<&str> {
        self.finding.tensor()
    }

    /// Byte offset into the file given by [`IndexFinding::location`].
    pub fn offset(&self) -> u64 {
        self.finding.offset()
    }

    /// Whether [`IndexFinding::offset`] points into the index or into the shard.
    pub fn location(&self) -> Location {
        self.location
    }

    /// For `INDEX-SHARD-INVALID`, the shard's own error.
    pub fn cause(&self) -> Option<&Error> {
        self.cause.as_ref()
    }

    /// The human message.
    pub fn message(&self) -> &str {
        self.finding.message()
    }
}

impl fmt::Display for IndexFinding {
    /// `RULE-ID: shard "s": tensor "t": message (at offset 0x1a in the index)`; for
    /// `INDEX-SHARD-INVALID`, the shard's error follows. Names are escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.rule().id())?;
        if let Some(s) = &self.shard {
            write!(f, "shard \"{}\": ", s.escape_debug())?;
        }
        if let Some(t) = self.finding.tensor() {
            write!(f, "tensor \"{}\": ", t.escape_debug())?;
        }
        write!(
            f,
            "{} (at offset {:#x} in the {})",
            self.finding.message(),
            self.finding.offset(),
            self.location.as_str()
        )?;
        if let Some(c) = &self.cause {
            write!(f, ": {c}")?;
        }
        Ok(())
    }
}

/// What a [`ShardSource`] found for one shard.
#[derive(Debug)]
pub enum ShardCheck {
    /// The shard is valid; its report.
    Valid(Report<'static>),
    /// The shard is not a valid safetensors file.
    Invalid(Error),
    /// No such file, or not a regular file (the message says which).
    Missing(String),
    /// The shard is a symbolic link whose target is outside the index's directory.
    LeavesDirectory(String),
    /// Reading failed: the set's verdict cannot be known.
    Io(io::Error),
}

/// Where the shards of an index come from.
pub trait ShardSource {
    /// The file names in the index's directory that end in `.safetensors`, in any order
    /// (for `INDEX-SHARD-UNLISTED`).
    fn list(&self) -> io::Result<Vec<String>>;

    /// Validate the shard with this plain file name (already checked by
    /// [`check_shard_name`]) under `config`.
    fn check(&self, name: &str, config: &Config) -> ShardCheck;
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
    fn list(&self) -> io::Result<Vec<String>> {
        Ok(self
            .files
            .keys()
            .filter(|n| n.ends_with(".safetensors"))
            .cloned()
            .collect())
    }

    fn check(&self, name: &str, config: &Config) -> ShardCheck {
        match self.files.get(name) {
            None => ShardCheck::Missing("no such file".to_owned()),
            Some(bytes) => match crate::validate(bytes, config) {
                Ok(r) => ShardCheck::Valid(r.into_owned()),
                Err(e) => ShardCheck::Invalid(e),
            },
        }
    }
}

/// Shards in a directory of the file system, read with the streaming validator (one forward
/// pass, memory bounded by the header). The command-line tool wraps [`FsSource::open`] to
/// memory-map shards instead.
#[derive(Debug, Clone)]
pub struct FsSource {
    dir: PathBuf,
    allow_outside_links: bool,
}

impl FsSource {
    /// The shards next to the index at `index_path`.
    pub fn for_index(index_path: &Path) -> Self {
        let dir = match index_path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        FsSource {
            dir,
            allow_outside_links: false,
        }
    }

    /// Accept shards that are symbolic links to files outside the directory (as in the Hub's
    /// download cache, where snapshot files link to `../../blobs/`). Default: rejected with
    /// `INDEX-SHARD-LINK`.
    pub fn allow_outside_links(mut self, yes: bool) -> Self {
        self.allow_outside_links = yes;
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Open the shard `name` (a plain file name): follows a symbolic link only if its target
    /// stays in the directory (or outside links are allowed), and only to a regular file.
    /// On failure, the [`ShardCheck`] to report.
    pub fn open(&self, name: &str) -> Result<(File, PathBuf), ShardCheck> {
        let path = self.dir.join(name);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(ShardCheck::Missing("no such file".to_owned()))
            }
            Err(e) => return Err(ShardCheck::Io(e)),
        };
        if meta.file_type().is_symlink() && !self.allow_outside_links {
            let target = match std::fs::canonicalize(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(ShardCheck::Missing(
                        "a symbolic link to a file that does not exist".to_owned(),
                    ))
                }
                Err(e) => return Err(ShardCheck::Io(e)),
            };
            let dir = match std::fs::canonicalize(&self.dir) {
                Ok(d) => d,
                Err(e) => return Err(ShardCheck::Io(e)),
            };
            if target.parent() != Some(dir.as_path()) {
                return Err(ShardCheck::LeavesDirectory(format!(
                    "a symbolic link to {}, outside the index's directory",
                    target.display()
                )));
            }
        }
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(ShardCheck::Missing("no such file".to_owned()))
            }
            Err(e) => return Err(ShardCheck::Io(e)),
        };
        match file.metadata() {
            Ok(m) if m.is_file() => Ok((file, path)),
            Ok(_) => Err(ShardCheck::Missing("not a regular file".to_owned())),
            Err(e) => Err(ShardCheck::Io(e)),
        }
    }
}

impl ShardSource for FsSource {
    fn list(&self) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            if let Some(name) = entry.file_name().to_str() {
                if name.ends_with(".safetensors") {
                    out.push(name.to_owned());
                }
            }
        }
        Ok(out)
    }

    fn check(&self, name: &str, config: &Config) -> ShardCheck {
        let (file, _) = match self.open(name) {
            Ok(f) => f,
            Err(c) => return c,
        };
        match crate::stream::validate_reader(io::BufReader::new(file), config) {
            Ok(r) => ShardCheck::Valid(r),
            Err(crate::stream::StreamError::Invalid(e)) => ShardCheck::Invalid(e),
            Err(crate::stream::StreamError::Io(e)) => ShardCheck::Io(e),
        }
    }
}

/// Whether `name` is a plain file name: not empty, not `.` or `..`, no `/`, `\`, `:`, control
/// character or invisible character (so no absolute path, no parent directory, no Windows
/// drive or stream, nothing that displays as another name; see [`crate::names`]).
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// One shard named by the index.
#[derive(Debug, Clone)]
pub struct ShardSummary {
    /// The name, as the index writes it.
    pub name: String,
    /// Its verdict.
    pub status: ShardStatus,
    /// Tensors in the shard (0 unless valid).
    pub tensors: usize,
    /// Parameters in the shard (0 unless valid).
    pub parameters: u64,
    /// Warnings of the shard's own validation.
    pub warnings: Vec<Finding>,
}

/// The result of [`check_index`].
#[derive(Debug, Clone)]
pub struct IndexReport {
    shards: Vec<ShardSummary>,
    errors: Vec<IndexFinding>,
    warnings: Vec<IndexFinding>,
    omitted: usize,
    tensors: usize,
    totals: Vec<DtypeTotal>,
    total_size: Option<u64>,
    computed_size: Option<u64>,
}

impl IndexReport {
    /// Whether the set is valid: no errors (warnings allowed, unless `deny_warnings` turned
    /// them into errors).
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty() && self.omitted == 0
    }

    /// The errors, index-level first, then per shard in the index's order.
    pub fn errors(&self) -> &[IndexFinding] {
        &self.errors
    }

    /// The warnings (`INDEX-SHARD-UNLISTED`).
    pub fn warnings(&self) -> &[IndexFinding] {
        &self.warnings
    }

    /// Findings left out beyond [`MAX_FINDINGS`].
    pub fn omitted(&self) -> usize {
        self.omitted
    }

    /// The distinct shards the index names, in order of first appearance.
    pub fn shards(&self) -> &[ShardSummary] {
        &self.shards
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

/// Checking could not finish because reading failed; says nothing about validity.
#[derive(Debug)]
pub struct IndexIoError {
    /// The shard being read, or `None` for the directory listing.
    pub shard: Option<String>,
    /// The error.
    pub error: io::Error,
}

impl fmt::Display for IndexIoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.shard {
            Some(s) => write!(f, "shard \"{}\": {}", s.escape_debug(), self.error),
            None => write!(f, "listing the directory: {}", self.error),
        }
    }
}

impl std::error::Error for IndexIoError {}

struct Findings {
    errors: Vec<IndexFinding>,
    warnings: Vec<IndexFinding>,
    omitted: usize,
}

impl Findings {
    fn push(&mut self, f: IndexFinding, config: &Config) {
        let warning = f.rule().severity() == Severity::Warning && !config.deny_warnings;
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
/// Returns the report (valid or not), or an I/O error if a shard or the directory listing
/// could not be read. Never panics.
pub fn check_index(
    index: &[u8],
    source: &dyn ShardSource,
    config: &Config,
) -> Result<IndexReport, IndexIoError> {
    let mut found = Findings {
        errors: Vec::new(),
        warnings: Vec::new(),
        omitted: 0,
    };
    let mut report = IndexReport {
        shards: Vec::new(),
        errors: Vec::new(),
        warnings: Vec::new(),
        omitted: 0,
        tensors: 0,
        totals: Vec::new(),
        total_size: None,
        computed_size: None,
    };
    let parsed = match parse(index, config) {
        Ok(p) => p,
        Err(f) => {
            found.push(*f, config);
            report.errors = found.errors;
            return Ok(report);
        }
    };

    // Distinct shard names, in order of first appearance, with the offset of that entry.
    let mut shard_order: Vec<(&str, u64)> = Vec::new();
    let mut seen_shard: HashSet<&str> = HashSet::new();
    for e in &parsed.entries {
        if seen_shard.insert(&e.shard) {
            shard_order.push((&e.shard, e.offset));
        }
    }

    // Check each shard.
    let mut valid: HashMap<&str, Report<'static>> = HashMap::new();
    let mut all_valid = true;
    for &(name, offset) in &shard_order {
        let mut summary = ShardSummary {
            name: name.to_owned(),
            status: ShardStatus::Missing,
            tensors: 0,
            parameters: 0,
            warnings: Vec::new(),
        };
        if let Err(why) = check_shard_name(name) {
            all_valid = false;
            found.push(
                IndexFinding::index(Rule::IndexShardName, offset, why).shard(name),
                config,
            );
            report.shards.push(summary);
            continue;
        }
        match source.check(name, config) {
            ShardCheck::Valid(r) => {
                summary.status = ShardStatus::Valid;
                summary.tensors = r.len();
                summary.parameters = r.parameters();
                summary.warnings = r.warnings().to_vec();
                valid.insert(name, r);
            }
            ShardCheck::Invalid(e) => {
                all_valid = false;
                summary.status = ShardStatus::Invalid;
                let mut f = IndexFinding::index(
                    Rule::IndexShardInvalid,
                    offset,
                    "shard is not a valid safetensors file",
                )
                .shard(name);
                if let Some(t) = e.tensor() {
                    f = f.tensor(t);
                }
                f.cause = Some(e);
                found.push(f, config);
            }
            ShardCheck::Missing(why) => {
                all_valid = false;
                found.push(
                    IndexFinding::index(Rule::IndexShardMissing, offset, why).shard(name),
                    config,
                );
            }
            ShardCheck::LeavesDirectory(why) => {
                all_valid = false;
                found.push(
                    IndexFinding::index(Rule::IndexShardLink, offset, why).shard(name),
                    config,
                );
            }
            ShardCheck::Io(error) => {
                return Err(IndexIoError {
                    shard: Some(name.to_owned()),
                    error,
                })
            }
        }
        report.shards.push(summary);
    }

    // Tensor membership, both ways, and duplicates across shards.
    let weight_map: HashMap<&str, &Entry> = parsed
        .entries
        .iter()
        .map(|e| (e.tensor.as_str(), e))
        .collect();
    let mut home: HashMap<&str, &str> = HashMap::new();
    let mut totals = DtypeTotals::new();
    let mut computed = 0u64;
    for &(name, _) in &shard_order {
        let Some(r) = valid.get(name) else { continue };
        for t in r.tensors() {
            if let Some(first) = home.get(t.name) {
                found.push(
                    IndexFinding::index(
                        Rule::IndexTensorDuplicate,
                        t.header_offset,
                        format!("tensor is also in shard \"{}\"", first.escape_debug()),
                    )
                    .shard(name)
                    .tensor(t.name)
                    .in_shard(),
                    config,
                );
                continue;
            }
            home.insert(t.name, name);
            computed = computed.saturating_add(t.byte_len());
            totals.add(&t);
            if !weight_map.contains_key(t.name) {
                found.push(
                    IndexFinding::index(
                        Rule::IndexTensorUnlisted,
                        t.header_offset,
                        "tensor of the shard is not in weight_map",
                    )
                    .shard(name)
                    .tensor(t.name)
                    .in_shard(),
                    config,
                );
            }
        }
    }
    for e in &parsed.entries {
        let Some(r) = valid.get(e.shard.as_str()) else {
            continue;
        };
        if r.tensor(&e.tensor).is_some() {
            continue;
        }
        let message = match home.get(e.tensor.as_str()) {
            Some(other) => format!(
                "weight_map puts the tensor in this shard, but it is in shard \"{}\"",
                other.escape_debug()
            ),
            None => "weight_map puts the tensor in this shard, which does not hold it".to_owned(),
        };
        found.push(
            IndexFinding::index(Rule::IndexTensorMissing, e.offset, message)
                .shard(&e.shard)
                .tensor(&e.tensor),
            config,
        );
    }

    // metadata.total_size.
    if let Some((value, offset)) = &parsed.total_size {
        match value.as_u64() {
            None => found.push(
                IndexFinding::index(
                    Rule::IndexTotalSize,
                    *offset,
                    format!(
                        "metadata.total_size is {}, not a non-negative JSON integer",
                        crate::report::clip(&value.to_string())
                    ),
                ),
                config,
            ),
            Some(declared) => {
                report.total_size = Some(declared);
                if all_valid && declared != computed {
                    found.push(
                        IndexFinding::index(
                            Rule::IndexTotalSize,
                            *offset,
                            format!(
                                "metadata.total_size is {declared}, but the tensors of the shards take {computed} bytes"
                            ),
                        ),
                        config,
                    );
                }
            }
        }
    }
    if all_valid {
        report.computed_size = Some(computed);
    }

    // Shards in the directory that the index does not name.
    let mut listed = source
        .list()
        .map_err(|error| IndexIoError { shard: None, error })?;
    listed.sort();
    for name in listed {
        if !seen_shard.contains(name.as_str()) {
            found.push(
                IndexFinding::index(
                    Rule::IndexShardUnlisted,
                    0,
                    "a .safetensors file in the index's directory that the index does not name",
                )
                .shard(&name),
                config,
            );
        }
    }

    report.tensors = home.len();
    report.totals = totals.finish();
    report.errors = found.errors;
    report.warnings = found.warnings;
    report.omitted = found.omitted;
    Ok(report)
}

// ---------------------------------------------------------------------------------------------
// Parsing the index.

#[derive(Debug)]
struct Entry {
    tensor: String,
    shard: String,
    /// Offset of the tensor's key in the index.
    offset: u64,
}

#[derive(Debug)]
struct Parsed {
    entries: Vec<Entry>,
    total_size: Option<(serde_json::Value, u64)>,
}

struct State<'a> {
    text: &'a str,
    /// The offset of the last key whose position is known: the fallback for escaped keys.
    last: u64,
    pending: Option<IndexFinding>,
    entries: Vec<Entry>,
    weight_map: bool,
    total_size: Option<(serde_json::Value, u64)>,
}

impl State<'_> {
    /// Offset of a key borrowed from the text (its opening quote); the last known offset
    /// for a key that had escapes (and so was copied).
    fn offset_of(&mut self, key: &str) -> u64 {
        // A key copied out of the text (it had escapes) points elsewhere and keeps the
        // fallback.
        let base = self.text.as_ptr() as usize;
        let p = key.as_ptr() as usize;
        if p > base && p <= base + self.text.len() {
            self.last = (p - base - 1) as u64;
        }
        self.last
    }

    fn fail<E: de::Error>(&mut self, f: IndexFinding) -> E {
        self.pending = Some(f);
        E::custom("")
    }
}

fn parse(bytes: &[u8], config: &Config) -> Result<Parsed, Box<IndexFinding>> {
    let n = bytes.len() as u64;
    if n > config.max_header_size {
        return Err(Box::new(IndexFinding::index(
            Rule::IndexJson,
            0,
            format!(
                "index is {n} bytes, above the limit of {} bytes",
                config.max_header_size
            ),
        )));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        Box::new(IndexFinding::index(
            Rule::IndexJson,
            e.valid_up_to() as u64,
            "index is not valid UTF-8",
        ))
    })?;
    if text.starts_with('\u{feff}') {
        return Err(Box::new(IndexFinding::index(
            Rule::IndexJson,
            0,
            "index starts with a byte-order mark (U+FEFF)",
        )));
    }
    // Syntax, depth, trailing bytes and duplicate keys at every level, with the header's
    // own stage-1 walker (its offsets count from the header start, 8).
    if let Some(f) = crate::header::first_malformed(text) {
        return Err(Box::new(IndexFinding::index(
            Rule::IndexJson,
            f.offset().saturating_sub(crate::header::HEADER_START),
            f.message().replace("header object", "index object"),
        )));
    }
    let mut st = State {
        text,
        last: 0,
        pending: None,
        entries: Vec::new(),
        weight_map: false,
        total_size: None,
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let result = (&mut de).deserialize_any(RootVisitor { st: &mut st });
    if let Err(e) = result {
        return Err(Box::new(st.pending.take().unwrap_or_else(|| {
            IndexFinding::index(Rule::IndexJson, st.last, format!("invalid JSON: {e}"))
        })));
    }
    if !st.weight_map {
        return Err(Box::new(IndexFinding::index(
            Rule::IndexSchema,
            0,
            "index has no \"weight_map\" object",
        )));
    }
    Ok(Parsed {
        entries: st.entries,
        total_size: st.total_size,
    })
}

struct Key<'a>(Cow<'a, str>);

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Key<'de>, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v.to_owned())))
    }
}

/// Describes a JSON value that is not what the schema wants, without descending into it.
macro_rules! reject_others {
    ($what:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Err(self.wrong("a boolean", $what))
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Err(self.wrong("a number", $what))
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Err(self.wrong("a number", $what))
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Err(self.wrong("a number", $what))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Err(self.wrong("null", $what))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(self.wrong("an array", $what))
        }
    };
}

struct RootVisitor<'s, 'a> {
    st: &'s mut State<'a>,
}

impl RootVisitor<'_, '_> {
    fn wrong<E: de::Error>(self, got: &str, _: &str) -> E {
        let f = IndexFinding::index(
            Rule::IndexSchema,
            0,
            format!("index is {got}, not a JSON object"),
        );
        self.st.fail(f)
    }
}

impl<'de> Visitor<'de> for RootVisitor<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the index object")
    }
    reject_others!("object");
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(self.wrong("a string", "object"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Key(key)) = map.next_key_seed(KeySeed)? {
            let at = self.st.offset_of(&key);
            match &*key {
                "weight_map" => {
                    self.st.weight_map = true;
                    map.next_value_seed(WeightMapSeed {
                        st: &mut *self.st,
                        at,
                    })?;
                }
                "metadata" => map.next_value_seed(MetadataSeed {
                    st: &mut *self.st,
                    at,
                })?,
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
}

impl WeightMapSeed<'_, '_> {
    fn wrong<E: de::Error>(self, got: &str, _: &str) -> E {
        let f = IndexFinding::index(
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
    reject_others!("object");
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(self.wrong("a string", "object"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Key(key)) = map.next_key_seed(KeySeed)? {
            let at = self.st.offset_of(&key);
            let shard = map.next_value_seed(ShardValueSeed {
                st: &mut *self.st,
                tensor: &key,
                at,
            })?;
            self.st.entries.push(Entry {
                tensor: key.into_owned(),
                shard,
                offset: at,
            });
        }
        Ok(())
    }
}

struct ShardValueSeed<'s, 'a, 'k> {
    st: &'s mut State<'a>,
    tensor: &'k str,
    at: u64,
}

impl ShardValueSeed<'_, '_, '_> {
    fn wrong<E: de::Error>(self, got: &str, _: &str) -> E {
        let f = IndexFinding::index(
            Rule::IndexSchema,
            self.at,
            format!("weight_map value is {got}, not a shard file name (a string)"),
        )
        .tensor(self.tensor);
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
    reject_others!("string");
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<String, A::Error> {
        Err(self.wrong("an object", "string"))
    }
}

struct MetadataSeed<'s, 'a> {
    st: &'s mut State<'a>,
    at: u64,
}

impl MetadataSeed<'_, '_> {
    fn wrong<E: de::Error>(self, got: &str, _: &str) -> E {
        let f = IndexFinding::index(
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

impl<'de> Visitor<'de> for MetadataSeed<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the metadata object")
    }
    reject_others!("object");
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(self.wrong("a string", "object"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Key(key)) = map.next_key_seed(KeySeed)? {
            let at = self.st.offset_of(&key);
            if key == "total_size" {
                let v: serde_json::Value = map.next_value()?;
                self.st.total_size = Some((v, at));
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}
