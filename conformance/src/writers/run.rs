//! Running a writer adapter over the tasks, in parallel, and classifying each result.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::judge::{judge_file, FileVerdict};
use super::outcome::WriterOutcome;
use super::prepared::PreparedTask;
use super::task::{Expect, Task};
use crate::harness::pool::{parallel_map, Life, Tripwire};
use crate::harness::{Results, RunSpec};
use crate::runner::{exec, glob};

/// The adapter wrote the file.
pub const EXIT_WROTE: i32 = 0;
/// The writer refused the task.
pub const EXIT_REFUSED: i32 = 1;
/// The adapter cannot give the task to the writer (automake's "skipped" code).
pub const EXIT_UNSUPPORTED: i32 = 77;

/// Large tasks get this many times the timeout.
pub const LARGE_TIMEOUT_FACTOR: u32 = 30;

/// The largest header the strict profile accepts (`FRAME-HEADER-LIMIT`): a file longer than
/// 8 + this + the task's data cannot be valid, and is not read.
const MAX_HEADER: u64 = 100_000_000;

/// How to run an adapter.
#[derive(Debug, Clone)]
pub struct WriterRunOptions {
    /// The adapter, its command (the task file and the output path are appended), the
    /// timeout (large tasks: [`LARGE_TIMEOUT_FACTOR`] times it), workers, filters.
    pub spec: RunSpec,
    /// Also the large tasks.
    pub large: bool,
    /// Where tasks are prepared and files written (one directory per task).
    pub work: PathBuf,
    /// Keep every task's directory (by default only those of failed tasks are kept).
    pub keep: bool,
}

impl WriterRunOptions {
    /// Options with the defaults: every small task, a 30 s timeout, one worker.
    pub fn new(adapter: impl Into<String>, command: Vec<String>, work: PathBuf) -> Self {
        WriterRunOptions {
            spec: RunSpec::new(adapter, command, Duration::from_secs(30)),
            large: false,
            work,
            keep: false,
        }
    }
}

/// One task's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskResult {
    /// Task ID.
    pub id: String,
    /// What the task expects.
    pub expect: Expect,
    /// The outcome.
    pub outcome: WriterOutcome,
    /// What differed, or what the file was; empty for a plain pass.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// For a file judged valid with the task's content: the rule IDs of the warnings the
    /// writer's form caused (empty: canonical).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub form: Vec<String>,
    /// The adapter's exit code (first run), when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The line of its standard error that says why (clipped).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
    /// Wall time of all runs, milliseconds.
    pub millis: u64,
}

impl TaskResult {
    /// The form warnings of the file, when it was judged to have exactly the task's content
    /// (the form is then meaningful).
    pub fn judged_form(&self) -> Option<&[String]> {
        self.wrote_valid().then_some(self.form.as_slice())
    }

    /// Whether a file was judged to have exactly the task's content.
    pub fn wrote_valid(&self) -> bool {
        matches!(self.outcome, WriterOutcome::Pass | WriterOutcome::Wrote)
            && self.expect != Expect::Refuse
    }
}

/// The results of one adapter over the tasks (the `--json` document).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriterResults {
    /// Format version, `"1"`.
    pub version: String,
    /// Adapter name.
    pub adapter: String,
    /// Its command.
    pub command: Vec<String>,
    /// Timeout per run, milliseconds.
    pub timeout_ms: u64,
    /// Whether the large tasks were run.
    pub large: bool,
    /// Count per outcome.
    pub summary: BTreeMap<WriterOutcome, usize>,
    /// Per task, in ID order (selected tasks only).
    pub tasks: Vec<TaskResult>,
}

crate::harness::impl_judged!(TaskResult, WriterOutcome, form: judged_form);

crate::harness::impl_results!(WriterResults, tasks, TaskResult);

impl WriterResults {
    /// The result of one task.
    pub fn task(&self, id: &str) -> Option<&TaskResult> {
        self.item(id)
    }

