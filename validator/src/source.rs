//! Byte sources: how a file's bytes reach the one [`Checker`].
//!
//! Each source is a thin adapter: a mapped file is handed to [`Checker::check_slice`]; a file
//! read without mapping, a pipe, a shard or a remote file feeds [`Checker::feed`] as far as
//! the checker wants ([`Checker::wanted`]). Options (deep scan, hash, deny flags, the
//! reference verdict) live in [`Config`] and are applied by the checker alone, so every
//! source checks the same way.

use std::fs::File;
use std::io::{self, Read, Seek, Write};

use crate::check::{Checked, Checker, Need};
use crate::error::{ReadError, ReadErrorKind};
use crate::limits::{Config, STREAM_BUFFER_SIZE};

/// How a file's bytes are obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReadMode {
    /// Memory-mapped (the default): the header is borrowed from the map and only the pages a
    /// check touches are read.
    Mmap,
    /// Read with `read(2)` into our own memory: the length field and the header only, or
    /// every byte for a deep scan (the whole file into memory for the reference verdict).
    Read,
    /// One forward pass through a fixed buffer, to the end of the file, as for a pipe.
    Stream,
}

impl ReadMode {
    /// `"mmap"`, `"read"` or `"stream"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReadMode::Mmap => "mmap",
            ReadMode::Read => "read",
            ReadMode::Stream => "stream",
        }
    }
}

/// A hook told how a check advances through a file, in bytes: for a progress bar (by bytes,
/// with a rate and an estimate of the time left) over long checks — a deep scan, a hash, a
/// file read through a pipe.
///
/// [`Progress::advance`] is called with the number of bytes newly done; by the time the check
/// returns, the counts add up to [`Checked::bytes_read`]. A mapped file's deep scan calls it
/// every [`crate::deep::PROGRESS_STEP`] bytes, from the scanning threads (hence `Sync`); a
/// read or streamed file after each buffer; a check that does not read the data, once for
/// the header and once for the rest. The hook must be cheap and must not block: it runs on
/// the checking threads. Closures `Fn(u64) + Sync` are hooks.
pub trait Progress: Sync {
    /// `bytes` more bytes of the file are done.
    fn advance(&self, bytes: u64);
}

impl<F: Fn(u64) + Sync> Progress for F {
    fn advance(&self, bytes: u64) {
        self(bytes)
    }
}

/// The hook of checks nobody watches.
pub(crate) fn no_progress() -> &'static dyn Progress {
    &|_: u64| {}
}

/// A read-only memory map of a file (see [`map`]); derefs to the file's bytes.
#[derive(Debug)]
pub struct Mapped(memmap2::Mmap);

impl std::ops::Deref for Mapped {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// A read-only memory map of `file`: the crate's one use of `unsafe`.
pub fn map(file: &File) -> io::Result<Mapped> {
    // SAFETY: `Mmap::map` is unsafe because the mapped bytes can change under us: the map
    // shows the file itself, not a copy. The map is read-only and private to this process,
    // and the validator only reads it, so it can never corrupt the file. But if another
    // process writes the file while it is mapped, the bytes we validate can change between
    // two reads of the same offset (the header we checked is not the header we report on),
    // and if it truncates the file, touching a page past the new end raises SIGBUS and
    // kills this process. Nothing here is undefined behaviour in practice for a file that
    // nobody else modifies, which is the normal case of a finished upload or a model
    // directory. For files others can still write, `ReadMode::Read` and `ReadMode::Stream`
    // read the bytes into our own memory with read(2): a concurrent writer can then only make
    // us validate a torn snapshot, never crash us or change bytes after they were checked.
    #[allow(unsafe_code)]
    let map = unsafe { memmap2::Mmap::map(file)? };
    Ok(Mapped(map))
}

/// Read until `buf` is full or the reader ends; the bytes read. Retries on `Interrupted`.
pub(crate) fn read_full<R: Read + ?Sized>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Feed `checker` from `reader` as far as it wants, telling `progress` of the bytes it takes.
/// With a known length, a reader that ends early means the file changed while it was read.
fn pump<'a, R: Read + ?Sized>(
    mut checker: Checker<'a>,
    reader: &mut R,
    len: Option<u64>,
    progress: &dyn Progress,
) -> Result<Checked<'a>, ReadError> {
    let mut buf = vec![0u8; STREAM_BUFFER_SIZE];
    let mut told = 0;
    while let Some(want) = checker.wanted() {
        let n = usize::try_from(want).unwrap_or(usize::MAX).min(buf.len());
        let k = read_full(reader, &mut buf[..n])?;
        if k == 0 {
            if len.is_some_and(|l| checker.consumed() < l) {
                return Err(ReadError::new(
                    ReadErrorKind::Changed,
                    "the file got shorter while it was read",
                ));
            }
            break;
        }
        let need = checker.feed(&buf[..k]);
        progress.advance(checker.consumed() - told);
        told = checker.consumed();
        if need == Need::Done {
            break;
        }
    }
    let checked = checker.finish();
    if let (Some(l), true) = (len, checked.bytes_read > len.unwrap_or(0)) {
        return Err(ReadError::new(
            ReadErrorKind::Changed,
            format!("the file grew while it was read (it was {l} bytes)"),
        ));
    }
    Ok(checked)
}

