//! Files that change while they are checked (issue 19): a truncation, a growth or a rewrite in
//! place under the check is "not checked: the file changed while it was read" in every read
//! mode, never a verdict and never a signal. Every case is built at run time.
//!
//! The library cases are deterministic: the check's own progress hook changes the file the
//! first time it is called, so the change always falls inside the check. The command-line
//! cases change the file from the test while the binary reads it, and know that they did:
//! once the process has read a first MiB (its read count in `/proc/PID/io`), the test stops
//! it (SIGSTOP), reads the count again, and changes the file only if the process has not read
//! it all (so the check's last comparison with the file it opened is still to come); then it
//! lets the process go on (SIGCONT). No delay decides where the change falls, so a loaded
//! machine cannot move it before the open or after the check; a check caught too late (on a
//! very fast machine) is retried with a larger file, never blamed. They assert that the
//! process exits 2, not by a signal, with every other file's record and the summary written.
//! `STCHECK_CHANGED_BIN` runs them against another binary.
#![cfg(unix)]

use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};
use serde_json::Value;
use stcheck::write::{serialize, TensorSpec};
use stcheck::{Config, Dtype, ReadErrorKind, ReadMode};
use stcheck_testkit::cli::json_lines;

fn tempdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("changed-{name}"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// A valid file of `n` BOOL bytes (all 0x01) and a tiny F32 tensor.
fn bool_file(n: usize) -> Vec<u8> {
    serialize(
        &[
            TensorSpec::new("b", Dtype::BOOL, &[n as u64], &vec![1u8; n]),
            TensorSpec::new("w", Dtype::F32, &[1], &[0u8; 4]),
        ],
        &[],
    )
    .expect("serialize")
}

/// What a hook does to the file the first time the check reports progress.
#[derive(Debug, Clone, Copy)]
enum Change {
    /// Cut the file to its first 100 bytes.
    Truncate,
    /// Append bytes.
    Grow,
    /// Rewrite one data byte in place (same size): a BOOL byte 0x01 becomes 0x02.
    Rewrite,
}

fn apply(path: &Path, change: Change) {
    let f = OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open for writing");
    match change {
        Change::Truncate => f.set_len(100).expect("truncate"),
        Change::Grow => {
            let len = f.metadata().expect("stat").len();
            f.write_all_at(&[0u8; 16], len).expect("append");
        }
        Change::Rewrite => {
            let len = f.metadata().expect("stat").len();
            f.write_all_at(&[2u8], len - 10).expect("rewrite in place");
        }
    }
}

fn configs() -> Vec<(&'static str, Config)> {
    vec![
        ("header only", Config::default()),
        ("deep", Config::default().deep(true)),
        ("deep, 2 threads", Config::default().deep(true).threads(2)),
        (
            "deep + sha256, 3 threads",
            Config::default()
                .deep(true)
                .sha256(true)
                .threads(3)
                .min_bytes_per_thread(1),
        ),
        ("reference", Config::default().reference(true)),
    ]
}

/// Check `path` with a hook that changes the file at the first progress call.
fn check_changing(
    path: &Path,
    config: &Config,
    mode: ReadMode,
    change: Change,
) -> Result<bool, stcheck::ReadError> {
    let file = File::open(path).expect("open");
    let done = AtomicBool::new(false);
    let hook = |_: u64| {
        if !done.swap(true, Ordering::SeqCst) {
            apply(path, change);
        }
    };
    stcheck::check_file_with(&file, config, mode, &hook, |c| c.is_valid())
}

#[test]
fn a_file_changed_during_the_check_is_not_checked_in_every_read_mode() {
    let dir = tempdir("lib");
    let original = bool_file(3 << 20);
    for change in [Change::Truncate, Change::Grow, Change::Rewrite] {
        for mode in [ReadMode::Read, ReadMode::Stream] {
            for (what, config) in configs() {
                let path = dir.join("m.safetensors");
                fs::write(&path, &original).expect("write");
                // Status-change times are coarse: let the clock move past the write.
                thread::sleep(Duration::from_millis(20));
                let got = check_changing(&path, &config, mode, change);
                match got {
                    Err(e) => assert_eq!(
                        e.kind(),
                        ReadErrorKind::Changed,
                        "{change:?}, {mode:?}, {what}: {e}"
                    ),
                    Ok(valid) => panic!(
                        "{change:?}, {mode:?}, {what}: a verdict (valid: {valid}) on a file that \
                         changed during the check"
                    ),
                }
            }
        }
    }
}

#[test]
fn an_unchanged_file_is_checked_in_every_read_mode() {
    let dir = tempdir("unchanged");
    let path = dir.join("m.safetensors");
    fs::write(&path, bool_file(3 << 20)).expect("write");
    for mode in [ReadMode::Read, ReadMode::Stream, ReadMode::Mmap] {
        for (what, config) in configs() {
            let file = File::open(&path).expect("open");
            let valid = stcheck::check_file(&file, &config, mode, |c| c.is_valid())
                .unwrap_or_else(|e| panic!("{mode:?}, {what}: {e}"));
            assert!(valid, "{mode:?}, {what}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The command line, with the file changed by the test while the binary runs

fn bin() -> PathBuf {
    std::env::var_os("STCHECK_CHANGED_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_stcheck")))
}

struct Run {
    /// The exit status's code; `None` when a signal ended the process.
    code: Option<i32>,
    signal: Option<i32>,
    stdout: String,
    /// Whether the change was made inside the check (the process stopped after it had read a
    /// first MiB and before it had read the whole file).
    landed: bool,
}

/// Bytes the process must have read before the test stops it: more than anything it reads
/// besides the file under test (its libraries' headers, a tiny second file), so the file
/// under test is open and its data being read.
const MIDWAY: u64 = 1 << 20;

/// Run stcheck on `args` in `dir`; change `target` (of `len` bytes) while the process reads
/// it, if the process can be caught doing so (see the module's docs).
fn run_changing(dir: &Path, args: &[&str], target: &Path, change: Change, len: u64) -> Run {
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn stcheck");
    let mut out = child.stdout.take().expect("stdout");
    let reader = thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let pid = Pid::from_child(&child);
    // A hang guard only: nothing below waits for time to pass, only for the process.
    let guard = Instant::now() + Duration::from_secs(600);
    let mut landed = false;
    let mut tried = false;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < guard, "stcheck {args:?} did not end");
        if !tried && read_count(&child).is_some_and(|n| n > MIDWAY) {
            tried = true;
            kill_process(pid, Signal::STOP).expect("SIGSTOP");
            if wait_stopped(&child, guard) {
                // Stopped: the count cannot move. Past the first MiB and short of the whole
                // file (with a MiB for everything else it reads), the check is mid-read.
                let n = read_count(&child).unwrap_or(u64::MAX);
                if n > MIDWAY && n.saturating_add(MIDWAY) < len {
                    apply(target, change);
                    landed = true;
                }
            }
            kill_process(pid, Signal::CONT).expect("SIGCONT");
        }
        // How often the process is looked at, not an ordering of events.
        thread::sleep(Duration::from_millis(1));
    };
    Run {
        code: status.code(),
        signal: status.signal(),
        stdout: reader.join().expect("reader"),
        landed,
    }
}

/// The bytes `child` has read so far (`rchar` of `/proc/PID/io`), or `None` once it is gone.
fn read_count(child: &std::process::Child) -> Option<u64> {
    let io = fs::read_to_string(format!("/proc/{}/io", child.id())).ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("rchar:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Wait until every thread of `child` is stopped (state `T` in `/proc/PID/task/*/stat`);
/// false if it ended instead.
fn wait_stopped(child: &std::process::Child, guard: Instant) -> bool {
    let tasks = format!("/proc/{}/task", child.id());
    loop {
        assert!(Instant::now() < guard, "stcheck did not stop");
        let Ok(entries) = fs::read_dir(&tasks) else {
            return false;
        };
        let mut all = true;
        let mut any = false;
        for e in entries.flatten() {
            let Ok(stat) = fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            any = true;
            // The state follows the command name, which is in parentheses.
            let state = stat.rsplit_once(") ").and_then(|(_, r)| r.chars().next());
            all &= matches!(state, Some('T' | 't'));
        }
        if !any {
            return false;
        }
        if all {
            return true;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// A valid file whose check takes a while in a debug build: `mib` MiB of BOOL data (for the
/// data scan), or a header of `mib` MiB of metadata (for a header-only check).
fn slow_file(mib: usize, big_header: bool) -> Vec<u8> {
    if big_header {
        let value = "x".repeat(mib << 20);
        serialize(
            &[TensorSpec::new("w", Dtype::F32, &[1], &[0u8; 4])],
            &[("k", value.as_str())],
        )
        .expect("serialize")
    } else {
        bool_file(mib << 20)
    }
}

/// `stcheck --json DIR` on a directory of a file changed during its check and a valid file:
/// exit 2, a not_checked record for the first, a file record for the second, the summary.
fn directory_run_survives(name: &str, extra: &[&str], big_header: bool, change: Change) {
    let dir = tempdir(name);
    let models = dir.join("models");
    fs::create_dir_all(&models).expect("mkdir");
    fs::write(models.join("b.safetensors"), bool_file(16)).expect("write");
    let target = models.join("a.safetensors");
    let mut mib = 64;
    for attempt in 0..4 {
        let file = slow_file(mib, big_header);
        fs::write(&target, &file).expect("write");
        // File times are coarse: let the clock move past the write, so that a rewrite in
        // place gives the file another modification time (not an ordering of events).
        thread::sleep(Duration::from_millis(20));
        let mut args = vec!["--json", "-j", "1"];
        args.extend_from_slice(extra);
        args.push("models");
        let run = run_changing(&dir, &args, &target, change, file.len() as u64);
        assert_eq!(
            run.signal, None,
            "{name}: stcheck {args:?} was killed by signal {:?}; stdout:\n{}",
            run.signal, run.stdout
        );
        let records = json_lines(&run.stdout);
        let a = records
            .iter()
            .find(|r| r["data"]["path"] == "models/a.safetensors")
            .unwrap_or_else(|| panic!("{name}: no record of a.safetensors:\n{}", run.stdout));
        if !run.landed {
            // The check was not caught mid-read: try again with a larger file.
            assert!(attempt < 3, "{name}: the check was never caught mid-read");
            mib *= 2;
            continue;
        }
        assert_eq!(run.code, Some(2), "{name}: {}", run.stdout);
        assert_eq!(a["type"], "not_checked", "{name}: {a}");
        assert_eq!(a["data"]["reason"], "changed", "{name}: {a}");
        assert!(
            a["data"]["message"]
                .as_str()
                .is_some_and(|r| r.contains("changed while it was read")),
            "{name}: {a}"
        );
        assert!(
            records
                .iter()
                .any(|r| r["type"] == "file" && r["data"]["path"] == "models/b.safetensors"),
            "{name}: the other file's record is lost:\n{}",
            run.stdout
        );
        assert_eq!(
            records.last().map(|r| r["type"].clone()),
            Some(Value::from("summary")),
            "{name}: no summary:\n{}",
            run.stdout
        );
        let _ = fs::remove_dir_all(&dir);
        return;
    }
}

#[test]
fn cli_deep_check_of_a_file_truncated_under_it_is_not_checked() {
    directory_run_survives("deep-truncate", &["--deep"], false, Change::Truncate);
}

#[test]
fn cli_hash_of_a_file_truncated_under_it_is_not_checked_with_two_jobs() {
    let dir_args = ["--deep", "--sha256", "-j", "2"];
    directory_run_survives("sha-truncate", &dir_args, false, Change::Truncate);
}

#[test]
fn cli_header_check_of_a_file_truncated_under_it_is_not_checked() {
    directory_run_survives("header-truncate", &[], true, Change::Truncate);
}

#[test]
fn cli_stream_check_of_a_file_truncated_under_it_is_not_checked() {
    directory_run_survives(
        "stream-truncate",
        &["--stream", "--deep"],
        false,
        Change::Truncate,
    );
}

#[test]
fn cli_deep_check_of_a_file_rewritten_in_place_is_not_checked() {
    directory_run_survives("deep-rewrite", &["--deep"], false, Change::Rewrite);
}

#[test]
fn cli_sarif_and_text_outputs_survive_a_truncation() {
    let dir = tempdir("formats");
    let target = dir.join("a.safetensors");
    for format in ["text", "sarif"] {
        let mut mib = 64;
        for attempt in 0..4 {
            let file = slow_file(mib, false);
            fs::write(&target, &file).expect("write");
            let args = ["--format", format, "--deep", "a.safetensors"];
            let run = run_changing(&dir, &args, &target, Change::Truncate, file.len() as u64);
            assert_eq!(run.signal, None, "{format}: killed by a signal");
            if !run.landed {
                assert!(attempt < 3, "{format}: the check was never caught mid-read");
                mib *= 2;
                continue;
            }
            assert_eq!(run.code, Some(2), "{format}:\n{}", run.stdout);
            assert!(
                run.stdout.contains("changed while it was read"),
                "{format}:\n{}",
                run.stdout
            );
            break;
        }
    }
    let _ = fs::remove_dir_all(&dir);
}