    /// The worst outcome of the run.
    pub fn worst(&self) -> Option<WriterOutcome> {
        self.tasks
            .iter()
            .map(|t| t.outcome)
            .min_by_key(|o| o.severity())
    }
}

/// Whether a task is selected by the options.
pub fn selected(opts: &WriterRunOptions, task: &Task) -> bool {
    (opts.large || !task.large)
        && glob::selected(&opts.spec.run, &opts.spec.skip, &task.id, &task.id)
}

/// How one run of the adapter ended, as the protocol reads it.
enum Ended {
    Wrote,
    Refused,
    Unsupported,
    Crashed(String),
    TimedOut,
}

struct Attempt {
    ended: Ended,
    exit_code: Option<i32>,
    stderr: String,
    /// Standard error as written (for the message of a run stopped at start-up).
    raw_stderr: Vec<u8>,
    elapsed: Duration,
}

impl Attempt {
    fn life(&self) -> Life {
        match self.ended {
            Ended::Crashed(_) | Ended::TimedOut => Life::NoAnswer,
            Ended::Refused => Life::Refused,
            _ => Life::Answered,
        }
    }
}

fn attempt(opts: &WriterRunOptions, task_file: &Path, out: &Path, timeout: Duration) -> Attempt {
    let _ = std::fs::remove_file(out);
    let mut command = opts.spec.command.clone();
    command.push(task_file.to_string_lossy().into_owned());
    let start = Instant::now();
    match exec::run(&command, out, &[], timeout) {
        Err(e) => {
            let why = format!("cannot start {:?}: {e}", opts.spec.command.first());
            Attempt {
                raw_stderr: why.clone().into_bytes(),
                ended: Ended::Crashed(why),
                exit_code: None,
                stderr: String::new(),
                elapsed: start.elapsed(),
            }
        }
        Ok(ran) => {
            let (ended, exit_code) = match ran.status {
                exec::Status::Exited(EXIT_WROTE) => (Ended::Wrote, Some(EXIT_WROTE)),
                exec::Status::Exited(EXIT_REFUSED) => (Ended::Refused, Some(EXIT_REFUSED)),
                exec::Status::Exited(EXIT_UNSUPPORTED) => {
                    (Ended::Unsupported, Some(EXIT_UNSUPPORTED))
                }
                exec::Status::Exited(c) => (Ended::Crashed(format!("exit code {c}")), Some(c)),
                exec::Status::Signaled(s) => {
                    (Ended::Crashed(format!("killed by signal {s}")), None)
                }
                exec::Status::TimedOut => (Ended::TimedOut, None),
            };
            Attempt {
                ended,
                exit_code,
                stderr: stable_reason(&crate::runner::run::reason_line(&ran.stderr)),
                raw_stderr: ran.stderr,
                elapsed: ran.elapsed,
            }
        }
    }
}

/// The reason line without what changes from run to run or machine to machine, so results
/// compare across runs: a Rust panic's thread ID (`thread 'main' (1234)`) and the cargo
/// registry's directory before a crate's source path.
fn stable_reason(line: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    for w in line.split(' ') {
        // `thread 'main' (1234) panicked`: drop the `(1234)` after a thread's name.
        let after_thread_name = words.len() >= 2
            && words[words.len() - 2] == "thread"
            && words[words.len() - 1].starts_with('\'');
        if after_thread_name && w.starts_with('(') && w.ends_with(')') {
            continue;
        }
        match w.find("/registry/src/") {
            Some(at) => {
                // `.../registry/src/<index dir>/<crate>/src/file.rs:1:2`: keep from <crate>.
                let rest = &w[at + "/registry/src/".len()..];
                words.push(rest.split_once('/').map_or(rest, |(_, r)| r).to_owned());
            }
            None => words.push(w.to_owned()),
        }
    }
    words.join(" ")
}

