//! The native half of the `stcheck` Python package (`stcheck._native`).
//!
//! It is a thin layer over the library: every file is opened with
//! [`stcheck::fs::open_regular`] (never blocking on a FIFO or device) and checked by
//! [`stcheck::check_file`], bytes by [`stcheck::Checker::check_slice`], sharded sets by
//! [`stcheck::index::check_index_with`]; each result is written as the record `stcheck --json`
//! writes for it ([`stcheck::wire`]), so the Python objects and the CLI share one schema. No
//! rule is checked here. The GIL is released for all of it (opening, reading, checking and
//! writing the record), so Python threads check files in parallel.
//!
//! Every function returns `(type, json, errno)`: the record's type (`"file"`, `"index"` or
//! `"not_checked"`, the `type` of the CLI's JSON Lines), the record's `data` as JSON text, and
//! the OS error number of a file that could not be read. Whether to raise is decided in
//! Python (`py_src/stcheck/_check.py`).
//!
//! The loader ([`open_checked`], [`open_index_checked`]) also hands over the open file
//! descriptor of each file it found valid: Python maps that descriptor with its `mmap` module,
//! so the bytes it turns into arrays are the file that was checked (same open file, same
//! inode), and no `unsafe` is needed here.

use std::cell::RefCell;
use std::fs::File;
use std::io::Read as _;
use std::os::fd::IntoRawFd as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde::Serialize;

use stcheck::index::{self, FsSource, ShardOutcome, ShardSource};
use stcheck::wire::{
    self, FileRecord, IndexTail, MissingShardRecord, NotCheckedRecord, Profile, Status,
    UnreadableRecord,
};
use stcheck::{Checked, Config, ReadError, ReadMode, Rule};

/// The options of one call, as the Python side fills them (every key present).
#[derive(Debug, FromPyObject)]
#[pyo3(from_item_all)]
struct Opts {
    profile: String,
    deep: bool,
    sha256: bool,
    deny_warnings: bool,
    deny_nonfinite: bool,
    deny: Vec<String>,
    allow: Vec<String>,
    max_header_size: Option<u64>,
    max_warnings_per_rule: Option<usize>,
    compare_reference: bool,
    mode: String,
    threads: usize,
    verbose: bool,
    follow_links: bool,
}

/// The options turned into the library's: the one [`Config`], and how records are written.
#[derive(Debug)]
struct Settings {
    config: Config,
    profile: Profile,
    mode: ReadMode,
    verbose: bool,
    follow_links: bool,
}

impl Settings {
    /// The record options for bytes read as `mode` (`None`: handed over in memory).
    fn wire(&self, mode: Option<ReadMode>) -> wire::Options {
        wire::Options::new(mode)
            .profile(self.profile)
            .verbose(self.verbose)
    }
}

fn rules(ids: &[String], what: &str) -> PyResult<Vec<Rule>> {
    ids.iter()
        .map(|id| {
            Rule::from_id(id)
                .ok_or_else(|| PyValueError::new_err(format!("{what}: unknown rule ID {id:?}")))
        })
        .collect()
}

/// The options as the CLI's `args.rs` turns its flags into them: `sha256` and
/// `deny_nonfinite` imply the deep scan, the reference crate runs for the reference profile
/// or a comparison, and the deep scan needs the strict profile.
fn settings(o: Opts) -> PyResult<Settings> {
    let profile = match o.profile.as_str() {
        "strict" => Profile::Strict,
        "reference" => Profile::Reference,
        other => {
            return Err(PyValueError::new_err(format!(
                "profile: {other:?} is not \"strict\" or \"reference\""
            )))
        }
    };
    let mode = match o.mode.as_str() {
        "mmap" => ReadMode::Mmap,
        "read" => ReadMode::Read,
        "stream" => ReadMode::Stream,
        other => {
            return Err(PyValueError::new_err(format!(
                "mode: {other:?} is not \"mmap\", \"read\" or \"stream\""
            )))
        }
    };
    let mut config = Config::default()
        .deep(o.deep || o.sha256 || o.deny_nonfinite)
        .sha256(o.sha256)
        .deny_nonfinite(o.deny_nonfinite)
        .deny_warnings(o.deny_warnings)
        .threads(o.threads)
        .reference(o.compare_reference || profile == Profile::Reference);
    if let Some(n) = o.max_header_size {
        config = config.max_header_size(n);
    }
    if let Some(n) = o.max_warnings_per_rule {
        if n == 0 {
            return Err(PyValueError::new_err(
                "max_warnings_per_rule must be a positive integer",
            ));
        }
        config = config.max_warnings_per_rule(n);
    }
    config.deny = rules(&o.deny, "deny")?;
    config.allow = rules(&o.allow, "allow")?;
    if config.reads_data() && profile == Profile::Reference {
        return Err(PyValueError::new_err(
            "deep, sha256 and deny_nonfinite need the strict profile",
        ));
    }
    Ok(Settings {
        config,
        profile,
        mode,
        verbose: o.verbose,
        follow_links: o.follow_links,
    })
}

