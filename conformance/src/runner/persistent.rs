//! The persistent mode of protocol v2: one adapter process answers many cases, one JSON
//! request line on its standard input and one JSON reply line on its standard output each.
//!
//! A process that dies, times out or breaks the protocol is killed (its whole process group)
//! and a fresh one is started for the next case, so one bad case never spoils the next.

use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::exec::{kill_group, kill_process_group, OUTPUT_LIMIT};
use super::protocol::{self, Reply};

/// Bytes of standard error kept per case (the tail).
const STDERR_KEPT: usize = 64 * 1024;

/// One line of standard output, or why there is none.
enum Line {
    /// A complete line (without the newline); `Err` when it was longer than the limit.
    Text(Result<Vec<u8>, usize>),
    /// Standard output closed: the process is exiting.
    Eof,
}

/// A running adapter process.
struct Process {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Line>,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_done: Receiver<()>,
    /// No request answered yet (the first gets the startup allowance).
    fresh: bool,
    /// Lines read from its standard output so far.
    lines_read: usize,
}

/// What one request produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Asked {
    /// A well-formed reply.
    Reply(Reply),
    /// The process exited or was killed by a signal before replying ("exit code 3",
    /// "killed by signal 11").
    Died {
        /// How, in words.
        detail: String,
        /// The exit code, when it exited.
        code: Option<i32>,
    },
    /// It wrote something that is not a reply for this request (it is killed).
    ProtocolError(String),
    /// No reply within the timeout (it is killed).
    TimedOut,
}

/// A persistent adapter: started on the first request, restarted after a failure.
#[derive(Debug)]
pub struct Worker {
    command: Vec<String>,
    env: Vec<(String, String)>,
    startup: Duration,
    process: Option<Process>,
}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process")
            .field("pid", &self.child.id())
            .finish()
    }
}

fn spawn_lines(mut out: impl Read + Send + 'static) -> Receiver<Line> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut line: Vec<u8> = Vec::new();
        let mut dropped = 0usize;
        let mut buf = [0u8; 64 * 1024];
        loop {
            let n = match out.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let mut rest = &buf[..n];
            while let Some(i) = rest.iter().position(|&b| b == b'\n') {
                let room = OUTPUT_LIMIT.saturating_sub(line.len());
                line.extend_from_slice(&rest[..i.min(room)]);
                dropped += i.saturating_sub(room);
                let done = if dropped > 0 {
                    Err(line.len() + dropped)
                } else {
                    Ok(std::mem::take(&mut line))
                };
                line.clear();
                dropped = 0;
                if tx.send(Line::Text(done)).is_err() {
                    return;
                }
                rest = &rest[i + 1..];
            }
            let room = OUTPUT_LIMIT.saturating_sub(line.len());
            line.extend_from_slice(&rest[..rest.len().min(room)]);
            dropped += rest.len().saturating_sub(room);
        }
        let _ = tx.send(Line::Eof);
    });
    rx
}

fn spawn_stderr(mut err: impl Read + Send + 'static) -> (Arc<Mutex<Vec<u8>>>, Receiver<()>) {
    let kept = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = mpsc::channel();
    let sink = Arc::clone(&kept);
    thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match err.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if let Ok(mut v) = sink.lock() {
                        v.extend_from_slice(&buf[..n]);
                        if v.len() > STDERR_KEPT {
                            let cut = v.len() - STDERR_KEPT;
                            v.drain(..cut);
                        }
                    }
                }
            }
        }
        let _ = tx.send(());
    });
    (kept, rx)
}

impl Worker {
    /// A worker for `command` (no path is appended), with `env` added to its environment.
    /// The first request of each process may take `startup` longer than the case timeout.
    pub fn new(command: Vec<String>, env: Vec<(String, String)>, startup: Duration) -> Worker {
        Worker {
            command,
            env,
            startup,
            process: None,
        }
    }

