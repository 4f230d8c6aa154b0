//! Byte sources: how a file's bytes reach the one [`Checker`].
//!
//! Each source is a thin adapter: a mapped file is handed to [`Checker::check_slice`]; a file
//! read without mapping, a pipe, a shard or a remote file feeds [`Checker::feed`] as far as
//! the checker wants ([`Checker::wanted`]). Options (deep scan, hash, deny flags, the
//! reference verdict) live in [`Config`] and are applied by the checker alone, so every
//! source checks the same way.

use std::fs::File;
use std::io::{self, Read};

use crate::cache::read_full_at;
use crate::check::{read_full, require_reference, Checked, Checker, Need};
use crate::error::{ReadError, ReadErrorKind};
use crate::frame::LENGTH_FIELD;
use crate::limits::{Config, HEAD_LEN, STREAM_BUFFER_SIZE};
use crate::mmap::map;
use crate::progress::{no_progress, Progress};

/// How a file's bytes are obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ReadMode {
    /// Memory-mapped: the header is borrowed from the map and only the pages a check touches
    /// are read. **A file truncated by another process while it is mapped kills this process
    /// with `SIGBUS`** when a page past the new end is touched; use it only for files nobody
    /// else can change. It is faster than [`ReadMode::Read`] only for a check that reads the
    /// data of a file already in the page cache, which reading copies out of the cache (the
    /// deep scan of a warm 1 GiB file on 2 threads: about 4x, `benches/benches/scan.rs`).
    Mmap,
    /// Positioned reads (`pread`) into our own memory, the default: the length field and the
    /// header only, or, for a deep scan or a hash, the data region in blocks split across
    /// [`Config::threads`]. A file that changes under the check is
    /// [`ReadErrorKind::Changed`], never a crash.
    #[default]
    Read,
    /// One forward pass through a fixed buffer, to the end of the file, as for a pipe.
    Stream,
}

impl ReadMode {
    /// `"mmap"`, `"read"` or `"stream"` (read back by `str::parse`).
    pub fn as_str(self) -> &'static str {
        match self {
            ReadMode::Mmap => "mmap",
            ReadMode::Read => "read",
            ReadMode::Stream => "stream",
        }
    }
}

crate::error::from_name! {
    ReadMode: [ReadMode::Mmap, ReadMode::Read, ReadMode::Stream];
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
        // The header goes straight into the checker's buffer, not through `buf`.
        if let Some(k) = checker.read_header(&mut &mut *reader)? {
            progress.advance(checker.consumed() - told);
            told = checker.consumed();
            if k < want {
                // The input ended inside the header.
                if len.is_some_and(|l| checker.consumed() < l) {
                    return Err(changed());
                }
                break;
            }
            continue;
        }
        let n = usize::try_from(want).unwrap_or(usize::MAX).min(buf.len());
        let k = read_full(reader, &mut buf[..n])?;
        if k == 0 {
            if len.is_some_and(|l| checker.consumed() < l) {
                return Err(changed());
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
            format!("the file changed while it was read (it grew past its {l} bytes)"),
        ));
    }
    Ok(checked)
}

/// Check an open regular file (the gate's `stcheck_gate::fs::open_regular` opens one without
/// blocking on special files), reading it as `mode` says. `f` gets the result while the bytes it borrows
/// are still mapped.
///
/// A file that changes while it is checked (another process truncates, extends or rewrites
/// it) is [`ReadErrorKind::Changed`], never a verdict: its size, modification and status-change
/// times are compared before and after, and a read that ends early is caught as it happens.
/// [`ReadMode::Read`] and [`ReadMode::Stream`] read into our own memory, so no change can
/// crash the process; [`ReadMode::Mmap`] cannot promise that (see [`map`]).
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
    check_opened(file, &FileStamp::of(file)?, config, mode, progress, f)
}

