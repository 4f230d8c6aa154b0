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
//! The loader ([`open_checked`], [`open_index_checked`]) hands over what it keeps of each file
//! it found valid, in one of two forms. By default, the whole file *read* into a new
//! `bytearray` with ordinary reads (`pread`), and checked there: the length field and header
//! are read and checked first (an invalid file is never read further), then the rest is read
//! into the same buffer and, when the options read the data, the deep rules run over that very
//! buffer. The arrays Python builds from it hold exactly the bytes that were checked, and
//! nothing done to the file afterwards reaches them. Otherwise, a [`CheckedFile`]: the open
//! file that was checked (the same inode, whatever happens to the path), from which Python
//! reads each tensor (`CheckedFile::read`, a short read being a file that changed) or which it
//! maps with its `mmap` module when asked for zero-copy. No `unsafe` is needed here: the
//! buffers are Python objects PyO3 allocates, filled without the GIL.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Read as _};
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::{FileExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};

use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};
use serde::Serialize;

use stcheck::index::{self, FsSource, ShardOutcome, ShardSource};
use stcheck::wire::{
    self, FileRecord, IndexTail, MissingShardRecord, NotCheckedRecord, Profile, Status,
    UnreadableRecord,
};
use stcheck::{Checked, Checker, Config, Need, ReadError, ReadErrorKind, ReadMode, Rule};

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

/// A record, and what the loader takes over: an [`Outcome`] with what it keeps.
type Opened<T> = (&'static str, String, Option<i32>, T);

/// A shard's name, and what the loader keeps of it (a `bytearray` or a [`CheckedFile`]).
type Named = (String, Py<PyAny>);

/// What the loader keeps of a file it found valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// Nothing: a check only.
    Nothing,
    /// The open file that was checked (a [`CheckedFile`]), checked with ordinary reads.
    Open,
    /// The whole file read into a buffer, and checked there ([`read_checked`]).
    Read,
}

/// What the loader takes over of a valid file.
#[derive(Debug)]
enum Kept {
    Open(CheckedFile),
    Read(Py<PyByteArray>),
}

impl Kept {
    fn into_py(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self {
            Kept::Open(file) => Ok(Py::new(py, file)?.into_any()),
            Kept::Read(buffer) => Ok(buffer.into_any()),
        }
    }
}

pyo3::create_exception!(
    _native,
    ReadFailed,
    PyException,
    "A read of a checked file failed: args are (type, json, errno), the record of it."
);

/// A file the loader found valid, kept open: its tensors are read from this open file (the
/// inode that was checked, whatever happens to the path since), or Python maps it. Closed
/// when the object is dropped.
#[pyclass(module = "stcheck._native", frozen)]
#[derive(Debug)]
struct CheckedFile {
    file: File,
    /// The path as records show it.
    shown: String,
}

#[pymethods]
impl CheckedFile {
    /// The open descriptor, to map it (Python's `mmap` takes its own duplicate). This object
    /// owns it: do not close it.
    fn fileno(&self) -> i32 {
        self.file.as_raw_fd()
    }

    /// `length` bytes at `offset`, read into a new `bytearray` with `pread` (without the GIL).
    /// A file that ends before them changed since it was checked (it got shorter):
    /// `ReadFailed`, whose args are the record of that.
    fn read<'py>(
        &self,
        py: Python<'py>,
        offset: u64,
        length: usize,
    ) -> PyResult<Bound<'py, PyByteArray>> {
        PyByteArray::new_with(py, length, |buf| {
            py.detach(|| read_exact_at(&self.file, buf, offset))
                .map_err(|e| ReadFailed::new_err(unreadable(&self.shown, &e)))
        })
    }
}

/// "The file changed while it was read", as the library says it.
fn changed() -> ReadError {
    ReadError::new(ReadErrorKind::Changed, "the file changed while it was read")
}

/// What tells that an open file changed between two moments, as the library's read mode
/// compares them: its size, its modification and status-change times (a write, a truncation
/// and a rewrite in place all set them), and which file it is.
type Stamp = (u64, i64, i64, i64, i64, u64, u64);

fn stamp(file: &File) -> Result<Stamp, ReadError> {
    let m = file.metadata()?;
    Ok((
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
        m.ino(),
        m.dev(),
    ))
}

/// Read at `offset` until `buf` is full or the file ends: the bytes read.
fn read_full_at(file: &File, buf: &mut [u8], offset: u64) -> Result<usize, ReadError> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], offset.saturating_add(got as u64)) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(got)
}

