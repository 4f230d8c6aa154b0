//! The one checker: every way of checking a file goes through [`Checker`].
//!
//! Like wasmparser's `Parser`, it is fed bytes, whole or in chunks of any size, and owns the
//! order of the stages — the length field, the header (framing, then the schema and layout),
//! the data region (its length, the deep scan, the hash), then the findings that need the
//! whole file (`deny_warnings`, the deep scan's faults and warnings). A mapped or in-memory
//! file is handed over whole ([`Checker::check_slice`]): the header is borrowed, not copied,
//! and the deep scan can split the data across threads. A reader, a pipe or a remote source
//! feeds it ([`Checker::feed`]) and says how long the file is where it knows
//! ([`Checker::with_len`]), so a header-only check stops reading after the header. A stream
//! of unknown length is read up to the first byte past the data region, where the verdict
//! (`DATA-TRAILING`) is already known: an endless stream ends the check there.
//!
//! The verdict, rule, offset and message are the same whichever way the bytes arrive; the
//! tests check this on every corpus file for several chunk sizes.

use std::borrow::Cow;
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::deep::{DeepReport, DeepScan, Region, Slice};
use crate::error::{Error, ReadError, ReadErrorKind};
use crate::frame;
use crate::header;
use crate::limits::{Config, HEAD_LEN, STREAM_BUFFER_SIZE};
use crate::progress::Progress;
use crate::reference::{self, Verdict};
use crate::report::Report;
use crate::warnings::Warnings;

/// What a [`Checker`] needs next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Need {
    /// More bytes, in order (or the end of the input: [`Checker::finish`]).
    More,
    /// Nothing more: the verdict is known, or the rest of the file is not needed (a header-only
    /// check of a file of known length). Call [`Checker::finish`].
    Done,
}

/// The result of checking one file: the verdict and what came with it. Every entry point that
/// reads gives `Result<Checked, ReadError>`: a file that could not be read has no verdict.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Checked<'a> {
    /// The strict verdict: the report of a valid file, or the first error.
    pub verdict: Result<Report<'a>, Error>,
    /// The deep scan of a valid file, with [`Config::deep`].
    pub deep: Option<DeepReport>,
    /// The SHA-256 of the whole file, with [`Config::sha256`] (for a valid file).
    pub sha256: Option<[u8; 32]>,
    /// The reference crate's verdict, with [`Config::reference`].
    pub reference: Option<Verdict>,
    /// The portable profile's answer on a file strict accepts, with [`Config::portable`].
    pub portable: Option<crate::portable::PortableReport>,
    /// The file's length, where it is known (the bytes of a stream that was read to its end).
    pub file_len: Option<u64>,
    /// The header length N read from the length field, once the field was read and within
    /// the limit (also for a file rejected later).
    pub header_len: Option<u64>,
    /// How many bytes of the input were consumed.
    pub bytes_read: u64,
    /// Every id published for the file that [`Checked::compare_published`] compared with its
    /// SHA-256, with its source as the user knows it (`"the hub's listing (lfs.oid)"`,
    /// `"X-Linked-Etag"`, `"--expect-sha256"`), as given.
    pub published_sha256: Vec<(String, String)>,
    /// Why the reference verdict asked for was not computed (a header above
    /// `reference::MAX_MEMBERS`): the source then does not check the file.
    pub(crate) reference_refused: Option<String>,
}

