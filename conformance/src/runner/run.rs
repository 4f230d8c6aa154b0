//! Running an adapter over the corpus, in parallel with a bounded number of workers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::classify::{classify, Expect, Expectation, Judge};
use super::exec;
use super::glob;
use super::manifest::{Manifest, Verdict};
use super::outcome::Outcome;

/// How to run an adapter.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The adapter's name, for reports.
    pub adapter: String,
    /// Program and arguments; the file path is appended.
    pub command: Vec<String>,
    /// Per-case timeout.
    pub timeout: Duration,
    /// Worker threads (at least 1).
    pub jobs: usize,
    /// `--run` patterns (empty: every case).
    pub run: Vec<String>,
    /// `--skip` patterns.
    pub skip: Vec<String>,
    /// The adapter scans the data region (`--deep`).
    pub deep: bool,
    /// Which verdicts to judge against.
    pub judge: Judge,
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
    /// What differed, or why it crashed; empty for a plain pass.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// The adapter's exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The first line of its standard error (clipped), e.g. its reason for rejecting.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
    /// Wall time in milliseconds.
    pub millis: u64,
}

/// The results of one adapter over the corpus (the `--json` document).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunResults {
    /// Format version, `"1"`.
    pub version: String,
    /// Adapter name.
    pub adapter: String,
    /// Its command.
    pub command: Vec<String>,
    /// What it was judged against.
    pub judge: Judge,
    /// Whether it was run as a deep reader.
    pub deep: bool,
    /// Timeout per case, milliseconds.
    pub timeout_ms: u64,
    /// Count per outcome.
    pub summary: BTreeMap<Outcome, usize>,
    /// Per case, in manifest order (selected cases only).
    pub cases: Vec<CaseResult>,
}

impl RunResults {
    /// The result of one case.
    pub fn case(&self, id: &str) -> Option<&CaseResult> {
        self.cases.iter().find(|c| c.id == id)
    }

    /// Whether any case failed.
    pub fn any_failure(&self) -> bool {
        self.cases.iter().any(|c| c.outcome.is_failure())
    }
}

/// The line of standard error that says why: a Rust panic's message (the line after
/// "panicked at"), else the last non-empty line (where Python and Node put the exception),
/// clipped to 200 characters, control characters replaced.
pub(crate) fn reason_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let line = match lines.iter().position(|l| l.contains("panicked at")) {
        Some(i) => match lines.get(i + 1) {
            Some(next) => format!("{} {}", lines[i].trim(), next.trim()),
            None => lines[i].to_owned(),
        },
        None => lines.last().copied().unwrap_or("").to_owned(),
    };
    line.chars()
        .take(200)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Run one case.
fn run_case(opts: &RunOptions, manifest: &Manifest, corpus: &Path, index: usize) -> CaseResult {
    let case = &manifest.cases[index];
    let exp = Expectation::of(case, opts.judge, opts.deep);
    let file: PathBuf = corpus.join(&case.path);
    let base = CaseResult {
        id: case.id.clone(),
        outcome: Outcome::Crash,
        expected: exp.expect,
        detail: String::new(),
        exit_code: None,
        stderr: String::new(),
        millis: 0,
    };
    if !file.is_file() {
        return CaseResult {
            detail: format!("corpus file {} is missing (not generated?)", file.display()),
            ..base
        };
    }
    match exec::run(&opts.command, &file, opts.timeout) {
        Err(e) => CaseResult {
            detail: format!("cannot start {:?}: {e}", opts.command.first()),
            ..base
        },
        Ok(ran) => {
            let (outcome, detail) = classify(&exp, ran.status, &ran.stdout);
            CaseResult {
                outcome,
                detail,
                exit_code: match ran.status {
                    exec::Status::Exited(c) => Some(c),
                    _ => None,
                },
                stderr: reason_line(&ran.stderr),
                millis: u64::try_from(ran.elapsed.as_millis()).unwrap_or(u64::MAX),
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
    let chosen: Vec<usize> = (0..manifest.cases.len())
        .filter(|&i| {
            let c = &manifest.cases[i];
            glob::selected(&opts.run, &opts.skip, &c.id, &c.path)
        })
        .collect();
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<CaseResult>>> = Mutex::new(vec![None; chosen.len()]);
    std::thread::scope(|s| {
        for _ in 0..opts.jobs.max(1).min(chosen.len().max(1)) {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = chosen.get(k) else { break };
                let r = run_case(opts, manifest, corpus, i);
                progress(&r);
                if let Ok(mut v) = slots.lock() {
                    v[k] = Some(r);
                }
            });
        }
    });
    let cases: Vec<CaseResult> = slots
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .flatten()
        .collect();
    let mut summary = BTreeMap::new();
    for c in &cases {
        *summary.entry(c.outcome).or_insert(0) += 1;
    }
    RunResults {
        version: "1".to_owned(),
        adapter: opts.adapter.clone(),
        command: opts.command.clone(),
        judge: opts.judge,
        deep: opts.deep,
        timeout_ms: u64::try_from(opts.timeout.as_millis()).unwrap_or(u64::MAX),
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
        .filter(|c| glob::selected(&opts.run, &opts.skip, &c.id, &c.path))
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
