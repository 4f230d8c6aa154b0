//! The `stcheck` command line: files, directories, sharded checkpoints, standard input.
//!
//! Exit codes: 0 every file is valid; 1 at least one file or sharded set is invalid; 2 a usage
//! error or an I/O error on at least one path (an unreadable path is never counted as valid or
//! invalid, and 2 wins over 1). A broken pipe on standard output ends the run quietly with the
//! status of what was checked so far.
//!
//! # JSON Lines output (`--json`)
//!
//! One JSON object per line, `{"type": T, "data": D}`, in input order, then one summary.
//! The full schema is in `docs/json-output.md`; in short:
//!
//! - `"file"`: `path`, `status` (`"valid"`, `"invalid"` or `"io_error"`), `profile`
//!   (`"strict"`/`"reference"`), `mode` (`"mmap"`, `"read"`, `"stream"`), `size`, and for a
//!   checked file `tensors`, `parameters`, `header_len`, `by_dtype`
//!   (`[{"dtype","tensors","parameters","bytes"}]`), `error` (a *finding* or `null`),
//!   `warnings` (findings); `tensor_list` with `-v`; `deep` with `--deep`; `reference`
//!   (`{"verdict": "accept"|"reject"|"panic", "message", "tensors", "parameters",
//!   "divergence"}`) with `--compare-reference`. An I/O failure has only `path`, `status`
//!   and `io_error` (the message).
//! - A *finding* is `{"rule": "LAYOUT-GAP", "kind": "malformed"|"invalid",
//!   "severity": "error"|"warning", "promoted_warning": bool, "offset": 123, "tensor": name
//!   or null, "message": "..."}`; `offset` is a byte offset into the file.
//! - `"index"`: `path`, `status`, `shards` (`[{"name","status","tensors","parameters",
//!   "warnings"}]`), `tensors`, `parameters`, `by_dtype`, `total_size`, `computed_size`,
//!   `errors` and `warnings` (findings with `shard`, `offset_in` (`"index"`/`"shard"`) and
//!   `cause`, the shard's own error), `omitted_errors`.
//! - `"skipped"`: `path`, `reason` (a symbolic link met while walking a directory).
//! - `"summary"`: `files`, `indexes`, `valid`, `invalid`, `io_errors`, `skipped`,
//!   `exit_code`.
//!
//! Integers (offsets, sizes, counts) are JSON numbers holding the exact u64 value; readers
//! whose numbers are IEEE doubles (JavaScript) lose precision above 2^53.

mod args;
mod check;
mod input;
mod progress;
mod remote;
mod render;

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use args::{Command, Options};
use input::Job;
use stcheck::wire::Summary;

