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

use std::collections::{BTreeSet, HashSet};
use std::fmt;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::dtype::Dtype;
use crate::error::Finding;
use crate::report::Report;
use crate::rules::Rule;

/// The reader table shipped with this version of stcheck (`corpus/readers.json`).
pub const BUILTIN_TABLE: &str = include_str!("../../corpus/readers.json");

/// The most findings (or refusal examples) one behaviour reports per file; the rest are
/// counted in [`PortableReport::omitted`], so a header of a million tensors cannot flood a
/// report.
pub const MAX_FINDINGS_PER_BEHAVIOUR: usize = 20;

/// What a reader does with a file that matches a behaviour's condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Effect {
    /// It returns other names, shapes, dtypes, bytes or parameter counts than the file holds,
    /// without an error.
    Misread,
    /// Its process dies, or it fails with an internal error that is not a deliberate refusal.
    Crash,
    /// It reports an error and returns nothing.
    Refuse,
}

impl Effect {
    /// `"misread"`, `"crash"` or `"refuse"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Misread => "misread",
            Effect::Crash => "crash",
            Effect::Refuse => "refuse",
        }
    }

    /// `"misreads it"`, `"crashes on it"`, `"refuses it"`.
    pub fn verb(self) -> &'static str {
        match self {
            Effect::Misread => "misreads it",
            Effect::Crash => "crashes on it",
            Effect::Refuse => "refuses it",
        }
    }

    /// Whether the portable profile rejects a file with this effect (misread and crash).
    pub fn is_misreading(self) -> bool {
        !matches!(self, Effect::Refuse)
    }
}

/// What a refusal covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The reader refuses the whole file and returns nothing (it also ends the reader's work:
    /// none of its misreadings happen).
    File,
    /// The reader refuses that tensor and loads the others.
    Tensor,
}

/// Which tensors a [`Condition::Dimension`] applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elements {
    /// Every tensor.
    Any,
    /// Tensors with no elements (some dimension is 0).
    Zero,
    /// Tensors with at least one element.
    Nonzero,
}

impl Elements {
    fn matches(self, elements: u64) -> bool {
        match self {
            Elements::Any => true,
            Elements::Zero => elements == 0,
            Elements::Nonzero => elements != 0,
        }
    }
}

/// An inclusive range of integers, `min..=max` (`max` absent: no upper bound).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Smallest value in the range.
    pub min: u64,
    /// Largest value in the range, if any.
    pub max: Option<u64>,
}

impl Bounds {
    /// Whether `v` is in the range.
    pub fn contains(&self, v: u64) -> bool {
        v >= self.min && self.max.is_none_or(|m| v <= m)
    }
}

impl fmt::Display for Bounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.max {
            Some(m) if m == self.min => write!(f, "{m}"),
            Some(m) => write!(f, "{} to {m}", self.min),
            None => write!(f, "{} or more", self.min),
        }
    }
}

/// A machine-readable condition on a file's header, or on a sharded set's index. The JSON
/// form is `{"kind": "...", ...}`; every integer is a decimal string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// `tensor-name-in`: a tensor's name (unescaped) is one of `names`.
    TensorNameIn(BTreeSet<String>),
    /// `dimension`: a tensor has a dimension in `bounds`, among the tensors `elements` selects.
    Dimension {
        /// The dimension's range.
        bounds: Bounds,
        /// Which tensors.
        elements: Elements,
    },
    /// `rank`: a tensor's number of dimensions is in the range.
    Rank(Bounds),
    /// `dtype-in`: a tensor's dtype is one of these.
    DtypeIn(Vec<Dtype>),
    /// `header-length`: the header length N is in the range.
    HeaderLength(Bounds),
    /// `tensor-count`: the number of tensors in the file is in the range.
    TensorCount(Bounds),
    /// `index-tensor-name-in`: a `weight_map` key is one of `names`.
    IndexTensorNameIn(BTreeSet<String>),
    /// `index-entry-count`: the number of `weight_map` entries is in the range.
    IndexEntryCount(Bounds),
    /// `index-weight-map-utf16-length`: the `weight_map`'s keys and values, counted in UTF-16
    /// code units (JavaScript's `length`), add up to a number in the range.
    IndexWeightMapUtf16Length(Bounds),
    /// `index-shard-count`: the number of distinct shard names is in the range.
    IndexShardCount(Bounds),
    /// `index-shard-name-unsafe-after-percent-decoding`: a shard name fails `decodeURIComponent`
    /// applied up to `rounds` times, or the name or its decoding holds a control character
    /// (U+0000-U+001F, U+007F), a backslash, a leading `/`, a `:` before the first `/`, or a
    /// `.` or `..` segment.
    IndexShardNameUnsafeAfterPercentDecoding {
        /// How many times the reader decodes.
        rounds: u32,
    },
}

