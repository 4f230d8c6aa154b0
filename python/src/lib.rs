//! The native half of the `stcheck` Python package (`stcheck._native`).
//!
//! A thin face over the gate and the printers, as the command line is: the keyword options
//! become one [`RunOptions`] (resolved by [`RunOptions::resolve`], the function the CLI calls,
//! so both faces get the same `Config` and the same usage errors), targets are checked by the
//! one driver ([`Gate::check`], [`Gate::check_index_from`], [`Gate::check_bytes`]), and each
//! outcome is written by the JSON Lines printer ([`JsonLines`]) into memory. Python gets the
//! very lines `stcheck --json` writes. No rule is checked and no record is built here. The GIL
//! is released for all of it, so Python threads check files in parallel.
//!
//! The record functions return `(line, errno)` per record: the JSON line (`{"type": ...,
//! "data": ...}`) and the OS error number of a target that could not be read. The hot paths
//! (`check`, the loader) go through a [`Runner`] (the options resolved once) and get an
//! [`Outcome`]: a checked file's verdict kept as it is, whose status and tensors Python reads
//! directly and whose JSON line the same printer code writes only when asked. Whether to raise
//! is decided in Python (`py_src/stcheck/_check.py`).
//!
//! The loader ([`Runner::open`], [`open_index_checked`]) hands over what it keeps of each file
//! it found valid, in one of two forms. By default, the whole file *read* into a new buffer (a
//! `bytearray`, or from 256 KiB on a numpy `uint8` array over an anonymous map populated in
//! one call, see [`new_buffer`]) with ordinary reads (`pread`), and checked there: the length
//! field and header are read and checked first (an invalid file is never read further), then the rest is read
//! into the same buffer and, when the options read the data, the deep rules run over that very
//! buffer. The arrays Python builds from it hold exactly the bytes that were checked, and
//! nothing done to the file afterwards reaches them. Otherwise, a [`CheckedFile`]: the open
//! file that was checked (the same inode, whatever happens to the path), from which Python
//! reads each tensor (`CheckedFile::read`, a short read being a file that changed) or which it
//! maps with its `mmap` module when asked for zero-copy. No `unsafe` is needed here: the
//! buffers are Python objects (numpy arrays over Python's anonymous maps, borrowed mutably
//! through the `numpy` crate's checked borrows; `bytearray`s from PyO3), filled without the
//! GIL.

use std::cell::RefCell;
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use numpy::{PyArray1, PyArrayMethods as _};
use pyo3::exceptions::{PyException, PyMemoryError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyTuple};

use stcheck::index::ShardSource;
use stcheck::index::{IndexReport, ShardOutcome};
use stcheck::{
    Checked, Checker, Config, FileStamp, Profile, ReadError, ReadErrorKind, ReadMode, Rule,
};
use stcheck_gate::fs::RegularFile;
use stcheck_gate::options::{Face, Kind, RunOptions, Value, OPTIONS};
use stcheck_gate::shards::FsSource;
use stcheck_gate::{Done, Gate, Place, Shown, Sink, Status, Target, Unchecked, Via};
use stcheck_print::records::{self, Row};
use stcheck_print::JsonLines;

/// The options of one call, as the Python side fills them (`options()`: every key present):
/// the run options, each read by the kind the gate's table gives it ([`OPTIONS`]), and this
/// face's own (`threads`, `verbose`).
#[derive(Debug)]
struct Opts {
    run: RunOptions,
    threads: usize,
    verbose: bool,
}

impl<'a, 'py> FromPyObject<'a, 'py> for Opts {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Opts> {
        let mut run = RunOptions::default();
        run.face = Face::Python;
        for spec in OPTIONS {
            let Some(key) = spec.python else { continue };
            let item = obj.get_item(key)?;
            let value = if item.is_none() {
                Value::Default
            } else {
                match spec.kind {
                    Kind::Flag => Value::Bool(item.extract()?),
                    Kind::Rules | Kind::Readers | Kind::Globs => Value::List(item.extract()?),
                    Kind::Count | Kind::Bytes => Value::Int(item.extract()?),
                    Kind::Seconds => Value::Float(item.extract()?),
                    Kind::Headers => Value::Pairs(item.extract()?),
                    Kind::Path => Value::Path(item.extract()?),
                    _ => Value::Text(item.extract()?),
                }
            };
            run.set(spec.opt, value)
                .map_err(|e| PyValueError::new_err(e.0))?;
        }
        Ok(Opts {
            run,
            threads: obj.get_item("threads")?.extract()?,
            verbose: obj.get_item("verbose")?.extract()?,
        })
    }
}

/// A run of the Python face: the gate (the options resolved once), how records are printed,
/// and the threads of one file's deep scan.
#[derive(Debug)]
struct Run {
    gate: Gate,
    print: stcheck_print::Options,
    threads: usize,
}

impl Run {
    /// The options turned into a run, through the one resolution every face uses; `mode`
    /// overrides how files are read (the loader reads, whatever the options say).
    fn new(o: Opts, mode: Option<ReadMode>) -> PyResult<Run> {
        let mut options = o.run;
        if let Some(mode) = mode {
            options.mode = mode;
        }
        let gate = Gate::new(options).map_err(|e| PyValueError::new_err(e.0))?;
        let print = stcheck_print::Options::new(gate.profile())
            .verbose(o.verbose)
            .compare_reference(gate.options().compare_reference);
        Ok(Run {
            gate,
            print,
            threads: o.threads,
        })
    }