impl Checked<'_> {
    /// Whether the file is valid under the strict profile.
    pub fn is_valid(&self) -> bool {
        self.verdict.is_ok()
    }

    /// The same result, owning its report.
    pub fn into_owned(self) -> Checked<'static> {
        Checked {
            verdict: self.verdict.map(Report::into_owned),
            deep: self.deep,
            sha256: self.sha256,
            reference: self.reference,
            portable: self.portable,
            file_len: self.file_len,
            header_len: self.header_len,
            bytes_read: self.bytes_read,
            published_sha256: self.published_sha256,
            reference_refused: self.reference_refused,
        }
    }

    /// The one integrity decision (`INTEGRITY-SHA256`): every id `published` for the file, as
    /// `(source, id)` pairs from every route (a hub's listing, its `X-Linked-Etag`, a hash the
    /// user gives), compared with the SHA-256 computed. Kept in
    /// [`Checked::published_sha256`]; a file the format accepts becomes invalid when an id is
    /// not a SHA-256, the ids disagree, or they are not its bytes
    /// ([`Error::sha256_published`] names each source). Nothing is compared without a computed
    /// SHA-256 ([`Config::sha256`]) or for a file already invalid.
    pub fn compare_published(&mut self, published: &[(&str, &str)]) {
        self.published_sha256 = published
            .iter()
            .map(|(s, id)| ((*s).to_owned(), (*id).to_owned()))
            .collect();
        if let (Some(computed), Ok(_)) = (&self.sha256, &self.verdict) {
            if let Some(e) = Error::sha256_published(computed, published) {
                self.verdict = Err(e);
            }
        }
    }
}

/// Read until `buf` is full or the reader ends; the bytes read. Retries on `Interrupted`.
pub(crate) fn read_full<R: Read + ?Sized>(r: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The checker of one file. See the module documentation.
#[derive(Debug)]
pub struct Checker<'a>(Machine<'a, 'static>);

/// The state machine behind [`Checker`], whose configuration is borrowed when a whole buffer
/// is checked at once (no copy of it per file) and owned by a checker that is fed.
#[derive(Debug)]
struct Machine<'a, 'c> {
    config: Cow<'c, Config>,
    /// The file's length, when the source knows it.
    len: Option<u64>,
    /// N, once the length field was read.
    header_len: Option<u64>,
    consumed: u64,
    stage: Stage<'a>,
    /// Whether this checker gives the reference verdict itself, from the length field, the
    /// header and the declared length (a fed checker with [`Config::reference`]); a whole
    /// buffer runs the crate on the buffer instead.
    reference_from_head: bool,
    /// That verdict, once the bytes it needs are in.
    reference: Option<Verdict>,
    /// Why it is not computed (a header too large for the crate within the memory bound).
    reference_refused: Option<String>,
}

#[derive(Debug)]
enum Stage<'a> {
    /// Reading the 8-byte length field.
    Length {
        buf: [u8; frame::LENGTH_FIELD],
        got: usize,
    },
    /// Reading the N header bytes (grown as bytes arrive, so a lying length field cannot make
    /// it allocate much more than was sent: [`Checker::read_header`] reserves all N only when
    /// the file's length bounds them).
    Header {
        prefix: [u8; frame::LENGTH_FIELD],
        n: u64,
        buf: Vec<u8>,
    },
    /// The length field cannot be a header length: reading up to [`HEAD_LEN`] bytes of the
    /// file in all to tell whether it is another format (`FRAME-NOT-SAFETENSORS`).
    Sniff(Box<SniffStage>),
    /// The header is valid; reading (or skipping) the data region.
    Data(Box<DataStage<'a>>),
    /// The verdict is known.
    Done(Box<Result<Report<'a>, Error>>),
}

#[derive(Debug)]
struct SniffStage {
    /// The first bytes of the file, the length field included.
    head: Vec<u8>,
    /// `FRAME-HEADER-LIMIT` or `FRAME-HEADER-BOUNDS`.
    cause: Error,
}

#[derive(Debug)]
struct DataStage<'a> {
    report: Report<'a>,
    /// Bytes of the data region consumed.
    seen: u64,
    /// Boxed: most checks do not scan the data, and the stage is moved whole.
    deep: Option<Box<DeepScan>>,
}

impl<'c> Machine<'static, 'c> {
    fn new(config: Cow<'c, Config>, len: Option<u64>) -> Self {
        let reference_from_head = config.reference;
        Machine {
            config,
            len,
            header_len: None,
            consumed: 0,
            stage: Stage::Length {
                buf: [0; frame::LENGTH_FIELD],
                got: 0,
            },
            reference_from_head,
            reference: None,
            reference_refused: None,
        }
    }
}