impl Condition {
    /// Whether the condition is about a sharded set's index rather than a file.
    pub fn is_index(&self) -> bool {
        matches!(
            self,
            Condition::IndexTensorNameIn(_)
                | Condition::IndexEntryCount(_)
                | Condition::IndexWeightMapUtf16Length(_)
                | Condition::IndexShardCount(_)
                | Condition::IndexShardNameUnsafeAfterPercentDecoding { .. }
        )
    }
}

/// A reader of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reader {
    id: String,
    name: String,
    package: String,
    version: String,
    runtime: String,
    includes: Vec<String>,
}

impl Reader {
    /// Short stable ID, e.g. `"mlx"`.
    pub fn id(&self) -> &str {
        &self.id
    }
    /// What is called, in words.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Where it comes from.
    pub fn package(&self) -> &str {
        &self.package
    }
    /// The version the behaviours were observed with.
    pub fn version(&self) -> &str {
        &self.version
    }
    /// The runtime it was observed on.
    pub fn runtime(&self) -> &str {
        &self.runtime
    }
    /// Readers whose behaviours this one inherits (it reads through them).
    pub fn includes(&self) -> &[String] {
        &self.includes
    }
}

/// One observed behaviour: a row of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Behaviour {
    id: String,
    reader: String,
    version: String,
    effect: Effect,
    stage: u64,
    scope: Option<Scope>,
    rule: Rule,
    condition: Condition,
    observed: String,
    cases: Vec<String>,
    near_misses: Vec<String>,
}

impl Behaviour {
    /// Stable ID, e.g. `"mlx-dtype-as-u8"`.
    pub fn id(&self) -> &str {
        &self.id
    }
    /// The reader's ID.
    pub fn reader(&self) -> &str {
        &self.reader
    }
    /// The reader version it was observed with.
    pub fn version(&self) -> &str {
        &self.version
    }
    /// Misread, crash or refuse.
    pub fn effect(&self) -> Effect {
        self.effect
    }
    /// When the reader meets the condition, relative to its other behaviours (smaller first;
    /// index conditions of a sharded set come before file ones).
    pub fn stage(&self) -> u64 {
        self.stage
    }
    /// For a refusal: whether it covers the file or the tensor.
    pub fn scope(&self) -> Option<Scope> {
        self.scope
    }
    /// Whether it ends the reader's work on the file: a crash, or a file-scope refusal.
    pub fn is_stop(&self) -> bool {
        self.effect == Effect::Crash || self.scope == Some(Scope::File)
    }
    /// The `PORTABLE-*` rule a file showing it breaks.
    pub fn rule(&self) -> Rule {
        self.rule
    }
    /// When it happens.
    pub fn condition(&self) -> &Condition {
        &self.condition
    }
    /// What the reader did, in words.
    pub fn observed(&self) -> &str {
        &self.observed
    }
    /// Corpus cases (or sharded-set probe cases, `index/...`) that show it.
    pub fn cases(&self) -> &[String] {
        &self.cases
    }
    /// Cases just outside the condition, which the reader reads correctly.
    pub fn near_misses(&self) -> &[String] {
        &self.near_misses
    }
    /// Whether the condition matches a file (always false for an index condition).
    pub fn matches_file(&self, report: &Report<'_>) -> bool {
        let mut any = false;
        if !self.condition.is_index() {
            file_hits(&self.condition, report, &mut |_| any = true);
        }
        any
    }
    /// Whether the condition matches an index (always false for a file condition).
    pub fn matches_index(&self, index: &dyn IndexView) -> bool {
        let mut any = false;
        if self.condition.is_index() {
            index_hits(&self.condition, index, &mut |_| any = true);
        }
        any
    }
}