    fn sink(&self) -> Capture {
        Capture {
            lines: JsonLines::new(Vec::new(), self.print),
            print: self.print,
            files: Vec::new(),
        }
    }
}

/// A record: the JSON line `stcheck --json` writes, and the OS error number of a read that
/// failed.
type Record = (String, Option<i32>);

/// What one record holds until Python asks for it: a checked file's verdict, kept natively
/// (its record printed only when asked, by the JSON Lines printer's own record type), or the
/// text of any other record (a set, a file by URL, a path not checked), as the printer wrote it.
#[derive(Debug)]
enum Held {
    File {
        path: String,
        checked: Box<Checked<'static>>,
        /// How it was read (`None`: bytes in memory).
        mode: Option<ReadMode>,
        /// What the gate decided.
        status: Status,
    },
    Line(String),
}

/// One record of a check, as Python gets it: `status` and the tensors of a checked file
/// straight from the verdict, the JSON line (`line()`) written only when asked.
#[pyclass(module = "stcheck._native", frozen)]
#[derive(Debug)]
struct Outcome {
    held: Held,
    errno: Option<i32>,
    print: stcheck_print::Options,
}

impl Outcome {
    fn text(&self) -> String {
        match &self.held {
            Held::Line(line) => line.clone(),
            Held::File {
                path,
                checked,
                mode,
                status,
            } => {
                // The very printer `stcheck --json` writes with, given the same event.
                let mut printer = JsonLines::new(Vec::new(), self.print);
                let at = Shown {
                    text: path,
                    place: Place::Stdin,
                };
                let via = match mode {
                    Some(mode) => Via::Local(*mode),
                    None => Via::Memory,
                };
                match printer.file(&at, checked, &via, *status) {
                    Ok(()) => {
                        let mut out = printer.into_inner();
                        out.pop(); // the newline
                        String::from_utf8(out)
                            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
                    }
                    Err(e) => internal(&e.to_string()),
                }
            }
        }
    }

    fn record(&self) -> Record {
        (self.text(), self.errno)
    }
}

/// A record that cannot be valid, for this module's own failures.
fn internal(why: &str) -> String {
    internal_row(why).1
}

#[pymethods]
impl Outcome {
    /// The OS error number of a target that could not be read.
    #[getter]
    fn errno(&self) -> Option<i32> {
        self.errno
    }

    /// `"valid"` or `"invalid"` for a checked file (under the run's profile); `None` for any
    /// other record (read its line).
    #[getter]
    fn status(&self) -> Option<&'static str> {
        match &self.held {
            Held::File { status, .. } => Some(status.as_str()),
            Held::Line(_) => None,
        }
    }

    /// The path as the record shows it, for a checked file; `None` for any other record.
    #[getter]
    fn path(&self) -> Option<&str> {
        match &self.held {
            Held::File { path, .. } => Some(path),
            Held::Line(_) => None,
        }
    }

    /// The JSON line `stcheck --json` writes for it (without the newline).
    fn line(&self, py: Python<'_>) -> String {
        py.detach(|| self.text())
    }

    /// The tensors of a valid file, in offset order, as the loader needs them: `(name, dtype,
    /// shape, file offset, elements, bytes)`; `None` for anything else.
    fn specs<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let Held::File { checked, .. } = &self.held else {
            return Ok(None);
        };
        let Ok(report) = &checked.verdict else {
            return Ok(None);
        };
        let list = PyList::empty(py);
        for t in report.tensors() {
            let shape = PyTuple::new(py, t.shape)?;
            list.append((
                t.name,
                t.dtype.name(),
                shape,
                t.file_begin,
                t.elements,
                t.end.saturating_sub(t.begin),
            ))?;
        }
        Ok(Some(list))
    }
}

/// The gate's sink of the Python face: a checked file's verdict is kept as it is (an
/// [`Outcome`] prints it when asked); every other record is written by the JSON Lines printer.
#[derive(Debug)]
struct Capture {
    lines: JsonLines<Vec<u8>>,
    print: stcheck_print::Options,
    files: Vec<Held>,
}

impl Sink for Capture {
    fn file(
        &mut self,
        at: &Shown<'_>,
        c: &Checked<'_>,
        via: &Via,
        status: Status,
    ) -> io::Result<()> {
        let mode = match via {
            Via::Local(mode) => Some(*mode),
            Via::Memory => None,
            Via::Remote { .. } => return self.lines.file(at, c, via, status),
        };
        self.files.push(Held::File {
            path: at.text.to_owned(),
            checked: Box::new(c.clone().into_owned()),
            mode,
            status,
        });
        Ok(())
    }

    fn index_start(&mut self, at: &Shown<'_>, mode: Option<ReadMode>) -> io::Result<()> {
        self.lines.index_start(at, mode)
    }

    fn shard(
        &mut self,
        at: &Shown<'_>,
        name: &str,
        outcome: ShardOutcome<'_, '_>,
        via: Option<&Via>,
        status: Status,
    ) -> io::Result<()> {
        self.lines.shard(at, name, outcome, via, status)
    }

