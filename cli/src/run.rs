//! The `stcheck` command line: files, directories, sharded checkpoints, standard input.
//!
//! Exit codes: 0 every file is valid; 1 at least one file or sharded set is invalid; 2 a usage
//! error or at least one path that could not be checked (never counted as valid or invalid;
//! 2 wins over 1). A broken pipe on standard output ends the run quietly with the status of
//! what was checked so far.
//!
//! Three output forms, each written as the jobs finish, in input order:
//!
//! - text (the default; `--help` and README.md "What it prints" document it): one line per
//!   file, `path: ok (...)`, `path: error RULE: ...` or `path: not checked: ...`, warnings and
//!   shards indented below, then `summary: N files: V valid, I invalid, C could not be checked
//!   (T s)`; `--quiet` leaves out what is valid;
//! - JSON Lines (`--format json`, `--json`): the records of `stcheck::wire`, documented in
//!   `docs/json-output.md`;
//! - SARIF 2.1.0 (`--format sarif`): one log, `stcheck::sarif`, documented in `docs/sarif.md`.
//!
//! The progress bar (`progress.rs`) is drawn on standard error only; output lines written to a
//! terminal standard output clear it first (`Out`).
//!
//! Adding a kind of input (a URL, say) is a new `Job` variant (`input.rs`), a branch of
//! `Run::job` that hands the bytes to the library's one checker, and its option in `args.rs`.

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use crate::args::{self, Command, Format, Options, ProgressMode};
use crate::progress::{self, JobHook, Progress, Unit};
use crate::{check, remote, render};
use stcheck::index::ShardOutcome;
use stcheck::ReadError;
use stcheck_gate::walk::{self as input, Job};
use stcheck_print::records::Summary;
use stcheck_print::sarif::{ArtifactLocation, SarifWriter, Shards};

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
        Command::Explain(rule) => return explain(rule),
        Command::Run(o) => o,
    };
    ExitCode::from(run(&o))
}