/// A reader table that does not load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableError(String);

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "reader table: {}", self.0)
    }
}

impl std::error::Error for TableError {}

/// The table of reader behaviours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaderTable {
    readers: Vec<Reader>,
    behaviours: Vec<Behaviour>,
}

// The JSON form, checked and converted by `ReaderTable::from_json`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    version: String,
    #[serde(rename = "about")]
    _about: Option<serde::de::IgnoredAny>,
    readers: Vec<RawReader>,
    behaviours: Vec<RawBehaviour>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReader {
    id: String,
    name: String,
    package: String,
    version: String,
    runtime: String,
    #[serde(default)]
    includes: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBehaviour {
    id: String,
    reader: String,
    version: String,
    effect: String,
    stage: String,
    scope: Option<String>,
    rule: String,
    condition: RawCondition,
    observed: String,
    cases: Vec<String>,
    near_misses: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCondition {
    kind: String,
    names: Option<Vec<String>>,
    dtypes: Option<Vec<String>>,
    min: Option<String>,
    max: Option<String>,
    elements: Option<String>,
    rounds: Option<String>,
}

fn table_err<T>(msg: impl Into<String>) -> Result<T, TableError> {
    Err(TableError(msg.into()))
}

fn decimal(what: &str, s: &str) -> Result<u64, TableError> {
    let canonical = !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_digit())
        && (s.len() == 1 || !s.starts_with('0'));
    match s.parse::<u64>() {
        Ok(v) if canonical => Ok(v),
        _ => table_err(format!("{what}: {s:?} is not a decimal integer")),
    }
}

impl RawCondition {
    fn bounds(&self, what: &str) -> Result<Bounds, TableError> {
        let Some(min) = &self.min else {
            return table_err(format!("{what}: condition {} needs min", self.kind));
        };
        let min = decimal(what, min)?;
        let max = match &self.max {
            Some(m) => Some(decimal(what, m)?),
            None => None,
        };
        if max.is_some_and(|m| m < min) {
            return table_err(format!("{what}: max below min"));
        }
        Ok(Bounds { min, max })
    }

    fn names(&self, what: &str) -> Result<BTreeSet<String>, TableError> {
        match &self.names {
            Some(n) if !n.is_empty() => Ok(n.iter().cloned().collect()),
            _ => table_err(format!("{what}: condition {} needs names", self.kind)),
        }
    }

    /// The fields each kind uses; any other field present is an error.
    fn check_fields(&self, what: &str, used: &[&str]) -> Result<(), TableError> {
        let present = [
            ("names", self.names.is_some()),
            ("dtypes", self.dtypes.is_some()),
            ("min", self.min.is_some()),
            ("max", self.max.is_some()),
            ("elements", self.elements.is_some()),
            ("rounds", self.rounds.is_some()),
        ];
        for (field, is) in present {
            if is && !used.contains(&field) {
                return table_err(format!(
                    "{what}: condition {} has no field {field}",
                    self.kind
                ));
            }
        }
        Ok(())
    }

    fn convert(&self, what: &str) -> Result<Condition, TableError> {
        const RANGE: &[&str] = &["min", "max"];
        let (used, c): (&[&str], Condition) = match self.kind.as_str() {
            "tensor-name-in" => (&["names"], Condition::TensorNameIn(self.names(what)?)),
            "index-tensor-name-in" => (&["names"], Condition::IndexTensorNameIn(self.names(what)?)),
            "dimension" => {
                let elements = match self.elements.as_deref() {
                    Some("any") => Elements::Any,
                    Some("zero") => Elements::Zero,
                    Some("nonzero") => Elements::Nonzero,
                    other => {
                        return table_err(format!(
                            "{what}: dimension needs elements any|zero|nonzero, found {other:?}"
                        ))
                    }
                };
                (
                    &["min", "max", "elements"],
                    Condition::Dimension {
                        bounds: self.bounds(what)?,
                        elements,
                    },
                )
            }
            "rank" => (RANGE, Condition::Rank(self.bounds(what)?)),
            "header-length" => (RANGE, Condition::HeaderLength(self.bounds(what)?)),
            "tensor-count" => (RANGE, Condition::TensorCount(self.bounds(what)?)),
            "index-entry-count" => (RANGE, Condition::IndexEntryCount(self.bounds(what)?)),
            "index-weight-map-utf16-length" => (
                RANGE,
                Condition::IndexWeightMapUtf16Length(self.bounds(what)?),
            ),
            "index-shard-count" => (RANGE, Condition::IndexShardCount(self.bounds(what)?)),
            "dtype-in" => {
                let Some(names) = self.dtypes.as_ref().filter(|d| !d.is_empty()) else {
                    return table_err(format!("{what}: dtype-in needs dtypes"));
                };
                let mut dtypes = Vec::new();
                for n in names {
                    match Dtype::ALL.iter().find(|d| d.name() == n) {
                        Some(&d) => dtypes.push(d),
                        None => return table_err(format!("{what}: unknown dtype {n:?}")),
                    }
                }
                (&["dtypes"], Condition::DtypeIn(dtypes))
            }
            "index-shard-name-unsafe-after-percent-decoding" => {
                let rounds = match &self.rounds {
                    Some(r) => decimal(what, r)?,
                    None => return table_err(format!("{what}: {} needs rounds", self.kind)),
                };
                let Ok(rounds) = u32::try_from(rounds) else {
                    return table_err(format!("{what}: rounds too large"));
                };
                (
                    &["rounds"],
                    Condition::IndexShardNameUnsafeAfterPercentDecoding {
                        rounds: rounds.min(64),
                    },
                )
            }
            other => return table_err(format!("{what}: unknown condition kind {other:?}")),
        };
        self.check_fields(what, used)?;
        Ok(c)
    }
}

impl ReaderTable {
    /// Parse and check a table in the JSON form of `corpus/readers.json`: unique reader and
    /// behaviour IDs, every behaviour's reader known and its version equal to the reader's,
    /// `includes` naming known readers, every rule a `PORTABLE-*` rule (`PORTABLE-REFUSED`
    /// exactly for refusals), every condition well formed.
    pub fn from_json(text: &str) -> Result<Self, TableError> {
        let raw: RawTable = serde_json::from_str(text).map_err(|e| TableError(e.to_string()))?;
        if raw.version != "1" {
            return table_err(format!("unsupported version {:?}", raw.version));
        }
        let mut ids = HashSet::new();
        let readers: Vec<Reader> = raw
            .readers
            .into_iter()
            .map(|r| Reader {
                id: r.id,
                name: r.name,
                package: r.package,
                version: r.version,
                runtime: r.runtime,
                includes: r.includes,
            })
            .collect();
        for r in &readers {
            if r.id.is_empty() || !ids.insert(r.id.as_str()) {
                return table_err(format!("reader id {:?} is empty or not unique", r.id));
            }
        }
        for r in &readers {
            for inc in &r.includes {
                if !ids.contains(inc.as_str()) || inc == &r.id {
                    return table_err(format!("reader {}: includes unknown reader {inc:?}", r.id));
                }
            }
        }
        let mut behaviours = Vec::new();
        let mut bids = HashSet::new();
        for b in raw.behaviours {
            let what = format!("behaviour {:?}", b.id);
            if !bids.insert(b.id.clone()) {
                return table_err(format!("{what}: id not unique"));
            }
            let Some(reader) = readers.iter().find(|r| r.id == b.reader) else {
                return table_err(format!("{what}: unknown reader {:?}", b.reader));
            };
            if reader.version != b.version {
                return table_err(format!(
                    "{what}: observed with {} {}, but the table's {} is {}: re-probe it",
                    b.reader, b.version, b.reader, reader.version
                ));
            }
            let effect = match b.effect.as_str() {
                "misread" => Effect::Misread,
                "crash" => Effect::Crash,
                "refuse" => Effect::Refuse,
                other => return table_err(format!("{what}: unknown effect {other:?}")),
            };
            let Some(rule) = Rule::from_id(&b.rule).filter(|r| r.is_portable()) else {
                return table_err(format!("{what}: {:?} is not a PORTABLE-* rule", b.rule));
            };
            if (rule == Rule::PortableRefused) != (effect == Effect::Refuse) {
                return table_err(format!(
                    "{what}: a refusal is PORTABLE-REFUSED, and only a refusal"
                ));
            }
            let stage = decimal(&what, &b.stage)?;
            let scope = match (b.scope.as_deref(), effect) {
                (Some("file"), Effect::Refuse) => Some(Scope::File),
                (Some("tensor"), Effect::Refuse) => Some(Scope::Tensor),
                (None, Effect::Misread | Effect::Crash) => None,
                (other, _) => {
                    return table_err(format!(
                        "{what}: scope {other:?}: a refusal has scope file or tensor, nothing else has one"
                    ))
                }
            };
            let condition = b.condition.convert(&what)?;
            behaviours.push(Behaviour {
                id: b.id,
                reader: b.reader,
                version: b.version,
                effect,
                stage,
                scope,
                rule,
                condition,
                observed: b.observed,
                cases: b.cases,
                near_misses: b.near_misses,
            });
        }
        Ok(ReaderTable {
            readers,
            behaviours,
        })
    }

    /// The table shipped with stcheck ([`BUILTIN_TABLE`]), parsed once.
    pub fn builtin() -> Result<&'static ReaderTable, TableError> {
        static TABLE: OnceLock<Result<ReaderTable, TableError>> = OnceLock::new();
        TABLE
            .get_or_init(|| ReaderTable::from_json(BUILTIN_TABLE))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The readers, in table order.
    pub fn readers(&self) -> &[Reader] {
        &self.readers
    }

    /// The behaviours, in table order.
    pub fn behaviours(&self) -> &[Behaviour] {
        &self.behaviours
    }

    /// The reader with this ID.
    pub fn reader(&self, id: &str) -> Option<&Reader> {
        self.readers.iter().find(|r| r.id == id)
    }

    /// The behaviours that apply to `reader`: its own and those of the readers it includes
    /// (transitively), in table order.
    pub fn behaviours_of<'t>(&'t self, reader: &str) -> Vec<&'t Behaviour> {
        let mut ids: Vec<&str> = vec![reader];
        let mut i = 0;
        while let Some(&r) = ids.get(i) {
            if let Some(rd) = self.reader(r) {
                for inc in &rd.includes {
                    if !ids.contains(&inc.as_str()) {
                        ids.push(inc);
                    }
                }
            }
            i += 1;
        }
        self.behaviours
            .iter()
            .filter(|b| ids.contains(&b.reader.as_str()))
            .collect()
    }

    /// The tensor names some reader of the table misreads or crashes on (in a file or in an
    /// index's `weight_map`): the names `NAME-SPECIAL` warns about.
    pub fn special_names(&self) -> BTreeSet<&str> {
        let mut out = BTreeSet::new();
        for b in self.behaviours.iter().filter(|b| b.effect.is_misreading()) {
            if let Condition::TensorNameIn(n) | Condition::IndexTensorNameIn(n) = &b.condition {
                out.extend(n.iter().map(String::as_str));
            }
        }
        out
    }
}