/// A record: its type, its `data` as JSON, and the OS error number of a read that failed.
type Outcome = (&'static str, String, Option<i32>);

/// `value` as one line of the CLI's line-safe JSON.
fn json<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::new();
    // Writing to memory cannot fail, and the records serialize without error; a failure
    // would still give a JSON value rather than a panic.
    if wire::write_json(&mut out, value).is_err() {
        return "null".to_owned();
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The OS error number behind a read error, where there is one.
fn errno(e: &ReadError) -> Option<i32> {
    std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .and_then(std::io::Error::raw_os_error)
}

/// The record of a path that could not be checked, as the CLI writes it: `not_checked` when
/// the file-system policy refused it (a special file, a link, a loop), else a `file` record
/// with `status: "io_error"`.
fn unreadable(shown: &str, e: &ReadError) -> Outcome {
    if e.is_policy() {
        ("not_checked", json(&NotCheckedRecord::new(shown, e)), None)
    } else {
        ("file", json(&UnreadableRecord::new(shown, e)), errno(e))
    }
}

/// Open `path` as a regular file, without blocking on a special file.
fn open(path: &Path) -> Result<stcheck::fs::RegularFile, ReadError> {
    stcheck::fs::open_regular(path).map_err(|e| ReadError::from(e).with_path(path))
}

/// A checked file's record, and whether it is valid under the profile.
fn file_record(
    shown: &str,
    c: &Checked<'_>,
    s: &Settings,
    mode: Option<ReadMode>,
) -> (String, bool) {
    let record = FileRecord::new(shown, c, s.wire(mode));
    (json(&record), record.status() == Status::Valid)
}

/// Where the loader finds a checked file: its open descriptor, identity and length.
type Handle = (i32, u64, u64, u64);

/// A record, and what the loader takes over: an [`Outcome`] with the open files.
type Opened<T> = (&'static str, String, Option<i32>, T);

fn handle(file: File) -> Result<Handle, ReadError> {
    let meta = file.metadata()?;
    Ok((file.into_raw_fd(), meta.dev(), meta.ino(), meta.len()))
}

/// Check the file at `path`; with `keep`, also hand over the open file if it is valid.
fn check_file_at(path: &Path, s: &Settings, keep: bool) -> (Outcome, Option<Handle>) {
    let shown = stcheck::fs::display_path(path);
    let checked = open(path).and_then(|f| {
        let (file, _) = f.into_parts();
        let (record, valid) = stcheck::check_file(&file, &s.config, s.mode, |c| {
            file_record(&shown, &c, s, Some(s.mode))
        })?;
        let kept = match keep && valid {
            true => Some(handle(file)?),
            false => None,
        };
        Ok((record, kept))
    });
    match checked {
        Ok((record, kept)) => (("file", record, None), kept),
        Err(e) => (unreadable(&shown, &e), None),
    }
}

/// Check one file by path: the record `stcheck --json` writes for it.
#[pyfunction]
fn check_path(py: Python<'_>, path: PathBuf, opts: Opts) -> PyResult<Outcome> {
    let s = settings(opts)?;
    Ok(py.detach(|| check_file_at(&path, &s, false).0))
}

/// Check a whole file held in memory (`bytes`): a `file` record whose `mode` is null.
#[pyfunction]
fn check_bytes(
    py: Python<'_>,
    data: &Bound<'_, PyBytes>,
    path: &str,
    opts: Opts,
) -> PyResult<Outcome> {
    let s = settings(opts)?;
    let bytes: &[u8] = data.as_bytes();
    Ok(py.detach(|| {
        let c = stcheck::Checker::check_slice(&s.config, bytes);
        ("file", file_record(path, &c, &s, None).0, None)
    }))
}

/// Check one file and, if it is valid, hand over its open descriptor (see the module
/// documentation): `(type, json, errno, (fd, dev, ino, len) or None)`. The caller owns the
/// descriptor and must close it.
#[pyfunction]
fn open_checked(py: Python<'_>, path: PathBuf, opts: Opts) -> PyResult<Opened<Option<Handle>>> {
    let s = settings(opts)?;
    let ((kind, record, errno), kept) = py.detach(|| check_file_at(&path, &s, true));
    Ok((kind, record, errno, kept))
}

/// The shards of an index, opened under the link policy and checked like the CLI's
/// [`FsSource`]; with `keep`, each shard's open file is kept after its check, so the loader
/// maps the very files that were checked.
#[derive(Debug)]
struct Shards {
    inner: FsSource,
    mode: ReadMode,
    keep: bool,
    kept: RefCell<Vec<(String, File)>>,
}

impl ShardSource for Shards {
    fn list(&self) -> Result<Vec<String>, ReadError> {
        self.inner.list()
    }

    fn check(
        &self,
        name: &str,
        config: &Config,
        f: &mut dyn FnMut(Checked<'_>),
    ) -> Result<(), ReadError> {
        let file = self.inner.open(name)?;
        stcheck::check_file(&file, config, self.mode, f)?;
        if self.keep {
            self.kept.borrow_mut().push((name.to_owned(), file));
        }
        Ok(())
    }
}

/// Read an index file: at most one byte past the header limit (a longer one is rejected
/// without reading it), as the CLI does.
fn read_index(path: &Path, config: &Config) -> Result<Vec<u8>, ReadError> {
    let (file, _) = open(path)?.into_parts();
    let mut bytes = Vec::new();
    file.take(config.header_limit().saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::from(e).with_path(path))?;
    Ok(bytes)
}

/// Check a sharded set: the `index` record `stcheck --json` writes for it (the shards' records
/// inside), and with `keep` the kept shards of a valid set.
fn check_index_at(path: &Path, s: &Settings, keep: bool) -> (Outcome, Vec<(String, File)>) {
    let shown = stcheck::fs::display_path(path);
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => format!("{}/", stcheck::fs::display_path(p)),
        _ => String::new(),
    };
    let source = Shards {
        inner: FsSource::for_index(path)
            .allow_outside_links(s.follow_links)
            .read_mode(s.mode),
        mode: s.mode,
        keep,
        kept: RefCell::new(Vec::new()),
    };
    let mut shards: Vec<String> = Vec::new();
    let result = read_index(path, &s.config).and_then(|bytes| {
        index::check_index_with(&bytes, &source, &s.config, &mut |name, outcome| {
            shards.push(shard_record(&dir, name, outcome, s, false));
        })
    });
    match result {
        Ok(report) => {
            let record = index_record(&shown, &shards, Ok(IndexTail::new(&report)));
            let kept = match report.is_valid() {
                true => source.kept.into_inner(),
                false => Vec::new(),
            };
            (record, kept)
        }
        Err(e) => (index_record(&shown, &shards, Err(&e)), Vec::new()),
    }
}

/// A shard's record inside an index record, the shard shown under `dir`; `remote` when it
/// was fetched over HTTP(S).
fn shard_record(
    dir: &str,
    name: &str,
    outcome: ShardOutcome<'_, '_>,
    s: &Settings,
    remote: bool,
) -> String {
    let path = format!("{dir}{}", stcheck::escape(name));
    match outcome {
        ShardOutcome::Checked(c) => {
            let opts = match remote {
                true => s.wire(None).remote(),
                false => s.wire(Some(s.mode)),
            };
            json(&FileRecord::shard(name, &path, c, opts))
        }
        ShardOutcome::NotChecked(f) => json(&MissingShardRecord::new(name, &path, f)),
    }
}

/// An `index` record as the CLI writes it: the path, the shards' records, then the set's
/// verdict (or why the set could not be checked).
fn index_record(
    shown: &str,
    shards: &[String],
    tail: Result<IndexTail<'_>, &ReadError>,
) -> Outcome {
    let head = format!(
        "{{\"path\":{},\"shards\":[{}],",
        json(shown),
        shards.join(",")
    );
    match tail {
        Ok(tail) => {
            let tail = json(&tail);
            (
                "index",
                format!("{head}{}", tail.get(1..).unwrap_or("}")),
                None,
            )
        }
        Err(e) => {
            let record = format!(
                "{head}\"status\":\"io_error\",\"io_error\":{},\"read_error\":{}}}",
                json(&e.to_string()),
                json(e.kind().as_str())
            );
            ("index", record, errno(e))
        }
    }
}

/// Check a sharded set by its `*.safetensors.index.json`: the `index` record.
#[pyfunction]
fn check_index(py: Python<'_>, path: PathBuf, opts: Opts) -> PyResult<Outcome> {
    let s = settings(opts)?;
    Ok(py.detach(|| check_index_at(&path, &s, false).0))
}

/// Check a sharded set and, if it is valid, hand over every shard's open descriptor:
/// `(type, json, errno, [(name, (fd, dev, ino, len))])`. The caller owns the descriptors.
#[pyfunction]
fn open_index_checked(
    py: Python<'_>,
    path: PathBuf,
    opts: Opts,
) -> PyResult<Opened<Vec<(String, Handle)>>> {
    let s = settings(opts)?;
    let result = py.detach(|| {
        let ((kind, record, errno), kept) = check_index_at(&path, &s, true);
        // Every descriptor's identity first, so none is handed over when one fails.
        let mut files = Vec::with_capacity(kept.len());
        for (name, file) in kept {
            match file.metadata() {
                Ok(meta) => files.push((name, file, meta)),
                Err(e) => {
                    let shown = stcheck::fs::display_path(&path);
                    return (unreadable(&shown, &ReadError::from(e)), Vec::new());
                }
            }
        }
        let handles = files
            .into_iter()
            .map(|(name, file, meta)| {
                (
                    name,
                    (file.into_raw_fd(), meta.dev(), meta.ino(), meta.len()),
                )
            })
            .collect();
        ((kind, record, errno), handles)
    });
    let ((kind, record, errno), handles) = result;
    Ok((kind, record, errno, handles))
}

/// Check many paths in one call (one release of the GIL): each as [`check_path`] does, or as
/// [`check_index`] for a `*.safetensors.index.json` name, in order. The map step of a scan.
#[pyfunction]
fn check_paths(py: Python<'_>, paths: Vec<PathBuf>, opts: Opts) -> PyResult<Vec<Outcome>> {
    let s = settings(opts)?;
    Ok(py.detach(|| {
        paths
            .iter()
            .map(|path| {
                let is_index = path.file_name().and_then(stcheck::fs::checkpoint_kind)
                    == Some(stcheck::fs::Checkpoint::Index);
                match is_index {
                    true => check_index_at(path, &s, false).0,
                    false => check_file_at(path, &s, false).0,
                }
            })
            .collect()
    }))
}

/// Files and sharded sets by URL, through the library's remote source (`stcheck::remote`),
/// with the records the CLI writes for them.
#[cfg(feature = "remote")]
mod remote {
    use std::sync::OnceLock;

    use stcheck::remote::{Depth, Found, Remote, RemoteOptions};
    use stcheck::wire::{FileRecord, IndexTail, RemoteCost, UnreadableRecord};
    use stcheck::{ReadError, ReadErrorKind};

    use super::{index_record, json, shard_record, Outcome, Settings};

    /// The client of the process, made once from `HF_TOKEN` and `HF_ENDPOINT`, as the CLI's.
    static CLIENT: OnceLock<Result<Remote, String>> = OnceLock::new();

    fn unreadable(shown: &str, message: String) -> Outcome {
        let e = ReadError::new(ReadErrorKind::Io, message);
        ("file", json(&UnreadableRecord::new(shown, &e)), None)
    }

    /// Check one address: header-level with range requests, or the body streamed once when
    /// the options read the data. An address whose path ends in `.safetensors.index.json` is
    /// a sharded set.
    pub(super) fn check(url: &str, s: &Settings) -> Outcome {
        let shown = stcheck::target::shown_url(url);
        let client = CLIENT
            .get_or_init(|| Remote::new(RemoteOptions::from_env()).map_err(|e| e.to_string()));
        let client = match client {
            Ok(c) => c,
            Err(e) => return unreadable(&shown, e.clone()),
        };
        let depth = match s.config.reads_data() {
            true => Depth::Deep {
                sha256: s.config.sha256,
            },
            false => Depth::Header,
        };
        let is_index = url
            .split(['?', '#'])
            .next()
            .is_some_and(|p| p.ends_with(stcheck::index::INDEX_SUFFIX));
        let dir = match shown.rfind('/') {
            Some(k) => shown[..=k].to_owned(),
            None => String::new(),
        };
        let mut shards: Vec<String> = Vec::new();
        let checked = client.check_with(url, &s.config, depth, &mut |name, outcome| {
            shards.push(shard_record(&dir, name, outcome, s, true));
        });
        let c = &checked.cost;
        let cost = RemoteCost::new(c.requests, c.bytes, c.redirects, c.retries);
        let resolved = checked.resolved.as_deref().unwrap_or(&shown);
        match (&checked.outcome, is_index) {
            (Ok(Found::Index(ic)), _) => index_record(
                &shown,
                &shards,
                Ok(IndexTail::new(&ic.report).with_remote(resolved, cost)),
            ),
            (Ok(Found::File(f)), false) => {
                let record = FileRecord::new(&shown, &f.checked, s.wire(None).remote())
                    .with_remote(resolved, cost);
                ("file", json(&record), None)
            }
            (Ok(Found::File(_)), true) => {
                let e = ReadError::new(ReadErrorKind::Io, "the address held no index");
                index_record(&shown, &shards, Err(&e))
            }
            (Err(e), true) => {
                let e = ReadError::new(ReadErrorKind::Io, e.to_string());
                index_record(&shown, &shards, Err(&e))
            }
            (Err(e), false) => unreadable(&shown, e.to_string()),
        }
    }
}

/// Check a file or a sharded set by URL (`http://`, `https://`, `hf://`): the record
/// `stcheck --json URL` writes. Credentials come from `HF_TOKEN`, the hub from `HF_ENDPOINT`.
#[cfg(feature = "remote")]
#[pyfunction]
fn check_url(py: Python<'_>, url: String, opts: Opts) -> PyResult<Outcome> {
    let s = settings(opts)?;
    Ok(py.detach(|| remote::check(&url, &s)))
}

/// Whether `arg` names an address the remote source takes, as the CLI decides it.
#[cfg(feature = "remote")]
#[pyfunction]
fn is_url(arg: &str) -> bool {
    stcheck::remote::is_url(arg)
}

/// Every rule of SPEC.md: `(id, kind, severity)`.
#[pyfunction]
fn rules_table() -> Vec<(&'static str, &'static str, &'static str)> {
    Rule::ALL
        .iter()
        .map(|r| (r.id(), r.kind().as_str(), r.severity().as_str()))
        .collect()
}

/// The native half of the `stcheck` package: see `stcheck` for the API.
#[pymodule]
mod _native {
    #[pymodule_export]
    use super::{
        check_bytes, check_index, check_path, check_paths, open_checked, open_index_checked,
        rules_table,
    };

    #[cfg(feature = "remote")]
    #[pymodule_export]
    use super::{check_url, is_url};

    #[pymodule_init]
    fn init(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
        use pyo3::types::PyModuleMethods as _;
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        m.add("remote", cfg!(feature = "remote"))?;
        Ok(())
    }
}