impl Checker<'static> {
    /// A checker for bytes that will be fed to it.
    pub fn new(config: &Config) -> Self {
        Checker(Machine::new(Cow::Owned(config.clone()), None))
    }
}

impl<'a> Checker<'a> {
    /// Declare the file's length (a file's size, an HTTP `Content-Range`). A check that does
    /// not read the data ([`Config::reads_data`] false) then needs only the length field and
    /// the header, and decides `DATA-TRUNCATED` / `DATA-TRAILING` from the length; one that
    /// reads the data must be fed exactly this many bytes. With [`Config::reference`], the
    /// length is what lets a fed checker give the reference crate's verdict (from the length
    /// field and the header); without it, [`Checked::reference`] stays `None`.
    pub fn with_len(mut self, len: u64) -> Self {
        self.0.len = Some(len);
        self
    }

    /// Feed the next bytes of the file, in order. Returns what the checker needs next; bytes
    /// fed after [`Need::Done`] are ignored.
    pub fn feed(&mut self, bytes: &[u8]) -> Need {
        self.0.feed(bytes)
    }

    /// What the checker needs now.
    pub fn need(&self) -> Need {
        self.0.need()
    }

    /// How many bytes are worth reading next: the rest of the length field or of the header,
    /// or of the data region plus one (to see a trailing byte); `None` when nothing more is
    /// needed. A source that reads in ranges (a file without mapping, HTTP) asks for this many.
    pub fn wanted(&self) -> Option<u64> {
        self.0.wanted()
    }

    /// How many bytes were consumed so far.
    pub fn consumed(&self) -> u64 {
        self.0.consumed
    }