    fn index_end(
        &mut self,
        at: &Shown<'_>,
        outcome: Result<&IndexReport, &ReadError>,
        via: &Via,
        status: Status,
    ) -> io::Result<()> {
        self.lines.index_end(at, outcome, via, status)
    }

    fn not_checked(&mut self, at: &Shown<'_>, why: &ReadError, how: Unchecked) -> io::Result<()> {
        self.lines.not_checked(at, why, how)
    }
}

impl Capture {
    /// The records of a target that ended as `done`: the files kept, then the lines written.
    fn take(&mut self, done: &Done) -> Vec<Outcome> {
        let mut out: Vec<Outcome> = std::mem::take(&mut self.files)
            .into_iter()
            .map(|held| Outcome {
                held,
                errno: done.os_error,
                print: self.print,
            })
            .collect();
        let bytes = std::mem::take(self.lines.get_mut());
        let text = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        out.extend(text.lines().map(|l| Outcome {
            held: Held::Line(l.to_owned()),
            errno: done.os_error,
            print: self.print,
        }));
        out
    }

    /// The one record of a target that ended as `done`.
    fn one(&mut self, done: &Done) -> Outcome {
        let mut records = self.take(done);
        match records.len() {
            1 => records.remove(0),
            // A target is one record; anything else is this module's bug, shown as a record
            // that cannot be valid.
            _ => Outcome {
                held: Held::Line(internal("a target gave no single record")),
                errno: None,
                print: self.print,
            },
        }
    }
}

/// Check `targets` in order, each giving its records, each record turned into what `f` makes
/// of it as soon as it is there (a record function keeps the line, not the verdict: memory
/// follows the lines, not the headers).
fn check_all<T>(run: &Run, targets: &[Target], mut f: impl FnMut(Outcome) -> T) -> Vec<T> {
    let mut sink = run.sink();
    let mut out = Vec::with_capacity(targets.len());
    for target in targets {
        let done = run.gate.check(target, run.threads, &|_: u64| {}, &mut sink);
        out.extend(sink.take(&done).into_iter().map(&mut f));
    }
    out
}

/// Check paths, each as itself (a file, or a sharded set by its index's name; a directory is
/// not walked): one record per path, in order.
#[pyfunction]
fn check_paths(py: Python<'_>, paths: Vec<PathBuf>, opts: Opts) -> PyResult<Vec<Record>> {
    let run = Run::new(opts, None)?;
    let targets: Vec<Target> = paths.into_iter().map(stcheck_gate::target_of).collect();
    // `expect_sha256=` gives the hash of one file.
    run.gate
        .options()
        .one_file(&targets)
        .map_err(|e| PyValueError::new_err(e.0))?;
    Ok(py.detach(|| check_all(&run, &targets, |o| o.record())))
}

/// Check paths as `stcheck --json PATH...` does: directories walked, links judged by the
/// policy, sets grouped, every record the CLI writes (not the summary), in its order.
#[pyfunction]
fn check_tree(py: Python<'_>, paths: Vec<PathBuf>, opts: Opts) -> PyResult<Vec<Record>> {
    let run = Run::new(opts, None)?;
    py.detach(|| {
        // `-` is standard input for the CLI; here it is the file of that name.
        let args: Vec<OsString> = paths
            .into_iter()
            .map(|p| match p.as_os_str() == "-" {
                true => OsString::from("./-"),
                false => p.into_os_string(),
            })
            .collect();
        let targets = run.gate.targets(&args);
        run.gate.options().one_file(&targets).map_err(|e| e.0)?;
        Ok::<_, String>(check_all(&run, &targets, |o| o.record()))
    })
    .map_err(PyValueError::new_err)
}

/// Check the file or sharded set a URL names (`http://`, `https://`, `hf://`): the record
/// `stcheck --json URL` writes. A whole repository on the hub (`hf://org/repo[@revision]`) is
/// several targets: a `ValueError` (see [`one_url_target`]). Credentials come from
/// `HF_TOKEN`, the hub from `HF_ENDPOINT`.
#[pyfunction]
fn check_url(py: Python<'_>, url: String, opts: Opts) -> PyResult<Record> {
    let run = Run::new(opts, None)?;
    py.detach(|| {
        let target = one_url_target(&run, &url)?;
        run.gate
            .options()
            .one_file(std::slice::from_ref(&target))
            .map_err(|e| e.0)?;
        Ok::<_, String>(check_all(&run, &[target], |o| o.record()).remove(0))
    })
    .map_err(PyValueError::new_err)
}

/// The one target `url` names, or why a call that checks one target cannot take it: a whole
/// repository on the hub names one per file (listed, not checked, here).
fn one_url_target(run: &Run, url: &str) -> Result<Target, String> {
    let mut targets = run.gate.targets(&[OsString::from(url)]);
    match targets.len() {
        1 => Ok(targets.remove(0)),
        n => Err(format!(
            "the address names {n} targets (a whole repository on the hub): use \
             stcheck.check_tree or stcheck.records_tree for it"
        )),
    }
}

/// Check a whole file held in memory (`bytes`), shown as `name`: a `file` record whose `mode`
/// is null.
#[pyfunction]
fn check_bytes(
    py: Python<'_>,
    data: &Bound<'_, PyBytes>,
    name: &str,
    opts: Opts,
) -> PyResult<Record> {
    let run = Run::new(opts, None)?;
    let bytes: &[u8] = data.as_bytes();
    Ok(py.detach(|| {
        let mut sink = run.sink();
        let done = run.gate.check_bytes(name, bytes, run.threads, &mut sink);
        sink.one(&done).record()
    }))
}