/// `--explain RULE`: the rule's section of SPEC.md, as compiled in.
fn explain(rule: stcheck::Rule) -> ExitCode {
    match stcheck_print::spec::RuleText::of(rule) {
        Some(t) => {
            let _ = writeln!(io::stdout(), "{}", t.section);
            ExitCode::SUCCESS
        }
        None => {
            eprintln!("stcheck: --explain {rule}: SPEC.md has no section for this rule");
            ExitCode::from(2)
        }
    }
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

/// Standard output. With a progress bar on the same terminal, whole lines are written while the
/// bar is cleared (a partial line waits for its end, so the bar never lands inside a line);
/// otherwise it is a plain buffer, flushed after each job.
struct Out {
    stdout: io::Stdout,
    pending: Vec<u8>,
    bar: Option<Progress>,
}

/// Bytes kept before they are written even without a flush.
const OUT_BUFFER: usize = 64 * 1024;

impl Out {
    /// Write what is pending: everything, or with a bar only whole lines (unless `all`).
    fn drain(&mut self, all: bool) -> io::Result<()> {
        let end = if all || self.bar.is_none() {
            self.pending.len()
        } else {
            self.pending
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1)
        };
        if end == 0 {
            return Ok(());
        }
        let (stdout, bytes) = (&self.stdout, &self.pending[..end]);
        let write = || {
            let mut w = stdout.lock();
            w.write_all(bytes)?;
            w.flush()
        };
        let r = match &self.bar {
            Some(b) => b.suspend(write),
            None => write(),
        };
        self.pending.drain(..end);
        r
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        if self.pending.len() >= OUT_BUFFER {
            self.drain(false)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.drain(false)
    }
}

/// Where records go: lines (text or JSON Lines), or one SARIF log.
enum Output {
    Lines(Out),
    Sarif(SarifWriter<Out>),
}

impl Output {
    fn out(&mut self) -> &mut Out {
        match self {
            Output::Lines(o) => o,
            Output::Sarif(w) => w.get_mut(),
        }
    }
}

/// Standard output and the tally, shared by the jobs (one writes at a time, in turn).
struct Sink {
    output: Output,
    tally: Summary,
    broken: bool,
    bar: Option<Progress>,
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
        let written = written.and_then(|()| self.output.out().flush());
        if let Err(e) = written {
            if e.kind() == io::ErrorKind::BrokenPipe {
                self.broken = true;
                stop.store(true, Ordering::Relaxed);
            } else {
                self.error_line(&format!("stcheck: writing the output: {e}"));
                self.tally.io_errors += 1;
            }
        }
    }

    /// A line on standard error (with the bar cleared while it is written).
    fn error_line(&self, line: &str) {
        let write = || {
            let _ = writeln!(io::stderr(), "{line}");
        };
        match &self.bar {
            Some(b) => b.suspend(write),
            None => write(),
        }
    }

    /// A checked file: its lines or record (written by `lines`), or its results at `at`
    /// (`None` for standard input).
    fn file(
        &mut self,
        at: Option<&ArtifactLocation>,
        c: &stcheck::Checked<'_>,
        o: &Options,
        lines: impl FnOnce(&mut Out) -> io::Result<()>,
    ) -> (Status, io::Result<()>) {
        let status = if render::file_valid(c, o) {
            Status::Valid
        } else {
            Status::Invalid
        };
        if self.broken || (o.quiet && o.format == Format::Text && status == Status::Valid) {
            return (status, Ok(()));
        }
        let written = match &mut self.output {
            Output::Lines(out) => lines(out),
            Output::Sarif(w) => w.file(at, c),
        };
        (status, written)
    }

    /// A path that could not be read: on stdout, and repeated on stderr.
    fn unreadable(
        &mut self,
        shown: &str,
        at: Option<&ArtifactLocation>,
        e: &ReadError,
        o: &Options,
    ) -> io::Result<()> {
        self.error_line(&format!("stcheck: {shown}: {e}"));
        match &mut self.output {
            Output::Lines(out) => render::unreadable(out, shown, e, o, "file"),
            Output::Sarif(w) => {
                w.not_checked(at, shown, e);
                Ok(())
            }
        }
    }

    /// A path not checked by the file-system policy.
    fn not_checked(
        &mut self,
        shown: &str,
        path: &Path,
        why: &ReadError,
        o: &Options,
    ) -> io::Result<()> {
        match &mut self.output {
            Output::Lines(out) => render::not_checked(out, shown, why, o),
            Output::Sarif(w) => {
                w.not_checked(Some(&ArtifactLocation::of_path(path)), shown, why);
                Ok(())
            }
        }
    }
}

fn lock(sink: &Mutex<Sink>) -> std::sync::MutexGuard<'_, Sink> {
    sink.lock().unwrap_or_else(|p| p.into_inner())
}

/// What every job shares.
struct Run<'r> {
    o: &'r Options,
    threads: usize,
    turns: Turns,
    sink: Mutex<Sink>,
    stop: AtomicBool,
    bar: Option<Progress>,
}