/// Fill `buf` from `offset`: a file that ends first changed (got shorter) while it was read.
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> Result<(), ReadError> {
    match read_full_at(file, buf, offset)? == buf.len() {
        true => Ok(()),
        false => Err(changed()),
    }
}

/// The most bytes [`read_head`] reads at a time.
const HEAD_STEP: usize = 16 << 20;

/// Feed `checker` (a header-only check of a file `len` bytes long) the start of `file` as far
/// as it wants it: the length field and the header, or the first bytes of a file that is not
/// safetensors; the bytes read. Bounded by the header limit, as the checker wants no more.
fn read_head(file: &File, checker: &mut Checker<'_>, len: u64) -> Result<Vec<u8>, ReadError> {
    let mut head = Vec::new();
    while let Some(want) = checker.wanted() {
        let start = head.len();
        let step = usize::try_from(want).unwrap_or(usize::MAX).min(HEAD_STEP);
        head.resize(start + step, 0);
        let k = read_full_at(file, &mut head[start..], start as u64)?;
        head.truncate(start + k);
        if k == 0 {
            if (start as u64) < len {
                return Err(changed());
            }
            break;
        }
        if checker.feed(&head[start..]) == Need::Done {
            break;
        }
    }
    Ok(head)
}

/// Read `file` into a new `bytearray` and check exactly the bytes read. The length field and
/// the header come first, checked as a header-only check would (a file they reject is read
/// no further, and its verdict is that check's); then the rest of the file is read into the
/// same buffer, after the header bytes already read, and when `config` reads the data
/// (`deep`, `sha256`, `deny_nonfinite`) the whole check runs again over that very buffer. `f`
/// gets the verdict; the buffer comes with it when the header was valid. A file that changes
/// meanwhile (it shrinks or grows, or its times or identity differ after the reads) is a
/// [`ReadErrorKind::Changed`] error, never a verdict. Runs without the GIL, and takes it only
/// to allocate the buffer.
fn read_checked<T>(
    file: &File,
    config: &Config,
    f: impl FnOnce(Checked<'_>) -> T,
) -> Result<(T, Option<Py<PyByteArray>>), ReadError> {
    let before = stamp(file)?;
    let len = before.0;
    let header_only = config
        .clone()
        .deep(false)
        .sha256(false)
        .deny_nonfinite(false);
    let mut checker = Checker::new(&header_only).with_len(len);
    let head = read_head(file, &mut checker, len)?;
    let first = checker.finish();
    if stamp(file)? != before {
        return Err(changed());
    }
    if !first.is_valid() {
        return Ok((f(first), None));
    }
    let too_large = || {
        ReadError::new(
            ReadErrorKind::TooLarge,
            format!("the file ({len} bytes) does not fit in memory"),
        )
    };
    let size = usize::try_from(len).map_err(|_| too_large())?;
    let (buffer, checked) = Python::attach(|py| {
        let mut outcome = None;
        let buffer = PyByteArray::new_with(py, size, |buf| {
            outcome = Some(py.detach(|| {
                fill(file, buf, &head)?;
                if stamp(file)? != before {
                    return Err(changed());
                }
                // The bytes handed out are checked: the data too, when the check reads it.
                Ok(match config.reads_data() {
                    true => Checker::check_slice(config, buf).into_owned(),
                    false => first,
                })
            }));
            Ok(())
        });
        match (buffer, outcome) {
            (Ok(buffer), Some(Ok(checked))) => Ok((buffer.unbind(), checked)),
            (_, Some(Err(e))) => Err(e),
            // The allocation failed (a MemoryError, dropped here).
            (Err(_), _) | (Ok(_), None) => Err(too_large()),
        }
    })?;
    Ok((f(checked), Some(buffer)))
}

/// The second half of [`read_checked`]: `buf` (as long as the file was) filled with `head`
/// and the rest of the file; a file that is shorter or longer than `buf` changed.
fn fill(file: &File, buf: &mut [u8], head: &[u8]) -> Result<(), ReadError> {
    let (start, rest) = match buf.len().checked_sub(head.len()) {
        Some(_) => buf.split_at_mut(head.len()),
        None => return Err(changed()),
    };
    start.copy_from_slice(head);
    read_exact_at(file, rest, head.len() as u64)?;
    match read_full_at(file, &mut [0u8; 1], buf.len() as u64)? {
        0 => Ok(()),
        _ => Err(changed()),
    }
}

/// Check the file at `path`; with `keep`, also hand over what the loader keeps of a valid file.
fn check_file_at(path: &Path, s: &Settings, keep: Keep) -> (Outcome, Option<Kept>) {
    let shown = stcheck::fs::display_path(path);
    let mode = s.mode;
    let record = |c: Checked<'_>| file_record(&shown, &c, s, Some(mode));
    let checked = open(path).and_then(|f| {
        let (file, _) = f.into_parts();
        match keep {
            Keep::Read => {
                let ((record, valid), buffer) = read_checked(&file, &s.config, record)?;
                Ok((record, buffer.filter(|_| valid).map(Kept::Read)))
            }
            Keep::Nothing | Keep::Open => {
                let (record, valid) = stcheck::check_file(&file, &s.config, mode, record)?;
                let kept = (keep == Keep::Open && valid).then(|| {
                    Kept::Open(CheckedFile {
                        file,
                        shown: shown.clone(),
                    })
                });
                Ok((record, kept))
            }
        }
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
    Ok(py.detach(|| check_file_at(&path, &s, Keep::Nothing).0))
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

/// Check one file and, if it is valid, hand over what the loader keeps of it (see the module
/// documentation): `(type, json, errno, kept or None)`, where `kept` is the whole file read
/// into a `bytearray` and checked there with `read`, else the [`CheckedFile`] that was checked.
#[pyfunction]
fn open_checked(
    py: Python<'_>,
    path: PathBuf,
    opts: Opts,
    read: bool,
) -> PyResult<Opened<Option<Py<PyAny>>>> {
    let s = loader_settings(opts)?;
    let ((kind, record, errno), kept) = py.detach(|| check_file_at(&path, &s, keep(read)));
    let kept = kept.map(|k| k.into_py(py)).transpose()?;
    Ok((kind, record, errno, kept))
}

/// The shards of an index, opened under the link policy and checked like the CLI's
/// [`FsSource`]; with `keep`, what the loader keeps of each shard is kept after its check (see
/// [`Keep`]), so the loader hands out the very bytes, or the very files, that were checked.
#[derive(Debug)]
struct Shards {
    inner: FsSource,
    mode: ReadMode,
    keep: Keep,
    /// Where the shards are shown (the index's directory, as records show it).
    dir: String,
    kept: RefCell<Vec<(String, Kept)>>,
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
        let kept = match self.keep {
            Keep::Read => read_checked(&file, config, f)?.1.map(Kept::Read),
            Keep::Nothing | Keep::Open => {
                stcheck::check_file(&file, config, self.mode, f)?;
                (self.keep == Keep::Open).then(|| {
                    Kept::Open(CheckedFile {
                        file,
                        shown: format!("{}{}", self.dir, stcheck::escape(name)),
                    })
                })
            }
        };
        if let Some(kept) = kept {
            self.kept.borrow_mut().push((name.to_owned(), kept));
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
/// inside), and with `keep` what is kept of the shards of a valid set.
fn check_index_at(path: &Path, s: &Settings, keep: Keep) -> (Outcome, Vec<(String, Kept)>) {
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
        dir: dir.clone(),
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
    Ok(py.detach(|| check_index_at(&path, &s, Keep::Nothing).0))
}

/// Check a sharded set and, if it is valid, hand over what the loader keeps of every shard (as
/// [`open_checked`] does for one file): `(type, json, errno, [(name, kept)])`.
#[pyfunction]
fn open_index_checked(
    py: Python<'_>,
    path: PathBuf,
    opts: Opts,
    read: bool,
) -> PyResult<Opened<Vec<Named>>> {
    let s = loader_settings(opts)?;
    let ((kind, record, errno), kept) = py.detach(|| check_index_at(&path, &s, keep(read)));
    let kept = kept
        .into_iter()
        .map(|(name, k)| Ok((name, k.into_py(py)?)))
        .collect::<PyResult<_>>()?;
    Ok((kind, record, errno, kept))
}

/// The settings of the loader: its options, checked with ordinary reads whatever they say (a
/// map is only ever made in Python, on request).
fn loader_settings(opts: Opts) -> PyResult<Settings> {
    let mut s = settings(opts)?;
    s.mode = ReadMode::Read;
    Ok(s)
}

/// What the loader keeps: the file read into a buffer (`read`), or the open file.
fn keep(read: bool) -> Keep {
    match read {
        true => Keep::Read,
        false => Keep::Open,
    }
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
                    true => check_index_at(path, &s, Keep::Nothing).0,
                    false => check_file_at(path, &s, Keep::Nothing).0,
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

    #[pymodule_export]
    use super::CheckedFile;

    #[pymodule_init]
    fn init(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
        use pyo3::types::PyModuleMethods as _;
        m.add("ReadFailed", m.py().get_type::<super::ReadFailed>())?;
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        m.add("remote", cfg!(feature = "remote"))?;
        Ok(())
    }
}
