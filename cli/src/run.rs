//! The `stcheck` command line: files, directories, sharded checkpoints, standard input, URLs.
//!
//! Exit codes: 0 every file is valid; 1 at least one file or sharded set is invalid; 2 a usage
//! error or at least one path that could not be checked (never counted as valid or invalid;
//! 2 wins over 1). A broken pipe on standard output ends the run quietly with the status of
//! what was checked so far.
//!
//! What a target is and how it is checked is the gate's (`stcheck_gate::Gate`): this module
//! runs the targets on `--jobs` threads, hands each one's events to the printer of the chosen
//! form (`stcheck_print`: text, JSON Lines, SARIF) in input order, repeats what could not be
//! read on standard error, counts, and draws the progress bar (`progress.rs`) on standard
//! error only; output lines written to a terminal standard output clear it first (`Out`).

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

use stcheck::index::{IndexReport, ShardOutcome};
use stcheck::{Checked, ReadError, ReadMode};
use stcheck_gate::{Shown, Sink, Status, Target, Unchecked, Via};
use stcheck_print::records::Summary;
use stcheck_print::{JsonLines, SarifWriter, Text};

use crate::args::{self, Command, Format, Options, ProgressMode};
use crate::progress::{self, JobHook, Progress, Unit};

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

/// Output in input order, written as it is produced: job `i` writes only when jobs `0..i`
/// have written, and then straight to standard output (no record is built in memory first).
///
/// When there are no more workers than cores, a job whose turn has not come spins a little
/// before it sleeps: on small files the job before it ends within microseconds, and a sleep
/// and wake-up (two futex calls and two context switches per file) cost more than the check
/// itself (20,000 small files with `-j 2` on 2 cores: 0.18 to 0.20 s, against 0.31 to 0.36 s
/// sleeping at once and 0.27 s with `-j 1`). With more workers than cores a spinning job would
/// take the core of the job it waits for, so it does not spin; every job then yields its core a
/// few times before it sleeps, which lets the job it waits for run (10,000 small files, `-j 4`
/// / `-j 8` on 2 cores: 0.20 / 0.30 s sleeping at once, 0.10 / 0.11 s yielding first; `-j 1`
/// 0.13 s).
struct Turns {
    spins: u32,
    /// The first job that has not written yet: read without the lock while spinning, changed
    /// only under it (so a sleeper cannot miss its wake-up).
    next: AtomicUsize,
    lock: Mutex<()>,
    cv: Condvar,
}

/// How many times a job looks at [`Turns::next`], spinning, before it yields.
const TURN_SPINS: u32 = 2_000;

/// How many times a job yields its core (to the job it waits for, with more workers than
/// cores) before it sleeps.
const TURN_YIELDS: u32 = 100;

