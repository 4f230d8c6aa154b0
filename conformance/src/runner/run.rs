//! Running an adapter over the corpus, in parallel with a bounded number of workers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::classify::{classify, Answer, Expect, Expectation, Judge};
use super::exec;
use super::glob;
use super::manifest::{Case, Class, Kind, Manifest, Verdict};
use super::outcome::Outcome;
use super::persistent::{Asked, Worker};
use super::protocol::{self, Reason, Reply};
use crate::harness::main::{clip_line, is_error_line};
use crate::harness::pool::{parallel_map, Life, Tripwire};
use crate::harness::{Results, RunSpec};

/// The version of the results JSON.
pub const RESULTS_VERSION: &str = "2";

/// How long a persistent adapter may take to start, on top of the first case's timeout.
pub const DEFAULT_STARTUP: Duration = Duration::from_secs(60);

/// How to run an adapter.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The adapter, its command (the file path is appended), timeout, workers, filters.
    pub spec: RunSpec,
    /// The adapter scans the data region (`--deep`).
    pub deep: bool,
    /// Which verdicts to judge against.
    pub judge: Judge,
    /// Protocol v2's persistent mode: one process answers JSON requests on stdin (no path is
    /// appended to the command).
    pub persistent: bool,
    /// The adapter has an index mode: run the sharded-set cases too (skipped otherwise).
    pub index: bool,
    /// Persistent mode: extra time for a process's first case.
    pub startup: Duration,
    /// The adapter refuses with the dedicated exit code [`EXIT_REFUSED`] only: exit 1 (an
    /// uncaught exception in Python, Node and others) is a crash, not a refusal
    /// (`--dedicated-refusal`).
    pub dedicated_refusal: bool,
}

/// The dedicated refusal exit code (sysexits' `EX_DATAERR`, "the input data was incorrect"):
/// a refusal in every run; exit 1 is one too unless the run has `--dedicated-refusal`.
pub const EXIT_REFUSED: i32 = 65;

impl RunOptions {
    /// Options with the defaults: no filter, strict verdicts, one-shot, no index mode.
    pub fn new(adapter: impl Into<String>, command: Vec<String>) -> RunOptions {
        RunOptions {
            spec: RunSpec::new(adapter, command, Duration::from_secs(10)),
            deep: false,
            judge: Judge::Strict,
            persistent: false,
            index: false,
            startup: DEFAULT_STARTUP,
            dedicated_refusal: false,
        }
    }

    /// Whether the run includes this case: selected by `--run`/`--skip`, and an index case only
    /// for an adapter with an index mode.
    pub fn selects(&self, case: &Case) -> bool {
        (self.index || case.kind != Kind::Index)
            && glob::selected(&self.spec.run, &self.spec.skip, &case.id, &case.path)
    }
}

/// One case's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseResult {
    /// Case ID.
    pub id: String,
    /// The outcome.
    pub outcome: Outcome,
    /// What the runner expected.
    pub expected: Expect,
    /// The case's class (from the manifest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<Class>,
    /// What differed, or why it crashed; empty for a plain pass.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// The adapter's exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The first line of its standard error (clipped), e.g. its reason for rejecting.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
    /// The rule it named when it rejected the file (protocol v2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The message it gave with a rejection or an "unsupported" answer (protocol v2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Wall time in milliseconds.
    pub millis: u64,
}

/// The results of one adapter over the corpus (the `--json` document).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunResults {
    /// Format version, [`RESULTS_VERSION`] (`"1"` files still load).
    pub version: String,
    /// Adapter name.
    pub adapter: String,
    /// The corpus release the run used (manifest version 3 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus_version: Option<String>,
    /// Its command.
    pub command: Vec<String>,
    /// What it was judged against.
    pub judge: Judge,
    /// Whether it was run as a deep reader.
    pub deep: bool,
    /// Timeout per case, milliseconds.
    pub timeout_ms: u64,
    /// Run in the persistent mode.
    #[serde(default)]
    pub persistent: bool,
    /// Index cases were run.
    #[serde(default)]
    pub index: bool,
    /// Exit 1 was a crash, not a refusal (`--dedicated-refusal`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dedicated_refusal: bool,
    /// The `--run` patterns of the run (empty: every case).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run: Vec<String>,
    /// Its `--skip` patterns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip: Vec<String>,
    /// Count per outcome.
    pub summary: BTreeMap<Outcome, usize>,
    /// Per case, in manifest order (selected cases only).
    pub cases: Vec<CaseResult>,
}

crate::harness::impl_judged!(CaseResult, Outcome);

crate::harness::impl_results!(RunResults, cases, CaseResult);

impl RunResults {
    /// The result of one case.
    pub fn case(&self, id: &str) -> Option<&CaseResult> {
        self.item(id)
    }
}

