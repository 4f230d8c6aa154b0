//! Results files: reading one, writing one.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Read the results file at `path`; `what` names the kind of file in the error.
pub fn load<T: DeserializeOwned>(path: &str, what: &str) -> Result<T, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("{path}: not a {what}: {e}"))
}

/// Write `value` as pretty JSON with a final newline, creating the directory.
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<(), String> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    text.push('\n');
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Read every results file of a `matrix` command (at least one).
pub fn load_all<T: DeserializeOwned>(paths: &[String], what: &str) -> Result<Vec<T>, String> {
    if paths.is_empty() {
        return Err("matrix needs at least one results file".to_owned());
    }
    paths.iter().map(|p| load(p, what)).collect()
}