/// [`check_file_with`] for a file whose [`FileStamp`] the caller took when it opened it (from
/// the `fstat` that confirmed it is a regular file): the check starts from that stamp instead
/// of asking again, so a change since then is caught too. `opened` must be this file's.
pub fn check_opened<T>(
    file: &File,
    opened: &FileStamp,
    config: &Config,
    mode: ReadMode,
    progress: &dyn Progress,
    f: impl FnOnce(Checked<'_>) -> T,
) -> Result<T, ReadError> {
    let len = opened.len;
    match mode {
        ReadMode::Mmap => {
            let bytes = map(file)?;
            if bytes.len() as u64 != len {
                return Err(changed());
            }
            let checked = Checker::check_slice_with(config, &bytes, progress);
            opened.unchanged(file)?;
            Ok(f(require_reference(checked, config)?))
        }
        ReadMode::Read => {
            let checked = read_at(file, config, len, progress)?;
            opened.unchanged(file)?;
            Ok(f(require_reference(checked, config)?))
        }
        ReadMode::Stream => {
            let checked = stream(&mut &*file, config, Some(len), progress)?;
            opened.unchanged(file)?;
            Ok(f(checked))
        }
    }
}

/// "The file changed while it was read".
fn changed() -> ReadError {
    ReadError::new(ReadErrorKind::Changed, "the file changed while it was read")
}

/// What tells that an open file changed between two moments: its size, its modification and
/// status-change times (a write, a truncation, a rewrite in place all set them), and which
/// file it is. Every check of an open file compares the stamp it started from with one taken
/// after its last read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    #[cfg(unix)]
    status: (i64, i64, u64, u64),
}

impl FileStamp {
    /// The open file's stamp now (one `fstat`).
    pub fn of(file: &File) -> io::Result<FileStamp> {
        Ok(FileStamp::from_metadata(&file.metadata()?))
    }

    /// The stamp in `meta`, which must come from the open file ([`File::metadata`]): for a
    /// caller that has just asked for it, one system call less.
    pub fn from_metadata(meta: &std::fs::Metadata) -> FileStamp {
        #[cfg(unix)]
        let status = {
            use std::os::unix::fs::MetadataExt;
            (meta.ctime(), meta.ctime_nsec(), meta.ino(), meta.dev())
        };
        FileStamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            #[cfg(unix)]
            status,
        }
    }

    /// The file's length when the stamp was taken.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the length was 0.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `Ok` if `file` still has this stamp, else [`ReadErrorKind::Changed`] ("the file changed
    /// while it was read").
    pub fn unchanged(&self, file: &File) -> Result<(), ReadError> {
        match FileStamp::of(file)? == *self {
            true => Ok(()),
            false => Err(changed()),
        }
    }
}

/// Check a regular file of `len` bytes with positioned reads (`pread`): the length field and
/// header into memory ([`read_head`]), then, for a check that reads the data, the data region
/// in blocks split across [`Config::threads`] ([`FileRegion`]). Nothing is mapped: a file that
/// shrinks under the check is a read that ends early ([`ReadErrorKind::Changed`]), never a
/// signal.
fn read_at(
    file: &File,
    config: &Config,
    len: u64,
    progress: &dyn Progress,
) -> Result<Checked<'static>, ReadError> {
    // With the reference verdict, the checker runs the crate on the length field and header
    // it reads, over a sparse file of this length (`Checker::with_len`).
    let mut checker = Checker::new(config).with_len(len);
    read_head_with(file, &mut checker, len, false, progress)?;
    if checker.at_data() && config.reads_data() {
        let at = checker.consumed();
        let region = FileRegion {
            file,
            start: at,
            len: len.saturating_sub(at),
        };
        checker.feed_region(&region, progress)?;
    }
    Ok(checker.finish())
}

/// How many bytes the first read of a file's start asks for: a length field and a header of
/// up to about 100 tensors come in one system call. Reading past a short header costs a copy
/// of at most this much.
const FIRST_READ: usize = 16 * 1024;