/// For `NAME-SPECIAL`: the first behaviour of the built-in table under which some reader
/// misreads a tensor of this name, or `None` (also if the built-in table does not load, which
/// a test rules out).
pub fn special_name(name: &str) -> Option<&'static Behaviour> {
    let table = ReaderTable::builtin().ok()?;
    table.behaviours.iter().find(|b| {
        b.effect.is_misreading()
            && matches!(&b.condition,
                Condition::TensorNameIn(n) | Condition::IndexTensorNameIn(n) if n.contains(name))
    })
}

/// Every tensor name a reader of the built-in table misreads (the names `NAME-SPECIAL` warns
/// about).
pub fn special_names() -> Vec<&'static str> {
    let Ok(table) = ReaderTable::builtin() else {
        return Vec::new();
    };
    let mut out: Vec<&'static str> = Vec::new();
    for b in &table.behaviours {
        if let (true, Condition::TensorNameIn(n) | Condition::IndexTensorNameIn(n)) =
            (b.effect.is_misreading(), &b.condition)
        {
            out.extend(n.iter().map(String::as_str));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The `NAME-SPECIAL` warning for a name, if it is special to a reader of the built-in
/// table: the rule and its message.
pub fn special_name_warning(name: &str) -> Option<(Rule, String)> {
    let b = special_name(name)?;
    Some((
        Rule::NameSpecial,
        format!(
            "tensor name {} is special to {} {}, which {} [{}]",
            quoted(name),
            b.reader(),
            b.version(),
            b.effect().verb(),
            b.id()
        ),
    ))
}

/// The readers a check considers, and whether refusals are errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    readers: Vec<String>,
    /// A refusal by a chosen reader is a `PORTABLE-REFUSED` finding (an error), not only a
    /// support note.
    pub refusals_are_errors: bool,
}

/// A choice of readers that cannot be checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReaderError {
    /// A reader ID that is not in the table.
    Unknown(String),
    /// No reader at all (the portable profile would then promise nothing).
    Empty,
}

