//! Where the runners find their files when no option names them.

use std::path::{Path, PathBuf};

/// The repository the runner was built from (its files are used when the current directory
/// has none).
pub fn repo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// `rel` under the current directory if it exists there, else the repository's.
pub fn local_or_repo(rel: &str) -> PathBuf {
    let local = PathBuf::from(rel);
    if local.exists() {
        local
    } else {
        repo_dir().join(rel)
    }
}

/// The directory of the running program (the Rust adapters are built beside it).
pub fn bin_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default()
}