/// A target of a batch, of the kind Python told (`stcheck._check.columns`): 0 a path (a file,
/// or a sharded set by its index's name), 1 a URL, 2 a file's contents (shown as `<bytes>`).
#[derive(Debug)]
enum Item {
    Path(PathBuf),
    Url(String),
    Bytes(Vec<u8>),
}

impl Item {
    fn of(kind: u8, target: &Bound<'_, PyAny>) -> PyResult<Item> {
        Ok(match kind {
            0 => Item::Path(target.extract()?),
            1 => Item::Url(target.extract()?),
            2 => Item::Bytes(target.extract()?),
            _ => return Err(PyValueError::new_err(format!("a target of kind {kind}"))),
        })
    }
}

/// The records of one target of a batch (each JSON line with its row), or why the batch
/// cannot take it.
type ItemRecords = Result<Vec<(Row, String)>, String>;

/// The records of one target of a batch: each JSON line with its row.
fn batch_item(run: &Run, item: &Item, sink: &mut JsonLines<Vec<u8>>) -> ItemRecords {
    let done = match item {
        Item::Path(path) => {
            let target = stcheck_gate::target_of(path.clone());
            run.gate.check(&target, run.threads, &|_: u64| {}, sink)
        }
        Item::Url(url) => {
            let target = one_url_target(run, url)?;
            run.gate.check(&target, run.threads, &|_: u64| {}, sink)
        }
        Item::Bytes(data) => run.gate.check_bytes("<bytes>", data, run.threads, sink),
    };
    let rows = sink.take_rows();
    let bytes = std::mem::take(sink.get_mut());
    let text = String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    match (done.written, rows.len() == lines.len()) {
        (Ok(()), true) => Ok(rows.into_iter().zip(lines).collect()),
        // The printer failed, or this module did not keep a row per line: its bug, shown as a
        // record that cannot be valid.
        (Err(e), _) => Ok(vec![internal_row(&e.to_string())]),
        (Ok(()), false) => Ok(vec![internal_row("a record without its row")]),
    }
}

/// The row and line of a record that cannot be valid, for this module's own failures.
fn internal_row(why: &str) -> (Row, String) {
    let error = ReadError::new(ReadErrorKind::Io, format!("internal error: {why}"));
    let record = records::UnreadableRecord::new("", &error);
    let mut line = Vec::new();
    // Into memory, a record of strings cannot fail to be written.
    let _ = records::write_line(&mut line, "file", &record);
    let line = String::from_utf8_lossy(line.trim_ascii_end()).into_owned();
    (record.row(), line)
}

/// Check a batch of targets, each as itself (see [`Item`]; a directory is not walked): each
/// target's records, in the targets' order. The URLs are checked concurrently, at most
/// `url_jobs` at a time, under one deadline for the whole batch ([`Gate::one_deadline`]: a
/// batch of a thousand slow URLs takes no longer than one may); the paths and contents one
/// after another on this thread meanwhile, as the CLI's workers share a run. Each target goes
/// through the gate's one driver ([`Gate::check`]), as the CLI's jobs do.
fn check_batch(run: &Run, items: &[Item]) -> Result<Vec<(Row, String)>, String> {
    let mut done: Vec<Option<ItemRecords>> = items.iter().map(|_| None).collect();
    let urls: Vec<usize> = (0..items.len())
        .filter(|&i| matches!(items[i], Item::Url(_)))
        .collect();
    let workers = run.gate.options().url_jobs().min(urls.len());
    let next = AtomicUsize::new(0);
    let url_job = || {
        let mut sink = JsonLines::new(Vec::new(), run.print).with_rows();
        let mut out = Vec::new();
        while let Some(&i) = urls.get(next.fetch_add(1, Ordering::Relaxed)) {
            out.push((i, batch_item(run, &items[i], &mut sink)));
        }
        out
    };
    std::thread::scope(|s| {
        let jobs: Vec<_> = (0..workers).map(|_| s.spawn(url_job)).collect();
        let mut sink = JsonLines::new(Vec::new(), run.print).with_rows();
        for (i, item) in items.iter().enumerate() {
            if !matches!(item, Item::Url(_)) {
                done[i] = Some(batch_item(run, item, &mut sink));
            }
        }
        for job in jobs {
            // A URL job that panicked (a bug: no input may panic) leaves its targets without
            // records, shown below as records that cannot be valid.
            for (i, records) in job.join().unwrap_or_default() {
                done[i] = Some(records);
            }
        }
    });
    let mut out = Vec::with_capacity(items.len());
    for records in done {
        match records {
            Some(records) => out.extend(records?),
            None => out.push(internal_row("a target of the batch was not checked")),
        }
    }
    Ok(out)
}

