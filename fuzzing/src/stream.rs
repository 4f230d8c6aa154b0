//! Target `stream`: chunked reads vs the whole buffer.

use crate::*;

/// A reader over a byte slice that returns short reads of the sizes in `schedule` (cycled),
/// and `ErrorKind::Interrupted` where a schedule byte is 0xFF.
#[derive(Debug)]
pub struct ChunkedReader<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) schedule: &'a [u8],
    pub(crate) step: usize,
    pub(crate) interrupted: bool,
}

impl<'a> ChunkedReader<'a> {
    /// Read `data` in chunks given by `schedule`; an empty schedule fills every read.
    pub fn new(data: &'a [u8], schedule: &'a [u8]) -> Self {
        ChunkedReader {
            data,
            schedule,
            step: 0,
            interrupted: false,
        }
    }
}

impl Read for ChunkedReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() || self.data.is_empty() {
            return Ok(0);
        }
        let limit = if self.schedule.is_empty() {
            buf.len()
        } else {
            let s = self.schedule[self.step % self.schedule.len()];
            self.step = self.step.wrapping_add(1);
            // Never two interruptions in a row, so every schedule makes progress.
            if s == 0xFF && !std::mem::replace(&mut self.interrupted, true) {
                return Err(io::Error::new(io::ErrorKind::Interrupted, "fuzz"));
            }
            self.interrupted = false;
            // 1..=128 bytes, or a multiple of 4 KiB for large regions.
            if s < 0x80 {
                usize::from(s) + 1
            } else {
                usize::from(s - 0x7F) * 4096
            }
        };
        let k = limit.min(buf.len()).min(self.data.len());
        buf[..k].copy_from_slice(&self.data[..k]);
        self.data = &self.data[k..];
        Ok(k)
    }
}

/// Split a `stream` target input: the last byte L (mod 64) is the length of the chunk schedule
/// `fast_path` target: the header fast path accepts only what the serde path accepts, and with
/// the same records, metadata and warnings. `header` is the N bytes after the length field.
pub fn check_fast_path(header: &[u8]) {
    if let Err(difference) = stcheck::internal::header_fast_vs_slow(header) {
        panic!("the header fast path differs from the serde path: {difference}");
    }
}

/// that precedes it; the rest is the file. Seeds are files with one 0x00 byte appended.
pub fn split_stream_input(data: &[u8]) -> (&[u8], &[u8]) {
    let Some((&last, rest)) = data.split_last() else {
        return (&[], &[]);
    };
    let l = usize::from(last % 64).min(rest.len());
    let (file, schedule) = rest.split_at(rest.len() - l);
    (file, schedule)
}

/// The `stream` target on a split input (see [`split_stream_input`]).
pub fn check_stream_input(data: &[u8]) {
    let (file, schedule) = split_stream_input(data);
    check_stream(file, schedule);
}

/// The one checker, fed `file` through reads in the chunks of `schedule`, gives the same
/// verdict, rule, offset, tensor and message, the same report, deep counts and hash as when it
/// is handed the whole buffer ([`stcheck::Checker::check_slice`]).
pub fn check_stream(file: &[u8], schedule: &[u8]) {
    for config in [
        Config::default(),
        Config::default().deny_warnings(true),
        Config::default().deep(true).sha256(true),
    ] {
        let whole = stcheck::Checker::check_slice(&config, file);
        let streamed = match stcheck::check_reader(ChunkedReader::new(file, schedule), &config) {
            Ok(c) => c,
            Err(e) => panic!("FUZZ FINDING: the streaming checker failed to read a slice: {e}"),
        };
        assert_eq!(
            (outcome(&streamed.verdict), &streamed.deep, streamed.sha256),
            (outcome(&whole.verdict), &whole.deep, whole.sha256),
            "FUZZ FINDING: streamed and whole-buffer checks differ ({config:?})"
        );
    }
}
