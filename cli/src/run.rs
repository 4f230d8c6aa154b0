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
use stcheck_print::{text_summary, Github, JsonLines, SarifWriter, Text};

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
            let _ = io::stdout().write_all(args::help().as_bytes());
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

/// Output in input order without workers waiting for their turn: each job prints into a
/// buffer of its own ([`JobOutput`]), and what is finished is written in input order by the job
/// that completes the run of finished jobs (the first not yet written). A job that is first
/// writes its lines as it produces them, so a long job (a set of many shards) shows its progress
/// as before. A worker that gets [`REORDER_PER_WORKER`] times the number of workers ahead of the
/// first unwritten job waits for *space* before it starts another, not for a turn, so what is
/// held is bounded.
///
/// The jobs used to wait for their turn to write (spinning, yielding, then sleeping): on a
/// machine whose cores are busy the job a waiter needs is not running, and 2,000 small files
/// took 4-35 times as long with the default `-j` as with `-j 1` (`benches/contention.py`
/// gives the figures of this design).
struct Order {
    /// The first job whose output has not been written entirely (also [`Run::first`]).
    next: usize,
    /// Jobs after `next` that have finished, with their output.
    ready: std::collections::BTreeMap<usize, Finished>,
    tally: Summary,
    /// Jobs asleep on [`Run::written`]: a job that ends wakes them only when there are some
    /// (a wake-up is a system call even when nobody waits: two of them for every file).
    waiting: usize,
}

/// A finished job's output, waiting for the jobs before it.
struct Finished {
    bytes: Vec<u8>,
    errors: Vec<String>,
}

/// How many finished jobs may wait for the first unwritten one, per worker.
const REORDER_PER_WORKER: usize = 64;

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
    Github(Github<Out>),
}

impl Output {
    fn out(&mut self) -> &mut Out {
        match self {
            Output::Text(p) => p.get_mut(),
            Output::Json(p) => p.get_mut(),
            Output::Sarif(w) => w.get_mut(),
            Output::Github(p) => p.get_mut(),
        }
    }

    fn sink(&mut self) -> &mut dyn Sink {
        match self {
            Output::Text(p) => p,
            Output::Json(p) => p,
            Output::Sarif(w) => w,
            Output::Github(p) => p,
        }
    }
}

/// Standard output, shared by the jobs (written by one job at a time, in input order).
struct Shared {
    output: Output,
    broken: bool,
    bar: Option<Progress>,
}

/// Count a finished job in `tally`.
fn count(tally: &mut Summary, done: &stcheck_gate::Done) {
    match done.status {
        Status::Valid => tally.valid += 1,
        Status::Invalid => tally.invalid += 1,
        Status::IoError => tally.io_errors += 1,
        Status::NotChecked => tally.not_checked += 1,
    }
    if done.status != Status::NotChecked {
        if done.is_index {
            tally.indexes += 1;
        } else {
            tally.files += 1;
        }
    }
}

impl Shared {
    /// Write a job's lines: `errors` on standard error, `bytes` to the output (unless the pipe
    /// is closed).
    fn put(&mut self, bytes: &[u8], errors: &[String]) -> io::Result<()> {
        for line in errors {
            self.error_line(line);
        }
        if self.broken || bytes.is_empty() {
            return Ok(());
        }
        self.output.out().write_all(bytes)
    }