/// The targets of a batch, told apart by `kinds` (see [`Item::of`]), and the run of `opts`
/// with one deadline for the batch's URLs, counted from now.
fn batch_of(targets: &[Bound<'_, PyAny>], kinds: &[u8], opts: Opts) -> PyResult<(Vec<Item>, Run)> {
    if kinds.len() != targets.len() {
        return Err(PyValueError::new_err("a kind for each target"));
    }
    let items = targets
        .iter()
        .zip(kinds)
        .map(|(t, kind)| Item::of(*kind, t))
        .collect::<PyResult<Vec<_>>>()?;
    let mut run = Run::new(opts, None)?;
    // `expect_sha256` names one file: a batch of several targets is refused, as the CLI
    // refuses several paths.
    let as_targets: Vec<Target> = items
        .iter()
        .map(|i| match i {
            Item::Path(p) => stcheck_gate::target_of(p.clone()),
            Item::Url(u) => Target::Url(u.clone()),
            Item::Bytes(_) => Target::Stdin,
        })
        .collect();
    run.gate
        .options()
        .one_file(&as_targets)
        .map_err(|e| PyValueError::new_err(e.0))?;
    // Set only for a batch with URLs: it builds the run's HTTP client, to know its timeout.
    if items.iter().any(|i| matches!(i, Item::Url(_))) {
        run.gate = run.gate.one_deadline();
    }
    Ok((items, run))
}

/// Check a batch of targets ([`check_batch`]: the URLs concurrently, under one deadline), one
/// record each, and return the records' columns: `stcheck.dask.COLUMNS` but `target`, one
/// list per column (`record`: the JSON line `stcheck --json` writes), each value taken from
/// the record's row ([`Row`], made by the printer from the record it writes). What the
/// Parquet scan stores, with no record parsed in Python.
#[pyfunction]
fn check_columns<'py>(
    py: Python<'py>,
    targets: Vec<Bound<'py, PyAny>>,
    kinds: &[u8],
    opts: Opts,
) -> PyResult<Bound<'py, PyDict>> {
    let (items, run) = batch_of(&targets, kinds, opts)?;
    let records = py.detach(|| check_batch(&run, &items));
    let records = records.map_err(PyValueError::new_err)?;
    columns(py, &records)
}

/// Check a batch of targets as [`check_columns`] does, and return the records' JSON lines
/// only (what `stcheck.records` parses).
#[pyfunction]
fn check_lines(
    py: Python<'_>,
    targets: Vec<Bound<'_, PyAny>>,
    kinds: &[u8],
    opts: Opts,
) -> PyResult<Vec<String>> {
    let (items, run) = batch_of(&targets, kinds, opts)?;
    let records = py.detach(|| check_batch(&run, &items));
    let records = records.map_err(PyValueError::new_err)?;
    Ok(records.into_iter().map(|(_, line)| line).collect())
}

/// The rows as columns, by name.
fn columns<'py>(py: Python<'py>, records: &[(Row, String)]) -> PyResult<Bound<'py, PyDict>> {
    let rows = || records.iter().map(|(r, _)| r);
    let out = PyDict::new(py);
    let put = |name: &str, list: PyResult<Bound<'py, PyList>>| out.set_item(name, list?);
    put("type", PyList::new(py, rows().map(|r| r.kind)))?;
    put("path", PyList::new(py, rows().map(|r| r.path.as_str())))?;
    put("status", PyList::new(py, rows().map(|r| r.status)))?;
    put("rule", PyList::new(py, rows().map(|r| r.rule)))?;
    put("offset", PyList::new(py, rows().map(|r| r.offset)))?;
    put(
        "tensor",
        PyList::new(py, rows().map(|r| r.tensor.as_deref())),
    )?;
    put(
        "message",
        PyList::new(py, rows().map(|r| r.message.as_deref())),
    )?;
    put("reason", PyList::new(py, rows().map(|r| r.reason)))?;
    put("size", PyList::new(py, rows().map(|r| r.size)))?;
    put("tensors", PyList::new(py, rows().map(|r| r.tensors)))?;
    put("parameters", PyList::new(py, rows().map(|r| r.parameters)))?;
    put(
        "sha256",
        PyList::new(py, rows().map(|r| r.sha256.as_deref())),
    )?;
    put(
        "record",
        PyList::new(py, records.iter().map(|(_, l)| l.as_str())),
    )?;
    Ok(out)
}

/// Whether `arg` names an address the remote source takes, as the CLI decides it.
#[pyfunction]
fn is_url(arg: &str) -> bool {
    stcheck_gate::target::is_url(arg)
}

/// The address `arg` as every output shows it (user information removed, a query shown as
/// `?...`, the fragment dropped): the gate's `shown_url`, for messages written in Python.
#[pyfunction]
fn shown_url(arg: &str) -> String {
    stcheck_gate::target::shown_url(arg)
}

/// Every rule of SPEC.md: `(id, kind, severity)`.
#[pyfunction]
fn rules_table() -> Vec<(&'static str, &'static str, &'static str)> {
    Rule::ALL
        .iter()
        .map(|r| (r.id(), r.kind().as_str(), r.severity().as_str()))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The loader: what is kept of the files checked.

pyo3::create_exception!(
    _native,
    ReadFailed,
    PyException,
    "A read of a checked file failed: args are (line, errno), the record of it."
);

/// What the loader keeps of a file it found valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// The open file that was checked (a [`CheckedFile`]), checked with ordinary reads.
    Open,
    /// The whole file read into a buffer, and checked there ([`read_checked`]).
    Read,
}

/// What the loader keeps of it.
fn keep(read: bool) -> Keep {
    match read {
        true => Keep::Read,
        false => Keep::Open,
    }
}