/// Feed a new `checker` of a file `len` bytes long ([`Checker::with_len`]) the start of `file`
/// with positioned reads, as far as it wants it before the data region: the length field and
/// the header, or the first bytes of a file that is not safetensors. The first read asks for
/// up to 16 KiB, so a small file's length field and header cost one system call; the bytes
/// fed are bounded by the header limit, as the checker wants no more. Returns those bytes
/// (the file's first [`Checker::consumed`] bytes), e.g. to hand the header out after checking
/// it. A file that ends before `len` changed while it was read ([`ReadErrorKind::Changed`]).
pub fn read_head(file: &File, checker: &mut Checker<'_>, len: u64) -> Result<Vec<u8>, ReadError> {
    read_head_with(file, checker, len, true, no_progress())
}

/// [`read_head`]; without `keep`, the reads reuse one buffer of at most
/// [`STREAM_BUFFER_SIZE`] bytes and nothing is returned.
fn read_head_with(
    file: &File,
    checker: &mut Checker<'_>,
    len: u64,
    keep: bool,
    progress: &dyn Progress,
) -> Result<Vec<u8>, ReadError> {
    // `buf` holds the file's bytes from `base`; the first `fed` of them went to the checker.
    let mut buf: Vec<u8> = Vec::new();
    let mut base = 0u64;
    let mut fed = 0usize;
    let mut told = 0;
    while !checker.at_data() {
        let Some(want) = checker.wanted() else {
            break;
        };
        if fed == buf.len() && !keep && want > FIRST_READ as u64 {
            // The rest of a large header, read once straight into the checker's buffer
            // ([`Checker::read_header`]).
            let at = base + buf.len() as u64;
            if let Some(k) = read_header_at(file, checker, at)? {
                progress.advance(checker.consumed() - told);
                told = checker.consumed();
                if k < want {
                    return Err(changed());
                }
                continue;
            }
        }
        if fed == buf.len() {
            if !keep {
                base += buf.len() as u64;
                buf.clear();
                fed = 0;
            }
            let at = base + buf.len() as u64;
            let mut step = want.min(STREAM_BUFFER_SIZE as u64);
            if at == 0 {
                step = step.max(len.min(FIRST_READ as u64));
            }
            let start = buf.len();
            buf.resize(
                start + usize::try_from(step).unwrap_or(STREAM_BUFFER_SIZE),
                0,
            );
            let k = read_full_at(file, &mut buf[start..], at)?;
            buf.truncate(start + k);
            if k == 0 {
                if at < len {
                    return Err(changed());
                }
                break;
            }
        }
        let take = usize::try_from(want)
            .unwrap_or(usize::MAX)
            .min(buf.len() - fed);
        let need = checker.feed(&buf[fed..fed + take]);
        fed += take;
        progress.advance(checker.consumed() - told);
        told = checker.consumed();
        if need == Need::Done {
            break;
        }
    }
    match keep {
        true => {
            buf.truncate(fed);
            Ok(buf)
        }
        false => Ok(Vec::new()),
    }
}

/// [`Checker::read_header`] from `file` at `at`, with positioned reads: the file's position is
/// neither used nor moved.
fn read_header_at(file: &File, checker: &mut Checker<'_>, at: u64) -> io::Result<Option<u64>> {
    checker.read_header(&mut At { file, at })
}

/// A file read on from `at` with positioned reads (`pread`) of at most [`STREAM_BUFFER_SIZE`]
/// bytes each: a 100 MB header in about a hundred system calls, which cost nothing beside the
/// copy, and a process stopped in the middle of one (the tests of files changed under a
/// check) is caught mid-header rather than before or after it.
struct At<'f> {
    file: &'f File,
    at: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(STREAM_BUFFER_SIZE);
        let k = read_full_at(self.file, &mut buf[..n], self.at)?;
        self.at += k as u64;
        Ok(k)
    }
}