/// The file at `path`, if it is a regular file of at most `max` bytes.
fn read_output(path: &Path, max: u64) -> Result<Vec<u8>, String> {
    let meta = std::fs::symlink_metadata(path)
        .map_err(|_| "exit 0, but no file at the output path".to_owned())?;
    if !meta.file_type().is_file() {
        return Err("the output path is not a regular file".to_owned());
    }
    if meta.len() > max {
        return Err(format!(
            "a file of {} bytes: longer than any valid file with this task's data ({max})",
            meta.len()
        ));
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    std::fs::File::open(path)
        .and_then(|f| f.take(max.saturating_add(1)).read_to_end(&mut buf))
        .map_err(|e| format!("cannot read the written file: {e}"))?;
    Ok(buf)
}

/// Whether the file at `path` has exactly the bytes `first` (read in chunks).
fn same_bytes(first: &[u8], path: &Path) -> Result<bool, String> {
    let meta = std::fs::symlink_metadata(path)
        .map_err(|_| "exit 0, but no file at the output path".to_owned())?;
    if !meta.file_type().is_file() || meta.len() != first.len() as u64 {
        return Ok(false);
    }
    let mut f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 1 << 20];
    let mut at = 0usize;
    loop {
        let n = f.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            return Ok(at == first.len());
        }
        if first.get(at..at + n) != Some(&buf[..n]) {
            return Ok(false);
        }
        at += n;
    }
}

/// Run one task: prepare it, run the adapter (twice when it writes a file that passes), judge.
pub fn run_task(opts: &WriterRunOptions, task: &Task) -> TaskResult {
    run_task_until(opts, task, &Tripwire::new(0))
}

