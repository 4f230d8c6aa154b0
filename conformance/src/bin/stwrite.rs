//! `stwrite`: run a safetensors writer over the writer tasks of `corpus/writers/`.
//!
//! See `conformance/WRITER-PROTOCOL.md` for how a writer plugs in.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use stcheck_conformance::runner::config::Config;
use stcheck_conformance::writers::known::WriterKnown;
use stcheck_conformance::writers::run::{run_all, selected};
use stcheck_conformance::writers::{report, Task, TaskResult, WriterResults, WriterRunOptions};

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

Options:
  --tasks DIR            the tasks (default: corpus/writers under the current directory,
                         else the repository's)
  --config FILE          built-in writers (default: conformance/writers.json)
  --timeout SECONDS      per-run timeout (default: 30; large tasks get 30 times it)
  -j, --jobs N           parallel workers (default: the number of CPUs, at most 8)
  --run GLOB             only tasks whose ID matches (repeatable; * and ?)
  --skip GLOB            skip tasks whose ID matches (repeatable)
  --large                also the large tasks (a tensor of 1 GiB: about 4 GiB of disk under
                         the work directory while it runs)
  --work DIR             where tasks are prepared and files written (default:
                         target/stwrite-work/NAME); failed tasks' files are kept there
  --keep                 keep every task's files, not only the failed ones'
  --known-failures FILE  compare with FILE (default: the built-in writer's file, if any)
  --no-known-failures    do not compare with a known-failures file
  --bless                write this run's results into the known-failures file
  --json                 print the results as JSON on stdout (the summary goes to stderr)
  --save FILE            also write the results as JSON to FILE
  -v, --verbose          list every task in the summary

Exit codes:
  0  every result is as expected: as recorded in the known-failures file, or, without one,
     no failure
  1  a result differs: a new failure, a changed result or form, or a known failure that now
     passes
  2  usage or I/O error";

fn repo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// `rel` under the current directory if it exists there, else the repository's.
fn local_or_repo(rel: &str) -> PathBuf {
    let local = PathBuf::from(rel);
    if local.exists() {
        local
    } else {
        repo_dir().join(rel)
    }
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("stwrite: {msg}");
    ExitCode::from(2)
}

fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<(), String> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    text.push('\n');
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

#[derive(Default)]
struct Args {
    tasks: Option<PathBuf>,
    config: Option<PathBuf>,
    adapter: Option<String>,
    command: Vec<String>,
    timeout: Option<f64>,
    jobs: Option<usize>,
    run: Vec<String>,
    skip: Vec<String>,
    large: bool,
    work: Option<PathBuf>,
    keep: bool,
    known: Option<PathBuf>,
    no_known: bool,
    bless: bool,
    json: bool,
    save: Option<PathBuf>,
    verbose: bool,
    rest: Vec<String>,
}

fn parse_args(argv: &[String]) -> Result<Args, String> {
    let mut a = Args::default();
    let mut i = 0;
    let value = |i: &mut usize, flag: &str| -> Result<String, String> {
        *i += 1;
        argv.get(*i)
            .cloned()
            .ok_or_else(|| format!("{flag} needs a value"))
    };
    while i < argv.len() {
        let arg = argv[i].as_str();
        match arg {
            "--" => {
                a.command = argv[i + 1..].to_vec();
                break;
            }
            "--tasks" => a.tasks = Some(value(&mut i, arg)?.into()),
            "--config" => a.config = Some(value(&mut i, arg)?.into()),
            "--adapter" => a.adapter = Some(value(&mut i, arg)?),
            "--timeout" => {
                let v = value(&mut i, arg)?;
                let t: f64 = v.parse().map_err(|_| format!("bad --timeout {v:?}"))?;
                if !(t > 0.0 && t <= 86_400.0) {
                    return Err(format!("bad --timeout {v:?}"));
                }
                a.timeout = Some(t);
            }
            "-j" | "--jobs" => {
                let v = value(&mut i, arg)?;
                a.jobs = Some(
                    v.parse()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or(format!("bad --jobs {v:?}"))?,
                );
            }
            "--run" => a.run.push(value(&mut i, arg)?),
            "--skip" => a.skip.push(value(&mut i, arg)?),
            "--large" => a.large = true,
            "--work" => a.work = Some(value(&mut i, arg)?.into()),
            "--keep" => a.keep = true,
            "--known-failures" => a.known = Some(value(&mut i, arg)?.into()),
            "--no-known-failures" => a.no_known = true,
            "--bless" => a.bless = true,
            "--json" => a.json = true,
            "--save" => a.save = Some(value(&mut i, arg)?.into()),
            "-v" | "--verbose" => a.verbose = true,
            _ if arg.starts_with('-') => return Err(format!("unknown option {arg}")),
            _ => a.rest.push(arg.to_owned()),
        }
        i += 1;
    }
    Ok(a)
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv
        .iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "-h" || a == "--help")
    {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let args = match parse_args(&argv) {
        Ok(a) => a,
        Err(e) => return fail(format!("{e}\n{USAGE}")),
    };
    match args.rest.first().map(String::as_str) {
        Some("matrix") => matrix(&args),
        Some("list") => list(&args),
        Some("prepare") => prepare(&args),
        Some(other) => fail(format!("unknown command {other:?}\n{USAGE}")),
        None => run_adapter(args),
    }
}

fn load_tasks(args: &Args) -> Result<Vec<Task>, String> {
    let dir = args
        .tasks
        .clone()
        .unwrap_or_else(|| local_or_repo("corpus/writers"));
    Task::load_dir(&dir)
}

fn load_config(args: &Args) -> Result<(Config, PathBuf), String> {
    let path = args
        .config
        .clone()
        .unwrap_or_else(|| local_or_repo("conformance/writers.json"));
    Config::load(&path).map(|c| (c, path))
}

fn matrix(args: &Args) -> ExitCode {
    let tasks = match load_tasks(args) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let mut runs = Vec::new();
    for p in &args.rest[1..] {
        let loaded = std::fs::read_to_string(p)
            .map_err(|e| format!("{p}: {e}"))
            .and_then(|t| {
                serde_json::from_str::<WriterResults>(&t)
                    .map_err(|e| format!("{p}: not a writer results file: {e}"))
            });
        match loaded {
            Ok(r) => runs.push(r),
            Err(e) => return fail(e),
        }
    }
    if runs.is_empty() {
        return fail("matrix needs at least one results file");
    }
    print!("{}", report::matrix(&runs, &tasks));
    ExitCode::SUCCESS
}

fn list(args: &Args) -> ExitCode {
    let config = match load_config(args) {
        Ok((c, _)) => c,
        Err(e) => return fail(e),
    };
    for a in &config.adapters {
        println!(
            "{}\t{}\t{}",
            a.name,
            if a.ci { "ci" } else { "manual" },
            a.description
        );
    }
    ExitCode::SUCCESS
}

fn prepare(args: &Args) -> ExitCode {
    let [_, id, dir] = args.rest.as_slice() else {
        return fail("prepare needs a task ID and a directory");
    };
    let tasks = match load_tasks(args) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let Some(task) = tasks.iter().find(|t| t.id == *id) else {
        return fail(format!("no task {id:?}"));
    };
    match task.prepare(Path::new(dir)) {
        Ok(_) => {
            println!("{}", Path::new(dir).join("task.json").display());
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

fn run_adapter(args: Args) -> ExitCode {
    let Some(name) = args.adapter.clone() else {
        return fail(format!("--adapter NAME is required\n{USAGE}"));
    };
    let tasks = match load_tasks(&args) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let mut known_path = args.known.clone();
    let command = if args.command.is_empty() {
        let (config, path) = match load_config(&args) {
            Ok(c) => c,
            Err(e) => return fail(e),
        };
        let Some(adapter) = config.adapter(&name) else {
            return fail(format!(
                "no writer {name:?} in {} (or give its command after --)",
                path.display()
            ));
        };
        let bin = std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_default();
        if known_path.is_none() {
            known_path = config.known_failures(adapter);
        }
        config.command(adapter, &bin)
    } else {
        args.command.clone()
    };
    if args.no_known {
        known_path = None;
    }
    let known = match &known_path {
        Some(p) if p.is_file() => match std::fs::read_to_string(p)
            .map_err(|e| e.to_string())
            .and_then(|t| WriterKnown::parse(&t))
        {
            Ok(k) => Some(k),
            Err(e) => return fail(format!("{}: {e}", p.display())),
        },
        Some(p) if !args.bless => {
            return fail(format!("{}: no such known-failures file", p.display()))
        }
        _ => None,
    };
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .min(8)
    });
    let work = args
        .work
        .clone()
        .unwrap_or_else(|| repo_dir().join("target/stwrite-work").join(&name));
    let opts = WriterRunOptions {
        adapter: name,
        command,
        timeout: Duration::from_secs_f64(args.timeout.unwrap_or(30.0)),
        jobs,
        run: args.run.clone(),
        skip: args.skip.clone(),
        large: args.large,
        work,
        keep: args.keep,
    };
    let total = tasks.iter().filter(|t| selected(&opts, t)).count();
    if total == 0 {
        return fail("no task selected");
    }
    let done = AtomicUsize::new(0);
    let tty = std::io::stderr().is_terminal();
    let progress = |_: &TaskResult| {
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        if tty {
            eprint!("\r[{n}/{total}]");
            if n == total {
                eprint!("\r");
            }
        }
    };
    let results = run_all(&opts, &tasks, &progress);
    if let Some(save) = &args.save {
        if let Err(e) = write_json(save, &results) {
            return fail(e);
        }
    }
    if args.bless {
        let Some(p) = &known_path else {
            return fail("--bless needs --known-failures FILE or a built-in writer with one");
        };
        let blessed = known.clone().unwrap_or_default().bless(&results, &tasks);
        if let Err(e) = write_json(p, &blessed) {
            return fail(e);
        }
        eprintln!(
            "stwrite: wrote {} ({} non-PASS results, {} non-canonical files)",
            p.display(),
            blessed.results.len(),
            blessed.form.len()
        );
    }
    let differences = if args.bless {
        None
    } else {
        known.as_ref().map(|k| k.check(&results, &tasks))
    };
    let text = report::summary(&results, differences.as_deref(), args.verbose);
    if args.json {
        match serde_json::to_string_pretty(&results) {
            Ok(j) => println!("{j}"),
            Err(e) => return fail(e),
        }
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    let bad = match &differences {
        Some(d) => !d.is_empty(),
        None => !args.bless && results.any_failure(),
    };
    if bad {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