impl Run<'_> {
    fn run_job(&self, job: &Job, i: usize, planned: u64) {
        let hook = self.bar.as_ref().map_or_else(JobHook::none, Progress::hook);
        if let Some(b) = &self.bar {
            b.start(&job_path(job));
        }
        self.job(job, i, &hook);
        if let Some(b) = &self.bar {
            b.job_done(planned, hook.told());
        }
        self.turns.done(i);
    }

    fn job(&self, job: &Job, i: usize, hook: &JobHook<'_>) {
        let (o, turns, sink, stop) = (self.o, &self.turns, &self.sink, &self.stop);
        let config = o.config_for(self.threads);
        match job {
            Job::File(path) => {
                let shown = render::show(path);
                let at = ArtifactLocation::of_path(path);
                let result = check::file(path, &config, o, hook, |c| {
                    turns.wait(i);
                    let mut s = lock(sink);
                    let (status, written) = s.file(Some(&at), &c, o, |out| {
                        render::file(out, &shown, &c, o, o.mode, "")
                    });
                    s.finish_job(status, false, written, stop);
                });
                if let Err(e) = result {
                    turns.wait(i);
                    let mut s = lock(sink);
                    if e.is_policy() {
                        let written = s.not_checked(&shown, path, &e, o);
                        s.finish_job(Status::NotChecked, false, written, stop);
                    } else {
                        let written = s.unreadable(&shown, Some(&at), &e, o);
                        s.finish_job(Status::IoError, false, written, stop);
                    }
                }
            }
            Job::Stdin => {
                let result = check::stdin(&config, hook);
                turns.wait(i);
                let mut s = lock(sink);
                let (status, written) = match result {
                    Ok(c) => s.file(None, &c, o, |out| {
                        render::file(out, "<stdin>", &c, o, stcheck::ReadMode::Stream, "")
                    }),
                    Err(e) => (Status::IoError, s.unreadable("<stdin>", None, &e, o)),
                };
                s.finish_job(status, false, written, stop);
            }
            Job::Url(url) => self.url(url, i, &config),
            Job::Index(path, root) => {
                // Shards are written as they are checked, so the index waits for its turn first.
                turns.wait(i);
                let mut guard = lock(sink);
                let s = &mut *guard;
                let (status, written) = index_job(s, path, root.as_deref(), &config, o, hook);
                s.finish_job(status, true, written, stop);
            }
            Job::NotChecked(path, why) => {
                turns.wait(i);
                let mut s = lock(sink);
                let written = s.not_checked(&render::show(path), path, why, o);
                s.finish_job(Status::NotChecked, false, written, stop);
            }
            Job::WalkError(path, e) => {
                turns.wait(i);
                let mut s = lock(sink);
                let e = ReadError::new(stcheck::ReadErrorKind::Io, e.to_string());
                let at = ArtifactLocation::of_path(path);
                let written = s.unreadable(&render::show(path), Some(&at), &e, o);
                s.finish_job(Status::IoError, false, written, stop);
            }
        }
    }
}

/// A job's path, as shown on the progress bar.
fn job_path(job: &Job) -> String {
    match job {
        Job::File(p) | Job::Index(p, _) | Job::NotChecked(p, _) | Job::WalkError(p, _) => {
            render::show(p)
        }
        Job::Url(url) => stcheck_gate::target::shown_url(url),
        Job::Stdin => "<stdin>".to_owned(),
    }
}

/// Check a sharded set and write it: in text or JSON as its shards come, in SARIF the shards'
/// results as they come and the set's own after them.
fn index_job(
    s: &mut Sink,
    path: &Path,
    root: Option<&Path>,
    config: &stcheck::Config,
    o: &Options,
    hook: &JobHook<'_>,
) -> (Status, io::Result<()>) {
    let shown = render::show(path);
    let status_of = |r: &Result<stcheck::index::IndexReport, ReadError>| match r {
        Ok(rep)
            if stcheck_print::records::index_status(rep, o.profile)
                == stcheck_print::records::Status::Valid =>
        {
            Status::Valid
        }
        Ok(_) => Status::Invalid,
        Err(_) => Status::IoError,
    };
    let result;
    let written = match &mut s.output {
        Output::Lines(out) => {
            let mut lines = render::IndexOutput::start(out, path, o);
            result = check::index(path, root, config, o, hook, &mut |name, outcome| {
                lines.shard(name, outcome, o)
            });
            match &result {
                Ok(rep) => lines.finish(&shown, rep, o),
                Err(e) => lines.fail(&shown, e),
            }
        }
        Output::Sarif(w) => {
            let at = ArtifactLocation::of_path(path);
            let shards = Shards::of_index_path(path);
            let mut written = Ok(());
            result = check::index(path, root, config, o, hook, &mut |name, outcome| {
                if let (ShardOutcome::Checked(c), Ok(())) = (outcome, &written) {
                    written = w.file(Some(&shards.location(name)), c);
                }
            });
            written.and_then(|()| match &result {
                Ok(rep) => w.index(&at, &shards, rep),
                Err(e) => {
                    w.not_checked(Some(&at), &shown, e);
                    Ok(())
                }
            })
        }
    };
    if let Err(e) = &result {
        s.error_line(&format!("stcheck: {shown}: {e}"));
    }
    (status_of(&result), written)
}