    /// The end of the input: the verdict, with the deep report and hash of a valid file.
    pub fn finish(self) -> Checked<'a> {
        self.0.finish()
    }

    /// [`Checker::finish`], with every verdict the configuration asks for: a reference verdict
    /// ([`Config::reference`]) that could not be computed (a header above
    /// [`crate::reference::MAX_MEMBERS`], a length never declared) is a [`crate::ReadError`],
    /// never the strict verdict in its place.
    pub fn try_finish(self) -> Result<Checked<'a>, crate::ReadError> {
        let (wanted, names) = (self.0.config.reference, self.0.config.names);
        require_reference_named(self.0.finish(), wanted, names)
    }

    /// In the header stage: read the rest of the header from `reader`, which stands at the
    /// header's next byte, straight into the buffer the report will keep, and no byte past it.
    /// This is how every source that reads (a file, a pipe, an HTTP body) takes a header: no buffer of the
    /// source's in between (a second copy of a header of up to 100 MB), and no zero-fill of
    /// ours. With a declared length ([`Checker::with_len`], which bounds the header length) the
    /// buffer is allocated whole in zeroed memory, which costs no `memset` (a large allocation
    /// is a fresh map from the kernel, zero already), and read into; without one, it is
    /// reserved up to [`crate::limits::STREAM_BUFFER_SIZE`] and grows as bytes arrive (std's `read_to_end`,
    /// which leaves the new memory unfilled for a `File` or `Stdin`), so a lying length field
    /// costs no more memory than was sent. Returns the bytes taken (they count as consumed, as
    /// with [`Checker::feed`]), fewer than wanted when the reader ended inside the header, or
    /// `None` outside the header stage.
    ///
    /// A source whose reads may end early (a server's short ranges) may call it again: the
    /// buffer allocated whole the first time is kept, never allocated and copied again.
    pub fn read_header(&mut self, reader: &mut dyn Read) -> std::io::Result<Option<u64>> {
        let m = &mut self.0;
        let Stage::Header { n, buf, .. } = &mut m.stage else {
            return Ok(None);
        };
        let before = buf.len();
        let want = *n - before as u64;
        let read = match (m.len, usize::try_from(*n)) {
            (Some(_), Ok(n)) => {
                if buf.capacity() < n {
                    let mut header = vec![0u8; n];
                    header[..before].copy_from_slice(buf);
                    *buf = header;
                } else {
                    // Called again after a short read: the rest of the same buffer.
                    buf.resize(n, 0);
                }
                let read = read_full(reader, &mut buf[before..]);
                buf.truncate(before + read.as_ref().map_or(0, |&k| k));
                read.map(|_| ())
            }
            _ => {
                let room = want.min(STREAM_BUFFER_SIZE as u64);
                buf.reserve_exact(usize::try_from(room).unwrap_or(usize::MAX));
                reader.take(want).read_to_end(buf).map(|_| ())
            }
        };
        let taken = buf.len() - before;
        m.consumed += taken as u64;
        m.header_filled();
        read.map(|()| Some(taken as u64))
    }

    /// Whether the checker has the header and is at the data region, which a source may then
    /// hand over whole ([`Checker::feed_region`]).
    pub(crate) fn at_data(&self) -> bool {
        matches!(self.0.stage, Stage::Data(_))
    }

    /// At the data region of a file of known length ([`Checker::at_data`]): take the rest of
    /// the file, `[data start, len)`, from `region` at once, scanned across
    /// [`Config::threads`] when the check reads the data. A region whose length is not the
    /// data region's is not scanned: the verdict is `DATA-TRUNCATED` or `DATA-TRAILING`
    /// whatever its bytes hold. An error of the region (the file got shorter) is returned.
    pub(crate) fn feed_region(
        &mut self,
        region: &dyn Region,
        progress: &dyn Progress,
    ) -> Result<(), crate::ReadError> {
        let m = &mut self.0;
        let Stage::Data(d) = &mut m.stage else {
            return Ok(());
        };
        let room = d.report.data_len() - d.seen;
        let len = region.len();
        if len > room {
            // As a fed checker: the verdict is known one byte past the data region.
            let e = d.report.trailing_error();
            m.consumed += room + 1;
            progress.advance(room + 1);
            m.stage = Stage::Done(Box::new(Err(e)));
            return Ok(());
        }
        match d.deep.as_mut() {
            Some(deep) if len == room && d.seen == 0 => deep.feed_region(
                &d.report,
                region,
                m.config.threads,
                m.config.min_bytes_per_thread,
                progress,
            )?,
            Some(deep) if len == room => {
                let at = d.report.data_start() + d.seen;
                region.visit(at, len, &mut |piece| {
                    deep.feed(&d.report, piece);
                    progress.advance(piece.len() as u64);
                })?;
            }
            _ => progress.advance(len),
        }
        d.seen += len;
        m.consumed += len;
        Ok(())
    }

    /// Check a whole file held in memory or mapped: the header is borrowed from `file`, and
    /// the deep scan may split the data across [`Config::threads`]. Runs the reference crate
    /// too with [`Config::reference`].
    pub fn check_slice(config: &Config, file: &'a [u8]) -> Checked<'a> {
        Self::check_slice_with(config, file, crate::progress::no_progress())
    }

    /// [`Checker::check_slice`], telling `progress` how far the check got: the length field
    /// and header at once, then the data region as the deep scan goes (or at once when the
    /// data is not scanned). The result is the same.
    pub fn check_slice_with(
        config: &Config,
        file: &'a [u8],
        progress: &dyn Progress,
    ) -> Checked<'a> {
        let progress = Counted::new(progress);
        let mut c = Machine {
            config: Cow::Borrowed(config),
            len: Some(file.len() as u64),
            header_len: None,
            consumed: 0,
            stage: Stage::Length {
                buf: [0; frame::LENGTH_FIELD],
                got: 0,
            },
            reference_from_head: false,
            reference: None,
            reference_refused: None,
        };
        let prefix_len = file.len().min(frame::LENGTH_FIELD);
        c.feed(&file[..prefix_len]);
        if let Stage::Sniff(_) = c.stage {
            c.feed(&file[prefix_len..file.len().min(HEAD_LEN)]);
        }
        if let Stage::Header { prefix, n, .. } = &c.stage {
            let (prefix, n) = (*prefix, *n);
            // `Length` checked the bounds against the known length: the slice holds 8 + n.
            let end = usize::try_from(n).map_or(file.len(), |n| n.saturating_add(prefix_len));
            let header = file.get(prefix_len..end).unwrap_or(&[]);
            c.consumed += header.len() as u64;
            c.enter_data(&prefix, Cow::Borrowed(header));
            if let Stage::Data(d) = &mut c.stage {
                let data = file.get(end..).unwrap_or(&[]);
                if let Some(deep) = d.deep.as_mut() {
                    progress.advance(c.consumed);
                    let region = Slice {
                        bytes: data,
                        base: end as u64,
                    };
                    // A region in memory gives every byte it is asked for.
                    let _ = deep.feed_region(
                        &d.report,
                        &region,
                        c.config.threads,
                        c.config.min_bytes_per_thread,
                        &progress,
                    );
                }
                d.seen = data.len() as u64;
                c.consumed += data.len() as u64;
            }
        }
        let reference = config.reference.then(|| reference::admitted_verdict(file));
        let mut checked = c.finish();
        match reference {
            Some(Ok(v)) => checked.reference = Some(v),
            Some(Err(why)) => checked.reference_refused = Some(why),
            None => {}
        }
        progress.advance(checked.bytes_read.saturating_sub(progress.told()));
        checked
    }
}

