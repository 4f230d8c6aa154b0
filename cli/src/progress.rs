//! The progress bar, drawn by `indicatif` on standard error, never on standard output.
//!
//! By bytes, with the rate and the time left, when the check reads the data (`--deep`,
//! `--sha256`, `--deny-nonfinite`): the library's [`stcheck::Progress`] hook reports the bytes
//! as the scan (or the read of a pipe) goes, from every checking thread. By files otherwise.
//! Drawn when standard error is a terminal (`--progress` forces it, `--no-progress` hides it).
//! The line is chosen for the terminal's width and ends in the current file's name, truncated
//! to what is left, so it fits a narrow terminal (no wrapped line left behind on a redraw).
//! Output lines on a terminal standard output are written while the bar is cleared
//! ([`Progress::suspend`]).

use std::io::{self, IsTerminal};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::args::ProgressMode;

/// The bar's redraw rate, per second.
const HZ: u8 = 10;

/// What the bar counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Files (and sharded sets) done.
    Files(u64),
    /// Bytes done, of this many (`None`: standard input is among the inputs).
    Bytes(Option<u64>),
}

/// The bar of one run.
#[derive(Debug, Clone)]
pub(crate) struct Progress {
    bar: ProgressBar,
    unit: Unit,
}

impl Progress {
    /// A bar, if one is to be drawn.
    pub(crate) fn new(mode: ProgressMode, unit: Unit) -> Option<Self> {
        let target = match mode {
            ProgressMode::Never => return None,
            ProgressMode::Auto => {
                let t = ProgressDrawTarget::stderr_with_hz(HZ);
                if t.is_hidden() {
                    return None;
                }
                t
            }
            // Drawn whatever standard error is (a log file, a CI console).
            ProgressMode::Always => {
                ProgressDrawTarget::term_like_with_hz(Box::new(console::Term::stderr()), HZ)
            }
        };
        let width = console::Term::stderr().size().1;
        let (len, template) = match unit {
            Unit::Files(n) => (Some(n), files_template(width)),
            Unit::Bytes(Some(n)) => (Some(n), bytes_template(width)),
            Unit::Bytes(None) => (None, stream_template(width)),
        };
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        let bar = match len {
            Some(n) => ProgressBar::with_draw_target(Some(n), target),
            None => ProgressBar::with_draw_target(None, target),
        };
        bar.set_style(style);
        // Redraw while nothing arrives (a slow read, a long scan between two reports), so the
        // rate and the time left stay current.
        bar.enable_steady_tick(Duration::from_millis(200));
        Some(Progress { bar, unit })
    }

    /// Whether the bar counts bytes.
    pub(crate) fn by_bytes(&self) -> bool {
        matches!(self.unit, Unit::Bytes(_))
    }

    /// A job starts: show its path (escaped for output).
    pub(crate) fn start(&self, shown: &str) {
        self.bar.set_message(shown.to_owned());
    }

    /// A job is done; `planned` bytes were expected of it and `told` reported by its hook.
    pub(crate) fn job_done(&self, planned: u64, told: u64) {
        match self.unit {
            Unit::Files(_) => self.bar.inc(1),
            Unit::Bytes(_) => self.bar.inc(planned.saturating_sub(told)),
        }
    }

    /// Run `f` (which writes to the terminal) with the bar cleared, then redraw it.
    pub(crate) fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    /// Remove the bar for good.
    pub(crate) fn clear(&self) {
        self.bar.finish_and_clear();
    }

    /// The library hook of one job, counting what it reports.
    pub(crate) fn hook(&self) -> JobHook<'_> {
        JobHook {
            bar: self.by_bytes().then_some(&self.bar),
            told: AtomicU64::new(0),
        }
    }
}

/// Whether standard output is a terminal (then the bar is cleared around every write to it).
pub(crate) fn stdout_is_terminal() -> bool {
    io::stdout().is_terminal()
}

/// The bytes of one job, passed on to the bar.
#[derive(Debug)]
pub(crate) struct JobHook<'b> {
    bar: Option<&'b ProgressBar>,
    told: AtomicU64,
}

impl JobHook<'_> {
    /// A hook that tells nobody.
    pub(crate) fn none() -> Self {
        JobHook {
            bar: None,
            told: AtomicU64::new(0),
        }
    }

    /// The bytes reported so far.
    pub(crate) fn told(&self) -> u64 {
        self.told.load(Ordering::Relaxed)
    }
}

impl stcheck::Progress for JobHook<'_> {
    fn advance(&self, bytes: u64) {
        self.told.fetch_add(bytes, Ordering::Relaxed);
        if let Some(bar) = self.bar {
            bar.inc(bytes);
        }
    }
}

// The templates end in `{wide_msg}` (the current path, truncated to the room left), so the
// line never exceeds the terminal's width when the fixed part fits; the fixed part shrinks
// with the width: at 30 columns `100% 1023.99 MiB/s ETA 59m` is 26 columns.

fn bytes_template(width: u16) -> &'static str {
    if width >= 80 {
        "[{bar:20}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} ETA {eta} {wide_msg}"
    } else if width >= 30 {
        "{percent:>3}% {binary_bytes_per_sec} ETA {eta} {wide_msg}"
    } else {
        "{percent:>3}% {wide_msg}"
    }
}

fn stream_template(width: u16) -> &'static str {
    if width >= 40 {
        "{spinner} {binary_bytes} {binary_bytes_per_sec} {wide_msg}"
    } else {
        "{spinner} {binary_bytes} {wide_msg}"
    }
}

fn files_template(width: u16) -> &'static str {
    if width >= 60 {
        "[{bar:20}] {pos}/{len} files {wide_msg}"
    } else {
        "{pos}/{len} {wide_msg}"
    }
}
