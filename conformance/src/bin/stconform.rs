//! `stconform`: run a safetensors implementation over the conformance corpus.
//!
//! See `conformance/PROTOCOL.md` for how an implementation plugs in. The harness it shares
//! with `stwrite` is `stcheck_conformance::harness`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use stcheck_conformance::harness::args::{self, Cursor, Own};
use stcheck_conformance::harness::copy::CaseCopy;
use stcheck_conformance::harness::main::{absolute_dir, startup_message, Ending, Progress, Tool};
use stcheck_conformance::harness::paths::find_corpus;
use stcheck_conformance::harness::pool::Tripwire;
use stcheck_conformance::harness::{results, RunSpec};
use stcheck_conformance::runner::classify::Judge;
use stcheck_conformance::runner::known::KnownFailures;
use stcheck_conformance::runner::{report, run, Manifest, RunOptions, RunResults};
use stcheck_conformance::writers::Task;

const USAGE: &str = "usage: stconform [OPTIONS] --adapter NAME -- COMMAND [ARGS...]
       stconform [OPTIONS] --adapter NAME          (a built-in adapter of --config)
       stconform matrix [--manifest FILE] RESULTS.json...
       stconform compare A.json B.json   (exit 1 unless both runs have the same results)
       stconform list [--config FILE]
       stconform page --out FILE.html [--manifest FILE] [--tasks DIR] RESULTS.json...
                                         (the HTML results page of reader and writer runs)
       stconform corpus [--corpus DIR|FILE.tar.gz]   (which corpus a run would use)

Runs COMMAND ARGS... FILE for every case of the corpus manifest (or, with --persistent, one
COMMAND ARGS... that answers a JSON request per case) and classifies each result: PASS,
SHOULD_HAVE_ACCEPTED, SHOULD_HAVE_REJECTED, WRONG_RULE, WRONG_CONTENT, CRASH, TIMEOUT,
UNSUPPORTED (counted apart), and ACCEPTED/REJECTED on implementation-defined cases (the
protocol: conformance/PROTOCOL.md).