fn run_task_until(opts: &WriterRunOptions, task: &Task, stop: &Tripwire) -> TaskResult {
    let mut result = TaskResult {
        id: task.id.clone(),
        expect: task.expect,
        outcome: WriterOutcome::Crash,
        detail: String::new(),
        form: Vec::new(),
        exit_code: None,
        stderr: String::new(),
        millis: 0,
    };
    let dir = opts.work.join(&task.id);
    let _ = std::fs::remove_dir_all(&dir);
    let prepared = match task.prepare(&dir) {
        Ok(p) => p,
        Err(e) => {
            result.detail = format!("runner: cannot prepare the task: {e}");
            return result;
        }
    };
    // The writer reads the task; it has no business changing it (it is judged against bytes
    // it cannot reach anyway: see `judge_written`).
    for f in ["task.json", "data.bin"] {
        let _ = std::fs::set_permissions(dir.join(f), std::fs::Permissions::from_mode(0o444));
    }
    let timeout = if task.large {
        opts.spec.timeout * LARGE_TIMEOUT_FACTOR
    } else {
        opts.spec.timeout
    };
    let task_file = dir.join("task.json");
    let out1 = dir.join("out-1.safetensors");
    let first = attempt(opts, &task_file, &out1, timeout);
    stop.record(first.life(), &first.raw_stderr);
    result.exit_code = first.exit_code;
    result.stderr = first.stderr.clone();
    let mut elapsed = first.elapsed;
    let (outcome, detail, form) = match first.ended {
        Ended::Crashed(why) => (WriterOutcome::Crash, why, Vec::new()),
        Ended::TimedOut => (
            WriterOutcome::Timeout,
            format!("still running after {} s", timeout.as_secs_f64()),
            Vec::new(),
        ),
        Ended::Unsupported => (WriterOutcome::Unsupported, left_file(&out1), Vec::new()),
        Ended::Refused => {
            let outcome = match task.expect {
                Expect::Write => WriterOutcome::ShouldHaveWritten,
                Expect::Refuse => WriterOutcome::Pass,
                Expect::Either => WriterOutcome::Refused,
            };
            (outcome, left_file(&out1), Vec::new())
        }
        Ended::Wrote => {
            let (outcome, detail, form) = judge_written(task, &prepared, &out1);
            if matches!(
                outcome,
                WriterOutcome::Pass | WriterOutcome::Wrote | WriterOutcome::AddedMetadata
            ) {
                let out2 = dir.join("out-2.safetensors");
                let second = attempt(opts, &task_file, &out2, timeout);
                elapsed += second.elapsed;
                let again = match second.ended {
                    Ended::Wrote => match std::fs::read(&out1)
                        .map_err(|e| e.to_string())
                        .and_then(|a| same_bytes(&a, &out2))
                    {
                        Ok(true) => None,
                        Ok(false) => Some((
                            WriterOutcome::NotDeterministic,
                            "a second run wrote other bytes".to_owned(),
                        )),
                        Err(e) => {
                            Some((WriterOutcome::NotDeterministic, format!("second run: {e}")))
                        }
                    },
                    Ended::Crashed(why) => {
                        Some((WriterOutcome::Crash, format!("second run: {why}")))
                    }
                    Ended::TimedOut => Some((
                        WriterOutcome::Timeout,
                        format!("second run still running after {} s", timeout.as_secs_f64()),
                    )),
                    Ended::Refused | Ended::Unsupported => Some((
                        WriterOutcome::NotDeterministic,
                        format!(
                            "a second run did not write (exit {})",
                            second.exit_code.unwrap_or(-1)
                        ),
                    )),
                };
                match again {
                    None => (outcome, detail, form),
                    Some((o, d)) => (o, d, form),
                }
            } else {
                (outcome, detail, form)
            }
        }
    };
    result.outcome = outcome;
    result.detail = detail;
    result.form = form;
    result.millis = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
    if !opts.keep && (!result.outcome.is_failure() || task.large) {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

/// The start of a written file's header, for a report: `header: {"a":...`, at most 64
/// characters, with anything but printable ASCII escaped.
fn header_excerpt(file: &[u8]) -> String {
    const SHOWN: usize = 64;
    let Some(n) = file.get(..8).and_then(|b| <[u8; 8]>::try_from(b).ok()) else {
        return format!("a file of {} bytes", file.len());
    };
    let n = usize::try_from(u64::from_le_bytes(n)).unwrap_or(usize::MAX);
    let header = &file[8..file.len().min(n.saturating_add(8))];
    let shown: String = header
        .iter()
        .take(SHOWN)
        .map(|&b| match b {
            0x20..=0x7e => char::from(b).to_string(),
            _ => format!("\\x{b:02x}"),
        })
        .collect();
    let more = if header.len() > SHOWN { "..." } else { "" };
    format!("header: {shown}{more}")
}

/// A note when a run that wrote nothing left something at the output path (a partial file).
fn left_file(out: &Path) -> String {
    match std::fs::symlink_metadata(out) {
        Ok(m) if m.file_type().is_file() => {
            format!("left a file of {} bytes at the output path", m.len())
        }
        Ok(_) => "left something at the output path".to_owned(),
        Err(_) => String::new(),
    }
}

/// At most this many added metadata keys are named in a detail.
const SHOWN_KEYS: usize = 8;

/// Judge the file the first run wrote: the outcome, a detail, the form warnings.
fn judge_written(
    task: &Task,
    prepared: &PreparedTask,
    out: &Path,
) -> (WriterOutcome, String, Vec<String>) {
    let max = (8 + MAX_HEADER).saturating_add(task.data_len());
    let bad_file = |why: String| match task.expect {
        Expect::Refuse => (
            WriterOutcome::ShouldHaveRefused,
            format!("exit 0 instead of a refusal: {why}"),
            Vec::new(),
        ),
        _ => (WriterOutcome::InvalidFile, why, Vec::new()),
    };
    let file = match read_output(out, max) {
        Ok(f) => f,
        Err(e) => return bad_file(e),
    };
    // Judged against the task's bytes made again in memory: the data file handed to the
    // writer is the writer's to change.
    let data = task.data_bytes();
    let verdict = judge_file(&file, prepared, &data, &task.warnings);
    match (task.expect, verdict) {
        (Expect::Refuse, FileVerdict::Invalid(e)) => (
            WriterOutcome::ShouldHaveRefused,
            format!(
                "wrote a file stcheck rejects: {e}; {}",
                header_excerpt(&file)
            ),
            Vec::new(),
        ),
        (Expect::Refuse, FileVerdict::WrongContent(d)) => (
            WriterOutcome::ShouldHaveRefused,
            format!("wrote a valid file, not what was asked: {d}"),
            Vec::new(),
        ),
        (Expect::Refuse, FileVerdict::AddedMetadata { keys, .. }) => (
            WriterOutcome::ShouldHaveRefused,
            format!(
                "wrote a valid file with the task's content and metadata key(s) {keys:?} added"
            ),
            Vec::new(),
        ),
        (_, FileVerdict::AddedMetadata { keys, form }) => (
            WriterOutcome::AddedMetadata,
            format!(
                "the task's tensors and metadata exactly, and {} metadata key(s) added: {:?}",
                keys.len(),
                keys.iter().take(SHOWN_KEYS).collect::<Vec<_>>()
            ),
            form,
        ),
        (Expect::Refuse, FileVerdict::Ok { .. }) => (
            WriterOutcome::ShouldHaveRefused,
            "wrote a valid file with the task's content".to_owned(),
            Vec::new(),
        ),
        (_, FileVerdict::Invalid(e)) => (
            WriterOutcome::InvalidFile,
            format!("{e}; {}", header_excerpt(&file)),
            Vec::new(),
        ),
        (_, FileVerdict::WrongContent(d)) => (WriterOutcome::WrongContent, d, Vec::new()),
        (expect, FileVerdict::Ok { form }) => {
            let outcome = if expect == Expect::Either {
                WriterOutcome::Wrote
            } else {
                WriterOutcome::Pass
            };
            (outcome, String::new(), form)
        }
    }
}

/// Run the adapter on every selected task, `opts.spec.jobs` at a time. `progress` is called after
/// each task.
pub fn run_all(
    opts: &WriterRunOptions,
    tasks: &[Task],
    progress: &(dyn Fn(&TaskResult) + Sync),
) -> WriterResults {
    run_all_until(
        opts,
        tasks,
        progress,
        &Tripwire::new(opts.spec.max_startup_deaths),
    )
}

/// [`run_all`], stopped by `stop` (the tasks not started are left out of the results).
pub fn run_all_until(
    opts: &WriterRunOptions,
    tasks: &[Task],
    progress: &(dyn Fn(&TaskResult) + Sync),
    stop: &Tripwire,
) -> WriterResults {
    let chosen: Vec<&Task> = tasks.iter().filter(|t| selected(opts, t)).collect();
    let results = parallel_map(
        &chosen,
        opts.spec.jobs,
        stop,
        || (),
        |(), task| run_task_until(opts, task, stop),
        progress,
    );
    let mut summary = BTreeMap::new();
    for r in &results {
        *summary.entry(r.outcome).or_insert(0) += 1;
    }
    WriterResults {
        version: "1".to_owned(),
        adapter: opts.spec.adapter.clone(),
        command: opts.spec.command.clone(),
        timeout_ms: u64::try_from(opts.spec.timeout.as_millis()).unwrap_or(u64::MAX),
        large: opts.large,
        summary,
        tasks: results,
    }
}

#[cfg(test)]
mod tests {
    use super::stable_reason;

    #[test]
    fn panic_lines_lose_the_thread_id_and_the_registry_path() {
        assert_eq!(
            stable_reason(
                "thread 'main' (18308) panicked at /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/safetensors-0.8.0/src/tensor.rs:581:18: index out of bounds"
            ),
            "thread 'main' panicked at safetensors-0.8.0/src/tensor.rs:581:18: index out of bounds"
        );
        assert_eq!(stable_reason("ValueError: bad (1)"), "ValueError: bad (1)");
    }
}