/// What the loader takes over of a valid file.
#[derive(Debug)]
enum Kept {
    Open(CheckedFile),
    Read(Py<PyAny>),
}

impl Kept {
    fn into_py(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self {
            Kept::Open(file) => Ok(Py::new(py, file)?.into_any()),
            Kept::Read(buffer) => Ok(buffer.into_any()),
        }
    }
}

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

/// The record of a file that could not be read, as the gate tells the printer of it.
fn unreadable(shown: &str, e: &ReadError) -> Record {
    let mut sink = Capture {
        lines: JsonLines::new(Vec::new(), stcheck_print::Options::default()),
        print: stcheck_print::Options::default(),
        files: Vec::new(),
    };
    let at = Shown {
        text: shown,
        place: Place::Stdin,
    };
    let done = stcheck_gate::not_checked(&at, e, &mut sink);
    sink.one(&done).record()
}

/// "The file changed while it was read", as the library says it.
fn changed() -> ReadError {
    ReadError::new(ReadErrorKind::Changed, "the file changed while it was read")
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

/// Read `file` into a new buffer (a `bytearray`, or a [`new_buffer`] for a large file) and
/// check exactly the bytes read. The length field and the header come first, checked as a
/// header-only check would (a file they reject is read no further, and its verdict is that
/// check's); then the rest of the file is read into the same buffer, after the header bytes
/// already read, and when `config` reads the data (`deep`, `sha256`, `deny_nonfinite`) the
/// whole check runs again over that very buffer. `f` gets the verdict; the buffer comes with it
/// when the header was valid. A file that changes after `before` was taken (it shrinks or
/// grows, or its times or identity differ after the reads) is a [`ReadErrorKind::Changed`]
/// error, never a verdict. Runs without the GIL, and takes it only to allocate the buffer.
fn read_checked<T>(
    file: &File,
    before: &FileStamp,
    config: &Config,
    f: impl FnOnce(Checked<'_>) -> T,
) -> Result<(T, Option<Py<PyAny>>), ReadError> {
    let len = before.len();
    let header_only = config
        .clone()
        .deep(false)
        .sha256(false)
        .deny_nonfinite(false);
    let mut checker = Checker::new(&header_only).with_len(len);
    let head = stcheck::read_head(file, &mut checker, len)?;
    let first = checker.finish();
    before.unchanged(file)?;
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
        checked_buffer(py, size, too_large, |buf: &mut [u8]| {
            py.detach(|| {
                fill(file, buf, &head)?;
                before.unchanged(file)?;
                // The bytes handed out are checked: the data too, when the check reads it.
                Ok::<_, ReadError>(match config.reads_data() {
                    true => Checker::check_slice(config, buf).into_owned(),
                    false => first,
                })
            })
        })
    })?;
    Ok((f(checked), Some(buffer)))
}

/// A new buffer of `size` bytes for a loader to hand out (a `bytearray`, or from
/// [`MAPPED_BUFFER_FROM`] a [`new_buffer`]), with what `fill_and_check` made of it: it fills
/// the buffer and checks those very bytes, before Python can see them. `too_large` is the
/// error of a buffer that could not be had.
fn checked_buffer<T>(
    py: Python<'_>,
    size: usize,
    too_large: impl Fn() -> ReadError,
    fill_and_check: impl FnOnce(&mut [u8]) -> Result<T, ReadError>,
) -> Result<(Py<PyAny>, T), ReadError> {
    if size < MAPPED_BUFFER_FROM {
        let mut fill_and_check = Some(fill_and_check);
        let mut outcome = None;
        let buffer = PyByteArray::new_with(py, size, |buf| {
            outcome = fill_and_check.take().map(|f| f(buf));
            Ok(())
        });
        return match (buffer, outcome) {
            (Ok(buffer), Some(Ok(checked))) => Ok((buffer.into_any().unbind(), checked)),
            (_, Some(Err(e))) => Err(e),
            // The allocation failed (a MemoryError, dropped here).
            (Err(_), _) | (Ok(_), None) => Err(too_large()),
        };
    }
    let buffer = new_buffer(py, size).map_err(|e| {
        match e.is_instance_of::<PyMemoryError>(py) || e.is_instance_of::<PyOSError>(py) {
            true => too_large(),
            false => ReadError::new(
                ReadErrorKind::Io,
                format!("the loader's buffer could not be made: {e}"),
            ),
        }
    })?;
    let mut view = buffer.try_readwrite().map_err(|_| too_large())?;
    let checked = fill_and_check(view.as_slice_mut().map_err(|_| too_large())?)?;
    drop(view);
    Ok((buffer.into_any().unbind(), checked))
}

/// From this size on, [`read_checked`]'s buffer is a [`new_buffer`] (an anonymous map populated
/// in one call); below it, a `bytearray`, whose few page faults cost less than the Python calls
/// that make the map (10,000 1-tensor loads in `benches/python/compare.py`: 16 us each with a
/// `bytearray`, 31 us with the map).
const MAPPED_BUFFER_FROM: usize = 256 * 1024;