/// Run the command line; returns the exit code.
pub(crate) fn main() -> ExitCode {
    let command = match args::parse(std::env::args_os().skip(1)) {
        Ok(c) => c,
        Err(message) => {
            eprintln!("stcheck: {message}");
            return ExitCode::from(2);
        }
    };
    let o = match command {
        Command::Help => {
            let _ = io::stdout().write_all(args::HELP.as_bytes());
            return ExitCode::SUCCESS;
        }
        Command::Version => {
            println!("stcheck {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Command::Run(o) => o,
    };
    ExitCode::from(run(&o))
}

/// How a job ended, for the exit code and the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Valid,
    Invalid,
    IoError,
    NotChecked,
}

/// Output in input order, written as it is produced: job `i` writes only when jobs `0..i`
/// have written, and then straight to standard output (no record is built in memory first).
struct Turns {
    next: Mutex<usize>,
    cv: Condvar,
}

impl Turns {
    fn wait(&self, i: usize) {
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        while *next < i {
            next = self.cv.wait(next).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn done(&self, i: usize) {
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        *next = (*next).max(i + 1);
        self.cv.notify_all();
    }
}

/// Standard output and the tally, shared by the jobs (one writes at a time, in turn).
struct Sink {
    out: io::BufWriter<io::Stdout>,
    tally: Summary,
    broken: bool,
    bar: Option<progress::Progress>,
    done: usize,
}

impl Sink {
    /// Count a finished job and account for a write error (a closed pipe ends the run).
    fn finish_job(
        &mut self,
        status: Status,
        is_index: bool,
        written: io::Result<()>,
        stop: &AtomicBool,
    ) {
        match status {
            Status::Valid => self.tally.valid += 1,
            Status::Invalid => self.tally.invalid += 1,
            Status::IoError => self.tally.io_errors += 1,
            Status::NotChecked => self.tally.not_checked += 1,
        }
        if status != Status::NotChecked {
            if is_index {
                self.tally.indexes += 1;
            } else {
                self.tally.files += 1;
            }
        }
        let written = written.and_then(|()| self.out.flush());
        if let Err(e) = written {
            if e.kind() == io::ErrorKind::BrokenPipe {
                self.broken = true;
                stop.store(true, Ordering::Relaxed);
            } else {
                let _ = writeln!(io::stderr(), "stcheck: writing the output: {e}");
                self.tally.io_errors += 1;
            }
        }
        self.done += 1;
        if let Some(b) = self.bar.as_mut() {
            b.update(self.done);
        }
    }

    fn before_output(&mut self) {
        if let Some(b) = self.bar.as_mut() {
            b.before_output();
        }
    }
}

fn lock(sink: &Mutex<Sink>) -> std::sync::MutexGuard<'_, Sink> {
    sink.lock().unwrap_or_else(|p| p.into_inner())
}

fn run_job(
    job: &Job,
    i: usize,
    o: &Options,
    threads: usize,
    turns: &Turns,
    sink: &Mutex<Sink>,
    stop: &AtomicBool,
) {
    let config = o.config_for(threads);
    let mut err = io::stderr();
    match job {
        Job::File(path) => {
            let shown = render::show(path);
            let result = check::file(path, &config, o, |c| {
                turns.wait(i);
                let mut s = lock(sink);
                s.before_output();
                let status = if render::file_valid(&c, o) {
                    Status::Valid
                } else {
                    Status::Invalid
                };
                let written = if s.broken {
                    Ok(())
                } else {
                    render::file(&mut s.out, &shown, &c, o, o.mode, "")
                };
                s.finish_job(status, false, written, stop);
            });
            if let Err(e) = result {
                turns.wait(i);
                let mut s = lock(sink);
                s.before_output();
                let _ = s.out.flush();
                if e.is_policy() {
                    let written = render::not_checked(&mut s.out, &shown, &e, o);
                    s.finish_job(Status::NotChecked, false, written, stop);
                } else {
                    let written = render::unreadable(&mut s.out, &mut err, &shown, &e, o, "file");
                    s.finish_job(Status::IoError, false, written, stop);
                }
            }
        }
        Job::Stdin => {
            let result = check::stdin(&config);
            turns.wait(i);
            let mut s = lock(sink);
            s.before_output();
            match result {
                Ok(c) => {
                    let status = if render::file_valid(&c, o) {
                        Status::Valid
                    } else {
                        Status::Invalid
                    };
                    let written =
                        render::file(&mut s.out, "<stdin>", &c, o, stcheck::ReadMode::Stream, "");
                    s.finish_job(status, false, written, stop);
                }
                Err(e) => {
                    let _ = s.out.flush();
                    let written =
                        render::unreadable(&mut s.out, &mut err, "<stdin>", &e, o, "file");
                    s.finish_job(Status::IoError, false, written, stop);
                }
            }
        }
        Job::Index(path, root) => {
            // Shards are written as they are checked, so the index waits for its turn first.
            turns.wait(i);
            let shown = render::show(path);
            let mut guard = lock(sink);
            let s = &mut *guard;
            s.before_output();
            let mut out = render::IndexOutput::start(&mut s.out, path, o);
            let result = check::index(path, root.as_deref(), &config, o, &mut |name, outcome| {
                out.shard(name, outcome, o)
            });
            let (status, written) = match &result {
                Ok(rep) => {
                    let status = if rep.is_valid() {
                        Status::Valid
                    } else {
                        Status::Invalid
                    };
                    (status, out.finish(&shown, rep))
                }
                Err(e) => {
                    let r = out.fail(e);
                    let _ = writeln!(err, "stcheck: {shown}: {e}");
                    (Status::IoError, r)
                }
            };
            s.finish_job(status, true, written, stop);
        }
        Job::Url(url) => run_url(url, i, o, &config, turns, sink, stop),
        Job::NotChecked(path, why) => {
            turns.wait(i);
            let mut s = lock(sink);
            s.before_output();
            let written = render::not_checked(&mut s.out, &render::show(path), why, o);
            s.finish_job(Status::NotChecked, false, written, stop);
        }
        Job::WalkError(path, e) => {
            turns.wait(i);
            let mut s = lock(sink);
            s.before_output();
            let e = stcheck::ReadError::new(stcheck::ReadErrorKind::Io, e.to_string());
            let _ = s.out.flush();
            let written =
                render::unreadable(&mut s.out, &mut err, &render::show(path), &e, o, "file");
            s.finish_job(Status::IoError, false, written, stop);
        }
    }
    turns.done(i);
}

/// The client of the run's URLs, made once (`None` when no URL is named).
#[cfg(feature = "remote")]
static CLIENT: std::sync::OnceLock<Result<stcheck::remote::Remote, String>> =
    std::sync::OnceLock::new();

#[cfg(feature = "remote")]
fn run_url(
    url: &str,
    i: usize,
    o: &Options,
    config: &stcheck::Config,
    turns: &Turns,
    sink: &Mutex<Sink>,
    stop: &AtomicBool,
) {
    use stcheck::remote::Found;
    let mut err = io::stderr();
    let shown = stcheck::escape(url).into_owned();
    let client = match CLIENT.get_or_init(|| remote::client(o)) {
        Ok(c) => c,
        Err(e) => {
            turns.wait(i);
            let mut s = lock(sink);
            let e = stcheck::ReadError::new(stcheck::ReadErrorKind::Io, e.clone());
            let written = render::unreadable(&mut s.out, &mut err, &shown, &e, o, "file");
            s.finish_job(Status::IoError, false, written, stop);
            return;
        }
    };
    let is_index = url
        .split(['?', '#'])
        .next()
        .is_some_and(|p| p.ends_with(stcheck::index::INDEX_SUFFIX));
    if is_index {
        // Shards are written as they are checked: wait for the turn first.
        turns.wait(i);
        let mut guard = lock(sink);
        let s = &mut *guard;
        s.before_output();
        let dir = match shown.rfind('/') {
            Some(k) => shown[..=k].to_owned(),
            None => String::new(),
        };
        let mut out = render::IndexOutput::start_at(&mut s.out, &shown, dir, o);
        let checked = remote::check(client, url, config, &mut |name, outcome| {
            out.shard(name, outcome, o)
        });
        let cost = cost_of(&checked.cost);
        let resolved = checked.resolved.as_deref().unwrap_or(&shown).to_owned();
        let (status, written) = match &checked.outcome {
            Ok(Found::Index(ic)) => {
                let status = if ic.report.is_valid() {
                    Status::Valid
                } else {
                    Status::Invalid
                };
                (
                    status,
                    out.finish_remote(&shown, &ic.report, &resolved, cost),
                )
            }
            Ok(Found::File(_)) => (Status::IoError, Ok(())),
            Err(e) => {
                let e = stcheck::ReadError::new(stcheck::ReadErrorKind::Io, e.to_string());
                let r = out.fail(&e);
                let _ = writeln!(err, "stcheck: {shown}: {e}");
                (Status::IoError, r)
            }
        };
        s.finish_job(status, true, written, stop);
        return;
    }
    let checked = remote::check(client, url, config, &mut |_, _| {});
    turns.wait(i);
    let mut s = lock(sink);
    s.before_output();
    let resolved = checked.resolved.as_deref().unwrap_or(&shown);
    match &checked.outcome {
        Ok(Found::File(f)) => {
            let status = if render::file_valid(&f.checked, o) {
                Status::Valid
            } else {
                Status::Invalid
            };
            let written = render::remote_file(
                &mut s.out,
                &shown,
                &f.checked,
                o,
                resolved,
                cost_of(&checked.cost),
            );
            s.finish_job(status, false, written, stop);
        }
        Ok(Found::Index(_)) => s.finish_job(Status::IoError, false, Ok(()), stop),
        Err(e) => {
            let _ = s.out.flush();
            let e = stcheck::ReadError::new(stcheck::ReadErrorKind::Io, e.to_string());
            let written = render::unreadable(&mut s.out, &mut err, &shown, &e, o, "file");
            s.finish_job(Status::IoError, false, written, stop);
        }
    }
}

#[cfg(feature = "remote")]
fn cost_of(c: &stcheck::remote::Cost) -> stcheck::wire::RemoteCost {
    stcheck::wire::RemoteCost::new(c.requests, c.bytes, c.redirects, c.retries)
}

#[cfg(not(feature = "remote"))]
fn run_url(
    url: &str,
    i: usize,
    o: &Options,
    _: &stcheck::Config,
    turns: &Turns,
    sink: &Mutex<Sink>,
    stop: &AtomicBool,
) {
    turns.wait(i);
    let mut s = lock(sink);
    let message = remote::client(o).err().unwrap_or_default();
    let e = stcheck::ReadError::new(stcheck::ReadErrorKind::Io, message);
    let written = render::unreadable(&mut s.out, &mut io::stderr(), url, &e, o, "file");
    s.finish_job(Status::IoError, false, written, stop);
}

fn exit_code(t: &Summary) -> u8 {
    if t.io_errors > 0 || t.not_checked > 0 {
        2
    } else if t.invalid > 0 {
        1
    } else {
        0
    }
}

fn run(o: &Options) -> u8 {
    let jobs = input::expand(&o.paths, o.follow_links, o.allow_empty);
    let jobs = check::fold_shards(jobs, o);
    let workers = o.jobs.min(jobs.len()).max(1);
    // One file alone gets every thread for its deep scan; many files get one each.
    let threads = if jobs.len() == 1 { o.jobs } else { 1 };
    let turns = Turns {
        next: Mutex::new(0),
        cv: Condvar::new(),
    };
    let stop = AtomicBool::new(false);
    let next = AtomicUsize::new(0);
    let sink = Mutex::new(Sink {
        out: io::BufWriter::new(io::stdout()),
        tally: Summary::default(),
        broken: false,
        bar: progress::Progress::new(jobs.len(), o.json, o.config.reads_data()),
        done: 0,
    });

    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                if stop.load(Ordering::Relaxed) {
                    // Let the jobs after ours go on to their own end.
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= jobs.len() {
                        break;
                    }
                    turns.done(i);
                    continue;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                run_job(job, i, o, threads, &turns, &sink, &stop);
            });
        }
    });
    let mut s = sink.into_inner().unwrap_or_else(|p| p.into_inner());
    if let Some(b) = s.bar.as_mut() {
        b.clear();
    }
    s.tally.exit_code = exit_code(&s.tally);
    if !s.broken && o.json {
        let tally = s.tally;
        if let Err(e) = stcheck::wire::write_line(&mut s.out, "summary", &tally) {
            s.broken = e.kind() == io::ErrorKind::BrokenPipe;
        }
    }
    if let Err(e) = s.out.flush() {
        if !s.broken && e.kind() != io::ErrorKind::BrokenPipe {
            let _ = writeln!(io::stderr(), "stcheck: writing the output: {e}");
            s.tally.io_errors += 1;
        }
    }
    exit_code(&s.tally)
}