/// The client of the run's URLs, made once (`None` when no URL is named).
#[cfg(feature = "remote")]
static CLIENT: std::sync::OnceLock<Result<stcheck_gate::remote::Remote, String>> =
    std::sync::OnceLock::new();

impl Run<'_> {
    /// A file or sharded set named by URL, checked by the library's remote source.
    #[cfg(feature = "remote")]
    fn url(&self, url: &str, i: usize, config: &stcheck::Config) {
        use stcheck_gate::remote::Found;
        let (o, turns, sink, stop) = (self.o, &self.turns, &self.sink, &self.stop);
        let shown = stcheck_gate::target::shown_url(url);
        let at = ArtifactLocation::of_url(url);
        let client = match CLIENT.get_or_init(|| remote::client(o)) {
            Ok(c) => c,
            Err(e) => {
                turns.wait(i);
                let mut s = lock(sink);
                let e = ReadError::new(stcheck::ReadErrorKind::Io, e.clone());
                let written = s.unreadable(&shown, Some(&at), &e, o);
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
            let dir = match shown.rfind('/') {
                Some(k) => shown[..=k].to_owned(),
                None => String::new(),
            };
            let (checked, written) = match &mut s.output {
                Output::Lines(out) => {
                    let mut lines = render::IndexOutput::start_at(out, &shown, dir, o).remote();
                    let checked = remote::check(client, url, config, &mut |name, outcome| {
                        lines.shard(name, outcome, o)
                    });
                    let resolved = checked.resolved.as_deref().unwrap_or(&shown).to_owned();
                    let written = match &checked.outcome {
                        Ok(Found::Index(ic)) => lines.finish_remote(
                            &shown,
                            &ic.report,
                            &resolved,
                            cost_of(&checked.cost),
                            o,
                        ),
                        Ok(Found::File(_)) => Ok(()),
                        Err(e) => {
                            let e = ReadError::new(stcheck::ReadErrorKind::Io, e.to_string());
                            lines.fail(&shown, &e)
                        }
                    };
                    (checked, written)
                }
                Output::Sarif(w) => {
                    let shards = Shards::of_index_url(url);
                    let mut written = Ok(());
                    let checked = remote::check(client, url, config, &mut |name, outcome| {
                        if let (ShardOutcome::Checked(c), Ok(())) = (outcome, &written) {
                            written = w.file(Some(&shards.location(name)), c);
                        }
                    });
                    let written = written.and_then(|()| match &checked.outcome {
                        Ok(Found::Index(ic)) => w.index(&at, &shards, &ic.report),
                        Ok(Found::File(_)) => Ok(()),
                        Err(e) => {
                            let e = ReadError::new(stcheck::ReadErrorKind::Io, e.to_string());
                            w.not_checked(Some(&at), &shown, &e);
                            Ok(())
                        }
                    });
                    (checked, written)
                }
            };
            let status = match &checked.outcome {
                Ok(Found::Index(ic))
                    if stcheck_print::records::index_status(&ic.report, o.profile)
                        == stcheck_print::records::Status::Valid =>
                {
                    Status::Valid
                }
                Ok(Found::Index(_)) => Status::Invalid,
                Ok(Found::File(_)) => Status::IoError,
                Err(e) => {
                    s.error_line(&format!("stcheck: {shown}: {e}"));
                    Status::IoError
                }
            };
            s.finish_job(status, true, written, stop);
            return;
        }
        let checked = remote::check(client, url, config, &mut |_, _| {});
        turns.wait(i);
        let mut s = lock(sink);
        let resolved = checked.resolved.as_deref().unwrap_or(&shown);
        let (status, written) = match &checked.outcome {
            Ok(Found::File(f)) => s.file(Some(&at), &f.checked, o, |out| {
                render::remote_file(out, &shown, &f.checked, o, resolved, cost_of(&checked.cost))
            }),
            Ok(Found::Index(_)) => (Status::IoError, Ok(())),
            Err(e) => {
                let e = ReadError::new(stcheck::ReadErrorKind::Io, e.to_string());
                (Status::IoError, s.unreadable(&shown, Some(&at), &e, o))
            }
        };
        s.finish_job(status, false, written, stop);
    }

    /// Built without the `remote` feature: a URL cannot be checked.
    #[cfg(not(feature = "remote"))]
    fn url(&self, url: &str, i: usize, _: &stcheck::Config) {
        self.turns.wait(i);
        let mut s = lock(&self.sink);
        let message = remote::client(self.o).err().unwrap_or_default();
        let e = ReadError::new(stcheck::ReadErrorKind::Io, message);
        let at = ArtifactLocation::of_url(url);
        let written = s.unreadable(&stcheck_gate::target::shown_url(url), Some(&at), &e, self.o);
        s.finish_job(Status::IoError, false, written, &self.stop);
    }
}