/// A new buffer of `size` zero bytes for [`read_checked`] to fill, as a numpy `uint8` array
/// over an anonymous private map made by Python's `mmap` with `MAP_POPULATE` where Python has
/// it (3.10+ on Linux): the kernel provides every page in one call, where a `bytearray` takes
/// one page fault per 4 KiB as the read fills it (on this machine 0.4 s against 0.9 s for
/// 1 GiB; `benches/python/compare.py`). The map has no file behind it, so nothing done to
/// the checked file can reach it or raise a signal. A failure is a Python exception here
/// (`MemoryError`, `OSError`), not a panic.
fn new_buffer(py: Python<'_>, size: usize) -> PyResult<Bound<'_, PyArray1<u8>>> {
    let mmap = py.import("mmap")?;
    let flag = |name: &str| -> PyResult<i64> {
        match mmap.getattr(name) {
            Ok(v) => v.extract(),
            Err(_) => Ok(0),
        }
    };
    // A file number of -1 makes Python's `mmap` add MAP_ANONYMOUS itself.
    let flags = flag("MAP_PRIVATE")? | flag("MAP_POPULATE")?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("flags", flags)?;
    let map = mmap.getattr("mmap")?.call((-1, size), Some(&kwargs))?;
    let frombuffer = py.import("numpy")?.getattr("frombuffer")?;
    Ok(frombuffer
        .call1((map, "uint8"))?
        .cast_into::<PyArray1<u8>>()?)
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

/// Check the open `file` as `keep` says, handing the verdict to `f`, which answers with what
/// it makes of it and whether the file is valid: that, and what is kept of a valid file.
fn check_kept<T>(
    file: RegularFile,
    shown: &str,
    config: &Config,
    keep: Keep,
    f: impl FnOnce(Checked<'_>) -> (T, bool),
) -> Result<(T, Option<Kept>), ReadError> {
    match keep {
        Keep::Read => {
            let ((t, valid), buffer) = read_checked(file.file(), file.stamp(), config, f)?;
            Ok((t, buffer.filter(|_| valid).map(Kept::Read)))
        }
        Keep::Open => {
            let (t, valid) = stcheck::check_opened(
                file.file(),
                file.stamp(),
                config,
                ReadMode::Read,
                &|_: u64| {},
                f,
            )?;
            let kept = valid.then(|| {
                Kept::Open(CheckedFile {
                    file: file.into_parts().0,
                    shown: shown.to_owned(),
                })
            });
            Ok((t, kept))
        }
    }
}

/// A record, and what the loader takes over.
type Opened<T> = (String, Option<i32>, T);

/// A shard's name, and what the loader keeps of it (its [`read_checked`] buffer or a
/// [`CheckedFile`]).
type Named = (String, Py<PyAny>);

/// Check one file and, if it is valid, keep what the loader keeps of it (see the module
/// documentation): the whole file read into a buffer and checked there with `read`, else
/// the [`CheckedFile`] that was checked. [`Runner::open`] hands both to Python.
fn open_file(run: &Run, path: &Path, keep: Keep) -> (Outcome, Option<Kept>) {
    let shown = stcheck_gate::shown_path(path);
    let at = Shown {
        text: &shown,
        place: Place::Path(path),
    };
    let mut sink = run.sink();
    let config = run.gate.config().clone().threads(run.threads);
    let checked = stcheck_gate::fs::open_regular(path)
        .map_err(|e| ReadError::from(e).with_path(path))
        .and_then(|f| {
            check_kept(f, &shown, &config, keep, |mut c| {
                let done = run
                    .gate
                    .checked(&at, &mut c, &Via::Local(ReadMode::Read), &mut sink);
                let valid = done.status == Status::Valid;
                (done, valid)
            })
        });
    match checked {
        Ok((done, kept)) => (sink.one(&done), kept),
        Err(e) => {
            let done = stcheck_gate::not_checked(&at, &e, &mut sink);
            (sink.one(&done), None)
        }
    }
}

/// The shards of an index as the gate opens them ([`Gate::shard_source`]), each checked as
/// [`check_kept`] does, what is kept of each valid one collected: the loader hands out the very
/// bytes, or the very files, that were checked.
struct Shards {
    inner: FsSource,
    config_threads: usize,
    profile: Profile,
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
        let shown = stcheck_gate::shown_shard(&self.dir, name);
        let config = config.clone().threads(self.config_threads);
        let profile = self.profile;
        let ((), kept) = check_kept(file, &shown, &config, self.keep, |c| {
            let valid = Status::of_file(&c, profile) == Status::Valid;
            f(c);
            ((), valid)
        })?;
        if let Some(kept) = kept {
            self.kept.borrow_mut().push((name.to_owned(), kept));
        }
        Ok(())
    }
}

/// Check a sharded set and, if it is valid, hand over what the loader keeps of every shard (as
/// [`Runner::open`] does for one file): `(line, errno, [(name, kept)])`.
#[pyfunction]
fn open_index_checked(
    py: Python<'_>,
    path: PathBuf,
    opts: Opts,
    read: bool,
) -> PyResult<Opened<Vec<Named>>> {
    let run = Run::new(opts, Some(ReadMode::Read))?;
    run.gate
        .options()
        .one_file(&[stcheck_gate::target_of(path.clone())])
        .map_err(|e| PyValueError::new_err(e.0))?;
    let ((line, errno), kept) = py.detach(|| open_index(&run, &path, keep(read)));
    let kept = kept
        .into_iter()
        .map(|(name, k)| Ok((name, k.into_py(py)?)))
        .collect::<PyResult<_>>()?;
    Ok((line, errno, kept))
}

fn open_index(run: &Run, path: &Path, keep: Keep) -> (Record, Vec<(String, Kept)>) {
    let shown = stcheck_gate::shown_path(path);
    let at = Shown {
        text: &shown,
        place: Place::Path(path),
    };
    let dir = at.shard_dir();
    let source = Shards {
        inner: run.gate.shard_source(path, None),
        config_threads: run.threads,
        profile: run.gate.profile(),
        keep,
        dir,
        kept: RefCell::new(Vec::new()),
    };
    let mut sink = run.sink();
    let done = run
        .gate
        .check_index_from(path, &source, run.threads, &mut sink);
    let kept = match done.status {
        Status::Valid => source.kept.into_inner(),
        _ => Vec::new(),
    };
    (sink.one(&done).record(), kept)
}

/// A run's options resolved once (the gate, the printer's options), for the calls of Python
/// that check paths or bytes, or load, with the same options: the per-call cost is the check.
#[pyclass(module = "stcheck._native", frozen)]
#[derive(Debug)]
struct Runner {
    run: Run,
}

impl Runner {
    /// Check a whole file held in memory by `bytes` (which nothing changes meanwhile: a
    /// `bytes` object, or a buffer no Python code has seen yet), shown as `name`, without the
    /// GIL.
    fn check_held(&self, py: Python<'_>, bytes: &[u8], name: &str) -> Outcome {
        py.detach(|| {
            let mut sink = self.run.sink();
            let done = self
                .run
                .gate
                .check_bytes(name, bytes, self.run.threads, &mut sink);
            sink.one(&done)
        })
    }
}

#[pymethods]
impl Runner {
    #[new]
    fn new(opts: Opts) -> PyResult<Runner> {
        Ok(Runner {
            run: Run::new(opts, None)?,
        })
    }

    /// Check one path as itself (a file, or a sharded set by its index's name): its record.
    fn check(&self, py: Python<'_>, path: PathBuf) -> PyResult<Outcome> {
        let target = stcheck_gate::target_of(path);
        // `expect_sha256=` gives the hash of one file, not of a set.
        self.run
            .gate
            .options()
            .one_file(std::slice::from_ref(&target))
            .map_err(|e| PyValueError::new_err(e.0))?;
        Ok(py.detach(|| {
            let mut sink = self.run.sink();
            let done = self
                .run
                .gate
                .check(&target, self.run.threads, &|_: u64| {}, &mut sink);
            sink.one(&done)
        }))
    }

    /// Check a whole file held in memory, shown as `name`.
    fn check_bytes(&self, py: Python<'_>, data: &Bound<'_, PyBytes>, name: &str) -> Outcome {
        self.check_held(py, data.as_bytes(), name)
    }

    /// The loader's check of a file held in memory by a writable buffer (`stcheck.load` of a
    /// `bytearray` or `memoryview` for torch, whose tensors need memory they may write), shown
    /// as `name`: its record, and the buffer the check read. `data` is read through numpy
    /// (`numpy.frombuffer`: the abi3 API has no buffer protocol before Python 3.11) and copied
    /// once, with the GIL held (no Python thread changes it meanwhile), into a new buffer (as
    /// [`read_checked`]'s), which is checked without the GIL before Python sees it: the one
    /// copy the caller's bytes need, where a `bytes` copy for the check and a `bytearray`
    /// copy for torch made two.
    fn check_copy(
        &self,
        py: Python<'_>,
        data: numpy::PyReadonlyArray1<'_, u8>,
        name: &str,
    ) -> PyResult<(Outcome, Py<PyAny>)> {
        let src = data
            .as_slice()
            .map_err(|_| PyValueError::new_err("the buffer is not contiguous"))?;
        let too_large = || {
            ReadError::new(
                ReadErrorKind::TooLarge,
                format!("the file ({} bytes) does not fit in memory", src.len()),
            )
        };
        let (buffer, outcome) = checked_buffer(py, src.len(), too_large, |buf: &mut [u8]| {
            buf.copy_from_slice(src);
            Ok(self.check_held(py, buf, name))
        })
        .map_err(|e| PyMemoryError::new_err(e.to_string()))?;
        Ok((outcome, buffer))
    }

    /// The loader's check of one file ([`open_file`]): its record, and what is kept of a
    /// valid file (a buffer of it, read and checked, with `read`, else the open file).
    fn open(
        &self,
        py: Python<'_>,
        path: PathBuf,
        read: bool,
    ) -> PyResult<(Outcome, Option<Py<PyAny>>)> {
        let (outcome, kept) = py.detach(|| open_file(&self.run, &path, keep(read)));
        let kept = kept.map(|k| k.into_py(py)).transpose()?;
        Ok((outcome, kept))
    }
}

/// The native half of the `stcheck` package: see `stcheck` for the API.
#[pymodule]
mod _native {
    #[pymodule_export]
    use super::{
        check_bytes, check_columns, check_lines, check_paths, check_tree, check_url, is_url,
        open_index_checked, rules_table, shown_url,
    };

    #[pymodule_export]
    use super::{CheckedFile, Outcome, Runner};

    #[pymodule_init]
    fn init(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
        use pyo3::types::PyModuleMethods as _;
        m.add("ReadFailed", m.py().get_type::<super::ReadFailed>())?;
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        m.add("remote", cfg!(feature = "remote"))?;
        Ok(())
    }
}