impl<'a> Machine<'a, '_> {
    fn feed(&mut self, mut bytes: &[u8]) -> Need {
        while !bytes.is_empty() {
            match &mut self.stage {
                Stage::Length { buf, got } => {
                    let take = (frame::LENGTH_FIELD - *got).min(bytes.len());
                    buf[*got..*got + take].copy_from_slice(&bytes[..take]);
                    *got += take;
                    bytes = &bytes[take..];
                    self.consumed += take as u64;
                    if *got == frame::LENGTH_FIELD {
                        let prefix = *buf;
                        self.start_header(prefix);
                    }
                }
                Stage::Header { n, buf, .. } => {
                    let want = usize::try_from(*n - buf.len() as u64).unwrap_or(usize::MAX);
                    let take = want.min(bytes.len());
                    buf.extend_from_slice(&bytes[..take]);
                    bytes = &bytes[take..];
                    self.consumed += take as u64;
                    self.header_filled();
                }
                Stage::Sniff(s) => {
                    let take = (HEAD_LEN - s.head.len()).min(bytes.len());
                    s.head.extend_from_slice(&bytes[..take]);
                    bytes = &bytes[take..];
                    self.consumed += take as u64;
                    self.settle_sniff();
                }
                Stage::Data(d) => {
                    if !self.config.reads_data() && self.len.is_some() {
                        return Need::Done;
                    }
                    let room = d.report.data_len() - d.seen;
                    let take = usize::try_from(room).unwrap_or(usize::MAX).min(bytes.len());
                    if let Some(deep) = d.deep.as_mut() {
                        deep.feed(&d.report, &bytes[..take]);
                    }
                    d.seen += take as u64;
                    self.consumed += take as u64;
                    bytes = &bytes[take..];
                    if !bytes.is_empty() {
                        // A byte past the data region: the verdict is known without reading on.
                        let e = d.report.trailing_error();
                        self.consumed += 1;
                        self.stage = Stage::Done(Box::new(Err(e)));
                    }
                }
                Stage::Done(_) => return Need::Done,
            }
        }
        self.need()
    }

    fn need(&self) -> Need {
        match &self.stage {
            Stage::Done(_) => Need::Done,
            Stage::Data(_) if !self.config.reads_data() && self.len.is_some() => Need::Done,
            _ => Need::More,
        }
    }

    fn wanted(&self) -> Option<u64> {
        match &self.stage {
            Stage::Length { got, .. } => Some((frame::LENGTH_FIELD - got) as u64),
            Stage::Header { n, buf, .. } => Some(n - buf.len() as u64),
            Stage::Sniff(s) => {
                let rest = (HEAD_LEN - s.head.len()) as u64;
                Some(self.len.map_or(rest, |l| rest.min(l - self.consumed)))
            }
            Stage::Data(d) => match self.need() {
                Need::Done => None,
                Need::More => Some(d.report.data_len() - d.seen + 1),
            },
            Stage::Done(_) => None,
        }
    }

    /// In the header stage with all N bytes in: check the header and go on to the data.
    fn header_filled(&mut self) {
        if let Stage::Header { prefix, n, buf } = &mut self.stage {
            if buf.len() as u64 == *n {
                let prefix = *prefix;
                let header = std::mem::take(buf);
                self.settle_reference(&[&prefix[..], &header[..]]);
                self.enter_data(&prefix, Cow::Owned(header));
            }
        }
    }

    /// After the length field: bound the header length.
    fn start_header(&mut self, prefix: [u8; frame::LENGTH_FIELD]) {
        let n = match frame::header_length(&prefix, &self.config) {
            Ok(n) => n,
            Err(e) => return self.length_fault(prefix, e),
        };
        self.header_len = Some(n);
        if let Some(len) = self.len {
            if let Err(e) = frame::header_bounds(n, len) {
                return self.length_fault(prefix, e);
            }
        }
        self.stage = Stage::Header {
            prefix,
            n,
            buf: Vec::new(),
        };
    }

    /// The length field is at fault: the verdict, or first the sniff of the file's first
    /// bytes when the fault is one `FRAME-NOT-SAFETENSORS` may replace.
    fn length_fault(&mut self, prefix: [u8; frame::LENGTH_FIELD], cause: Error) {
        self.settle_reference(&[&prefix[..]]);
        if !frame::refinable(&cause) {
            return self.stage = Stage::Done(Box::new(Err(cause)));
        }
        let mut head = Vec::with_capacity(HEAD_LEN);
        head.extend_from_slice(&prefix);
        self.stage = Stage::Sniff(Box::new(SniffStage { head, cause }));
        self.settle_sniff();
    }

    /// Decide `FRAME-NOT-SAFETENSORS` once the first [`HEAD_LEN`] bytes, or all the file has
    /// when its length is known, are in.
    fn settle_sniff(&mut self) {
        if let Stage::Sniff(s) = &self.stage {
            let all = s.head.len() >= HEAD_LEN || self.len.is_some_and(|l| self.consumed >= l);
            if all {
                let e = frame::identify(s.cause.clone(), &s.head);
                self.stage = Stage::Done(Box::new(Err(e)));
            }
        }
    }

    /// With [`Config::reference`] in a fed checker of known length: the reference crate's
    /// verdict from the file's first bytes, `head` (see [`reference::verdict_of_head`]).
    fn settle_reference(&mut self, head: &[&[u8]]) {
        if let (true, None, Some(len)) = (self.reference_from_head, &self.reference, self.len) {
            match reference::verdict_of_head(head, len) {
                Ok(v) => self.reference = v,
                Err(why) => self.reference_refused = Some(why),
            }
        }
    }

    /// After the header bytes: framing, the parse, the layout; then the data stage.
    fn enter_data(&mut self, prefix: &[u8], header: Cow<'a, [u8]>) {
        let report = match check_header(header, &self.config) {
            Ok(r) => r,
            Err(e) => return self.stage = Stage::Done(Box::new(Err(e))),
        };
        let deep = self.config.reads_data().then(|| {
            let framing: [&[u8]; 2] = [prefix, report.header_text().as_bytes()];
            Box::new(DeepScan::new(&report, &self.config, &framing))
        });
        self.stage = Stage::Data(Box::new(DataStage {
            report,
            seen: 0,
            deep,
        }));
    }

    fn finish(mut self) -> Checked<'a> {
        // A file shorter than the length field: all of it is here for the reference verdict.
        if let Stage::Length { buf, got } = self.stage {
            if self.len == Some(got as u64) {
                self.settle_reference(&[&buf[..got]]);
            }
        }
        let mut file_len = self.len;
        let mut deep_found = None;
        let mut sha256 = None;
        let verdict = match self.stage {
            // Fewer than 8 bytes: `header_length` rejects them (FRAME-SHORT).
            Stage::Length { buf, got } => Err(frame::header_length(&buf[..got], &self.config)
                .err()
                .unwrap_or_else(|| frame::bounds_error(0, got as u64))),
            // The input ended inside the header: all the file is here to sniff.
            Stage::Header { prefix, n, buf } => {
                let cause = frame::bounds_error(n, frame::LENGTH_FIELD as u64 + buf.len() as u64);
                let rest = &buf[..buf.len().min(HEAD_LEN - frame::LENGTH_FIELD)];
                Err(frame::identify(cause, &[&prefix[..], rest].concat()))
            }
            Stage::Sniff(s) => Err(frame::identify(s.cause, &s.head)),
            Stage::Done(verdict) => *verdict,
            Stage::Data(d) => {
                let DataStage {
                    mut report,
                    seen,
                    deep,
                } = *d;
                let data_len = match self.len {
                    Some(len) if !self.config.reads_data() => len - report.data_start(),
                    _ => seen,
                };
                if file_len.is_none() {
                    file_len = Some(report.data_start() + data_len);
                }
                let settled = report
                    .check_data_len(data_len)
                    .and_then(|()| report.deny(&self.config))
                    .and_then(|()| match deep {
                        None => Ok(()),
                        Some(scan) => {
                            let (found, sha) = scan.finish(&mut report);
                            deep_found = Some(found?);
                            sha256 = sha;
                            report.deny(&self.config)
                        }
                    });
                // The report moves once, into the verdict.
                settled.map(|()| report)
            }
        };
        let mut out = Checked {
            verdict,
            deep: deep_found,
            sha256,
            reference: self.reference,
            portable: None,
            file_len,
            header_len: self.header_len,
            bytes_read: self.consumed,
            published_sha256: Vec::new(),
            reference_refused: self.reference_refused,
        };
        if out.verdict.is_err() {
            out.deep = None;
            out.sha256 = None;
        }
        if let (Ok(report), Some(options)) = (&out.verdict, &self.config.portable) {
            if let Ok(table) = crate::portable::ReaderTable::builtin() {
                out.portable = Some(crate::portable::check_file(table, report, options));
            }
        }
        out
    }
}