impl fmt::Display for ReaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReaderError::Unknown(id) => write!(f, "unknown reader {id:?}"),
            ReaderError::Empty => f.write_str("no reader chosen"),
        }
    }
}

impl std::error::Error for ReaderError {}

impl Options {
    /// Every reader of the table (the default), refusals as notes.
    pub fn all(table: &ReaderTable) -> Self {
        Options {
            readers: table.readers.iter().map(|r| r.id.clone()).collect(),
            refusals_are_errors: false,
        }
    }

    /// The named readers (`--portable-to hub-js,mlx`), in table order, refusals as notes. An
    /// unknown ID, or none at all, is an error.
    pub fn readers<S: AsRef<str>>(table: &ReaderTable, ids: &[S]) -> Result<Self, ReaderError> {
        if ids.is_empty() {
            return Err(ReaderError::Empty);
        }
        for id in ids {
            if table.reader(id.as_ref()).is_none() {
                return Err(ReaderError::Unknown(id.as_ref().to_owned()));
            }
        }
        Ok(Options {
            readers: table
                .readers
                .iter()
                .filter(|r| ids.iter().any(|i| i.as_ref() == r.id))
                .map(|r| r.id.clone())
                .collect(),
            refusals_are_errors: false,
        })
    }

    /// The chosen reader IDs, in table order.
    pub fn chosen(&self) -> &[String] {
        &self.readers
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

fn quoted(name: &str) -> String {
    format!("\"{}\"", crate::report::clip(name).escape_debug())
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
