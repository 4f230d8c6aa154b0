//! The `stcheck` command line: files, directories, sharded checkpoints, standard input.
//!
//! Exit codes: 0 every path was checked and every file is valid; 1 at least one file or
//! sharded set is invalid; 2 a usage error, or at least one path could not be checked (an I/O
//! error, a special file, a link not followed, a directory with nothing to check: never
//! counted as valid or invalid, and 2 wins over 1; SPEC.md section 7). A broken pipe on
//! standard output ends the run quietly with the status of what was checked so far.
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
//! - `"not_checked"`: `path`, `reason` (a code: `not_regular_file`, `link_leaves_root`,
//!   `dir_link_leaves_root`, `dangling_link`, `link_loop`, `directory_loop`, `changed`,
//!   `empty`), `message`.
//! - `"summary"`: `files`, `indexes`, `valid`, `invalid`, `io_errors`, `not_checked`,
//!   `exit_code`.
//!
//! Integers (offsets, sizes, counts) are JSON numbers holding the exact u64 value; readers
//! whose numbers are IEEE doubles (JavaScript) lose precision above 2^53.

mod args;
mod check;
mod input;
mod progress;
mod render;

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use args::{Command, Options};
use input::Job;
use render::{Rendered, Status, Tally};

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

/// What one finished job contributes.
#[derive(Debug)]
struct Done {
    rendered: Rendered,
    status: Status,
    is_index: bool,
}

fn run_job(job: &Job, o: &Options, deep_threads: usize) -> Done {
    let done = |rendered, status, is_index| Done {
        rendered,
        status,
        is_index,
    };
    match job {
        Job::File(path) => {
            let shown = render::show(path);
            match check::check_file(path, o, deep_threads) {
                Ok(c) => done(
                    render::file(&shown, &c, o),
                    render::file_status(&c, o),
                    false,
                ),
                Err(e) => done(
                    render::io_error(&shown, &e.to_string(), o, "file"),
                    Status::IoError,
                    false,
                ),
            }
        }
        Job::Stdin => match check::check_stdin(o, deep_threads) {
            Ok(c) => done(
                render::file("<stdin>", &c, o),
                render::file_status(&c, o),
                false,
            ),
            Err(e) => done(
                render::io_error("<stdin>", &e.to_string(), o, "file"),
                Status::IoError,
                false,
            ),
        },
        Job::Index(path, root) => {
            let shown = render::show(path);
            match check::check_index(path, root.as_deref(), o) {
                Ok(rep) => done(
                    render::index(&shown, &rep, o),
                    render::index_status(&rep),
                    true,
                ),
                Err(e) => done(
                    render::io_error(&shown, &e, o, "index"),
                    Status::IoError,
                    true,
                ),
            }
        }
        Job::NotChecked(path, why) => done(
            render::not_checked(&render::show(path), why, o),
            Status::NotChecked,
            false,
        ),
        Job::WalkError(path, e) => done(
            render::io_error(&render::show(path), &e.to_string(), o, "file"),
            Status::IoError,
            false,
        ),
    }
}

/// Whether a write failed because the reader went away.
fn is_broken_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}

fn run(o: &Options) -> u8 {
    let jobs = input::expand(&o.paths, o.follow_links, o.allow_empty);
    let workers = o.jobs.min(jobs.len()).max(1);
    // One file alone gets every thread for its deep scan; many files get one each.
    let deep_threads = if jobs.len() == 1 { o.jobs } else { 1 };
    let mut tally = Tally::default();
    let mut bar = progress::Progress::new(jobs.len(), o.json, o.deep);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut broken = false;

    std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel::<(usize, Done)>();
        for _ in 0..workers {
            let tx = tx.clone();
            let (jobs, next, stop) = (&jobs, &next, &stop);
            s.spawn(move || loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                if tx.send((i, run_job(job, o, deep_threads))).is_err() {
                    break;
                }
            });
        }
        drop(tx);

        // Reorder: print job i only after jobs 0..i.
        let mut pending: BTreeMap<usize, Done> = BTreeMap::new();
        let mut printed = 0usize;
        for (i, d) in rx {
            pending.insert(i, d);
            while let Some(d) = pending.remove(&printed) {
                printed += 1;
                match d.status {
                    Status::Valid => tally.valid += 1,
                    Status::Invalid => tally.invalid += 1,
                    Status::IoError => tally.io_errors += 1,
                    Status::NotChecked => tally.not_checked += 1,
                }
                if d.status != Status::NotChecked {
                    if d.is_index {
                        tally.indexes += 1;
                    } else {
                        tally.files += 1;
                    }
                }
                if let Some(b) = bar.as_mut() {
                    b.before_output();
                }
                if !d.rendered.stderr.is_empty() {
                    // Keep stdout and stderr in order on a shared terminal.
                    let _ = out.flush();
                    let _ = io::stderr().write_all(d.rendered.stderr.as_bytes());
                }
                // Flushed per job: a run that is killed keeps the lines it printed.
                let written = out.write_all(d.rendered.stdout.as_bytes());
                if let Err(e) = written.and_then(|()| out.flush()) {
                    if is_broken_pipe(&e) {
                        broken = true;
                        stop.store(true, Ordering::Relaxed);
                        break;
                    }
                    let _ = writeln!(io::stderr(), "stcheck: writing the output: {e}");
                    tally.io_errors += 1;
                }
                if let Some(b) = bar.as_mut() {
                    let _ = out.flush();
                    b.update(printed);
                }
            }
            if broken {
                break;
            }
        }
    });
    if let Some(b) = bar.as_mut() {
        b.clear();
    }
    if !broken && o.json {
        let s = render::summary(&tally);
        if let Err(e) = out.write_all(s.as_bytes()) {
            broken = is_broken_pipe(&e);
        }
    }
    if let Err(e) = out.flush() {
        if !broken && !is_broken_pipe(&e) {
            let _ = writeln!(io::stderr(), "stcheck: writing the output: {e}");
            tally.io_errors += 1;
        }
    }
    tally.exit_code()
}
