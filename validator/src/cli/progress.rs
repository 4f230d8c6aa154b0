//! A one-line progress bar on standard error, drawn only when standard error is a terminal,
//! the output is not JSON, and the work is long (many files, or a deep scan).

use std::io::{self, IsTerminal, Write};
use std::time::{Duration, Instant};

/// At least this many jobs before a bar is worth drawing (without `--deep`).
const MIN_JOBS: usize = 50;
const EVERY: Duration = Duration::from_millis(100);
const WIDTH: usize = 30;

#[derive(Debug)]
pub(crate) struct Progress {
    total: usize,
    last: Option<Instant>,
    shown: bool,
    stdout_tty: bool,
}

impl Progress {
    /// A bar, if one should be drawn.
    pub(crate) fn new(total: usize, json: bool, deep: bool) -> Option<Self> {
        let long = total >= MIN_JOBS || (deep && total > 0);
        (long && !json && io::stderr().is_terminal()).then(|| Progress {
            total,
            last: None,
            shown: false,
            stdout_tty: io::stdout().is_terminal(),
        })
    }

    /// Erase the bar before a line is written to a terminal stdout (the same screen).
    pub(crate) fn before_output(&mut self) {
        if self.shown && self.stdout_tty {
            self.clear();
        }
    }

    /// Redraw, at most every 100 ms.
    pub(crate) fn update(&mut self, done: usize) {
        let now = Instant::now();
        if self.last.is_some_and(|t| now.duration_since(t) < EVERY) {
            return;
        }
        self.last = Some(now);
        let filled = (done * WIDTH).checked_div(self.total).unwrap_or(WIDTH);
        let bar: String = (0..WIDTH)
            .map(|i| if i < filled { '#' } else { '-' })
            .collect();
        let mut e = io::stderr().lock();
        let _ = write!(e, "\r\x1b[2K[{bar}] {done}/{} files", self.total);
        let _ = e.flush();
        self.shown = true;
    }

    /// Remove the bar.
    pub(crate) fn clear(&mut self) {
        if self.shown {
            let mut e = io::stderr().lock();
            let _ = write!(e, "\r\x1b[2K");
            let _ = e.flush();
            self.shown = false;
            self.last = None;
        }
    }
}
