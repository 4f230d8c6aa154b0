//! The reader table (`corpus/readers.json`): readers, their behaviours and the conditions
//! they meet, the portable profile's options, and the names readers treat as special. The
//! lowest part of the profile: data and lookups, no checking (that is the parent module).

use std::collections::{BTreeSet, HashSet};
use std::fmt;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::dtype::Dtype;
use crate::rules::Rule;

/// The reader table shipped with this version of stcheck (`corpus/readers.json`, read through
/// the link `validator/readers.json` so that the packaged crate carries it).
pub const BUILTIN_TABLE: &str = include_str!("../../readers.json");

/// The most findings (or refusal examples) one behaviour reports per file; the rest are
/// counted in [`super::PortableReport::omitted`], so a header of a million tensors cannot flood a
/// report.
pub const MAX_FINDINGS_PER_BEHAVIOUR: usize = 20;

/// What a reader does with a file that matches a behaviour's condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
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
    pub(super) fn matches(self, elements: u64) -> bool {
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
#[non_exhaustive]
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
    pub(super) id: String,
    pub(super) name: String,
    pub(super) package: String,
    pub(super) version: String,
    pub(super) runtime: String,
    pub(super) includes: Vec<String>,
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
    pub(super) id: String,
    pub(super) reader: String,
    pub(super) version: String,
    pub(super) effect: Effect,
    pub(super) stage: u64,
    pub(super) scope: Option<Scope>,
    pub(super) rule: Rule,
    pub(super) condition: Condition,
    pub(super) observed: String,
    pub(super) cases: Vec<String>,
    pub(super) near_misses: Vec<String>,
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
    pub(super) readers: Vec<Reader>,
    pub(super) behaviours: Vec<Behaviour>,
}

// The JSON form, checked and converted by `ReaderTable::from_json`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    pub(super) version: String,
    #[serde(rename = "about")]
    pub(super) _about: Option<serde::de::IgnoredAny>,
    pub(super) readers: Vec<RawReader>,
    pub(super) behaviours: Vec<RawBehaviour>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReader {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) package: String,
    pub(super) version: String,
    pub(super) runtime: String,
    #[serde(default)]
    pub(super) includes: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBehaviour {
    pub(super) id: String,
    pub(super) reader: String,
    pub(super) version: String,
    pub(super) effect: String,
    pub(super) stage: String,
    pub(super) scope: Option<String>,
    pub(super) rule: String,
    pub(super) condition: RawCondition,
    pub(super) observed: String,
    pub(super) cases: Vec<String>,
    pub(super) near_misses: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCondition {
    pub(super) kind: String,
    pub(super) names: Option<Vec<String>>,
    pub(super) dtypes: Option<Vec<String>>,
    pub(super) min: Option<String>,
    pub(super) max: Option<String>,
    pub(super) elements: Option<String>,
    pub(super) rounds: Option<String>,
}

pub(super) fn table_err<T>(msg: impl Into<String>) -> Result<T, TableError> {
    Err(TableError(msg.into()))
}

pub(super) fn decimal(what: &str, s: &str) -> Result<u64, TableError> {
    let canonical = !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_digit())
        && (s.len() == 1 || !s.starts_with('0'));
    match s.parse::<u64>() {
        Ok(v) if canonical => Ok(v),
        _ => table_err(format!("{what}: {s:?} is not a decimal integer")),
    }
}

impl RawCondition {
    pub(super) fn bounds(&self, what: &str) -> Result<Bounds, TableError> {
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

    pub(super) fn names(&self, what: &str) -> Result<BTreeSet<String>, TableError> {
        match &self.names {
            Some(n) if !n.is_empty() => Ok(n.iter().cloned().collect()),
            _ => table_err(format!("{what}: condition {} needs names", self.kind)),
        }
    }

    /// The fields each kind uses; any other field present is an error.
    pub(super) fn check_fields(&self, what: &str, used: &[&str]) -> Result<(), TableError> {
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

    pub(super) fn convert(&self, what: &str) -> Result<Condition, TableError> {
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
    pub(super) readers: Vec<String>,
    /// A refusal by a chosen reader is a `PORTABLE-REFUSED` finding (an error), not only a
    /// support note.
    pub refusals_are_errors: bool,
}

/// A choice of readers that cannot be checked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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

/// A name as messages quote it: escaped, in double quotes.
pub(crate) fn quoted(name: &str) -> String {
    format!("\"{}\"", crate::clip::clip(name).escape_debug())
}