#[cfg(feature = "remote")]
fn cost_of(c: &stcheck_gate::remote::Cost) -> stcheck_print::records::RemoteCost {
    stcheck_print::records::RemoteCost::new(c.requests, c.bytes, c.redirects, c.retries)
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
    let started = Instant::now();
    let jobs = input::expand(&o.paths, o.follow_links, o.allow_empty);
    let by_bytes = o.config.reads_data() && o.progress != ProgressMode::Never;
    let plan = check::plan(jobs, o, by_bytes);
    let jobs = &plan.jobs;
    let workers = o.jobs.min(jobs.len()).max(1);
    // One file alone gets every thread for its deep scan; many files get one each.
    let threads = if jobs.len() == 1 { o.jobs } else { 1 };
    let unit = if o.config.reads_data() {
        Unit::Bytes(plan.total_bytes)
    } else {
        Unit::Files(jobs.len() as u64)
    };
    let bar = Progress::new(o.progress, unit);
    let out = Out {
        stdout: io::stdout(),
        pending: Vec::new(),
        bar: bar.clone().filter(|_| progress::stdout_is_terminal()),
    };
    let output = match o.format {
        Format::Sarif => {
            let base = std::env::current_dir().ok();
            match SarifWriter::start(out, base.as_deref()) {
                Ok(w) => Output::Sarif(w),
                Err(e) => {
                    if let Some(b) = &bar {
                        b.clear();
                    }
                    // A pipe closed before anything was checked ends the run quietly, with the
                    // status of what was checked so far: nothing.
                    if e.kind() == io::ErrorKind::BrokenPipe {
                        return 0;
                    }
                    eprintln!("stcheck: writing the output: {e}");
                    return 2;
                }
            }
        }
        Format::Text | Format::Json => Output::Lines(out),
    };
    let run = Run {
        o,
        threads,
        turns: Turns {
            next: Mutex::new(0),
            cv: Condvar::new(),
        },
        sink: Mutex::new(Sink {
            output,
            tally: Summary::default(),
            broken: false,
            bar: bar.clone(),
        }),
        stop: AtomicBool::new(false),
        bar,
    };
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                if run.stop.load(Ordering::Relaxed) {
                    // Let the jobs after ours go on to their own end.
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= jobs.len() {
                        break;
                    }
                    run.turns.done(i);
                    continue;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                run.run_job(job, i, plan.bytes.get(i).copied().unwrap_or(0));
            });
        }
    });
    if let Some(b) = &run.bar {
        b.clear();
    }
    let mut s = run.sink.into_inner().unwrap_or_else(|p| p.into_inner());
    s.tally.exit_code = exit_code(&s.tally);
    let tally = s.tally;
    let written = if s.broken {
        Ok(())
    } else {
        match s.output {
            Output::Lines(ref mut out) => match o.format {
                Format::Json => stcheck_print::records::write_line(out, "summary", &tally),
                _ => render::summary(out, &tally, started.elapsed()),
            }
            .and_then(|()| out.drain(true)),
            Output::Sarif(w) => w
                .finish(tally.exit_code)
                .and_then(|mut out| out.drain(true)),
        }
    };
    if let Err(e) = written {
        if e.kind() != io::ErrorKind::BrokenPipe {
            let _ = writeln!(io::stderr(), "stcheck: writing the output: {e}");
            s.tally.io_errors += 1;
        }
    }
    exit_code(&s.tally)
}
