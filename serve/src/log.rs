//! The service's log: lines appended to one bounded buffer and written to standard error by
//! one thread, as many as have gathered in one `write`. A verdict's line costs its formatting
//! into that buffer, not a system call per piece (`eprintln!` on the unbuffered standard
//! error writes each piece of its format on its own), and no connection waits for the
//! terminal or the journal unless the buffer is full. The writer is woken by the first line
//! after a quiet spell, then lets lines gather for [`GATHER`] (or until [`BATCH`] bytes, a
//! flush, or the end): under load, one wake-up and one `write` carry many verdicts.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Past this many bytes waiting, a line waits for the writer (the log keeps up, or the
/// service slows down; it never grows without bound).
const PENDING_MAX: usize = 256 << 10;

/// This many bytes waiting are written at once.
const BATCH: usize = 64 << 10;

/// How long the writer lets lines gather before it writes them: the most a line is late.
const GATHER: Duration = Duration::from_millis(10);

/// The log.
#[derive(Debug)]
pub(crate) struct Log {
    inner: Arc<Inner>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Debug, Default)]
struct Inner {
    state: Mutex<State>,
    /// The writer waits here for lines.
    lines: Condvar,
    /// Lines and flushes wait here for the writer.
    written: Condvar,
}

#[derive(Debug, Default)]
struct State {
    pending: Vec<u8>,
    /// The writer holds a batch.
    writing: bool,
    /// Someone waits for every line to be written.
    flush: bool,
    closed: bool,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Log {
    /// A log written to standard error.
    pub(crate) fn stderr() -> Log {
        Log::to(Box::new(std::io::stderr()))
    }

    /// A log written to `out`.
    pub(crate) fn to(mut out: Box<dyn Write + Send>) -> Log {
        let inner = Arc::new(Inner::default());
        let w = inner.clone();
        let writer = std::thread::Builder::new()
            .name("stcheck-serve-log".into())
            .spawn(move || {
                let mut batch = Vec::new();
                loop {
                    let mut s = w.lock();
                    while s.pending.is_empty() && !s.closed {
                        s = w.lines.wait(s).unwrap_or_else(|e| e.into_inner());
                    }
                    if s.pending.is_empty() {
                        return;
                    }
                    let until = Instant::now() + GATHER;
                    while !s.closed && !s.flush && s.pending.len() < BATCH {
                        let Some(left) = until.checked_duration_since(Instant::now()) else {
                            break;
                        };
                        s = w
                            .lines
                            .wait_timeout(s, left)
                            .unwrap_or_else(|e| e.into_inner())
                            .0;
                    }
                    s.flush = false;
                    std::mem::swap(&mut s.pending, &mut batch);
                    s.writing = true;
                    drop(s);
                    // A log that cannot be written is dropped, as `eprintln!` would panic.
                    let _ = out.write_all(&batch).and_then(|()| out.flush());
                    batch.clear();
                    w.lock().writing = false;
                    w.written.notify_all();
                }
            });
        // Without a thread, lines are written by whoever logs them (see `line`).
        let writer = writer.ok();
        if writer.is_none() {
            inner.lock().closed = true;
        }
        Log {
            inner,
            writer: Mutex::new(writer),
        }
    }

    /// Append one line, written by `f` (without its newline).
    pub(crate) fn line(&self, f: impl FnOnce(&mut Vec<u8>)) {
        let mut s = self.inner.lock();
        while s.pending.len() >= PENDING_MAX && !s.closed {
            s = self
                .inner
                .written
                .wait(s)
                .unwrap_or_else(|e| e.into_inner());
        }
        if s.closed {
            // No writer (stopped, or never started): straight out, in one write.
            drop(s);
            let mut one = Vec::new();
            f(&mut one);
            one.push(b'\n');
            let _ = std::io::stderr().write_all(&one);
            return;
        }
        // The writer needs waking for the first line after a quiet spell, and for a batch.
        let first = s.pending.is_empty();
        f(&mut s.pending);
        s.pending.push(b'\n');
        let full = s.pending.len() >= BATCH;
        drop(s);
        if first || full {
            self.inner.lines.notify_one();
        }
    }

    /// Until every line appended so far is written.
    pub(crate) fn flush(&self) {
        let mut s = self.inner.lock();
        s.flush = true;
        self.inner.lines.notify_one();
        while (!s.pending.is_empty() || s.writing) && !s.closed {
            s = self
                .inner
                .written
                .wait(s)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for Log {
    /// The lines still waiting are written, then the writer ends.
    fn drop(&mut self) {
        self.flush();
        self.inner.lock().closed = true;
        self.inner.lines.notify_all();
        let writer = self.writer.get_mut().map(Option::take);
        if let Ok(Some(w)) = writer {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// A writer that tells each write and waits to be let go before it returns.
    struct Held {
        out: Arc<Mutex<Vec<Vec<u8>>>>,
        entered: mpsc::Sender<()>,
        go: Arc<(Mutex<bool>, Condvar)>,
    }

    impl Write for Held {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let _ = self.entered.send(());
            let (lock, cv) = &*self.go;
            let mut go = lock.lock().expect("lock");
            while !*go {
                go = cv.wait(go).expect("lock");
            }
            self.out.lock().expect("lock").push(buf.to_vec());
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_that_gather_while_a_write_is_under_way_go_out_in_one_write() {
        let out = Arc::new(Mutex::new(Vec::new()));
        let (entered, writes) = mpsc::channel();
        let go = Arc::new((Mutex::new(false), Condvar::new()));
        let log = Log::to(Box::new(Held {
            out: out.clone(),
            entered,
            go: go.clone(),
        }));
        log.line(|b| b.extend_from_slice(b"first"));
        // The writer is inside its write of the first line, held there.
        writes.recv().expect("first write");
        std::thread::scope(|s| {
            for t in 0..4 {
                let log = &log;
                s.spawn(move || {
                    for i in 0..25 {
                        log.line(|b| {
                            let _ = write!(b, "thread {t} line {i}");
                        });
                    }
                });
            }
        });
        *go.0.lock().expect("lock") = true;
        go.1.notify_all();
        log.flush();
        let writes = out.lock().expect("lock").clone();
        assert_eq!(
            writes.len(),
            2,
            "the first line, then the other 100 at once"
        );
        assert_eq!(writes[0], b"first\n");
        let text = String::from_utf8(writes[1].clone()).expect("UTF-8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 100);
        for t in 0..4 {
            let mine: Vec<&str> = lines
                .iter()
                .copied()
                .filter(|l| l.starts_with(&format!("thread {t} ")))
                .collect();
            let want: Vec<String> = (0..25).map(|i| format!("thread {t} line {i}")).collect();
            assert_eq!(mine, want, "each thread's lines whole and in order");
        }
    }

    #[test]
    fn dropping_the_log_writes_what_waits() {
        #[derive(Clone, Default)]
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().expect("lock").extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let out = Shared::default();
        let log = Log::to(Box::new(out.clone()));
        for i in 0..1000 {
            log.line(|b| {
                let _ = write!(b, "{i}");
            });
        }
        drop(log);
        let text = String::from_utf8(out.0.lock().expect("lock").clone()).expect("UTF-8");
        let want: String = (0..1000).map(|i| format!("{i}\n")).collect();
        assert_eq!(text, want);
    }
}
