//! `conformance/adapters.json`: the built-in adapters, so `stconform --adapter NAME` needs no
//! command line.
//!
//! In `command`, these variables are replaced:
//! - `${CONFORMANCE}`: the directory of the config file;
//! - `${ROOT}`: its parent (the repository root);
//! - `${BIN}`: the directory of the running `stconform` (the Rust adapters are built beside it);
//! - `${VENV}`: `${ROOT}/target/conformance-venv` (made by `setup-python.sh`);
//! - `${NODE_DIR}`: `${ROOT}/target/conformance-node` (made by `setup-node.sh`);
//! - `${TORCH_VENV}`: `${ROOT}/target/conformance-venv-torch` (made by
//!   `setup-fastsafetensors.sh`);
//! - `${TARGET}`: `${ROOT}/target` (where `run-all.sh` builds the adapters kept outside the
//!   workspace, such as candle's).
//!
//! `known_failures` is relative to the config file's directory.
//!
//! Each runner carries its checkout's file inside the program ([`Config::embedded`]): an
//! installed runner with no checkout lists its adapters and runs those that are programs
//! beside it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::runner::classify::Judge;

/// One built-in adapter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdapterConfig {
    /// Name, e.g. `python-safe-open`.
    pub name: String,
    /// What it runs, in a few words (shown in the matrix).
    #[serde(default)]
    pub description: String,
    /// Program and arguments, before variable substitution.
    pub command: Vec<String>,
    /// It scans the data region.
    #[serde(default)]
    pub deep: bool,
    /// It speaks protocol v2's persistent mode (its command includes whatever flag it needs).
    #[serde(default)]
    pub persistent: bool,
    /// It has an index mode: the sharded-set cases are run too.
    #[serde(default)]
    pub index: bool,
    /// It refuses with exit 65 only; exit 1 is a crash (`--dedicated-refusal`).
    #[serde(default)]
    pub dedicated_refusal: bool,
    /// What it is judged against.
    #[serde(default)]
    pub judge: Judge,
    /// Its known-failures file.
    #[serde(default)]
    pub known_failures: Option<String>,
    /// Run in CI (otherwise by the documented command only).
    #[serde(default)]
    pub ci: bool,
    /// The setup command it needs, for messages.
    #[serde(default)]
    pub setup: Option<String>,
}

/// The config file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    /// The adapters.
    pub adapters: Vec<AdapterConfig>,
    /// The directory of the file (set by [`Config::load`]).
    #[serde(skip)]
    pub dir: PathBuf,
    /// The copy built into the program (no checkout around it): only the adapters that are
    /// programs beside the runner (`${BIN}`) can run, and no known-failures file is read.
    #[serde(skip)]
    pub embedded: bool,
}

impl Config {
    /// Read a config file.
    pub fn load(path: &Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut c: Config =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let abs = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
        c.dir = abs.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(c)
    }

    /// The list built into a runner (`include_str!` of the checkout's file), for an installed
    /// runner with no checkout.
    pub fn embedded(text: &str) -> Result<Config, String> {
        let mut c: Config =
            serde_json::from_str(text).map_err(|e| format!("the built-in adapter list: {e}"))?;
        c.embedded = true;
        Ok(c)
    }

    /// Why an adapter of the built-in list cannot run here: it is a script of the checkout
    /// and the list is the runner's own copy.
    pub fn unavailable(&self, adapter: &AdapterConfig) -> Option<String> {
        const CHECKOUT: &[&str] = &[
            "${CONFORMANCE}",
            "${ROOT}",
            "${VENV}",
            "${NODE_DIR}",
            "${TORCH_VENV}",
            "${TARGET}",
        ];
        let needs = adapter
            .command
            .iter()
            .any(|w| CHECKOUT.iter().any(|v| w.contains(v)));
        (self.embedded && needs).then(|| {
            format!(
                "the built-in adapter {:?} runs files of the stcheck checkout ({}); run from \
                 the checkout, give --config FILE, or give its command after --",
                adapter.name,
                adapter.command.join(" ")
            )
        })
    }

    /// The adapter with this name.
    pub fn adapter(&self, name: &str) -> Option<&AdapterConfig> {
        self.adapters.iter().find(|a| a.name == name)
    }

    /// Replace the variables of one command word.
    pub fn expand(&self, word: &str, bin: &Path) -> String {
        let root = self.dir.parent().unwrap_or(&self.dir);
        word.replace("${CONFORMANCE}", &self.dir.to_string_lossy())
            .replace("${ROOT}", &root.to_string_lossy())
            .replace("${BIN}", &bin.to_string_lossy())
            .replace(
                "${VENV}",
                &root.join("target/conformance-venv").to_string_lossy(),
            )
            .replace(
                "${NODE_DIR}",
                &root.join("target/conformance-node").to_string_lossy(),
            )
            .replace(
                "${TORCH_VENV}",
                &root.join("target/conformance-venv-torch").to_string_lossy(),
            )
            .replace("${TARGET}", &root.join("target").to_string_lossy())
    }

    /// An adapter's command with the variables replaced.
    pub fn command(&self, adapter: &AdapterConfig, bin: &Path) -> Vec<String> {
        adapter
            .command
            .iter()
            .map(|w| self.expand(w, bin))
            .collect()
    }

    /// An adapter's known-failures file, resolved.
    /// None for the built-in copy: its known-failures files are in the checkout.
    pub fn known_failures(&self, adapter: &AdapterConfig) -> Option<PathBuf> {
        if self.embedded {
            return None;
        }
        adapter.known_failures.as_ref().map(|p| self.dir.join(p))
    }
}