    /// Account for a write error: a closed pipe ends the run, any other is counted.
    fn failed(&mut self, written: io::Result<()>, tally: &mut Summary, stop: &AtomicBool) {
        if let Err(e) = written {
            if e.kind() == io::ErrorKind::BrokenPipe {
                self.broken = true;
                stop.store(true, Ordering::Relaxed);
            } else {
                self.error_line(&format!("stcheck: writing the output: {e}"));
                tally.io_errors += 1;
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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where job `i` prints: a printer of its own into memory (text, JSON Lines, GitHub commands),
/// whose bytes go to standard output as soon as every job before it has been written; or, for
/// SARIF (one document, whose printer numbers its results), the shared printer, in the job's
/// turn.
struct JobOutput<'r> {
    i: usize,
    run: &'r Run<'r>,
    printer: JobPrinter,
    /// Lines for standard error not written yet.
    errors: Vec<String>,
    /// Whether every job before this one has been written: its lines then go out as they come.
    first: bool,
}

enum JobPrinter {
    Text(Text<Vec<u8>>),
    Json(JsonLines<Vec<u8>>),
    Github(Github<Vec<u8>>),
    /// The shared printer (SARIF, GitHub annotations).
    Shared,
}

impl JobPrinter {
    fn bytes(&mut self) -> Option<&mut Vec<u8>> {
        match self {
            JobPrinter::Text(p) => Some(p.get_mut()),
            JobPrinter::Json(p) => Some(p.get_mut()),
            JobPrinter::Github(p) => Some(p.get_mut()),
            JobPrinter::Shared => None,
        }
    }
}

impl<'r> JobOutput<'r> {
    fn is_first(&mut self) -> bool {
        self.first = self.first || self.run.first.load(Ordering::Acquire) == self.i;
        self.first
    }

    /// The shared output once this job is first: for SARIF the job waits for that (asleep: a
    /// job ahead of it holds its turn, and the capacity bound keeps the wait short of a hang).
    fn wait_first(&mut self) -> MutexGuard<'r, Shared> {
        let run = self.run;
        if !self.is_first() {
            let mut order = lock(&run.order);
            while order.next < self.i && !run.stop.load(Ordering::Relaxed) {
                order = run.wait_written(order);
            }
            self.first = true;
        }
        lock(&run.shared)
    }

    /// Print an event with the job's printer, and pass what it printed on if the job is first.
    fn forward(&mut self, f: impl FnOnce(&mut dyn Sink) -> io::Result<()>) -> io::Result<()> {
        let p = match &mut self.printer {
            JobPrinter::Text(p) => p as &mut dyn Sink,
            JobPrinter::Json(p) => p,
            JobPrinter::Github(p) => p,
            JobPrinter::Shared => {
                let mut s = self.wait_first();
                if s.broken {
                    return Ok(());
                }
                return f(s.output.sink());
            }
        };
        f(p)?;
        if self.is_first() {
            let mut s = lock(&self.run.shared);
            let bytes = self.printer.bytes().map(std::mem::take).unwrap_or_default();
            let errors = std::mem::take(&mut self.errors);
            s.put(&bytes, &errors)?;
        }
        Ok(())
    }

    /// A line for standard error, written in the job's order.
    fn error_line(&mut self, line: String) {
        if matches!(self.printer, JobPrinter::Shared) {
            self.wait_first().error_line(&line);
        } else if self.is_first() {
            lock(&self.run.shared).error_line(&line);
        } else {
            self.errors.push(line);
        }
    }

    /// The job has ended: count it, and write its output and every finished job's after it,
    /// if it is first; otherwise leave its output for the job before it.
    fn finish(mut self, done: stcheck_gate::Done) {
        let run = self.run;
        let mut bytes = self.printer.bytes().map(std::mem::take).unwrap_or_default();
        let mut errors = std::mem::take(&mut self.errors);
        let mut order = lock(&run.order);
        count(&mut order.tally, &done);
        if order.next != self.i {
            // A job before this one has not ended yet: it writes this one's output.
            if done.written.is_err() {
                lock(&run.shared).failed(done.written, &mut order.tally, &run.stop);
            }
            order.ready.insert(self.i, Finished { bytes, errors });
            return;
        }
        let mut s = lock(&run.shared);
        let mut written = done.written;
        loop {
            let put = s.put(&bytes, &errors);
            s.failed(written.and(put), &mut order.tally, &run.stop);
            order.next += 1;
            let next = order.next;
            match order.ready.remove(&next) {
                Some(f) => (bytes, errors, written) = (f.bytes, f.errors, Ok(())),
                None => break,
            }
        }
        let flushed = s.output.out().flush();
        s.failed(flushed, &mut order.tally, &run.stop);
        drop(s);
        run.first.store(order.next, Ordering::Release);
        // Read under the lock: a job that is to wait counts itself before it sleeps.
        let wake = order.waiting > 0;
        drop(order);
        if wake {
            run.written.notify_all();
        }
    }
}

impl Sink for JobOutput<'_> {
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
            self.error_line(format!("stcheck: {}: {e}", at.text));
        }
        self.forward(|s| s.index_end(at, outcome, via, status))
    }

    fn not_checked(&mut self, at: &Shown<'_>, why: &ReadError, how: Unchecked) -> io::Result<()> {
        if how == Unchecked::Unreadable {
            self.error_line(format!("stcheck: {}: {why}", at.text));
        }
        self.forward(|s| s.not_checked(at, why, how))
    }
}

/// A counting semaphore: at most `n` jobs of one kind at once.
struct Slots {
    /// Free slots, and jobs asleep waiting for one (woken only when there are some).
    free: Mutex<(usize, usize)>,
    freed: Condvar,
}

/// A slot taken, given back when dropped.
struct Slot<'s>(&'s Slots);

impl Slots {
    fn new(n: usize) -> Self {
        Slots {
            free: Mutex::new((n.max(1), 0)),
            freed: Condvar::new(),
        }
    }

