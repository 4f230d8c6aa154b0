//! The page cache around a scan of a file's data: what a gate that scans terabytes leaves
//! behind. Each block of the data region is first read from what the page cache holds without
//! waiting for the disk (`preadv2` with `RWF_NOWAIT`); once a block needed the disk, the scan
//! is reading a cold file, and the pages of every block from there on are dropped once it is
//! scanned (`posix_fadvise(DONTNEED)`, in 2 MiB-aligned steps: the kernel keeps a folio a range
//! covers in part): the kernel's readahead brings the next blocks in before they are asked for,
//! so they look cached though this scan read them. A file already in the cache stays there.
//! The region is read with `posix_fadvise(SEQUENTIAL)`, so the kernel reads ahead of the scan
//! (further than by default) while the block before is scanned. Elsewhere than on Linux, blocks
//! are read plainly and nothing is dropped.
//! The positioned reads themselves are here too ([`read_full_at`]), so the sources use
//! this module and it uses none of them.

use std::fs::File;
use std::io;

/// Tell the kernel the file is read in order from here (a larger readahead window).
pub(crate) fn sequential(file: &File) {
    #[cfg(target_os = "linux")]
    {
        // Advice only: a file system that ignores it reads as before.
        let _ = rustix::fs::fadvise(file, 0, None, rustix::fs::Advice::Sequential);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

/// Fill `buf` from `file` at offset `at` (fewer bytes only at the end of the file), and say
/// whether part of it was not in the page cache, so that this read brought it in.
pub(crate) fn read_noting_cold(file: &File, buf: &mut [u8], at: u64) -> io::Result<(usize, bool)> {
    #[cfg(target_os = "linux")]
    {
        use rustix::io::{Errno, ReadWriteFlags};
        let mut got = 0;
        while got < buf.len() {
            let mut slice = [io::IoSliceMut::new(&mut buf[got..])];
            match rustix::io::preadv2(file, &mut slice, at + got as u64, ReadWriteFlags::NOWAIT) {
                Ok(0) => return Ok((got, false)),
                Ok(k) => got += k,
                Err(Errno::INTR) => {}
                // Not in the cache: the disk has to be read.
                Err(Errno::AGAIN) => {
                    let rest = read_full_at(file, &mut buf[got..], at + got as u64)?;
                    return Ok((got + rest, true));
                }
                // RWF_NOWAIT not supported here: read plainly, and leave the cache as it is.
                Err(_) => break,
            }
        }
        let rest = read_full_at(file, &mut buf[got..], at + got as u64)?;
        Ok((got + rest, false))
    }
    #[cfg(not(target_os = "linux"))]
    {
        Ok((read_full_at(file, buf, at)?, false))
    }
}

/// Fill `buf` from `file` at offset `at` with positioned reads; the bytes read (fewer only at
/// the end of the file). Retries on `Interrupted`.
pub(crate) fn read_full_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match read_at_once(file, &mut buf[got..], at + got as u64) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(unix)]
fn read_at_once(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, at)
}

#[cfg(windows)]
fn read_at_once(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, at)
}

#[cfg(not(any(unix, windows)))]
fn read_at_once(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    use std::io::{Read, Seek};
    let mut f = file;
    f.seek(io::SeekFrom::Start(at))?;
    f.read(buf)
}

/// The pages a scan has dropped behind it, from its start: dropped in whole aligned
/// [`DROP_ALIGN`] steps, as the kernel keeps a page cache folio (up to 2 MiB) that a range
/// covers only in part.
#[derive(Debug)]
pub(crate) struct Behind {
    /// Everything before this offset has been dropped (from the scan's start).
    dropped: u64,
}

/// The alignment of the ranges dropped: the largest page cache folio.
const DROP_ALIGN: u64 = 2 << 20;

impl Behind {
    pub(crate) fn new(start: u64) -> Self {
        Behind { dropped: start }
    }

    /// The scan has read and scanned everything before `upto`: drop it from the page cache,
    /// up to the last aligned step (or all of it at the scan's `end`).
    pub(crate) fn drop_to(&mut self, file: &File, upto: u64, end: bool) {
        let to = if end { upto } else { upto - upto % DROP_ALIGN };
        if to > self.dropped {
            drop_range(file, self.dropped, to - self.dropped);
            self.dropped = to;
        }
    }
}

/// Drop the pages of `[at, at + len)` from the page cache.
pub(crate) fn drop_range(file: &File, at: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        if let Some(len) = std::num::NonZeroU64::new(len) {
            let _ = rustix::fs::fadvise(file, at, Some(len), rustix::fs::Advice::DontNeed);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, at, len);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn blocks_read_are_the_files_bytes_and_a_file_just_read_is_not_cold() {
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let mut file = crate::mmap::temp_file().expect("temp file");
        file.write_all(&bytes).expect("write");
        file.sync_all().expect("sync");
        let mut buf = vec![0u8; 128 * 1024];
        // Read once: the pages are in the page cache now, whatever they were before.
        let (k, _) = read_noting_cold(&file, &mut buf, 0).expect("read");
        assert_eq!(&buf[..k], &bytes[..buf.len()]);
        let (k, cold) = read_noting_cold(&file, &mut buf, 0).expect("read");
        assert_eq!((k, cold), (buf.len(), false));
        assert_eq!(&buf[..k], &bytes[..k]);
        // Short only at the end of the file; and after its pages are dropped, the same bytes.
        let at = (bytes.len() - 1000) as u64;
        drop_range(&file, 0, bytes.len() as u64);
        sequential(&file);
        let (k, _) = read_noting_cold(&file, &mut buf, at).expect("read");
        assert_eq!(&buf[..k], &bytes[bytes.len() - 1000..]);
        let (k, _) = read_noting_cold(&file, &mut buf, 1000).expect("read");
        assert_eq!(&buf[..k], &bytes[1000..1000 + buf.len()]);
    }
}