/// A [`Progress`] hook that counts what it passes on.
struct Counted<'p> {
    inner: &'p dyn Progress,
    told: AtomicU64,
}

impl<'p> Counted<'p> {
    fn new(inner: &'p dyn Progress) -> Self {
        Counted {
            inner,
            told: AtomicU64::new(0),
        }
    }

    fn told(&self) -> u64 {
        self.told.load(Ordering::SeqCst)
    }
}

impl Progress for Counted<'_> {
    fn advance(&self, bytes: u64) {
        self.told.fetch_add(bytes, Ordering::SeqCst);
        self.inner.advance(bytes);
    }
}

/// Stage 1 and 2 on the header bytes (the N bytes after the length field): UTF-8 and the text
/// around the object, the JSON parse with its schema, then the layout.
fn check_header<'a>(header: Cow<'a, [u8]>, config: &Config) -> Result<Report<'a>, Error> {
    let n = header.len() as u64;
    let text: Cow<'a, str> = match header {
        Cow::Borrowed(b) => Cow::Borrowed(std::str::from_utf8(b).map_err(frame::utf8_error)?),
        Cow::Owned(v) => {
            Cow::Owned(String::from_utf8(v).map_err(|e| frame::utf8_error(e.utf8_error()))?)
        }
    };
    let mut warnings = Warnings::for_config(config);
    for w in frame::text_warnings(&text)? {
        warnings.push(w);
    }
    for w in frame::align_warning(n)
        .into_iter()
        .chain(frame::padding_warning(text.as_bytes()))
    {
        warnings.push(w);
    }
    let parsed = header::parse(&text, warnings)?;
    Report::from_parsed(text, parsed)
}

