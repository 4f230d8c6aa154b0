//! The page cache around a scan of a file's data: what a gate that scans terabytes leaves
//! behind. Each block of the data region is first read from what the page cache holds without
//! waiting for the disk (`preadv2` with `RWF_NOWAIT`); a block that needed the disk was brought
//! in by this scan alone, and its pages are dropped once it is scanned
//! (`posix_fadvise(DONTNEED)`), while a file already in the cache stays there. The region is
//! read with `posix_fadvise(SEQUENTIAL)`, so the kernel reads ahead of the scan (further than
//! by default) while the block before is scanned. Elsewhere than on Linux, blocks are read
//! plainly and nothing is dropped. The positioned reads themselves are here too
//! ([`read_full_at`]), so the sources use this module and it uses none of them.

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

/// Drop the pages of `[at, at + len)` from the page cache (a block this scan brought in).
pub(crate) fn drop_behind(file: &File, at: u64, len: usize) {
    #[cfg(target_os = "linux")]
    {
        let len = std::num::NonZeroU64::new(len as u64);
        if len.is_some() {
            let _ = rustix::fs::fadvise(file, at, len, rustix::fs::Advice::DontNeed);
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
        drop_behind(&file, 0, bytes.len());
        sequential(&file);
        let (k, _) = read_noting_cold(&file, &mut buf, at).expect("read");
        assert_eq!(&buf[..k], &bytes[bytes.len() - 1000..]);
        let (k, _) = read_noting_cold(&file, &mut buf, 1000).expect("read");
        assert_eq!(&buf[..k], &bytes[1000..1000 + buf.len()]);
    }
}