/// The line of standard error that says why: a Rust panic's message (the line after
/// "panicked at"), else the last line that looks like an error (where Python and Node put
/// the exception; Node's version banner after it is not chosen), else the last non-empty
/// line; clipped to 200 characters, control characters replaced.
pub(crate) fn reason_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let line = match lines.iter().position(|l| l.contains("panicked at")) {
        Some(i) => match lines.get(i + 1) {
            Some(next) => format!("{} {}", lines[i].trim(), next.trim()),
            None => lines[i].to_owned(),
        },
        None => lines
            .iter()
            .rev()
            .find(|l| is_error_line(l))
            .or(lines.last())
            .copied()
            .unwrap_or("")
            .to_owned(),
    };
    clip_line(&line)
}

/// The environment variables of protocol v2, for one case (one-shot) or a process
/// (persistent: without the kind, which each request carries).
fn protocol_env(kind: Option<Kind>) -> Vec<(&'static str, &'static str)> {
    let mut env = vec![("STCONFORM_PROTOCOL", "2")];
    match kind {
        Some(Kind::File) => env.push(("STCONFORM_KIND", "file")),
        Some(Kind::Index) => env.push(("STCONFORM_KIND", "index")),
        None => env.push(("STCONFORM_PERSISTENT", "1")),
    }
    env
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::File => "file",
        Kind::Index => "index",
    }
}

/// What one case produced, before classification.
struct Ran {
    answer: Answer,
    exit_code: Option<i32>,
    stderr: Vec<u8>,
    /// Whether the adapter answered.
    life: Life,
}

/// Run one case in one-shot mode.
fn run_once(opts: &RunOptions, case: &Case, file: &Path) -> Result<Ran, String> {
    let ran = exec::run(
        &opts.spec.command,
        file,
        &protocol_env(Some(case.kind)),
        opts.spec.timeout,
    )
    .map_err(|e| format!("cannot start {:?}: {e}", opts.spec.command.first()))?;
    let answer = match ran.status {
        exec::Status::TimedOut => Answer::TimedOut,
        exec::Status::Signaled(sig) => Answer::Crashed(format!("killed by signal {sig}")),
        exec::Status::Exited(0) => Answer::Accepted(
            protocol::json(&ran.stdout).map_err(|e| format!("output is not JSON: {e}")),
        ),
        exec::Status::Exited(EXIT_REFUSED) => Answer::Rejected(Reason::from_stdout(&ran.stdout)),
        exec::Status::Exited(1) if !opts.dedicated_refusal => {
            Answer::Rejected(Reason::from_stdout(&ran.stdout))
        }
        exec::Status::Exited(1) => Answer::Crashed(format!(
            "exit code 1, not the refusal code {EXIT_REFUSED} (--dedicated-refusal): an \
             uncaught exception?"
        )),
        exec::Status::Exited(4) => Answer::Unsupported(Reason::from_stdout(&ran.stdout)),
        exec::Status::Exited(code) => Answer::Crashed(format!("exit code {code}")),
    };
    let life = match answer {
        Answer::Crashed(_) | Answer::TimedOut => Life::NoAnswer,
        Answer::Rejected(_) => Life::Refused,
        _ => Life::Answered,
    };
    Ok(Ran {
        life,
        answer,
        exit_code: match ran.status {
            exec::Status::Exited(c) => Some(c),
            _ => None,
        },
        stderr: ran.stderr,
    })
}

/// Run one case on a persistent worker.
fn run_persistent(
    opts: &RunOptions,
    worker: &mut Worker,
    case: &Case,
    file: &Path,
) -> Result<Ran, String> {
    let request = serde_json::json!({
        "id": case.id,
        "path": file.to_string_lossy(),
        "kind": kind_name(case.kind),
    });
    let (asked, stderr) = worker
        .ask(&case.id, &request, opts.spec.timeout)
        .map_err(|e| format!("cannot start {:?}: {e}", opts.spec.command.first()))?;
    let mut exit_code = None;
    let life = match asked {
        // A persistent adapter that replies is running: its refusals are its own.
        Asked::Reply(_) => Life::Answered,
        _ => Life::NoAnswer,
    };
    let answer = match asked {
        Asked::Reply(Reply::Accept(v)) => Answer::Accepted(Ok(v)),
        Asked::Reply(Reply::Reject(r)) => Answer::Rejected(r),
        Asked::Reply(Reply::Unsupported(r)) => Answer::Unsupported(r),
        Asked::Reply(Reply::Crash(r)) => Answer::Crashed(match r.message {
            Some(m) => format!("the adapter reported a crash: {m}"),
            None => "the adapter reported a crash".to_owned(),
        }),
        Asked::Died { detail, code } => {
            exit_code = code;
            Answer::Crashed(detail)
        }
        Asked::ProtocolError(e) => Answer::Crashed(format!("protocol error: {e}")),
        Asked::TimedOut => Answer::TimedOut,
    };
    Ok(Ran {
        answer,
        exit_code,
        stderr,
        life,
    })
}

