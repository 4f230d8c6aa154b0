//! Checking one job: opening, mapping or reading, validating, and the optional reference
//! verdict and deep scan.

use std::fs::File;
use std::io::{self, Read};
use std::ops::Deref;
use std::path::Path;

use stcheck::deep::{self, DeepOptions, DeepReport};
use stcheck::index::{self, FsSource, IndexReport, ShardCheck, ShardSource};
use stcheck::reference::{self, Verdict};
use stcheck::stream::{self, StreamError};
use stcheck::{frame, Config, Error, Report};

use super::args::{Options, Profile, ReadMode};

/// What the checks found for one file.
#[derive(Debug)]
pub(crate) struct Checked {
    /// The bytes were obtained this way.
    pub(crate) mode: ReadMode,
    /// File length, where known.
    pub(crate) size: Option<u64>,
    /// The strict verdict (in the reference profile too, for information).
    pub(crate) verdict: Result<Report<'static>, Error>,
    /// The deep scan of a valid file, with `--deep`.
    pub(crate) deep: Option<DeepReport>,
    /// The reference crate's verdict, with `--compare-reference` or `--profile reference`.
    pub(crate) reference: Option<Verdict>,
}

/// A file's bytes: mapped or read.
enum Bytes {
    Map(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// Memory-map `file` read-only.
fn map(file: &File) -> io::Result<memmap2::Mmap> {
    // SAFETY: `Mmap::map` is unsafe because the mapped bytes can change under us: the map
    // shows the file itself, not a copy. The map is read-only and private to this process,
    // and the validator only reads it, so it can never corrupt the file. But if another
    // process writes the file while it is mapped, the bytes we validate can change between
    // two reads of the same offset (the header we checked is not the header we report on),
    // and if it truncates the file, touching a page past the new end raises SIGBUS and
    // kills this process. Nothing here is undefined behaviour in practice for a file that
    // nobody else modifies, which is the normal case of a finished upload or a model
    // directory. For files others can still write, `--no-mmap` (and `--stream`) read the
    // bytes into our own memory with read(2): a concurrent writer can then only make us
    // validate a torn snapshot, never crash us or change bytes after they were checked.
    #[allow(unsafe_code)]
    let map = unsafe { memmap2::Mmap::map(file)? };
    Ok(map)
}

/// Open a path as a regular file, with its length.
pub(crate) fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    let file = File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "is a directory"
        } else {
            "not a regular file"
        };
        return Err(io::Error::other(what));
    }
    Ok((file, meta.len()))
}

fn deep_options(o: &Options, threads: usize) -> DeepOptions {
    DeepOptions::new().sha256(o.sha256).threads(threads)
}

/// Validate the header only, reading 8 + N bytes and taking the data length from the file's
/// size: the same steps, in the same order, as `stcheck::validate` on the whole file.
fn validate_by_reading<R: Read>(
    mut r: R,
    file_len: u64,
    config: &Config,
) -> io::Result<Result<Report<'static>, Error>> {
    let mut prefix = Vec::with_capacity(frame::LENGTH_FIELD);
    (&mut r)
        .take(frame::LENGTH_FIELD as u64)
        .read_to_end(&mut prefix)?;
    let n = match frame::header_length(&prefix, config)
        .and_then(|n| frame::header_bounds(n, file_len).map(|()| n))
    {
        Ok(n) => n,
        Err(e) => return Ok(Err(frame::identify_from(e, &prefix, &mut r)?)),
    };
    let mut header = Vec::new();
    (&mut r).take(n).read_to_end(&mut header)?;
    if header.len() as u64 != n {
        // The file shrank while we read it.
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the file got shorter while it was read",
        ));
    }
    let report = match stcheck::validate_header(&header, config) {
        Ok(r) => r.into_owned(),
        Err(e) => return Ok(Err(e)),
    };
    let data_len = file_len - frame::LENGTH_FIELD as u64 - n;
    Ok(report
        .check_data_len(data_len)
        .and_then(|()| report.finish(config)))
}

fn from_stream<T>(r: Result<T, StreamError>) -> io::Result<Result<T, Error>> {
    match r {
        Ok(t) => Ok(Ok(t)),
        Err(StreamError::Invalid(e)) => Ok(Err(e)),
        Err(StreamError::Io(e)) => Err(e),
    }
}

/// Check bytes held in memory (mapped or read whole): strict verdict, deep scan, reference.
fn check_bytes(
    bytes: &[u8],
    o: &Options,
    deep_threads: usize,
) -> (
    Result<Report<'static>, Error>,
    Option<DeepReport>,
    Option<Verdict>,
) {
    let want_reference = o.compare_reference || o.profile == Profile::Reference;
    let reference = want_reference.then(|| reference::verdict(bytes));
    let mut deep_report = None;
    let verdict = stcheck::validate(bytes, &o.config).and_then(|mut r| {
        if o.deep {
            deep_report = Some(deep::scan(
                bytes,
                &mut r,
                &o.config,
                &deep_options(o, deep_threads),
            )?);
        }
        Ok(r.into_owned())
    });
    (verdict, deep_report, reference)
}

