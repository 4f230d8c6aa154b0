//! Running a run's items on a bounded number of threads, in order of the items, and stopping
//! early when the adapter never starts.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// How many start-up deaths in a row stop a run by default (`--max-startup-deaths`).
pub const DEFAULT_MAX_STARTUP_DEATHS: usize = 5;

/// What one item's run says about the adapter, for [`Tripwire`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Life {
    /// It answered (accepted, wrote, said "unsupported"): it starts.
    Answered,
    /// It refused the item (exit 1). Refusals with the same standard error, one after the
    /// other before anything was accepted, are start-up deaths too: protocol v1 reads any
    /// exit 1 as a refusal, and an adapter that dies at start-up with an uncaught exception
    /// (Python's ImportError) exits 1 on every item with the same traceback.
    Refused,
    /// It gave no answer: it crashed, died or timed out.
    NoAnswer,
    /// Neither (the runner's own problem, e.g. a missing file).
    Neither,
}

/// Stops a run whose adapter dies before it has ever answered: after `max` items in a row
/// that got no answer (or the same refusal, word for word), with no answer before them, the
/// remaining items are not started. Once any item is answered (or two refusals differ), the
/// adapter is known to read the files, and crashes are the items' own.
#[derive(Debug)]
pub struct Tripwire {
    max: usize,
    answered: AtomicBool,
    deaths: AtomicUsize,
    tripped: AtomicBool,
    last: Mutex<Vec<u8>>,
    /// The standard error of the current run of identical refusals, and its length.
    refusals: Mutex<(Vec<u8>, usize)>,
}

impl Tripwire {
    /// A tripwire after `max` deaths (0: never trips).
    pub fn new(max: usize) -> Tripwire {
        Tripwire {
            max,
            answered: AtomicBool::new(false),
            deaths: AtomicUsize::new(0),
            tripped: AtomicBool::new(false),
            last: Mutex::new(Vec::new()),
            refusals: Mutex::new((Vec::new(), 0)),
        }
    }

    /// Record what an item showed, with the adapter's standard error on that item.
    pub fn record(&self, life: Life, stderr: &[u8]) {
        match life {
            Life::Answered => self.answered.store(true, Ordering::SeqCst),
            Life::Neither => {}
            Life::Refused => {
                if self.answered.load(Ordering::SeqCst) || self.max == 0 {
                    return;
                }
                let Ok(mut r) = self.refusals.lock() else {
                    return;
                };
                if stderr.iter().all(u8::is_ascii_whitespace) {
                    // A refusal without a word says nothing about start-up.
                    self.answered.store(true, Ordering::SeqCst);
                } else if r.1 > 0 && r.0 != stderr {
                    // Two different refusals: the adapter reads the files.
                    self.answered.store(true, Ordering::SeqCst);
                } else {
                    r.0 = stderr.to_vec();
                    r.1 += 1;
                    if let Ok(mut l) = self.last.lock() {
                        l.clear();
                        l.extend_from_slice(stderr);
                    }
                    if r.1 >= self.max {
                        self.deaths.store(r.1, Ordering::SeqCst);
                        self.tripped.store(true, Ordering::SeqCst);
                    }
                }
            }
            Life::NoAnswer => {
                if self.answered.load(Ordering::SeqCst) || self.max == 0 {
                    return;
                }
                if let Ok(mut l) = self.last.lock() {
                    l.clear();
                    l.extend_from_slice(stderr);
                }
                if self.deaths.fetch_add(1, Ordering::SeqCst) + 1 >= self.max {
                    self.tripped.store(true, Ordering::SeqCst);
                }
            }
        }
    }

    /// Whether the run was stopped.
    pub fn tripped(&self) -> bool {
        self.tripped.load(Ordering::SeqCst) && !self.answered.load(Ordering::SeqCst)
    }

    /// How many start-up deaths were seen.
    pub fn deaths(&self) -> usize {
        self.deaths.load(Ordering::SeqCst)
    }

    /// The standard error of the last death.
    pub fn last_stderr(&self) -> Vec<u8> {
        self.last.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

/// Run `f` on every item, `jobs` threads at a time, each thread with its own state from
/// `init` (a persistent adapter process, say). `done` is called after each item. Items not
/// started because `stop` tripped are left out; the others keep their order.
pub fn parallel_map<T, S, R>(
    items: &[T],
    jobs: usize,
    stop: &Tripwire,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &T) -> R + Sync,
    done: &(dyn Fn(&R) + Sync),
) -> Vec<R>
where
    T: Sync,
    R: Send,
{
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1).min(items.len().max(1)) {
            s.spawn(|| {
                let mut state = init();
                loop {
                    if stop.tripped() {
                        break;
                    }
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(k) else { break };
                    let r = f(&mut state, item);
                    done(&r);
                    if let Ok(mut v) = slots.lock() {
                        v[k] = Some(r);
                    }
                }
            });
        }
    });
    slots
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .flatten()
        .collect()
}

/// The default number of workers: the CPUs, at most 8.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .min(8)
}