    fn take(&self) -> Slot<'_> {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        while free.0 == 0 {
            free.1 += 1;
            free = self.freed.wait(free).unwrap_or_else(|p| p.into_inner());
            free.1 -= 1;
        }
        free.0 -= 1;
        Slot(self)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut free = self.0.free.lock().unwrap_or_else(|p| p.into_inner());
        free.0 += 1;
        let wake = free.1 > 0;
        drop(free);
        if wake {
            self.0.freed.notify_one();
        }
    }
}

/// What every job shares.
struct Run<'r> {
    o: &'r Options,
    threads: usize,
    order: Mutex<Order>,
    /// [`Order::next`], read without the lock.
    first: AtomicUsize,
    /// Signalled when jobs' output has been written (there is space, a turn has come).
    written: Condvar,
    /// How many jobs may be started past the first unwritten one.
    capacity: usize,
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
        let printer = match self.o.format {
            Format::Text => JobPrinter::Text(Text::new(Vec::new(), self.o.print())),
            Format::Json => JobPrinter::Json(JsonLines::new(Vec::new(), self.o.print())),
            Format::Github => JobPrinter::Github(Github::new(Vec::new())),
            Format::Sarif => JobPrinter::Shared,
        };
        let mut sink = JobOutput {
            i,
            run: self,
            printer,
            errors: Vec::new(),
            first: false,
        };
        let done = self.o.gate.check(target, self.threads, &hook, &mut sink);
        sink.finish(done);
        if let Some(b) = &self.bar {
            b.job_done(planned, hook.told());
        }
    }

    /// Wait until job `i` may start: fewer than [`Run::capacity`] jobs before it are still
    /// unwritten (or the run is stopping).
    fn wait_for_space(&self, i: usize) {
        if i < self.first.load(Ordering::Acquire) + self.capacity {
            return;
        }
        let mut order = lock(&self.order);
        while i >= order.next + self.capacity && !self.stop.load(Ordering::Relaxed) {
            order = self.wait_written(order);
        }
    }

    /// Sleep on [`Run::written`], counted in [`Order::waiting`].
    fn wait_written<'o>(&self, mut order: MutexGuard<'o, Order>) -> MutexGuard<'o, Order> {
        order.waiting += 1;
        let mut order = self.written.wait(order).unwrap_or_else(|p| p.into_inner());
        order.waiting -= 1;
        order
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
    // --expect-sha256 gives the hash of one file: a usage error otherwise.
    if let Err(e) = gate.options().one_file(targets) {
        eprintln!("stcheck: {e}");
        return 2;
    }
    // URL targets wait on the network, not the CPU: they have a bound of their own
    // (--url-jobs, default 64), and --jobs still caps the files checked here at once. One file
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
        Format::Github => Output::Github(Github::new(out)),
    };
    let run = Run {
        o,
        threads,
        order: Mutex::new(Order {
            next: 0,
            ready: std::collections::BTreeMap::new(),
            tally: Summary::default(),
            waiting: 0,
        }),
        first: AtomicUsize::new(0),
        written: Condvar::new(),
        capacity: REORDER_PER_WORKER * workers,
        shared: Mutex::new(Shared {
            output,
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
            // The pipe is closed: nothing more is started (the jobs under way end, and a
            // SARIF job waiting for its turn stops waiting).
            run.written.notify_all();
            break;
        }
        let (i, target, _slot) = {
            let _order = dispatch.lock().unwrap_or_else(|p| p.into_inner());
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(target) = targets.get(i) else { break };
            run.wait_for_space(i);
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
    let mut tally = run
        .order
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .tally;
    let s = run.shared.into_inner().unwrap_or_else(|p| p.into_inner());
    tally.exit_code = exit_code(&tally);
    let written = if s.broken {
        Ok(())
    } else {
        match s.output {
            Output::Text(mut p) => p
                .summary(&tally, started.elapsed())
                .and_then(|()| p.get_mut().drain(true)),
            Output::Json(mut p) => p.summary(&tally).and_then(|()| p.get_mut().drain(true)),
            Output::Github(mut p) => text_summary(p.get_mut(), &tally, started.elapsed())
                .and_then(|()| p.get_mut().drain(true)),
            Output::Sarif(w) => w
                .finish(tally.exit_code)
                .and_then(|mut out| out.drain(true)),
        }
    };
    if let Err(e) = written {
        if e.kind() != io::ErrorKind::BrokenPipe {
            let _ = writeln!(io::stderr(), "stcheck: writing the output: {e}");
            tally.io_errors += 1;
        }
    }
    exit_code(&tally)
}