impl Turns {
    fn new(workers: usize) -> Turns {
        let cores = match workers {
            0 | 1 => 1,
            _ => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        Turns {
            spins: if workers <= cores { TURN_SPINS } else { 0 },
            next: AtomicUsize::new(0),
            lock: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    fn wait(&self, i: usize) {
        let ready = || self.next.load(Ordering::Acquire) >= i;
        for _ in 0..self.spins {
            if ready() {
                return;
            }
            std::hint::spin_loop();
        }
        for _ in 0..TURN_YIELDS {
            if ready() {
                return;
            }
            std::thread::yield_now();
        }
        let mut guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        while !ready() {
            guard = self.cv.wait(guard).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn done(&self, i: usize) {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.next.fetch_max(i + 1, Ordering::Release);
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

/// The printer of the chosen form.
enum Output {
    Text(Text<Out>),
    Json(JsonLines<Out>),
    Sarif(SarifWriter<Out>),
}

impl Output {
    fn out(&mut self) -> &mut Out {
        match self {
            Output::Text(p) => p.get_mut(),
            Output::Json(p) => p.get_mut(),
            Output::Sarif(w) => w.get_mut(),
        }
    }

    fn sink(&mut self) -> &mut dyn Sink {
        match self {
            Output::Text(p) => p,
            Output::Json(p) => p,
            Output::Sarif(w) => w,
        }
    }
}

/// Standard output and the tally, shared by the jobs (one writes at a time, in turn).
struct Shared {
    output: Output,
    tally: Summary,
    broken: bool,
    bar: Option<Progress>,
}

impl Shared {
    /// Count a finished job and account for a write error (a closed pipe ends the run).
    fn finish_job(&mut self, done: stcheck_gate::Done, stop: &AtomicBool) {
        match done.status {
            Status::Valid => self.tally.valid += 1,
            Status::Invalid => self.tally.invalid += 1,
            Status::IoError => self.tally.io_errors += 1,
            Status::NotChecked => self.tally.not_checked += 1,
        }
        if done.status != Status::NotChecked {
            if done.is_index {
                self.tally.indexes += 1;
            } else {
                self.tally.files += 1;
            }
        }
        let written = done.written.and_then(|()| self.output.out().flush());
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
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

/// The sink of job `i`: it waits for the job's turn at its first event, then holds standard
/// output until the job ends; what could not be read is repeated on standard error.
struct InTurn<'r> {
    i: usize,
    turns: &'r Turns,
    shared: &'r Mutex<Shared>,
    guard: Option<MutexGuard<'r, Shared>>,
}

impl<'r> InTurn<'r> {
    fn shared(&mut self) -> &mut Shared {
        if self.guard.is_none() {
            self.turns.wait(self.i);
            self.guard = Some(lock(self.shared));
        }
        self.guard.as_mut().expect("taken above")
    }

    /// Forward an event to the printer, unless the pipe is closed.
    fn forward(&mut self, f: impl FnOnce(&mut dyn Sink) -> io::Result<()>) -> io::Result<()> {
        let s = self.shared();
        if s.broken {
            return Ok(());
        }
        f(s.output.sink())
    }
}

impl Sink for InTurn<'_> {
    fn file(
        &mut self,
        at: &Shown<'_>,
        checked: &Checked<'_>,
        via: &Via,
        status: Status,
    ) -> io::Result<()> {
        self.forward(|s| s.file(at, checked, via, status))
    }

    fn index_start(&mut self, at: &Shown<'_>, mode: Option<ReadMode>) -> io::Result<()> {
        self.forward(|s| s.index_start(at, mode))
    }

    fn shard(
        &mut self,
        at: &Shown<'_>,
        name: &str,
        outcome: ShardOutcome<'_, '_>,
        via: Option<&Via>,
        status: Status,
    ) -> io::Result<()> {
        self.forward(|s| s.shard(at, name, outcome, via, status))
    }

    fn index_end(
        &mut self,
        at: &Shown<'_>,
        outcome: Result<&IndexReport, &ReadError>,
        via: &Via,
        status: Status,
    ) -> io::Result<()> {
        if let Err(e) = outcome {
            self.shared()
                .error_line(&format!("stcheck: {}: {e}", at.text));
        }
        self.forward(|s| s.index_end(at, outcome, via, status))
    }

    fn not_checked(&mut self, at: &Shown<'_>, why: &ReadError, how: Unchecked) -> io::Result<()> {
        if how == Unchecked::Unreadable {
            self.shared()
                .error_line(&format!("stcheck: {}: {why}", at.text));
        }
        self.forward(|s| s.not_checked(at, why, how))
    }
}

/// A counting semaphore: at most `n` jobs of one kind at once.
struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
}

/// A slot taken, given back when dropped.
struct Slot<'s>(&'s Slots);

impl Slots {
    fn new(n: usize) -> Self {
        Slots {
            free: Mutex::new(n.max(1)),
            freed: Condvar::new(),
        }
    }

    fn take(&self) -> Slot<'_> {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|p| p.into_inner());
        }
        *free -= 1;
        Slot(self)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut free = self.0.free.lock().unwrap_or_else(|p| p.into_inner());
        *free += 1;
        drop(free);
        self.0.freed.notify_one();
    }
}

/// What every job shares.
struct Run<'r> {
    o: &'r Options,
    threads: usize,
    turns: Turns,
    shared: Mutex<Shared>,
    stop: AtomicBool,
    bar: Option<Progress>,
}

impl Run<'_> {
    fn run_job(&self, target: &Target, i: usize, planned: u64) {
        let hook = self.bar.as_ref().map_or_else(JobHook::none, Progress::hook);
        if let Some(b) = &self.bar {
            b.start(&target.shown());
        }
        let mut sink = InTurn {
            i,
            turns: &self.turns,
            shared: &self.shared,
            guard: None,
        };
        let done = self.o.gate.check(target, self.threads, &hook, &mut sink);
        sink.shared().finish_job(done, &self.stop);
        drop(sink);
        if let Some(b) = &self.bar {
            b.job_done(planned, hook.told());
        }
        self.turns.done(i);
    }
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
    let gate = &o.gate;
    let targets = stcheck_gate::walk::expand_for(&o.paths, gate.options());
    let by_bytes = gate.config().reads_data() && o.progress != ProgressMode::Never;
    let plan = gate.plan(targets, by_bytes);
    let targets = &plan.targets;
    // URL targets wait on the network, not the CPU: they have a bound of their own
    // (--url-jobs, default 8), and --jobs still caps the files checked here at once. One file
    // alone gets every thread for its deep scan (a header check needs none, and the number of
    // cores is not even asked: it reads the cgroup's quota); many files get one each.
    let is_url = |t: &Target| matches!(t, Target::Url(_));
    let url_jobs = gate.options().url_jobs();
    let jobs = match targets.len() {
        0 | 1 if !gate.config().reads_data() => 1,
        _ => o.jobs(),
    };
    let workers = if targets.iter().any(is_url) {
        jobs.max(url_jobs)
    } else {
        jobs
    };
    let workers = workers.min(targets.len()).max(1);
    let cpu = Slots::new(jobs);
    let net = Slots::new(url_jobs);
    // Slots are taken in the targets' order (under this lock), so a job that holds one
    // never waits for the turn of a job that waits for one.
    let dispatch = Mutex::new(());
    let threads = if targets.len() == 1 { jobs } else { 1 };
    let unit = if gate.config().reads_data() {
        Unit::Bytes(plan.total_bytes)
    } else {
        Unit::Files(targets.len() as u64)
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
        Format::Json => Output::Json(JsonLines::new(out, o.print())),
        Format::Text => Output::Text(Text::new(out, o.print())),
    };
    let run = Run {
        o,
        threads,
        turns: Turns::new(workers),
        shared: Mutex::new(Shared {
            output,
            tally: Summary::default(),
            broken: false,
            bar: bar.clone(),
        }),
        stop: AtomicBool::new(false),
        bar,
    };
    let next = AtomicUsize::new(0);
    // One worker needs no thread of its own.
    let work = || loop {
        if run.stop.load(Ordering::Relaxed) {
            // Let the jobs after ours go on to their own end.
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= targets.len() {
                break;
            }
            run.turns.done(i);
            continue;
        }
        let (i, target, _slot) = {
            let _order = dispatch.lock().unwrap_or_else(|p| p.into_inner());
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(target) = targets.get(i) else { break };
            let slots = if is_url(target) { &net } else { &cpu };
            (i, target, slots.take())
        };
        run.run_job(target, i, plan.bytes.get(i).copied().unwrap_or(0));
    };
    if workers == 1 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(work);
            }
        });
    }
    if let Some(b) = &run.bar {
        b.clear();
    }
    let mut s = run.shared.into_inner().unwrap_or_else(|p| p.into_inner());
    s.tally.exit_code = exit_code(&s.tally);
    let tally = s.tally;
    let written = if s.broken {
        Ok(())
    } else {
        match s.output {
            Output::Text(mut p) => p
                .summary(&tally, started.elapsed())
                .and_then(|()| p.get_mut().drain(true)),
            Output::Json(mut p) => p.summary(&tally).and_then(|()| p.get_mut().drain(true)),
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