    fn start(&mut self) -> std::io::Result<&mut Process> {
        if self.process.is_none() {
            let (program, args) = self.command.split_first().ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command")
            })?;
            let mut child = Command::new(program)
                .args(args)
                .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0)
                .spawn()?;
            let stdin = child.stdin.take().ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::BrokenPipe, "no stdin pipe")
            })?;
            let lines = match child.stdout.take() {
                Some(out) => spawn_lines(out),
                None => {
                    let (tx, rx) = mpsc::channel();
                    let _ = tx.send(Line::Eof);
                    rx
                }
            };
            let (stderr, stderr_done) = match child.stderr.take() {
                Some(err) => spawn_stderr(err),
                None => (Arc::new(Mutex::new(Vec::new())), mpsc::channel().1),
            };
            self.process = Some(Process {
                child,
                stdin,
                lines,
                stderr,
                stderr_done,
                fresh: true,
                lines_read: 0,
            });
        }
        self.process
            .as_mut()
            .ok_or_else(|| std::io::Error::other("no process"))
    }

    /// Kill the process (if any) and forget it.
    fn discard(&mut self) {
        if let Some(mut p) = self.process.take() {
            kill_group(&mut p.child);
            let _ = p.child.wait();
        }
    }

    /// Send one request and wait for its reply. Returns what happened and, unless it is a
    /// reply, the standard error the process wrote meanwhile. An error only when the program
    /// cannot be started.
    pub fn ask(
        &mut self,
        id: &str,
        request: &serde_json::Value,
        timeout: Duration,
    ) -> std::io::Result<(Asked, Vec<u8>)> {
        let startup = self.startup;
        let p = self.start()?;
        let allowance = if p.fresh { timeout + startup } else { timeout };
        let deadline = Instant::now() + allowance;
        if let Ok(mut e) = p.stderr.lock() {
            e.clear();
        }
        let mut line = request.to_string();
        line.push('\n');
        // A write error means the process is gone; what it left is read below.
        let _ = p
            .stdin
            .write_all(line.as_bytes())
            .and_then(|()| p.stdin.flush());
        let got = match p
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            Ok(Line::Text(Ok(bytes))) => {
                p.lines_read += 1;
                match protocol::parse_reply(&bytes, id) {
                    Ok(reply) => Some(Asked::Reply(reply)),
                    Err(e) => Some(Asked::ProtocolError(format!(
                        "line {} of the adapter's standard output, read as the reply to {id:?}: \
                         {e}. Standard output carries one JSON reply line per request and \
                         nothing else: a banner, a progress line or a value printed for \
                         debugging belongs on standard error",
                        p.lines_read
                    ))),
                }
            }
            Ok(Line::Text(Err(len))) => {
                p.lines_read += 1;
                Some(Asked::ProtocolError(format!(
                    "line {} of the adapter's standard output, read as the reply to {id:?}: \
                     {len} bytes, over the {OUTPUT_LIMIT}-byte limit",
                    p.lines_read
                )))
            }
            Ok(Line::Eof) | Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => Some(Asked::TimedOut),
        };
        let asked = match got {
            Some(a) => a,
            None => {
                // Standard output closed: wait (until the deadline) for the exit status.
                let status = loop {
                    match p.child.try_wait()? {
                        Some(s) => break Some(s),
                        None if Instant::now() >= deadline => break None,
                        None => thread::sleep(Duration::from_millis(5)),
                    }
                };
                match status {
                    None => Asked::TimedOut,
                    Some(s) => {
                        // The child is reaped. A member of its group that still holds stderr
                        // keeps the group ID reserved, so killing the group is safe then.
                        if p.stderr_done.recv_timeout(Duration::from_secs(1)).is_err() {
                            kill_process_group(p.child.id());
                        }
                        let detail = match (s.code(), s.signal()) {
                            (Some(c), _) => format!("exit code {c} before replying"),
                            (None, Some(sig)) => format!("killed by signal {sig}"),
                            (None, None) => "ended before replying".to_owned(),
                        };
                        Asked::Died {
                            detail,
                            code: s.code(),
                        }
                    }
                }
            }
        };
        // Standard error is read by another thread, so what it holds at a reply may still be
        // the previous case's: it is kept only when the process died, timed out or broke the
        // protocol, where it is the only explanation (a reply says why in its `message`).
        let stderr = match asked {
            Asked::Reply(_) => Vec::new(),
            _ => p.stderr.lock().map(|e| e.clone()).unwrap_or_default(),
        };
        match asked {
            Asked::Reply(_) => p.fresh = false,
            Asked::Died { .. } => self.process = None,
            Asked::ProtocolError(_) | Asked::TimedOut => self.discard(),
        }
        Ok((asked, stderr))
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let Some(mut p) = self.process.take() else {
            return;
        };
        // Closing stdin asks the adapter to exit; give it a moment, then kill the group.
        drop(p.stdin);
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            match p.child.try_wait() {
                Ok(Some(_)) | Err(_) => {
                    // What it left running in its group ends with it.
                    kill_process_group(p.child.id());
                    break;
                }
                Ok(None) if Instant::now() >= deadline => {
                    kill_group(&mut p.child);
                    let _ = p.child.wait();
                    break;
                }
                Ok(None) => thread::sleep(Duration::from_millis(10)),
            }
        }
    }
}