/// Check an open regular file (see [`crate::fs::open_regular`] to open one without blocking on
/// special files), reading it as `mode` says. `f` gets the result while the bytes it borrows
/// are still mapped.
pub fn check_file<T>(
    file: &File,
    config: &Config,
    mode: ReadMode,
    f: impl FnOnce(Checked<'_>) -> T,
) -> Result<T, ReadError> {
    check_file_with(file, config, mode, no_progress(), f)
}

/// [`check_file`], telling `progress` how far the check got (see [`Progress`]). The result is
/// the same.
pub fn check_file_with<T>(
    file: &File,
    config: &Config,
    mode: ReadMode,
    progress: &dyn Progress,
    f: impl FnOnce(Checked<'_>) -> T,
) -> Result<T, ReadError> {
    let len = file.metadata()?.len();
    match mode {
        ReadMode::Mmap => {
            let bytes = map(file)?;
            if bytes.len() as u64 != len {
                return Err(ReadError::new(
                    ReadErrorKind::Changed,
                    "the file changed size while it was mapped",
                ));
            }
            Ok(f(Checker::check_slice_with(config, &bytes, progress)))
        }
        ReadMode::Read if config.reference => {
            // The reference crate needs the whole file as one buffer.
            let mut bytes = Vec::new();
            file.take(len.saturating_add(1)).read_to_end(&mut bytes)?;
            if bytes.len() as u64 != len {
                return Err(ReadError::new(
                    ReadErrorKind::Changed,
                    "the file changed size while it was read",
                ));
            }
            Ok(f(Checker::check_slice_with(config, &bytes, progress)))
        }
        ReadMode::Read => {
            let checker = Checker::new(config).with_len(len);
            Ok(f(pump(checker, &mut &*file, Some(len), progress)?))
        }
        ReadMode::Stream if config.reference => {
            let spilled = spill(&mut &*file, config.max_spill)?;
            let bytes = map(&spilled)?;
            Ok(f(Checker::check_slice_with(config, &bytes, progress)))
        }
        ReadMode::Stream => Ok(f(pump(Checker::new(config), &mut &*file, None, progress)?)),
    }
}

/// Check a stream of unknown length (standard input, a pipe) in one forward pass. It stops at
/// the first byte past the data region, so an endless stream ends there. The reference verdict
/// needs the whole file at once: then the stream is copied to an unlinked temporary file (at
/// most [`Config::max_spill`] bytes; beyond that it is not checked) and mapped.
pub fn check_reader<R: Read>(reader: R, config: &Config) -> Result<Checked<'static>, ReadError> {
    check_reader_with(reader, config, no_progress())
}

/// [`check_reader`], telling `progress` how far the check got (see [`Progress`]). The result
/// is the same.
pub fn check_reader_with<R: Read>(
    mut reader: R,
    config: &Config,
    progress: &dyn Progress,
) -> Result<Checked<'static>, ReadError> {
    if config.reference {
        let spilled = spill(&mut reader, config.max_spill)?;
        let bytes = map(&spilled)?;
        return Ok(Checker::check_slice_with(config, &bytes, progress).into_owned());
    }
    pump(Checker::new(config), &mut reader, None, progress)
}

/// Copy `reader` into a new temporary file, unlinked at once so nothing is left behind, of at
/// most `max` bytes.
fn spill<R: Read + ?Sized>(reader: &mut R, max: u64) -> Result<File, ReadError> {
    let dir = std::env::temp_dir();
    let mut file = None;
    for attempt in 0..16u32 {
        let name = format!(
            ".stcheck-spill-{}-{}-{attempt}",
            std::process::id(),
            crate::json::random_u64()
        );
        let path = dir.join(name);
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => {
                let _ = std::fs::remove_file(&path);
                file = Some(f);
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(ReadError::io(e).with_path(&path)),
        }
    }
    let mut file =
        file.ok_or_else(|| ReadError::new(ReadErrorKind::Io, "could not create a temporary file"))?;
    let copied = io::copy(&mut reader.take(max.saturating_add(1)), &mut file)?;
    if copied > max {
        return Err(ReadError::new(
            ReadErrorKind::TooLarge,
            format!(
                "the input is longer than {max} bytes, the most copied to a temporary file for \
                 a check that needs the whole file (the reference verdict)"
            ),
        ));
    }
    file.flush()?;
    file.rewind()?;
    Ok(file)
}
