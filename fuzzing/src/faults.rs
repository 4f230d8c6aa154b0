//! Target `source_faults`: a file that changes while it is checked, and a reader that fails.
//!
//! The change is made from the check's own progress hook ([`stcheck::Progress`]), at the n-th
//! time the check reports progress, so where it lands in the check is decided by the input,
//! never by scheduling: the same input makes the same change at the same point.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use stcheck::{Checked, Checker, ReadErrorKind, ReadMode};

use crate::*;

/// What happens to the file at the chosen moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// Nothing: the check gives the in-memory verdict.
    None,
    /// Cut to fewer bytes (not for a mapped file: touching a page past the new end of a map
    /// kills the process with `SIGBUS`, as `ReadMode::Mmap` documents).
    Truncate(u64),
    /// Grown by this many bytes.
    Extend(u64),
    /// One byte rewritten in place (same length).
    Rewrite(u64),
}

/// How the fault is set up, from the input's first 6 bytes: byte 0 the read mode (mod 3) and
/// whether the file's pages are dropped from the page cache (the next bit), byte 1 the
/// options, byte 2 the change, byte 3 the progress report they come at, bytes 4-5 where (or
/// how much).
#[derive(Debug, Clone, Copy)]
struct Plan {
    mode: ReadMode,
    /// Whether the file's pages are dropped from the page cache at the chosen progress
    /// report (before the change, if any).
    cold: bool,
    config: u8,
    change: Change,
    /// The progress report (1-based) at which the pages are dropped and the change made.
    trigger: u32,
    /// For the failing reader: the bytes it gives before its error.
    fail_after: u64,
}

impl Plan {
    fn of(head: &[u8; 6], len: u64) -> Plan {
        let mode = [ReadMode::Read, ReadMode::Stream, ReadMode::Mmap][usize::from(head[0] % 3)];
        let at = u64::from(u16::from_le_bytes([head[4], head[5]]));
        let mut change = match head[2] % 4 {
            0 => Change::None,
            1 if len > 0 => Change::Truncate(at % len),
            3 if len > 0 => Change::Rewrite(at % len),
            _ => Change::Extend(1 + at % 64),
        };
        if mode == ReadMode::Mmap {
            if let Change::Truncate(_) = change {
                change = Change::Extend(1 + at % 64);
            }
        }
        Plan {
            mode,
            cold: head[0] / 3 % 2 == 1,
            config: head[1] % 4,
            change,
            trigger: 1 + u32::from(head[3] % 8),
            fail_after: at,
        }
    }

    fn config(&self) -> Config {
        match self.config {
            0 => Config::default(),
            1 => Config::default().deep(true).sha256(true),
            2 => Config::default()
                .deep(true)
                .sha256(true)
                .threads(2)
                .min_bytes_per_thread(1),
            _ => Config::default().reference(true),
        }
    }
}

/// The bytes of `file` once `change` is made.
fn changed_bytes(file: &[u8], change: Change) -> Vec<u8> {
    let mut bytes = file.to_vec();
    match change {
        Change::None => {}
        Change::Truncate(to) => bytes.truncate(to as usize),
        Change::Extend(by) => bytes.resize(bytes.len() + by as usize, 0x20),
        Change::Rewrite(at) => bytes[at as usize] ^= 0x5A,
    }
    bytes
}

/// Make `change` to the open `file` holding `old`.
fn apply(file: &File, old: &[u8], change: Change) {
    use std::os::unix::fs::FileExt as _;
    let done = match change {
        Change::None => Ok(()),
        Change::Truncate(to) => file.set_len(to),
        Change::Extend(by) => file.write_all_at(&vec![0x20; by as usize], old.len() as u64),
        Change::Rewrite(at) => file.write_all_at(&[old[at as usize] ^ 0x5A], at),
    };
    done.expect("change the scratch file");
}

/// Drop `file`'s pages from the page cache (written back first: dirty pages stay), so the next
/// read of its data comes from the disk.
fn drop_pages(file: &File) {
    file.sync_data().expect("write the scratch file back");
    #[cfg(target_os = "linux")]
    {
        let _ = rustix::fs::fadvise(file, 0, None, rustix::fs::Advice::DontNeed);
    }
}

/// A reader that gives `data` and then, after `after` bytes, fails with an I/O error.
struct Failing<'a> {
    data: &'a [u8],
    left: u64,
}

impl Read for Failing<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the fuzz reader failed",
            ));
        }
        let k = buf
            .len()
            .min(self.data.len())
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        buf[..k].copy_from_slice(&self.data[..k]);
        self.data = &self.data[k..];
        self.left -= k as u64;
        Ok(k)
    }
}

