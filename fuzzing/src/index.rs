//! Target `index`: sharded checkpoints.

use crate::*;

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
    /// Checking a shard fails with a read error of this kind (see [`READ_FAULTS`]): a link not
    /// followed is `INDEX-SHARD-LINK`, a shard not there `INDEX-SHARD-MISSING`, any other
    /// error ends the check of the set with that error, naming the shard.
    ShardFails(u64, u8),
    /// Listing the index's directory fails: the check ends with that error.
    ListFails,
    /// A `weight_map` entry names another shard than the one holding the tensor
    /// (`INDEX-TENSOR-MISSING`).
    MoveEntry(u64, u64),
    /// A tensor is in two shards (`INDEX-TENSOR-DUPLICATE`).
    DuplicateTensor(u64, u64),
    /// The index names a shard by the raw bytes (read lossily as UTF-8) instead of its file
    /// name: `INDEX-SHARD-NAME` for a name that is no plain file name, else
    /// `INDEX-SHARD-MISSING`.
    RenameShard(u64),
}

/// The options of the index checker on the same set: each warning rule allowed by name is
/// gone, and nothing else; denied by name, it is an error; an index one byte above the header
/// limit is `INDEX-JSON` alone.
fn check_index_options(index: &[u8], source: &Faulty, report: &stcheck::index::IndexReport) {
    use stcheck::index::check_index;
    for rule in crate::validate::warning_rules(report.warnings(), 2) {
        if let Ok(r) = check_index(index, source, &crate::validate::by_name(rule, true)) {
            assert_eq!(
                (r.errors(), r.warnings()),
                (
                    report.errors(),
                    &crate::validate::without(report.warnings(), rule)[..]
                ),
                "FUZZ FINDING: {rule} allowed changed more than its warnings"
            );
        }
        if let Ok(r) = check_index(index, source, &crate::validate::by_name(rule, false)) {
            assert!(
                !r.is_valid() && r.errors().iter().any(|e| e.rule() == rule),
                "FUZZ FINDING: {rule} denied is no error"
            );
        }
    }
    if let Some(limit) = (index.len() as u64).checked_sub(1) {
        let limited = Config::default().max_header_size(limit);
        if let Ok(r) = check_index(index, source, &limited) {
            let rules: Vec<Rule> = r.errors().iter().map(|e| e.rule()).collect();
            assert_eq!(
                rules,
                [Rule::IndexJson],
                "FUZZ FINDING: an index above the limit"
            );
        }
    }
}

/// The read errors a shard's check fails with in [`IndexChange::ShardFails`].
pub const READ_FAULTS: [stcheck::ReadErrorKind; 6] = [
    stcheck::ReadErrorKind::LinkNotFollowed,
    stcheck::ReadErrorKind::NotFound,
    stcheck::ReadErrorKind::NotRegular,
    stcheck::ReadErrorKind::Loop,
    stcheck::ReadErrorKind::Changed,
    stcheck::ReadErrorKind::Io,
];

/// Shards in memory whose check or listing fails as an [`IndexChange`] says.
struct Faulty {
    files: stcheck::index::MemorySource,
    /// The shard whose check fails, and how.
    fails: Option<(String, stcheck::ReadErrorKind)>,
    /// Whether listing the directory fails.
    list_fails: bool,
}