/// Bytes read at a time by each thread of a split scan of a file: small enough to stay in the
/// L2 cache between the copy and the scan, large enough that the system calls cost little.
pub(crate) const READ_BLOCK: usize = 256 * 1024;

/// The rest of a regular file from `start`, read in [`READ_BLOCK`]s into a buffer of each
/// reading thread's own, each scanned right after its read; blocks the scan brought in from
/// the disk are dropped from the page cache behind it (`cache`).
struct FileRegion<'f> {
    file: &'f File,
    start: u64,
    len: u64,
}

impl crate::deep::Region for FileRegion<'_> {
    fn len(&self) -> u64 {
        self.len
    }

    fn visit(&self, at: u64, len: u64, f: &mut dyn FnMut(&[u8])) -> Result<(), ReadError> {
        let spare = std::cell::Cell::new(Some(vec![
            0u8;
            READ_BLOCK.min(
                usize::try_from(len).unwrap_or(usize::MAX)
            )
        ]));
        self.visit_owned(at, len, &mut || spare.take(), &mut |buf, n| {
            f(&buf[..n]);
            spare.set(Some(buf));
            true
        })
    }

    fn copies(&self) -> bool {
        true
    }

    fn visit_owned(
        &self,
        at: u64,
        len: u64,
        take: &mut dyn FnMut() -> Option<Vec<u8>>,
        f: &mut dyn FnMut(Vec<u8>, usize) -> bool,
    ) -> Result<(), ReadError> {
        debug_assert!(at >= self.start && at + len <= self.start + self.len);
        let mut pos = at;
        let end = at + len;
        crate::cache::sequential(self.file);
        // Whether this scan reads from the disk: from the first block that was not in the page
        // cache on, every block is dropped behind it, as the kernel's readahead has brought the
        // next ones in before they are asked for (they look cached, but this scan read them).
        let mut cold = false;
        let mut behind = crate::cache::Behind::new(at);
        while pos < end {
            let Some(mut buf) = take() else {
                return Ok(());
            };
            if buf.is_empty() {
                buf.resize(READ_BLOCK, 0);
            }
            let n = usize::try_from(end - pos)
                .unwrap_or(usize::MAX)
                .min(buf.len());
            let (k, from_disk) = crate::cache::read_noting_cold(self.file, &mut buf[..n], pos)?;
            if k < n {
                return Err(changed());
            }
            cold |= from_disk;
            pos += n as u64;
            // The block is copied out of the page cache: its pages may go before it is used.
            if cold {
                behind.drop_to(self.file, pos, pos == end);
            }
            if !f(buf, n) {
                return Ok(());
            }
        }
        Ok(())
    }
}

/// Check a stream of unknown length (standard input, a pipe) in one forward pass. It stops at
/// the first byte past the data region, so an endless stream ends there. With the reference
/// verdict, the length field and header are kept (they are bounded by the header limits) and
/// the stream is read on, without keeping its bytes, as far as decides the reference crate's
/// verdict too (see `decisive_len`): the crate then runs on the length field and header over
/// a sparse temporary file of that length, as for a file. Nothing but the header is stored.
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
    stream(&mut reader, config, None, progress)
}

