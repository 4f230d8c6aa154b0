//! Where the runners find their files when no option names them.

use std::path::{Path, PathBuf};

/// The checkout the runner was built from (its files are used when the current directory
/// has none), for a runner run from its build: none for an installed runner (one with a
/// bundled corpus beside it, as the wheel installs it), which owns no path of the build
/// machine, nor when the checkout is gone.
pub fn repo_dir() -> Option<PathBuf> {
    if installed() {
        return None;
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .filter(|p| p.is_dir())
        .map(Path::to_path_buf)
}

/// The runner is an installed one: its bundled corpus is beside it.
pub fn installed() -> bool {
    bin_dir().join(BUNDLED_CORPUS).is_file()
}

/// `rel` under the current directory if it exists there, else the checkout's (see
/// [`repo_dir`]), else `rel` itself (missing).
pub fn local_or_repo(rel: &str) -> PathBuf {
    let local = PathBuf::from(rel);
    if local.exists() {
        return local;
    }
    repo_dir().map_or(local, |r| r.join(rel))
}

/// The directory of the running program (the Rust adapters are built beside it).
pub fn bin_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default()
}

/// The environment variable that names the corpus (a directory or a release archive) when
/// no option does.
pub const CORPUS_ENV: &str = "STCONFORM_CORPUS";

/// Where an installed runner's bundled corpus is, relative to the directory of its program:
/// a wheel installs the programs into `PREFIX/bin` and the corpus release archive into
/// `PREFIX/share/stcheck-conformance/` (an archive, not a directory: a wheel cannot hold the
/// symbolic link that `INDEX-SHARD-LINK`'s case is made of; the archive is unpacked into the
/// cache and checked on first use).
pub const BUNDLED_CORPUS: &str = "../share/stcheck-conformance/stcheck-corpus.tar.gz";

/// Where the corpus was found, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corpus {
    /// Its root (`manifest.json`, `writers/`).
    pub root: PathBuf,
    /// How it was found: `--corpus`, `STCONFORM_CORPUS`, `./corpus`, `bundled`, `repository`.
    pub from: &'static str,
    /// The release version, when it is a release (it has a `RELEASE.json`, checked).
    pub release: Option<String>,
}

/// The runners' own directory under the platform's user cache directory:
/// `$XDG_CACHE_HOME/stcheck`, else `~/Library/Caches/stcheck` on macOS and `~/.cache/stcheck`
/// elsewhere. Created private (mode 0700) when missing. Nothing of the build machine: an
/// installed runner keeps its unpacked corpus and its work files here. There is no fallback
/// to a shared temporary directory (another user could plant files there).
pub fn cache_dir() -> Result<PathBuf, String> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => {
            let home = std::env::var_os("HOME").filter(|v| !v.is_empty()).ok_or(
                "no cache directory: neither XDG_CACHE_HOME nor HOME is set (set one, or give \
                 --work and --corpus DIR)",
            )?;
            if cfg!(target_os = "macos") {
                Path::new(&home).join("Library/Caches")
            } else {
                Path::new(&home).join(".cache")
            }
        }
    };
    let dir = base.join("stcheck");
    private_dir(&dir)?;
    Ok(dir)
}

/// Create `dir` (and its parents) if missing; a directory it creates is mode 0700.
pub fn private_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))
}

/// Where release archives are unpacked: `corpus/` of [`cache_dir`].
fn corpus_cache() -> Result<PathBuf, String> {
    let dir = cache_dir()?.join("corpus");
    private_dir(&dir)?;
    Ok(dir)
}

/// A corpus named by the user: a release archive (unpacked and checked), a release directory
/// (checked), or a plain `corpus/` directory.
pub fn open_corpus(path: &Path, from: &'static str) -> Result<Corpus, String> {
    use crate::corpus::archive;
    if path.is_file() {
        let (root, r) = archive::unpack(path, &corpus_cache()?)?;
        return Ok(Corpus {
            root,
            from,
            release: Some(r.corpus_version),
        });
    }
    if !path.join("manifest.json").is_file() {
        return Err(format!(
            "{}: not a corpus (no manifest.json) nor a release archive",
            path.display()
        ));
    }
    let release = if path.join(archive::RELEASE_FILE).is_file() {
        Some(archive::verify(path)?.corpus_version)
    } else {
        None
    };
    Ok(Corpus {
        root: path.to_path_buf(),
        from,
        release,
    })
}

/// The corpus of a run: `--corpus`, else `$STCONFORM_CORPUS`, else `corpus/` under the
/// current directory, else the copy bundled with an installed runner, else the repository's.
pub fn find_corpus(arg: Option<&Path>) -> Result<Corpus, String> {
    if let Some(p) = arg {
        return open_corpus(p, "--corpus");
    }
    if let Some(p) = std::env::var_os(CORPUS_ENV).filter(|v| !v.is_empty()) {
        return open_corpus(Path::new(&p), CORPUS_ENV)
            .map_err(|e| format!("{e} (from {CORPUS_ENV})"));
    }
    let local = Path::new("corpus");
    if local.join("manifest.json").is_file() {
        return open_corpus(local, "./corpus");
    }
    let bundled = bin_dir().join(BUNDLED_CORPUS);
    if bundled.is_file() {
        return open_corpus(&bundled, "bundled");
    }
    if let Some(repo) = repo_dir().map(|r| r.join("corpus")) {
        if repo.join("manifest.json").is_file() {
            return open_corpus(&repo, "repository");
        }
    }
    Err(format!(
        "no corpus found: give --corpus DIR|FILE.tar.gz or set {CORPUS_ENV} (a release \
         archive is made by `stcorpus pack`; the wheel bundles one)"
    ))
}
