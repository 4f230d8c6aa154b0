//! `stwrite`: run a safetensors writer over the writer tasks of `corpus/writers/`.
//!
//! See `conformance/WRITER-PROTOCOL.md` for how a writer plugs in. The harness it shares with
//! `stconform` is `stcheck_conformance::harness`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use stcheck_conformance::harness::args::{self, Cursor, Own};
use stcheck_conformance::harness::main::{startup_message, Ending, Progress, Tool};
use stcheck_conformance::harness::paths::{cache_dir, find_corpus};
use stcheck_conformance::harness::pool::Tripwire;
use stcheck_conformance::harness::{results, RunSpec};
use stcheck_conformance::writers::known::WriterKnown;
use stcheck_conformance::writers::run::{run_all_until, selected};
use stcheck_conformance::writers::{report, Task, WriterResults, WriterRunOptions};

const USAGE: &str = "usage: stwrite [OPTIONS] --adapter NAME -- COMMAND [ARGS...]
       stwrite [OPTIONS] --adapter NAME          (a built-in writer of --config)
       stwrite matrix [--tasks DIR] RESULTS.json...
       stwrite list [--config FILE]
       stwrite prepare [--tasks DIR] TASK-ID DIR  (write a task as an adapter is given it)

Runs COMMAND ARGS... TASK.json OUT.safetensors for every task of corpus/writers/ and judges
the result: PASS, SHOULD_HAVE_REFUSED (the worst), WRONG_CONTENT, INVALID_FILE, CRASH,
TIMEOUT, NOT_DETERMINISTIC, SHOULD_HAVE_WRITTEN, UNSUPPORTED (exit 77), and WROTE/REFUSED on
`either` tasks (the protocol: conformance/WRITER-PROTOCOL.md). A written file must pass
stcheck's strict profile and read back with exactly the task's tensors and metadata; the
writer runs twice and must write the same bytes.

Options of stwrite:
  --tasks DIR            the tasks (default: corpus/writers under the current directory,
                         else the repository's)
  --config FILE          built-in writers (default: conformance/writers.json)
  --timeout SECONDS      per-run timeout (default: 30; large tasks get 30 times it)
  --large                also the large tasks (a tensor of 1 GiB: about 4 GiB of disk under
                         the work directory while it runs)
  --work DIR             where tasks are prepared and files written (default:
                         stwrite-work/NAME in the user cache directory: $XDG_CACHE_HOME/stcheck,
                         else ~/.cache/stcheck); failed tasks' files are kept there
  --keep                 keep every task's files, not only the failed ones'";

const TOOL: Tool = Tool {
    name: "stwrite",
    usage: USAGE,
    config: "conformance/writers.json",
    embedded_config: include_str!("../../writers.json"),
    adapter: "writer",
    item: "task",
};

/// The writer runner's own options.
#[derive(Default)]
struct Writer {
    tasks: Option<PathBuf>,
    large: bool,
    work: Option<PathBuf>,
    keep: bool,
}

type Args = args::Args<Writer>;

impl Own for Writer {
    fn take(&mut self, arg: &str, c: &mut Cursor<'_>) -> Result<bool, String> {
        match arg {
            "--tasks" => self.tasks = Some(c.value(arg)?.into()),
            "--large" => self.large = true,
            "--work" => self.work = Some(c.value(arg)?.into()),
            "--keep" => self.keep = true,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

fn main() -> ExitCode {
    TOOL.main(&[("matrix", matrix), ("prepare", prepare)], run_adapter)
}

fn load_tasks(args: &Args) -> Result<Vec<Task>, String> {
    let dir = match &args.own.tasks {
        Some(d) => d.clone(),
        None => find_corpus(args.common.corpus.as_deref())?
            .root
            .join("writers"),
    };
    Task::load_dir(&dir)
}

fn matrix(args: &Args) -> ExitCode {
    let tasks = match load_tasks(args) {
        Ok(t) => t,
        Err(e) => return TOOL.fail(e),
    };
    let runs: Vec<WriterResults> =
        match results::load_all(&args.common.rest[1..], "writer results file") {
            Ok(r) => r,
            Err(e) => return TOOL.fail(e),
        };
    print!("{}", report::matrix(&runs, &tasks));
    ExitCode::SUCCESS
}

fn prepare(args: &Args) -> ExitCode {
    let [_, id, dir] = args.common.rest.as_slice() else {
        return TOOL.fail("prepare needs a task ID and a directory");
    };
    let tasks = match load_tasks(args) {
        Ok(t) => t,
        Err(e) => return TOOL.fail(e),
    };
    let Some(task) = tasks.iter().find(|t| t.id == *id) else {
        return TOOL.fail(format!("no task {id:?}"));
    };
    match task.prepare(Path::new(dir)) {
        Ok(_) => {
            println!("{}", Path::new(dir).join("task.json").display());
            ExitCode::SUCCESS
        }
        Err(e) => TOOL.fail(e),
    }
}

fn run_adapter(args: Args) -> ExitCode {
    let adapter = match TOOL.adapter(&args.common) {
        Ok(a) => a,
        Err(e) => return TOOL.fail(e),
    };
    let tasks = match load_tasks(&args) {
        Ok(t) => t,
        Err(e) => return TOOL.fail(e),
    };
    let known: Option<WriterKnown> = match adapter.load_known(args.common.bless) {
        Ok(k) => k,
        Err(e) => return TOOL.fail(e),
    };
    let common = &args.common;
    let work = match args.own.work.clone() {
        Some(w) => w,
        None => match cache_dir() {
            Ok(c) => c.join("stwrite-work").join(&adapter.name),
            Err(e) => return TOOL.fail(e),
        },
    };
    let opts = WriterRunOptions {
        spec: RunSpec::from_args(common, &adapter, Duration::from_secs(30)),
        large: args.own.large,
        work,
        keep: args.own.keep,
    };
    let total = tasks.iter().filter(|t| selected(&opts, t)).count();
    if total == 0 {
        return TOOL.fail("no task selected");
    }
    let progress = Progress::new(total);
    let stop = Tripwire::new(opts.spec.max_startup_deaths);
    let results = run_all_until(&opts, &tasks, &|_| progress.step(), &stop);
    if stop.tripped() {
        return TOOL.fail(startup_message(&TOOL, &stop, opts.spec.max_startup_deaths));
    }
    let ending = Ending {
        tool: &TOOL,
        common,
        adapter: &adapter,
        known,
        universe: tasks.as_slice(),
    };
    ending.finish(&results, |d| report::summary(&results, d, common.verbose))
}