impl stcheck::index::ShardSource for Faulty {
    fn list(&self) -> Result<Vec<String>, stcheck::ReadError> {
        if self.list_fails {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, "fuzz: listing").into());
        }
        self.files.list()
    }

    fn check(
        &self,
        name: &str,
        config: &Config,
        f: &mut dyn FnMut(stcheck::Checked<'_>),
    ) -> Result<(), stcheck::ReadError> {
        match &self.fails {
            Some((failing, kind)) if failing == name => Err(stcheck::ReadError::new(
                *kind,
                format!("fuzz: {}", kind.as_str()),
            )),
            _ => self.files.check(name, config, f),
        }
    }
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
        // The first eight as the kept corpus was made with; the faults and layout changes
        // added later share the last choice with the raw index.
        let change = match src.below(8) {
            0 => IndexChange::None,
            1 => IndexChange::DropEntry(src.u32().into()),
            2 => IndexChange::WrongTotal(1 + src.below(1 << 20)),
            3 => IndexChange::RemoveShard(src.u32().into()),
            4 => IndexChange::BreakShard(src.u32().into()),
            5 => IndexChange::ExtraFile,
            6 => IndexChange::FlipIndexByte(src.u32().into(), src.byte().max(1)),
            _ => match src.below(6) {
                0 => IndexChange::RawIndex,
                1 => IndexChange::ShardFails(src.u32().into(), src.byte()),
                2 => IndexChange::ListFails,
                3 => IndexChange::MoveEntry(src.u32().into(), src.u32().into()),
                4 => IndexChange::DuplicateTensor(src.u32().into(), src.u32().into()),
                _ => IndexChange::RenameShard(src.u32().into()),
            },
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
        // Two different shards `(i, j)` chosen by `k` and `to`, when there are two.
        let pair = |k: u64, to: u64| {
            let i = (k % n.max(1) as u64) as usize;
            (n >= 2).then(|| (i, (i + 1 + (to % (n as u64 - 1)) as usize) % n))
        };
        let duplicate = match self.change {
            IndexChange::DuplicateTensor(k, to) => pair(k, to),
            _ => None,
        };
        for (i, m) in self.shards.iter().enumerate() {
            let name = Self::shard_name(i, n);
            for t in &m.tensors {
                weight_map.insert(t.name.clone(), serde_json::Value::String(name.clone()));
                total += t.data.len() as u64;
            }
            match duplicate {
                // Shard j also holds the first tensor of shard i.
                Some((from, j)) if j == i => {
                    let mut m = m.clone();
                    m.tensors.push(self.shards[from].tensors[0].clone());
                    files.push((name, m.serialize()));
                }
                _ => files.push((name, m.serialize())),
            }
        }
        let mut fails = None;
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
            IndexChange::ShardFails(k, kind) if n > 0 => {
                let kind = READ_FAULTS[usize::from(kind) % READ_FAULTS.len()];
                fails = Some((Self::shard_name((k % n as u64) as usize, n), kind));
                expect = match kind {
                    stcheck::ReadErrorKind::LinkNotFollowed => Some(Rule::IndexShardLink),
                    stcheck::ReadErrorKind::Changed | stcheck::ReadErrorKind::Io => None,
                    _ => Some(Rule::IndexShardMissing),
                };
            }
            IndexChange::MoveEntry(k, to) => {
                if let Some((i, j)) = pair(k, to) {
                    let moved = &self.shards[i].tensors[0].name;
                    weight_map.insert(
                        moved.clone(),
                        serde_json::Value::String(Self::shard_name(j, n)),
                    );
                    expect = Some(Rule::IndexTensorMissing);
                }
            }
            IndexChange::DuplicateTensor(..) if duplicate.is_some() => {
                expect = Some(Rule::IndexTensorDuplicate);
            }
            IndexChange::RenameShard(k) if n > 0 => {
                let old = Self::shard_name((k % n as u64) as usize, n);
                let new = String::from_utf8_lossy(&self.raw).into_owned();
                if !files.iter().any(|(f, _)| *f == new) {
                    for v in weight_map.values_mut() {
                        if v.as_str() == Some(old.as_str()) {
                            *v = serde_json::Value::String(new.clone());
                        }
                    }
                    expect = Some(match stcheck::index::check_shard_name(&new) {
                        Err(_) => Rule::IndexShardName,
                        Ok(()) => Rule::IndexShardMissing,
                    });
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

        let source = Faulty {
            files: source,
            fails,
            list_fails: self.change == IndexChange::ListFails,
        };
        let config = Config::default();
        // What each shard came to, as the index checker hands it out.
        let mut seen = stcheck::index::ShardCounts::default();
        let checked =
            stcheck::index::check_index_with(&index, &source, &config, &mut |_, o| match o {
                stcheck::index::ShardOutcome::Checked(c) if c.verdict.is_ok() => seen.valid += 1,
                stcheck::index::ShardOutcome::Checked(_) => seen.invalid += 1,
                stcheck::index::ShardOutcome::NotChecked(_) => seen.missing += 1,
            });
        let report = match checked {
            Ok(r) => r,
            Err(e) => {
                // Only the faults made above end the check without a verdict, with their error.
                let expected = match &source.fails {
                    Some((name, kind)) if e.shard() == Some(name.as_str()) => {
                        e.kind() == *kind && e.to_string().contains(kind.as_str())
                    }
                    _ => source.list_fails && e.kind() == stcheck::ReadErrorKind::Io,
                };
                assert!(
                    expected,
                    "FUZZ FINDING: {:?}: the index check failed with {e}",
                    self.change
                );
                assert!(!e.is_policy() || e.kind() == stcheck::ReadErrorKind::Changed);
                return;
            }
        };
        // A fault that ends the check gives no verdict; only an index rejected before the
        // shards are read (`INDEX-JSON`, `INDEX-SCHEMA`) gets one.
        let ends = source.list_fails
            || source.fails.as_ref().is_some_and(|(_, kind)| {
                matches!(
                    kind,
                    stcheck::ReadErrorKind::Changed | stcheck::ReadErrorKind::Io
                )
            });
        assert!(
            !ends
                || report
                    .errors()
                    .iter()
                    .any(|f| matches!(f.rule(), Rule::IndexJson | Rule::IndexSchema)),
            "FUZZ FINDING: {:?} ends the check, and the set got a verdict",
            self.change
        );
        assert_eq!(
            report.shards(),
            seen,
            "FUZZ FINDING: the shard counts are not the outcomes handed out"
        );
        for f in report.errors().iter().chain(report.warnings()) {
            let shown = f.to_string();
            assert!(
                shown.contains(f.rule().id()) && !f.location().as_str().is_empty(),
                "FUZZ FINDING: a finding shown as {shown:?}"
            );
        }
        check_index_options(&index, &source, &report);
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
        // The portable profile on the same set: the strict findings stay, a portable answer
        // comes exactly with a valid set, and the set is portable only if it is valid.
        let table = stcheck::portable::ReaderTable::builtin().expect("the built-in table");
        let portable_config =
            Config::default().portable(Some(stcheck::portable::Options::all(table)));
        if let Ok(p) = check_index(&index, &source, &portable_config) {
            assert_eq!(
                (p.errors().to_vec(), p.is_valid()),
                (report.errors().to_vec(), report.is_valid()),
                "FUZZ FINDING: the portable profile changed the strict findings"
            );
            assert!(!p.is_valid_under(stcheck::Profile::Portable) || report.is_valid());
            if let Some(answer) = p.portable() {
                for f in answer.findings() {
                    assert!(f.rule().is_portable(), "FUZZ FINDING: {:?}", f.rule());
                }
            }
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
                assert_eq!(report.computed_size(), Some(total));
                assert_eq!(
                    (report.shards().valid, report.shards().total()),
                    (n as u64, n as u64)
                );
                let elements: u64 = self
                    .shards
                    .iter()
                    .flat_map(|m| &m.tensors)
                    .map(|t| t.shape.iter().product::<u64>())
                    .sum();
                assert_eq!(report.parameters(), elements, "FUZZ FINDING: parameters");
                let by_dtype: u64 = report.totals_by_dtype().iter().map(|t| t.tensors).sum();
                assert_eq!(by_dtype, all.len() as u64, "FUZZ FINDING: totals by dtype");
                assert_eq!(report.omitted(), 0);
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
