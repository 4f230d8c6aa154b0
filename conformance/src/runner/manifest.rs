//! `corpus/manifest.json`: the cases and what a conforming reader must do with each.
//!
//! Every integer in the manifest is a decimal string, so no reader loses precision on values
//! near 2^64. Unknown fields are ignored, so the manifest can grow without breaking runners
//! (other tools add per-case fields of their own).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The strict verdict on a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// A conforming reader must load the file.
    Accept,
    /// A conforming reader must refuse the file.
    Reject,
    /// Either choice conforms; the runner records which one the implementation made.
    ImplementationDefined,
}

/// What the reference crate (`safetensors` 0.8.0) does with a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReferenceVerdict {
    /// It loads the file.
    Accept,
    /// It returns an error.
    Reject,
    /// It panics.
    Panic,
}

/// One tensor of an accepted case's expected content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectedTensor {
    /// Name, unescaped.
    pub name: String,
    /// Dtype name as written in a header, e.g. `"F32"`.
    pub dtype: String,
    /// Dimensions, decimal strings.
    pub shape: Vec<String>,
    /// `[begin, end]` relative to the data region, decimal strings.
    #[serde(default)]
    pub data_offsets: Option<Vec<String>>,
    /// SHA-256 of the tensor's bytes, lower-case hex.
    #[serde(default)]
    pub sha256: Option<String>,
    /// Decoded values, row-major, for the decoded-value cases: decimal strings, `nan`, `inf`,
    /// `-inf` (see `PROTOCOL.md`).
    #[serde(default)]
    pub values: Option<Vec<String>>,
    /// Index cases: the shard file the tensor is in.
    #[serde(default)]
    pub shard: Option<String>,
}

/// The expected content of an accepted case.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Expected {
    /// The tensors (any order). For cases with very many tensors the manifest lists none and
    /// gives only [`Expected::tensor_count`].
    #[serde(default)]
    pub tensors: Vec<ExpectedTensor>,
    /// How many tensors the file has, a decimal string (absent in version-1 manifests).
    #[serde(default)]
    pub tensor_count: Option<String>,
    /// `__metadata__`: `null` when absent or null.
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, String>>,
}

/// Whether a case is one file or a sharded set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// One `.safetensors` file (the default).
    #[default]
    File,
    /// A sharded checkpoint: `path` is its `*.safetensors.index.json`, the shards are beside
    /// it. Only adapters with an index mode run these cases.
    Index,
}

/// What getting a case wrong means, so an implementer knows what to fix first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// Getting it wrong lets a file read out of bounds, allocate or recurse without bound,
    /// crash the reader, hide data, or show two readers different tensors.
    Security,
    /// Getting it wrong refuses or misreads files that real writers produce and other readers
    /// load.
    Interoperability,
    /// Format hygiene: a fault that is not dangerous on its own, which a strict reader refuses
    /// so that files stay portable.
    Strictness,
}

impl Class {
    /// Every class, in report order.
    pub const ALL: &'static [Class] =
        &[Class::Security, Class::Interoperability, Class::Strictness];

    /// `security`, `interoperability` or `strictness`.
    pub fn name(self) -> &'static str {
        match self {
            Class::Security => "security",
            Class::Interoperability => "interoperability",
            Class::Strictness => "strictness",
        }
    }
}

crate::harness::display_by_name!(Class);

/// One case of the corpus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Case {
    /// Stable ID, e.g. `invalid/layout/gap-between`.
    pub id: String,
    /// File path relative to the manifest's directory.
    pub path: String,
    /// The strict verdict.
    pub verdict: Verdict,
    /// Why the verdict (for implementation-defined cases: why either choice conforms).
    #[serde(default)]
    pub reason: Option<String>,
    /// SPEC rule IDs the case exercises.
    #[serde(default)]
    pub rules: Vec<String>,
    /// Rule IDs of the warnings the strict profile reports on it.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// For a rejected case: every rule a correct reader may name when it rejects the file
    /// (version 3; absent before, when only the first of `rules` is).
    #[serde(default)]
    pub acceptable_rules: Option<Vec<String>>,
    /// The fault is only visible to a scan of the data region; a header-only reader is
    /// expected to accept the file.
    #[serde(default)]
    pub deep: bool,
    /// The reference crate's verdict.
    #[serde(default)]
    pub reference: Option<ReferenceVerdict>,
    /// The portable profile's verdict where it differs from `verdict` (SPEC.md "Portable
    /// profile"): `reject` for a file strict accepts that a reader of the table misreads.
    #[serde(default)]
    pub portable: Option<Verdict>,
    /// One line about the case.
    #[serde(default)]
    pub description: String,
    /// Expected content, for cases a reader accepts.
    #[serde(default)]
    pub expected: Option<Expected>,
    /// What getting it wrong means (absent in version-1 manifests).
    #[serde(default)]
    pub class: Option<Class>,
    /// One file or a sharded set.
    #[serde(default)]
    pub kind: Kind,
}

