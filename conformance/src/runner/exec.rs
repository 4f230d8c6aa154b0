//! Running one adapter on one file: a child process with a timeout, its output captured.
//!
//! The child runs in a process group of its own, so on a timeout the whole group (an adapter
//! script and whatever it started) is killed, not just the direct child; when the child
//! exits, whatever it left running in its group is killed too.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Bytes kept of each of stdout and stderr; the rest is read and dropped. An answer longer
/// than this does not parse, and is classified as such.
pub const OUTPUT_LIMIT: usize = 64 << 20;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal (not by the runner).
    Signaled(i32),
    /// Still running at the timeout; the runner killed it.
    TimedOut,
}

/// What one run produced.
#[derive(Debug, Clone)]
pub struct Ran {
    /// How it ended.
    pub status: Status,
    /// Standard output (up to [`OUTPUT_LIMIT`]).
    pub stdout: Vec<u8>,
    /// Standard error (up to [`OUTPUT_LIMIT`]).
    pub stderr: Vec<u8>,
    /// Wall time.
    pub elapsed: Duration,
}

pub(crate) fn read_capped(mut r: impl Read + Send + 'static) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 64 * 1024];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = OUTPUT_LIMIT.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
        let _ = tx.send(kept);
    });
    rx
}

/// `kill -KILL -PGID` on the process group led by the process `leader`.
pub(crate) fn kill_process_group(leader: u32) {
    let _ = Command::new("kill")
        .arg("-KILL")
        .arg("--")
        .arg(format!("-{leader}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Kill the child's whole process group, then the child itself.
pub(crate) fn kill_group(child: &mut Child) {
    // The group was created with the child as its leader, and the child is not reaped yet, so
    // the group ID cannot have been reused.
    kill_process_group(child.id());
    let _ = child.kill();
}

/// Run `command` (program and arguments) with `file` appended, stdin closed, for at most
/// `timeout`, with the environment variables `env` added. An error is returned only when the
/// program cannot be started.
pub fn run(
    command: &[String],
    file: &Path,
    env: &[(&str, &str)],
    timeout: Duration,
) -> std::io::Result<Ran> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command"))?;
    let start = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .arg(file)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let out_rx = child.stdout.take().map(read_capped);
    let err_rx = child.stderr.take().map(read_capped);
    let deadline = start + timeout;
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait()? {
            Some(s) => {
                break match (s.code(), s.signal()) {
                    (Some(c), _) => Status::Exited(c),
                    (None, Some(sig)) => Status::Signaled(sig),
                    (None, None) => Status::Signaled(0),
                }
            }
            None if Instant::now() >= deadline => {
                kill_group(&mut child);
                let _ = child.wait();
                break Status::TimedOut;
            }
            None => {
                thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
                pause = (pause * 2).min(Duration::from_millis(20));
            }
        }
    };
    // The adapter's answer is complete when it exits: whatever it left running in its group
    // (a grandchild holding the pipes open) is ended with it, so no case waits for the
    // timeout and nothing outlives the run. The group's ID stays reserved while a member
    // lives; with none left the kill finds nothing.
    kill_process_group(child.id());
    // The pipes close when every process holding them has exited; one that left the group
    // (a new session) is waited for until the deadline only.
    let collect = |rx: Option<mpsc::Receiver<Vec<u8>>>| -> Vec<u8> {
        let Some(rx) = rx else { return Vec::new() };
        let left = deadline.saturating_duration_since(Instant::now());
        rx.recv_timeout(left.max(Duration::from_secs(5)))
            .unwrap_or_default()
    };
    let stdout = collect(out_rx);
    let stderr = collect(err_rx);
    Ok(Ran {
        status,
        stdout,
        stderr,
        elapsed: start.elapsed(),
    })
}
