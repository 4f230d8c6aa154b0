//! The corpus as a run hands it to an adapter: a private copy (a fresh 0700 directory of an
//! unpredictable name under the temporary directory), its files read-only, removed at the
//! end of the run. A reader that writes to the files it is given changes nothing another run
//! reads (nor the cache, nor the checkout); it is judged against the manifest, in memory.
//!
//! Read-only modes stop an adapter that writes by mistake, not one running as root or one
//! that changes them back: the copy, not the modes, is what keeps other runs safe.

use std::path::{Path, PathBuf};

use crate::corpus::archive;
use crate::runner::manifest::Kind;
use crate::runner::Manifest;

/// A read-only copy of a corpus's case directories.
#[derive(Debug)]
pub struct CaseCopy {
    dir: tempfile::TempDir,
}

impl CaseCopy {
    /// Copy the files of the manifest's cases (an index case: its directory, whole) from
    /// `corpus`, the manifest's directory. Cases with an absolute path (the large ones, from
    /// their own directory) are not copied; a missing file is left for the run to report.
    pub fn of(corpus: &Path, manifest: &Manifest) -> Result<CaseCopy, String> {
        let dir = tempfile::Builder::new()
            .prefix("stconform-cases-")
            .tempdir()
            .map_err(|e| format!("a private directory for the run's copy of the corpus: {e}"))?;
        let items: Vec<String> = manifest
            .cases
            .iter()
            .filter(|c| !Path::new(&c.path).is_absolute())
            .filter(|c| corpus.join(&c.path).exists())
            .map(|c| match c.kind {
                Kind::Index => Path::new(&c.path)
                    .parent()
                    .map_or(c.path.clone(), |p| p.to_string_lossy().into_owned()),
                _ => c.path.clone(),
            })
            .collect();
        archive::copy_read_only(corpus, dir.path(), &items)?;
        Ok(CaseCopy { dir })
    }

    /// Its root: case paths of the manifest are relative to it.
    pub fn root(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}

impl Drop for CaseCopy {
    fn drop(&mut self) {
        // Its directories are read-only; the `TempDir` removes the tree after this.
        archive::make_writable(self.dir.path());
    }
}