/// One forward pass through `reader` (of `len` bytes, when it is a file of known size): the
/// strict check, and with [`Config::reference`] the reference crate's verdict.
fn stream<R: Read + ?Sized>(
    reader: &mut R,
    config: &Config,
    len: Option<u64>,
    progress: &dyn Progress,
) -> Result<Checked<'static>, ReadError> {
    if !config.reference {
        return pump(Checker::new(config), reader, len, progress);
    }
    let mut reader = Counted {
        inner: reader,
        read: 0,
        ended: false,
    };
    // The length field and the header, for the reference crate.
    let mut head = vec![0u8; LENGTH_FIELD];
    let got = read_full(&mut reader, &mut head)?;
    head.truncate(got);
    let mut n = 0;
    if got == LENGTH_FIELD {
        n = u64::from_le_bytes(head[..LENGTH_FIELD].try_into().expect("8 bytes"));
        if n <= config.max_header_size.max(crate::reference::MAX_HEADER) {
            (&mut reader).take(n).read_to_end(&mut head)?;
        }
    }
    // A header too large for the reference crate: the check would end not checked whatever
    // the rest holds, so it ends now (nothing more is read or held).
    if let Err(why) = crate::reference::admit(head.get(LENGTH_FIELD..).unwrap_or(&[])) {
        return Err(crate::check::reference_refused(&why, config.names));
    }
    let decisive = decisive_len(&head, n, config);
    // The strict check, fed the bytes read so far and then the rest of the stream.
    let strict = Config {
        reference: false,
        ..config.clone()
    };
    let mut checker = Checker::new(&strict);
    let mut checked = if checker.feed(&head) == Need::Done {
        progress.advance(checker.consumed());
        checker.finish()
    } else {
        progress.advance(checker.consumed());
        pump(checker, &mut reader, None, progress)?
    };
    if let Some(l) = len.filter(|&l| reader.read > l) {
        return Err(ReadError::new(
            ReadErrorKind::Changed,
            format!("the file changed while it was read (it grew past its {l} bytes)"),
        ));
    }
    // Read on, keeping nothing, to the length that decides the reference crate's verdict (or
    // the end of the stream, whichever comes first), and one byte more to see if it ends.
    if !reader.ended && reader.read < decisive {
        let rest = decisive - reader.read;
        io::copy(&mut (&mut reader).take(rest), &mut io::sink())?;
    }
    let mut probe = [0u8; 1];
    let went_on = !reader.ended && read_full(&mut reader, &mut probe)? == 1;
    if len.is_some_and(|l| !went_on && reader.read < l) {
        return Err(changed());
    }
    let ref_len = if went_on { decisive } else { reader.read };
    match crate::reference::verdict_of_head(&[&head], ref_len) {
        Ok(v) => checked.reference = v,
        Err(why) => checked.reference_refused = Some(why),
    }
    if went_on {
        checked.file_len = None;
    }
    require_reference(checked, config)
}

/// A reader that counts the bytes it gave and remembers that it ended.
struct Counted<'r, R: Read + ?Sized> {
    inner: &'r mut R,
    read: u64,
    ended: bool,
}

impl<R: Read + ?Sized> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        if k == 0 && !buf.is_empty() {
            self.ended = true;
        }
        self.read += k as u64;
        Ok(k)
    }
}

/// How many bytes of a file decide every verdict a check gives, from its length field and
/// header (`head`, the first `8 + n` bytes, or fewer when the input ended or `n` is above every
/// limit). Past the returned count, more bytes change no verdict:
///
/// - the strict verdict is settled one byte past the data region its header describes
///   (`DATA-TRAILING`), or by the header alone when the header is rejected;
/// - the reference crate reads the header, then compares `data end + 8 + n` (wrapping, as in a
///   release build) with the buffer's length; every check before that comparison depends on
///   the header alone, and the comparison fails alike for every length above that sum;
/// - the first [`HEAD_LEN`] bytes name a file that is not safetensors.
fn decisive_len(head: &[u8], n: u64, config: &Config) -> u64 {
    let sniff = HEAD_LEN as u64 + 1;
    let Some(header) = head.get(LENGTH_FIELD..).filter(|h| h.len() as u64 == n) else {
        // The length field alone decides (or the input already ended).
        return sniff.max(head.len() as u64);
    };
    let base = LENGTH_FIELD as u64 + n;
    let strict =
        crate::check::check_header_bytes(header, config).map_or(0, |report| report.data_len());
    let reference = crate::reference::data_end(header).map_or(base, |end| {
        end.wrapping_add(LENGTH_FIELD as u64).wrapping_add(n)
    });
    base.saturating_add(strict)
        .max(reference)
        .max(sniff)
        .saturating_add(1)
}