/// Check the header alone (the N bytes after the length field), without the data-length
/// check: the header benchmark's entry point.
pub fn check_header_bytes<'a>(header: &'a [u8], config: &Config) -> Result<Report<'a>, Error> {
    check_header(Cow::Borrowed(header), config)
}

/// A check asked for the reference verdict must give it: a source that could not run the
/// crate (a sparse temporary file that could not be made, a header the checker did not read)
/// has not checked the file, rather than giving the strict verdict in its place.
pub(crate) fn require_reference<'c>(
    checked: Checked<'c>,
    config: &Config,
) -> Result<Checked<'c>, ReadError> {
    require_reference_named(checked, config.reference, config.names)
}

/// The file is not checked: the reference verdict asked for is refused, for `why`.
pub(crate) fn reference_refused(why: &str, names: crate::OptionNames) -> ReadError {
    ReadError::new(
        ReadErrorKind::TooLarge,
        format!(
            "{why}; check it without {} and {}",
            names.compare_reference, names.reference_profile
        ),
    )
}

/// [`require_reference`] with what it needs of the configuration: whether the reference
/// verdict is wanted, and the names of the options its messages mention.
fn require_reference_named(
    checked: Checked<'_>,
    wanted: bool,
    names: crate::OptionNames,
) -> Result<Checked<'_>, ReadError> {
    if let (true, Some(why)) = (wanted, &checked.reference_refused) {
        return Err(reference_refused(why, names));
    }
    if wanted && checked.reference.is_none() {
        return Err(ReadError::new(
            ReadErrorKind::Io,
            format!(
                "the reference verdict could not be computed: the reference crate could not \
                 be run on the file's header (a temporary file could not be made, or the \
                 header is above {} but within the reference's limit)",
                names.max_header_size
            ),
        ));
    }
    Ok(checked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use stcheck_testkit::Noting;

    #[test]
    fn read_header_reads_each_byte_once_into_the_memory_the_report_keeps() {
        let (file, end) = stcheck_testkit::many_tensors(2_000);
        let config = Config::default();
        // With a declared length (a file) and without (a pipe); the first 100 header bytes fed
        // before, as a file's first read does.
        for declared in [true, false] {
            let mut checker = Checker::new(&config);
            if declared {
                checker = checker.with_len(file.len() as u64);
            }
            assert_eq!(checker.feed(&file[..108]), Need::More);
            let mut reader = Noting::new(&file, 108);
            let taken = checker.read_header(&mut reader).expect("read");
            assert_eq!(taken, Some((end - 108) as u64), "declared {declared}");
            assert_eq!(reader.pos(), end, "declared {declared}");
            assert_eq!(checker.consumed(), end as u64);
            assert!(checker.at_data(), "declared {declared}");
            // Outside the header stage nothing is read.
            assert_eq!(checker.read_header(&mut reader).expect("read"), None);
            checker.feed(&file[end..]);
            let checked = checker.finish();
            let text = checked.verdict.as_ref().expect("valid").header_text();
            reader.assert_read_into(108..end, text.as_ptr() as usize + 100);
        }
    }
}
