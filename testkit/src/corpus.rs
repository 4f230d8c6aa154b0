//! `corpus/manifest.json` as types: the cases of the conformance corpus, what each must give,
//! and the files themselves.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// The corpus directory of the repository.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus")
}

/// The manifest: committed cases and the large ones generated on demand.
#[derive(Debug, Deserialize)]
pub struct Manifest {
    pub version: String,
    pub corpus_version: String,
    pub cases: Vec<Case>,
    #[serde(default)]
    pub large: Vec<Case>,
}

/// One case of the manifest.
#[derive(Debug, Deserialize)]
pub struct Case {
    pub id: String,
    /// Relative to the corpus directory.
    pub path: String,
    /// `accept`, `reject` or `implementation-defined`.
    pub verdict: String,
    /// Why (absent where the verdict says it all).
    #[serde(default)]
    pub reason: String,
    /// The rules a strict reader raises (the first is the one it reports).
    pub rules: Vec<String>,
    pub warnings: Vec<String>,
    /// Whether the verdict needs the deep scan of the data.
    pub deep: bool,
    /// What the reference crate does: `accept` or `reject` (empty for a set).
    #[serde(default)]
    pub reference: String,
    pub class: String,
    /// `file` or `index` (a sharded set's index).
    pub kind: String,
    pub description: String,
    /// What an accepting reader must read (tensors, metadata), as the manifest writes it.
    #[serde(default)]
    pub expected: Value,
    /// The portable profile's verdict, where the case has one.
    #[serde(default)]
    pub portable: Option<String>,
    /// Other rules a reader may report instead of the first of `rules`.
    #[serde(default)]
    pub acceptable_rules: Vec<String>,
    /// For a large case: the recipe that generates it.
    #[serde(default)]
    pub generate: Option<String>,
}

impl Manifest {
    /// The repository's `corpus/manifest.json` (a test fails if it cannot be read).
    pub fn load() -> Manifest {
        Manifest::from_path(&root().join("manifest.json"))
    }

    /// A manifest at `path` (a test fails if it cannot be read).
    pub fn from_path(path: &Path) -> Manifest {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
    }

    /// The committed single-file cases (not sharded sets) with their bytes: (path, bytes).
    pub fn file_bytes(&self) -> Vec<(String, Vec<u8>)> {
        self.cases
            .iter()
            .filter(|c| c.kind == "file")
            .map(|c| (c.path.clone(), c.bytes()))
            .collect()
    }
}

impl Case {
    /// The case's file, read from the corpus directory (a committed case only).
    pub fn bytes(&self) -> Vec<u8> {
        let path = root().join(&self.path);
        std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
    }

    /// Whether a strict reader accepts or rejects it (neither for `implementation-defined`).
    pub fn is_decided(&self) -> bool {
        matches!(self.verdict.as_str(), "accept" | "reject")
    }
}