/// Run one case (on `worker` in persistent mode).
fn run_case(
    opts: &RunOptions,
    manifest: &Manifest,
    corpus: &Path,
    index: usize,
    worker: Option<&mut Worker>,
    stop: &Tripwire,
) -> CaseResult {
    let case = &manifest.cases[index];
    let exp = Expectation::of(case, opts.judge, opts.deep);
    let file: PathBuf = corpus.join(&case.path);
    let base = CaseResult {
        id: case.id.clone(),
        outcome: Outcome::Crash,
        expected: exp.expect,
        class: case.class,
        detail: String::new(),
        exit_code: None,
        stderr: String::new(),
        rule: None,
        message: None,
        millis: 0,
    };
    if !file.is_file() {
        return CaseResult {
            detail: format!("corpus file {} is missing (not generated?)", file.display()),
            ..base
        };
    }
    let start = std::time::Instant::now();
    let ran = match worker {
        Some(w) => run_persistent(opts, w, case, &file),
        None => run_once(opts, case, &file),
    };
    let millis = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    match ran {
        Err(detail) => {
            stop.record(Life::NoAnswer, detail.as_bytes());
            CaseResult { detail, ..base }
        }
        Ok(ran) => {
            stop.record(ran.life, &ran.stderr);
            let (outcome, detail) = classify(&exp, &ran.answer);
            let (rule, message) = match &ran.answer {
                Answer::Rejected(r) | Answer::Unsupported(r) => (r.rule.clone(), r.message.clone()),
                _ => (None, None),
            };
            CaseResult {
                outcome,
                detail,
                exit_code: ran.exit_code,
                stderr: reason_line(&ran.stderr),
                rule,
                message,
                millis,
                ..base
            }
        }
    }
}

/// Run the adapter on every selected case. `corpus` is the directory case paths are
/// relative to (the manifest's directory). `progress` is called after each case.
pub fn run_all(
    opts: &RunOptions,
    manifest: &Manifest,
    corpus: &Path,
    progress: &(dyn Fn(&CaseResult) + Sync),
) -> RunResults {
    run_all_until(
        opts,
        manifest,
        corpus,
        progress,
        &Tripwire::new(opts.spec.max_startup_deaths),
    )
}

/// [`run_all`], stopped by `stop` (the cases not started are left out of the results).
pub fn run_all_until(
    opts: &RunOptions,
    manifest: &Manifest,
    corpus: &Path,
    progress: &(dyn Fn(&CaseResult) + Sync),
    stop: &Tripwire,
) -> RunResults {
    let chosen: Vec<usize> = (0..manifest.cases.len())
        .filter(|&i| opts.selects(&manifest.cases[i]))
        .collect();
    let cases = parallel_map(
        &chosen,
        opts.spec.jobs,
        stop,
        || {
            opts.persistent.then(|| {
                let env = protocol_env(None)
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect();
                Worker::new(opts.spec.command.clone(), env, opts.startup)
            })
        },
        |worker, &i| run_case(opts, manifest, corpus, i, worker.as_mut(), stop),
        progress,
    );
    let mut summary = BTreeMap::new();
    for c in &cases {
        *summary.entry(c.outcome).or_insert(0) += 1;
    }
    RunResults {
        version: RESULTS_VERSION.to_owned(),
        adapter: opts.spec.adapter.clone(),
        corpus_version: manifest.corpus_version.clone(),
        command: opts.spec.command.clone(),
        judge: opts.judge,
        deep: opts.deep,
        timeout_ms: u64::try_from(opts.spec.timeout.as_millis()).unwrap_or(u64::MAX),
        persistent: opts.persistent,
        index: opts.index,
        dedicated_refusal: opts.dedicated_refusal,
        run: opts.spec.run.clone(),
        skip: opts.spec.skip.clone(),
        summary,
        cases,
    }
}

/// The selected cases whose file is missing (a corpus not fully generated): the CLI refuses to
/// run rather than blame the implementation for them.
pub fn missing_files(opts: &RunOptions, manifest: &Manifest, corpus: &Path) -> Vec<String> {
    manifest
        .cases
        .iter()
        .filter(|c| opts.selects(c))
        .filter(|c| !corpus.join(&c.path).is_file())
        .map(|c| c.path.clone())
        .collect()
}

/// Whether a case is implementation-defined (for reports).
pub fn is_implementation_defined(manifest: &Manifest, id: &str) -> bool {
    manifest
        .case(id)
        .is_some_and(|c| c.verdict == Verdict::ImplementationDefined)
}
