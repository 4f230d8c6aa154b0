//! `stconform`: run a safetensors implementation over the conformance corpus.
//!
//! See `conformance/PROTOCOL.md` for how an implementation plugs in.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use stcheck_conformance::runner::classify::Judge;
use stcheck_conformance::runner::config::Config;
use stcheck_conformance::runner::known::KnownFailures;
use stcheck_conformance::runner::{report, run, Manifest, RunOptions, RunResults};

const USAGE: &str = "usage: stconform [OPTIONS] --adapter NAME -- COMMAND [ARGS...]
       stconform [OPTIONS] --adapter NAME          (a built-in adapter of --config)
       stconform matrix [--manifest FILE] RESULTS.json...
       stconform compare A.json B.json   (exit 1 unless both runs have the same results)
       stconform list [--config FILE]

Runs COMMAND ARGS... FILE for every case of the corpus manifest (or, with --persistent, one
COMMAND ARGS... that answers a JSON request per case) and classifies each result: PASS,
SHOULD_HAVE_ACCEPTED, SHOULD_HAVE_REJECTED, WRONG_RULE, WRONG_CONTENT, CRASH, TIMEOUT,
UNSUPPORTED (counted apart), and ACCEPTED/REJECTED on implementation-defined cases (the
protocol: conformance/PROTOCOL.md).

Options:
  --manifest FILE        corpus manifest (default: corpus/manifest.json under the current
                         directory, else the repository's)
  --config FILE          built-in adapters (default: conformance/adapters.json)
  --timeout SECONDS      per-case timeout (default: 10)
  -j, --jobs N           parallel workers (default: the number of CPUs, at most 8)
  --run GLOB             only cases whose ID or path matches (repeatable; * and ?)
  --skip GLOB            skip cases whose ID or path matches (repeatable)
  --large DIR            also run the large cases, generated into DIR by
                         `stcorpus --large DIR` (hundreds of MB, not in corpus/)
  --deep                 the adapter scans the data region: judge deep cases by their verdict
  --persistent           the adapter speaks the persistent mode (protocol v2): one process,
                         one JSON request line and one JSON reply line per case
  --startup-timeout SECONDS
                         persistent mode: extra time for a process's first case (default: 60)
  --index                the adapter has an index mode: also run the sharded-set cases
  --judge strict|reference
                         judge against the strict verdicts (default) or the reference crate's
  --known-failures FILE  compare with FILE (default: the built-in adapter's file, if any)
  --no-known-failures    do not compare with a known-failures file
  --bless                write this run's results into the known-failures file
  --json                 print the results as JSON on stdout (the summary goes to stderr)
  --save FILE            also write the results as JSON to FILE
  -v, --verbose          list every case in the summary, not only those that are not PASS

Exit codes:
  0  every result is as expected: as recorded in the known-failures file, or, without one,
     no failure
  1  a result differs: a new failure, a changed result, or a known failure that now passes
  2  usage or I/O error";

fn repo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn default_manifest() -> PathBuf {
    let local = PathBuf::from("corpus/manifest.json");
    if local.is_file() {
        local
    } else {
        repo_dir().join("corpus/manifest.json")
    }
}

fn default_config() -> PathBuf {
    let local = PathBuf::from("conformance/adapters.json");
    if local.is_file() {
        local
    } else {
        repo_dir().join("conformance/adapters.json")
    }
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("stconform: {msg}");
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
    manifest: Option<PathBuf>,
    config: Option<PathBuf>,
    adapter: Option<String>,
    command: Vec<String>,
    timeout: Option<f64>,
    jobs: Option<usize>,
    run: Vec<String>,
    skip: Vec<String>,
    deep: bool,
    persistent: bool,
    index: bool,
    startup: Option<f64>,
    large: Option<PathBuf>,
    judge: Option<Judge>,
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
            "--manifest" => a.manifest = Some(value(&mut i, arg)?.into()),
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
            "--deep" => a.deep = true,
            "--persistent" => a.persistent = true,
            "--index" => a.index = true,
            "--startup-timeout" => {
                let v = value(&mut i, arg)?;
                let t: f64 = v
                    .parse()
                    .map_err(|_| format!("bad --startup-timeout {v:?}"))?;
                if !(0.0..=86_400.0).contains(&t) {
                    return Err(format!("bad --startup-timeout {v:?}"));
                }
                a.startup = Some(t);
            }
            "--large" => a.large = Some(value(&mut i, arg)?.into()),
            "--judge" => {
                a.judge = Some(match value(&mut i, arg)?.as_str() {
                    "strict" => Judge::Strict,
                    "reference" => Judge::Reference,
                    "portable" => Judge::Portable,
                    other => {
                        return Err(format!(
                            "bad --judge {other:?} (strict, reference or portable)"
                        ))
                    }
                })
            }
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
        Some("compare") => compare(&args),
        Some(other) => fail(format!("unknown command {other:?}\n{USAGE}")),
        None => run_adapter(args),
    }
}

/// The manifest and the corpus directory, absolute (adapters are given absolute paths).
fn load_manifest(args: &Args) -> Result<(Manifest, PathBuf), String> {
    let path = args.manifest.clone().unwrap_or_else(default_manifest);
    let m = Manifest::load(&path).map_err(|e| e.to_string())?;
    let abs = std::fs::canonicalize(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let dir = abs.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok((m, dir))
}

fn matrix(args: &Args) -> ExitCode {
    let manifest = match load_manifest(args) {
        Ok((m, _)) => Some(m),
        Err(e) if args.manifest.is_some() => return fail(e),
        Err(_) => None,
    };
    let mut runs = Vec::new();
    for p in &args.rest[1..] {
        match load_results(p) {
            Ok(r) => runs.push(r),
            Err(e) => return fail(e),
        }
    }
    if runs.is_empty() {
        return fail("matrix needs at least one results file");
    }
    print!("{}", report::matrix(&runs, manifest.as_ref()));
    ExitCode::SUCCESS
}

fn load_results(path: &str) -> Result<RunResults, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("{path}: not a results file: {e}"))
}