/// The manifest versions this runner reads.
pub const MANIFEST_VERSIONS: &[&str] = &["1", "2", "3"];

impl Case {
    /// For a rejected case, the rules a reader may name: `acceptable_rules`, else the first of
    /// `rules`.
    pub fn acceptable(&self) -> Vec<&str> {
        match &self.acceptable_rules {
            Some(list) => list.iter().map(String::as_str).collect(),
            None => self.rules.first().map(String::as_str).into_iter().collect(),
        }
    }
}

/// The whole manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Format version, one of [`MANIFEST_VERSIONS`] (2 adds `class`, `kind`, `tensor_count`,
    /// `values`, `shard`; 3 adds `acceptable_rules`).
    pub version: String,
    /// The corpus release (`corpus/CHANGELOG.md`), from version 3 on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus_version: Option<String>,
    /// The cases.
    pub cases: Vec<Case>,
    /// Large cases (hundreds of MB), not in `corpus/`: generated on demand into a directory
    /// their paths are relative to (`stcorpus --large DIR`); run with `stconform --large DIR`.
    #[serde(default)]
    pub large: Vec<Case>,
}

/// Why a manifest could not be loaded.
#[derive(Debug)]
pub struct ManifestError {
    path: PathBuf,
    message: String,
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for ManifestError {}

impl Manifest {
    /// Parse a manifest, and check what the runner relies on: a version it knows
    /// ([`MANIFEST_VERSIONS`]), unique IDs, relative paths that stay inside the corpus.
    pub fn parse(text: &str) -> Result<Manifest, String> {
        let m: Manifest = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if !MANIFEST_VERSIONS.contains(&m.version.as_str()) {
            return Err(format!(
                "manifest version {:?} is not one this runner knows ({}): a newer corpus \
                 needs a newer runner",
                m.version,
                MANIFEST_VERSIONS.join(", ")
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for c in m.cases.iter().chain(&m.large) {
            if !seen.insert(c.id.as_str()) {
                return Err(format!("duplicate case id {:?}", c.id));
            }
            let p = Path::new(&c.path);
            if p.is_absolute()
                || p.components()
                    .any(|c| matches!(c, std::path::Component::ParentDir))
            {
                return Err(format!(
                    "case {:?}: path {:?} leaves the corpus",
                    c.id, c.path
                ));
            }
        }
        Ok(m)
    }

    /// Read and parse the manifest at `path`.
    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        let err = |message: String| ManifestError {
            path: path.to_owned(),
            message,
        };
        // Capped, and a regular file only (not a link to /dev/zero read until memory runs out).
        let bytes = crate::corpus::archive::read_capped(path, crate::corpus::archive::MAX_MANIFEST)
            .map_err(|e| err(e.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|e| err(e.to_string()))?;
        Manifest::parse(&text).map_err(err)
    }

    /// The case with this ID (a large one too).
    pub fn case(&self, id: &str) -> Option<&Case> {
        self.cases.iter().chain(&self.large).find(|c| c.id == id)
    }

    /// Move the large cases into the cases to run, their paths made relative to `dir`'s
    /// location (absolute when `dir` is).
    pub fn include_large(&mut self, dir: &Path) {
        for mut c in std::mem::take(&mut self.large) {
            c.path = dir.join(&c.path).to_string_lossy().into_owned();
            self.cases.push(c);
        }
    }
}