Options of stconform:
  --manifest FILE        corpus manifest (default: corpus/manifest.json under the current
                         directory, else the repository's)
  --config FILE          built-in adapters (default: conformance/adapters.json)
  --timeout SECONDS      per-case timeout (default: 10)
  --large DIR            also run the large cases, generated into DIR by
                         `stcorpus --large DIR` (hundreds of MB, not in corpus/)
  --deep                 the adapter scans the data region: judge deep cases by their verdict
  --persistent           the adapter speaks the persistent mode (protocol v2): one process,
                         one JSON request line and one JSON reply line per case
  --startup-timeout SECONDS
                         persistent mode: extra time for a process's first case (default: 60)
  --index                the adapter has an index mode: also run the sharded-set cases
  --dedicated-refusal    the adapter refuses with exit 65 only: exit 1 (what an uncaught
                         exception exits with in Python, Node and others) is a CRASH
  --judge strict|reference|portable
                         judge against the strict verdicts (default), the reference crate's,
                         or the portable profile's (SPEC.md)";

const TOOL: Tool = Tool {
    name: "stconform",
    usage: USAGE,
    config: "conformance/adapters.json",
    embedded_config: include_str!("../../adapters.json"),
    adapter: "adapter",
    item: "case",
};

/// The reader runner's own options.
#[derive(Default)]
struct Reader {
    manifest: Option<PathBuf>,
    out: Option<PathBuf>,
    tasks: Option<PathBuf>,
    deep: bool,
    persistent: bool,
    dedicated_refusal: bool,
    index: bool,
    startup: Option<f64>,
    large: Option<PathBuf>,
    judge: Option<Judge>,
}

type Args = args::Args<Reader>;

impl Own for Reader {
    fn take(&mut self, arg: &str, c: &mut Cursor<'_>) -> Result<bool, String> {
        match arg {
            "--manifest" => self.manifest = Some(c.value(arg)?.into()),
            "--out" => self.out = Some(c.value(arg)?.into()),
            "--tasks" => self.tasks = Some(c.value(arg)?.into()),
            "--deep" => self.deep = true,
            "--persistent" => self.persistent = true,
            "--dedicated-refusal" => self.dedicated_refusal = true,
            "--index" => self.index = true,
            "--startup-timeout" => self.startup = Some(c.seconds(arg, false)?),
            "--large" => self.large = Some(c.value(arg)?.into()),
            "--judge" => {
                self.judge = Some(match c.value(arg)?.as_str() {
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
            _ => return Ok(false),
        }
        Ok(true)
    }
}

fn main() -> ExitCode {
    TOOL.main(
        &[
            ("matrix", matrix),
            ("compare", compare),
            ("page", page),
            ("corpus", corpus),
        ],
        run_adapter,
    )
}

/// The manifest and the corpus directory, absolute (adapters are given absolute paths).
fn load_manifest(args: &Args) -> Result<(Manifest, PathBuf), String> {
    let path = match &args.own.manifest {
        Some(p) => p.clone(),
        None => find_corpus(args.common.corpus.as_deref())?
            .root
            .join("manifest.json"),
    };
    let m = Manifest::load(&path).map_err(|e| e.to_string())?;
    Ok((m, absolute_dir(&path)?))
}

fn load_results(path: &str) -> Result<RunResults, String> {
    results::load(path, "results file")
}

fn matrix(args: &Args) -> ExitCode {
    let manifest = match load_manifest(args) {
        Ok((m, _)) => Some(m),
        Err(e) if args.own.manifest.is_some() => return TOOL.fail(e),
        Err(_) => None,
    };
    let runs: Vec<RunResults> = match results::load_all(&args.common.rest[1..], "results file") {
        Ok(r) => r,
        Err(e) => return TOOL.fail(e),
    };
    print!("{}", report::matrix(&runs, manifest.as_ref()));
    ExitCode::SUCCESS
}

/// `page`: the HTML results page of reader and writer results (told apart by their members).
fn page(args: &Args) -> ExitCode {
    let Some(out) = &args.own.out else {
        return TOOL.fail("page needs --out FILE.html");
    };
    let mut readers = Vec::new();
    let mut writers = Vec::new();
    for p in &args.common.rest[1..] {
        let v: serde_json::Value = match results::load(p, "results file") {
            Ok(v) => v,
            Err(e) => return TOOL.fail(e),
        };
        let parsed = if v.get("tasks").is_some() {
            serde_json::from_value(v).map(|w| writers.push(w))
        } else {
            serde_json::from_value(v).map(|r| readers.push(r))
        };
        if let Err(e) = parsed {
            return TOOL.fail(format!("{p}: not a results file: {e}"));
        }
    }
    if readers.is_empty() && writers.is_empty() {
        return TOOL.fail("page needs at least one results file");
    }
    let manifest = load_manifest(args).ok().map(|(m, _)| m);
    let tasks = match &args.own.tasks {
        Some(d) => Task::load_dir(d),
        None => find_corpus(args.common.corpus.as_deref())
            .and_then(|c| Task::load_dir(&c.root.join("writers"))),
    };
    let tasks = match tasks {
        Ok(t) => t,
        Err(e) if !writers.is_empty() => return TOOL.fail(e),
        Err(_) => Vec::new(),
    };
    let html = stcheck_conformance::page::page(&readers, manifest.as_ref(), &writers, &tasks);
    if let Err(e) = std::fs::write(out, html) {
        return TOOL.fail(format!("{}: {e}", out.display()));
    }
    println!(
        "{}: {} readers, {} writers",
        out.display(),
        readers.len(),
        writers.len()
    );
    ExitCode::SUCCESS
}

/// `corpus`: which corpus a run would use, and from where.
fn corpus(args: &Args) -> ExitCode {
    match find_corpus(args.common.corpus.as_deref()) {
        Ok(c) => {
            println!(
                "{} ({}{})",
                c.root.display(),
                c.from,
                c.release
                    .map(|v| format!(", release {v}, checked"))
                    .unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Err(e) => TOOL.fail(e),
    }
}

/// Whether two runs agree case by case (e.g. stcheck's reference profile and the crate).
fn compare(args: &Args) -> ExitCode {
    let [_, a, b] = args.common.rest.as_slice() else {
        return TOOL.fail("compare needs two results files");
    };
    let (ra, rb) = match (load_results(a), load_results(b)) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) | (_, Err(e)) => return TOOL.fail(e),
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

fn run_adapter(args: Args) -> ExitCode {
    let adapter = match TOOL.adapter(&args.common) {
        Ok(a) => a,
        Err(e) => return TOOL.fail(e),
    };
    let (mut manifest, corpus) = match load_manifest(&args) {
        Ok(x) => x,
        Err(e) => return TOOL.fail(e),
    };
    if let Some(dir) = &args.own.large {
        match std::fs::canonicalize(dir) {
            Ok(abs) => manifest.include_large(&abs),
            Err(e) => return TOOL.fail(format!("{}: {e}", dir.display())),
        }
    }
    let (mut deep, mut persistent, mut index, mut dedicated_refusal) = (
        args.own.deep,
        args.own.persistent,
        args.own.index,
        args.own.dedicated_refusal,
    );
    let mut judge = args.own.judge.unwrap_or_default();
    if let Some(b) = &adapter.builtin {
        deep |= b.deep;
        persistent |= b.persistent;
        dedicated_refusal |= b.dedicated_refusal;
        index |= b.index;
        if args.own.judge.is_none() {
            judge = b.judge;
        }
    }
    let known: Option<KnownFailures> = match adapter.load_known(args.common.bless) {
        Ok(k) => k,
        Err(e) => return TOOL.fail(e),
    };
    let common = &args.common;
    let opts = RunOptions {
        spec: RunSpec::from_args(common, &adapter, Duration::from_secs(10)),
        deep,
        judge,
        persistent,
        index,
        dedicated_refusal,
        startup: args
            .own
            .startup
            .map(Duration::from_secs_f64)
            .unwrap_or(run::DEFAULT_STARTUP),
    };
    let missing = run::missing_files(&opts, &manifest, &corpus);
    if let Some(first) = missing.first() {
        return TOOL.fail(format!(
            "{} corpus file(s) missing under {}, e.g. {first} (regenerate the corpus)",
            missing.len(),
            corpus.display()
        ));
    }
    // The adapter gets a private read-only copy of the case files, not the corpus itself (the
    // large cases, hundreds of MB, are handed from their directory).
    let copy = match CaseCopy::of(&corpus, &manifest) {
        Ok(c) => c,
        Err(e) => return TOOL.fail(e),
    };
    let corpus = copy.root();
    let total = manifest.cases.iter().filter(|c| opts.selects(c)).count();
    let progress = Progress::new(total);
    let stop = Tripwire::new(opts.spec.max_startup_deaths);
    let results = run::run_all_until(&opts, &manifest, &corpus, &|_| progress.step(), &stop);
    if stop.tripped() {
        return TOOL.fail(startup_message(&TOOL, &stop, opts.spec.max_startup_deaths));
    }
    if results.cases.is_empty() {
        return TOOL.fail("no case selected");
    }
    let ending = Ending {
        tool: &TOOL,
        common,
        adapter: &adapter,
        known,
        universe: &manifest,
    };
    ending.finish(&results, |d| {
        report::summary(&results, Some(&manifest), d, common.verbose)
    })
}