/// Whether two runs agree case by case (e.g. stcheck's reference profile and the crate).
fn compare(args: &Args) -> ExitCode {
    let [_, a, b] = args.rest.as_slice() else {
        return fail("compare needs two results files");
    };
    let (ra, rb) = match (load_results(a), load_results(b)) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) | (_, Err(e)) => return fail(e),
    };
    let mut differ = 0;
    for c in &ra.cases {
        match rb.case(&c.id) {
            Some(d) if d.outcome == c.outcome => {}
            Some(d) => {
                differ += 1;
                println!(
                    "{}: {} {} / {} {}",
                    c.id, ra.adapter, c.outcome, rb.adapter, d.outcome
                );
            }
            None => {
                differ += 1;
                println!("{}: only in {}", c.id, ra.adapter);
            }
        }
    }
    for d in rb.cases.iter().filter(|d| ra.case(&d.id).is_none()) {
        differ += 1;
        println!("{}: only in {}", d.id, rb.adapter);
    }
    if differ == 0 {
        println!(
            "{} and {} agree on all {} cases",
            ra.adapter,
            rb.adapter,
            ra.cases.len()
        );
        ExitCode::SUCCESS
    } else {
        println!(
            "{} and {} differ on {differ} case(s)",
            ra.adapter, rb.adapter
        );
        ExitCode::from(1)
    }
}

fn list(args: &Args) -> ExitCode {
    let path = args.config.clone().unwrap_or_else(default_config);
    let config = match Config::load(&path) {
        Ok(c) => c,
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

fn run_adapter(args: Args) -> ExitCode {
    let Some(name) = args.adapter.clone() else {
        return fail(format!("--adapter NAME is required\n{USAGE}"));
    };
    let (mut manifest, corpus) = match load_manifest(&args) {
        Ok(x) => x,
        Err(e) => return fail(e),
    };
    if let Some(dir) = &args.large {
        match std::fs::canonicalize(dir) {
            Ok(abs) => manifest.include_large(&abs),
            Err(e) => return fail(format!("{}: {e}", dir.display())),
        }
    }
    let mut deep = args.deep;
    let mut persistent = args.persistent;
    let mut index = args.index;
    let mut judge = args.judge.unwrap_or_default();
    let mut known_path = args.known.clone();
    let command = if args.command.is_empty() {
        let path = args.config.clone().unwrap_or_else(default_config);
        let config = match Config::load(&path) {
            Ok(c) => c,
            Err(e) => return fail(e),
        };
        let Some(adapter) = config.adapter(&name) else {
            return fail(format!(
                "no adapter {name:?} in {} (or give its command after --)",
                path.display()
            ));
        };
        let bin = std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_default();
        deep |= adapter.deep;
        persistent |= adapter.persistent;
        index |= adapter.index;
        if args.judge.is_none() {
            judge = adapter.judge;
        }
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
            .and_then(|t| KnownFailures::parse(&t))
        {
            Ok(k) => Some(k),
            Err(e) => return fail(format!("{}: {e}", p.display())),
        },
        // A file to be blessed may not exist yet; otherwise a missing file is an error.
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
    let opts = RunOptions {
        timeout: Duration::from_secs_f64(args.timeout.unwrap_or(10.0)),
        jobs,
        run: args.run.clone(),
        skip: args.skip.clone(),
        deep,
        judge,
        persistent,
        index,
        startup: args
            .startup
            .map(Duration::from_secs_f64)
            .unwrap_or(run::DEFAULT_STARTUP),
        ..RunOptions::new(name, command)
    };
    let missing = run::missing_files(&opts, &manifest, &corpus);
    if let Some(first) = missing.first() {
        return fail(format!(
            "{} corpus file(s) missing under {}, e.g. {first} (regenerate the corpus)",
            missing.len(),
            corpus.display()
        ));
    }
    // Progress on a terminal only: `[done/total]` on one rewritten line of stderr.
    let total = manifest.cases.iter().filter(|c| opts.selects(c)).count();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let tty = std::io::stderr().is_terminal();
    let progress = |_: &stcheck_conformance::runner::CaseResult| {
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if tty {
            eprint!("\r[{n}/{total}]");
            if n == total {
                eprint!("\r");
            }
        }
    };
    let results = run::run_all(&opts, &manifest, &corpus, &progress);
    if results.cases.is_empty() {
        return fail("no case selected");
    }
    if let Some(save) = &args.save {
        if let Err(e) = write_json(save, &results) {
            return fail(e);
        }
    }
    if args.bless {
        let Some(p) = &known_path else {
            return fail("--bless needs --known-failures FILE or a built-in adapter with one");
        };
        let blessed = known.clone().unwrap_or_default().bless(&results, &manifest);
        if let Err(e) = write_json(p, &blessed) {
            return fail(e);
        }
        eprintln!(
            "stconform: wrote {} ({} non-PASS results)",
            p.display(),
            blessed.results.len()
        );
    }
    let differences = if args.bless {
        None
    } else {
        known.as_ref().map(|k| k.check(&results, &manifest))
    };
    let text = report::summary(
        &results,
        Some(&manifest),
        differences.as_deref(),
        args.verbose,
    );
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