/// The `source_faults` target. The input's first 6 bytes choose the read mode, the options,
/// a change and the progress report at which it is made; the rest is the file. Checked from a
/// scratch file that changes meanwhile: a file whose length changed never gets a verdict
/// (`ReadErrorKind::Changed`); a byte rewritten in place gives `Changed` or the verdict of the
/// bytes before or after the change, never one of a mix; no change gives the in-memory
/// verdict. Then, through a reader that fails after some bytes: the I/O error, or (when the
/// checker needed no more) the in-memory verdict.
pub fn check_source_faults(data: &[u8]) {
    let Some((head, file_bytes)) = data.split_first_chunk::<6>() else {
        return;
    };
    let len = file_bytes.len() as u64;
    let plan = Plan::of(head, len);
    let config = plan.config();
    let key = |c: &Checked<'_>| (outcome(&c.verdict), c.deep.clone(), c.sha256);
    let before = key(&Checker::check_slice(&config, file_bytes));
    let after_bytes = changed_bytes(file_bytes, plan.change);
    let after = key(&Checker::check_slice(&config, &after_bytes));

    let guard = crate::options::scratch()
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let mut file: &File = &guard;
    file.set_len(0).expect("truncate the scratch file");
    file.seek(SeekFrom::Start(0)).expect("seek");
    file.write_all(file_bytes).expect("write the scratch file");
    file.seek(SeekFrom::Start(0)).expect("seek");

    let stamp = stcheck::FileStamp::of(file).expect("the scratch file's stamp");
    assert_eq!((stamp.len(), stamp.is_empty()), (len, len == 0));
    // The start of the file as `read_head` hands it out: the bytes the checker took.
    let mut checker = Checker::new(&config).with_len(len);
    match stcheck::read_head(file, &mut checker, len) {
        Ok(head) => assert_eq!(
            head,
            file_bytes[..checker.consumed() as usize],
            "FUZZ FINDING: read_head gave other bytes than the file's first"
        ),
        Err(e) => panic!("FUZZ FINDING: read_head of an unchanged file: {e}"),
    }

    let calls = AtomicU32::new(0);
    let made = AtomicBool::new(false);
    let hook = |_: u64| {
        if calls.fetch_add(1, Ordering::SeqCst) + 1 != plan.trigger {
            return;
        }
        // Dropped after the header is read, the data region is read cold (dropped before the
        // check, the file's first read would bring it all in again: the kernel reads ahead).
        if plan.cold {
            drop_pages(file);
        }
        if plan.change != Change::None {
            apply(file, file_bytes, plan.change);
            made.store(true, Ordering::SeqCst);
        }
    };
    let got = stcheck::check_file_with(file, &config, plan.mode, &hook, |c| key(&c));
    let made = made.load(Ordering::SeqCst);
    let reference = config.reference;
    match (&got, made, plan.change) {
        (Err(e), true, _) if e.kind() == ReadErrorKind::Changed => assert!(
            e.is_policy() && e.code() == "changed" && !e.to_string().is_empty(),
            "FUZZ FINDING: a change reported as {e:?}"
        ),
        (Err(e), true, _) => panic!("FUZZ FINDING: a changed file ({plan:?}) failed with {e:?}"),
        (Ok(_), true, Change::Truncate(_) | Change::Extend(_)) => {
            panic!("FUZZ FINDING: a verdict on a file whose length changed ({plan:?})")
        }
        (Ok(v), true, _) => assert!(
            *v == before || *v == after,
            "FUZZ FINDING: a file rewritten in place ({plan:?}) got the verdict of neither version"
        ),
        // The reference verdict asked of a file may be refused where the check in memory
        // gives none to refuse; the strict verdict is the same.
        (Ok(v), false, _) if reference => assert_eq!(v.0, before.0, "FUZZ FINDING: {plan:?}"),
        (Ok(v), false, _) => assert_eq!(
            *v, before,
            "FUZZ FINDING: an unchanged file ({plan:?}) differs from memory"
        ),
        (Err(e), false, _) => assert!(
            reference && e.kind() != ReadErrorKind::Changed,
            "FUZZ FINDING: an unchanged file ({plan:?}) failed with {e:?}"
        ),
    }

    // A reader that fails: the error, or the verdict when the checker wanted no more.
    let reader = Failing {
        data: file_bytes,
        left: plan.fail_after,
    };
    match stcheck::check_reader(reader, &config) {
        Ok(c) if reference => assert_eq!(outcome(&c.verdict), before.0),
        Ok(c) => assert_eq!(
            key(&c),
            before,
            "FUZZ FINDING: a reader that failed after {} bytes gave another verdict",
            plan.fail_after
        ),
        Err(e) if reference && e.kind() != ReadErrorKind::Io => {}
        Err(e) => {
            assert!(
                e.kind() == ReadErrorKind::Io && plan.fail_after <= len && !e.is_policy(),
                "FUZZ FINDING: a reader failing after {} of {len} bytes: {e:?}",
                plan.fail_after
            );
            // The reader's own error is kept, and handed back.
            assert!(std::error::Error::source(&e).is_some() && e.path().is_none());
            assert_eq!(e.into_io_error().kind(), io::ErrorKind::BrokenPipe);
        }
    }
}