/// Check one file.
pub(crate) fn check_file(path: &Path, o: &Options, deep_threads: usize) -> io::Result<Checked> {
    let (file, len) = open_regular(path)?;
    let needs_bytes = o.compare_reference || o.profile == Profile::Reference;
    check_open(file, Some(len), o.mode, needs_bytes, o, deep_threads)
}

/// Check standard input: always streamed, unless the reference verdict needs every byte.
pub(crate) fn check_stdin(o: &Options, deep_threads: usize) -> io::Result<Checked> {
    let needs_bytes = o.compare_reference || o.profile == Profile::Reference;
    check_open(
        io::stdin().lock(),
        None,
        ReadMode::Stream,
        needs_bytes,
        o,
        deep_threads,
    )
}

trait Source: Read {
    fn mmap(&self) -> Option<io::Result<memmap2::Mmap>>;
}

impl Source for File {
    fn mmap(&self) -> Option<io::Result<memmap2::Mmap>> {
        Some(map(self))
    }
}

impl Source for io::StdinLock<'_> {
    fn mmap(&self) -> Option<io::Result<memmap2::Mmap>> {
        None
    }
}

fn check_open<S: Source>(
    mut src: S,
    len: Option<u64>,
    mode: ReadMode,
    needs_bytes: bool,
    o: &Options,
    deep_threads: usize,
) -> io::Result<Checked> {
    let in_memory = |bytes: Bytes, mode: ReadMode| {
        let (verdict, deep, reference) = check_bytes(&bytes, o, deep_threads);
        Checked {
            mode,
            size: Some(bytes.len() as u64),
            verdict,
            deep,
            reference,
        }
    };
    if mode == ReadMode::Mmap {
        if let Some(m) = src.mmap() {
            return Ok(in_memory(Bytes::Map(m?), mode));
        }
    }
    if needs_bytes {
        // The reference crate needs the whole file in memory.
        let mut v = Vec::new();
        src.read_to_end(&mut v)?;
        return Ok(in_memory(Bytes::Owned(v), ReadMode::Read));
    }
    let (verdict, deep) = if o.deep {
        // Deep scan without the whole file: one forward pass (read mode streams too).
        let r = deep::validate_reader_deep(&mut src, &o.config, &deep_options(o, deep_threads));
        match from_stream(r)? {
            Ok((report, d)) => (Ok(report), Some(d)),
            Err(e) => (Err(e), None),
        }
    } else {
        let v = match (mode, len) {
            (ReadMode::Read, Some(len)) => validate_by_reading(&mut src, len, &o.config)?,
            _ => from_stream(stream::validate_reader(&mut src, &o.config))?,
        };
        (v, None)
    };
    let size = len.or_else(|| verdict.as_ref().ok().map(Report::file_len));
    Ok(Checked {
        mode,
        size,
        verdict,
        deep,
        reference: None,
    })
}

/// The shard source of the command line: the library's directory checks, then the file
/// read the way the options say.
struct CliSource<'o> {
    fs: FsSource,
    o: &'o Options,
}

impl ShardSource for CliSource<'_> {
    fn list(&self) -> io::Result<Vec<String>> {
        self.fs.list()
    }

    fn check(&self, name: &str, config: &Config) -> ShardCheck {
        let (file, _) = match self.fs.open(name) {
            Ok(f) => f,
            Err(c) => return c,
        };
        let len = match file.metadata() {
            Ok(m) => m.len(),
            Err(e) => return ShardCheck::Io(e),
        };
        let r = match self.o.mode {
            ReadMode::Mmap => {
                map(&file).map(|m| stcheck::validate(&m, config).map(Report::into_owned))
            }
            ReadMode::Read => validate_by_reading(&file, len, config),
            ReadMode::Stream => from_stream(stream::validate_reader(&file, config)),
        };
        match r {
            Ok(Ok(r)) => ShardCheck::Valid(r),
            Ok(Err(e)) => ShardCheck::Invalid(e),
            Err(e) => ShardCheck::Io(e),
        }
    }
}

/// Check a sharded checkpoint. An `Err` is an I/O failure (message without the path).
pub(crate) fn check_index(path: &Path, o: &Options) -> Result<IndexReport, String> {
    let (file, _) = open_regular(path).map_err(|e| e.to_string())?;
    // Read at most one byte past the limit: a longer index is rejected without reading it.
    let mut bytes = Vec::new();
    file.take(o.config.max_header_size.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    let source = CliSource {
        fs: FsSource::for_index(path).allow_outside_links(o.follow_links),
        o,
    };
    index::check_index(&bytes, &source, &o.config).map_err(|e| e.to_string())
}
