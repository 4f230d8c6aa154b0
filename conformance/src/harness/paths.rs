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

/// The directory where release archives are unpacked: `$XDG_CACHE_HOME/stconform`, else
/// `~/.cache/stconform`, else the temporary directory's.
fn cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("stconform")
}

/// A corpus named by the user: a release archive (unpacked and checked), a release directory
/// (checked), or a plain `corpus/` directory.
pub fn open_corpus(path: &Path, from: &'static str) -> Result<Corpus, String> {
    use crate::corpus::archive;
    if path.is_file() {
        let (root, r) = archive::unpack(path, &cache_dir())?;
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
    let repo = repo_dir().join("corpus");
    if repo.join("manifest.json").is_file() {
        return open_corpus(&repo, "repository");
    }
    Err(format!(
        "no corpus found: give --corpus DIR|FILE.tar.gz or set {CORPUS_ENV} (a release \
         archive is made by `stcorpus pack`; the wheel bundles one)"
    ))
}
