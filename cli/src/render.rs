//! The two output forms: human lines and JSON Lines. The JSON records are the library's typed
//! `stcheck::wire` records (schema in `docs/json-output.md`); this module only writes them,
//! as they are produced.

use std::io::{self, Write};
use std::path::Path;
use std::time::Duration;

use stcheck::index::{IndexReport, ShardOutcome};
use stcheck::reference::Verdict;
use stcheck::{Checked, DtypeTotal, ReadError, Report};
use stcheck_print::records::{
    self as wire, FileRecord, IndexTail, MissingShardRecord, Profile, Summary, UnreadableRecord,
};

use super::args::{Format, Options};

/// A path for output: bytes that are not UTF-8 as `\xNN`, the rest escaped exactly as names
/// are, so a file name can neither be lost nor forge or hide a line of output.
pub(crate) fn show(path: &Path) -> String {
    stcheck_gate::fs::display_path(path)
}

fn options(o: &Options) -> wire::Options {
    options_in(o, o.mode)
}

fn options_in(o: &Options, mode: stcheck::ReadMode) -> wire::Options {
    wire::Options::new(Some(mode))
        .profile(o.profile)
        .verbose(o.verbose)
}

fn totals_human(tensors: usize, parameters: u64, t: &[(String, u64)]) -> String {
    let mut s = format!(
        "{}, {}",
        count(tensors as u64, "tensor"),
        count(parameters, "parameter")
    );
    for (i, (dtype, p)) in t.iter().enumerate() {
        s.push_str(if i == 0 { "; " } else { ", " });
        s.push_str(&format!("{dtype} {p}"));
    }
    s
}

/// `1 tensor`, `0 tensors`, `2 tensors`.
fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn strict_totals(t: &[DtypeTotal]) -> Vec<(String, u64)> {
    t.iter()
        .map(|t| (t.dtype.name().to_owned(), t.parameters))
        .collect()
}

/// Whether a file is valid under the chosen profile.
pub(crate) fn file_valid(c: &Checked<'_>, o: &Options) -> bool {
    wire::file_status(c, o.profile) == wire::Status::Valid
}

/// One checked file: its JSON record, or its human lines (each prefixed with `indent`; a
/// shard is shown inside its index's output).
pub(crate) fn file(
    out: &mut dyn Write,
    path: &str,
    c: &Checked<'_>,
    o: &Options,
    mode: stcheck::ReadMode,
    indent: &str,
) -> io::Result<()> {
    if o.format == Format::Json {
        return wire::write_line(out, "file", &FileRecord::new(path, c, options_in(o, mode)));
    }
    file_human(out, path, c, o, indent)
}

fn file_human(
    out: &mut dyn Write,
    path: &str,
    c: &Checked<'_>,
    o: &Options,
    indent: &str,
) -> io::Result<()> {
    match (o.profile, &c.reference) {
        (Profile::Reference, Some(Verdict::Accept(ts))) => {
            writeln!(
                out,
                "{indent}{path}: ok (reference profile; {})",
                totals_human(
                    ts.len(),
                    wire::reference_parameters(ts),
                    &wire::reference_totals(ts)
                )
            )?;
        }
        (Profile::Reference, Some(Verdict::Reject(m))) => {
            writeln!(
                out,
                "{indent}{path}: error reference rejects: {}",
                stcheck::escape(m)
            )?;
        }
        (Profile::Reference, Some(Verdict::Panic(m))) => {
            writeln!(
                out,
                "{indent}{path}: error reference panics: {}",
                stcheck::escape(m)
            )?;
        }
        (Profile::Portable, _)
            if c.verdict.is_ok() && c.portable.as_ref().is_some_and(|p| !p.is_portable()) =>
        {
            let first = c.portable.as_ref().and_then(|p| p.findings().first());
            if let Some(f) = first {
                writeln!(out, "{indent}{path}: error {}", f.finding())?;
            }
        }
        _ => match &c.verdict {
            Ok(rep) => writeln!(
                out,
                "{indent}{path}: ok ({}){}",
                totals_human(
                    rep.len(),
                    rep.parameters(),
                    &strict_totals(&rep.totals_by_dtype())
                ),
                deep_human(c)
            )?,
            Err(e) => writeln!(out, "{indent}{path}: error {e}")?,
        },
    }
    if let Ok(rep) = &c.verdict {
        if o.profile != Profile::Reference || o.compare_reference {
            warnings_human(out, rep, indent)?;
        }
        if let Some(p) = &c.portable {
            portable_human(out, p, indent)?;
        }
        if o.verbose && o.profile != Profile::Reference {
            tensors_human(out, rep, indent)?;
        }
    }
    if o.compare_reference {
        match o.profile {
            Profile::Strict => match &c.reference {
                Some(Verdict::Accept(ts)) => {
                    write!(
                        out,
                        "{indent}  reference: accepts ({})",
                        count(ts.len() as u64, "tensor")
                    )?;
                    if let Some(d) = wire::divergence(c) {
                        write!(out, "; {d}")?;
                    }
                    writeln!(out)?;
                }
                Some(Verdict::Reject(m)) => {
                    writeln!(out, "{indent}  reference: rejects: {}", stcheck::escape(m))?
                }
                Some(Verdict::Panic(m)) => {
                    writeln!(out, "{indent}  reference: panics: {}", stcheck::escape(m))?
                }
                None => {}
            },
            _ => match &c.verdict {
                Ok(_) => writeln!(out, "{indent}  strict: ok")?,
                Err(e) => writeln!(out, "{indent}  strict: error {e}")?,
            },
        }
    }
    if o.verbose && o.profile == Profile::Reference {
        if let Some(Verdict::Accept(ts)) = &c.reference {
            for t in ts {
                writeln!(
                    out,
                    "{indent}  tensor \"{}\" {} {:?} bytes [{:#x}, {:#x})",
                    stcheck::escape(&t.name),
                    t.dtype,
                    t.shape,
                    t.file_begin,
                    t.file_end
                )?;
            }
        }
    }
    Ok(())
}

/// The portable profile's findings (after the first, on the verdict line) and which readers
/// load the file.
fn portable_human(
    out: &mut dyn Write,
    p: &stcheck::portable::PortableReport,
    indent: &str,
) -> io::Result<()> {
    for f in p.findings().iter().skip(1) {
        writeln!(out, "{indent}  error {}", f.finding())?;
    }
    if p.omitted() > 0 {
        writeln!(
            out,
            "{indent}  ... and {} more portable findings",
            p.omitted()
        )?;
    }
    writeln!(out, "{indent}  portable: {}", p.support_line())
}

fn warnings_human(out: &mut dyn Write, rep: &Report<'_>, indent: &str) -> io::Result<()> {
    for w in rep.warnings() {
        writeln!(out, "{indent}  warning {w}")?;
    }
    let omitted = rep.omitted_warnings();
    if omitted > 0 {
        let counts: Vec<String> = rep
            .warning_counts()
            .map(|(r, n)| format!("{r} {n}"))
            .collect();
        writeln!(
            out,
            "{indent}  ... and {omitted} more warnings not shown (in all: {})",
            counts.join(", ")
        )?;
    }
    Ok(())
}

fn tensors_human(out: &mut dyn Write, rep: &Report<'_>, indent: &str) -> io::Result<()> {
    for t in rep.tensors() {
        writeln!(
            out,
            "{indent}  tensor \"{}\" {} {} data_offsets [{}, {}] (file bytes [{:#x}, {:#x}))",
            stcheck::escape(t.name),
            t.dtype,
            stcheck::internal::fmt_shape(t.shape),
            t.begin,
            t.end,
            t.file_begin,
            t.file_end
        )?;
    }
    Ok(())
}

/// The deep scan and the hash of a valid file, for the end of its `ok` line (one line, so that
/// `grep -v ': ok'` drops a valid file whole): `; deep: N data bytes scanned, no NaN or
/// infinity; sha256 HEX`. The tensors with NaN or infinity are the `DATA-NONFINITE` warnings.
fn deep_human(c: &Checked<'_>) -> String {
    let mut s = String::new();
    if let Some(d) = &c.deep {
        s.push_str(&format!("; deep: {} data bytes scanned", d.bytes_scanned));
        match d.non_finite_tensors {
            0 => s.push_str(", no NaN or infinity"),
            1 => s.push_str(", NaN or infinity in 1 tensor"),
            n => s.push_str(&format!(", NaN or infinity in {n} tensors")),
        }
    }
    if let Some(h) = &c.sha256 {
        s.push_str(&format!("; sha256 {}", wire::hex(h)));
    }
    s
}

/// A file checked by URL: its record with the URL requested and what it cost.
#[cfg_attr(not(feature = "remote"), allow(dead_code))]
pub(crate) fn remote_file(
    out: &mut dyn Write,
    shown: &str,
    c: &Checked<'_>,
    o: &Options,
    resolved: &str,
    cost: wire::RemoteCost,
) -> io::Result<()> {
    if o.format == Format::Json {
        let opts = wire::Options::new(None)
            .profile(o.profile)
            .verbose(o.verbose)
            .remote();
        let record = FileRecord::new(shown, c, opts).with_remote(resolved, cost);
        return wire::write_line(out, "file", &record);
    }
    file_human(out, shown, c, o, "")
}

/// A path that could not be read: its JSON record, or `path: not checked: message`, on stdout
/// (the caller repeats the message on stderr).
pub(crate) fn unreadable(
    out: &mut dyn Write,
    path: &str,
    e: &ReadError,
    o: &Options,
    kind: &str,
) -> io::Result<()> {
    if o.format == Format::Json {
        return wire::write_line(out, kind, &UnreadableRecord::new(path, e));
    }
    writeln!(out, "{path}: not checked: {e}")
}

/// A path not checked (a link not followed, a special file, a loop, a directory with nothing to
/// check): a failure of the run. `{"path", "reason", "message"}`, or `path: not checked: ...`.
pub(crate) fn not_checked(
    out: &mut dyn Write,
    path: &str,
    why: &ReadError,
    o: &Options,
) -> io::Result<()> {
    if o.format == Format::Json {
        return wire::write_line(out, "not_checked", &wire::NotCheckedRecord::new(path, why));
    }
    writeln!(out, "{path}: not checked: {}", why.message())
}

/// The output of one index, written as the shards are checked: in JSON the record's head and
/// each shard's record at once; in human form the shards' lines are kept until the set's
/// verdict line is written above them.
pub(crate) struct IndexOutput<'w> {
    out: &'w mut dyn Write,
    json: bool,
    /// Text, `--quiet`: only the shards that failed.
    quiet: bool,
    shards_written: usize,
    human_shards: Vec<u8>,
    dir: String,
    /// The shards are fetched over HTTP(S): their records say mode `remote`.
    remote: bool,
    error: Option<io::Error>,
}

impl<'w> IndexOutput<'w> {
    pub(crate) fn start(out: &'w mut dyn Write, path: &Path, o: &Options) -> Self {
        let shown = show(path);
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => format!("{}/", show(p)),
            _ => String::new(),
        };
        Self::start_at(out, &shown, dir, o)
    }

    /// An index shown as `shown`, whose shards are shown under `dir` (ending in `/`).
    pub(crate) fn start_at(out: &'w mut dyn Write, shown: &str, dir: String, o: &Options) -> Self {
        let mut me = IndexOutput {
            out,
            json: o.format == Format::Json,
            quiet: o.quiet,
            shards_written: 0,
            human_shards: Vec::new(),
            dir,
            remote: false,
            error: None,
        };
        if me.json {
            let r = (|| {
                me.out
                    .write_all(b"{\"type\":\"index\",\"data\":{\"path\":")?;
                wire::write_json(me.out, shown)?;
                me.out.write_all(b",\"shards\":[")
            })();
            me.note(r);
        }
        me
    }

    /// The shards are fetched from a server.
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    pub(crate) fn remote(mut self) -> Self {
        self.remote = true;
        self
    }

    fn note(&mut self, r: io::Result<()>) {
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }

    /// One shard's outcome.
    pub(crate) fn shard(&mut self, name: &str, outcome: ShardOutcome<'_, '_>, o: &Options) {
        if self.error.is_some() {
            return;
        }
        let path = format!("{}{}", self.dir, stcheck::escape(name));
        let r = if self.json {
            let sep: &[u8] = if self.shards_written > 0 { b"," } else { b"" };
            self.shards_written += 1;
            (|| {
                self.out.write_all(sep)?;
                match outcome {
                    ShardOutcome::Checked(c) => {
                        let opts = if self.remote {
                            options(o).remote()
                        } else {
                            options(o)
                        };
                        wire::write_json(self.out, &FileRecord::shard(name, &path, c, opts))
                    }
                    ShardOutcome::NotChecked(f) => {
                        wire::write_json(self.out, &MissingShardRecord::new(name, &path, f))
                    }
                }
            })()
        } else {
            match outcome {
                ShardOutcome::Checked(c) if !(self.quiet && file_valid(c, o)) => {
                    file_human(&mut self.human_shards, &format!("shard {path}"), c, o, "  ")
                }
                _ => Ok(()),
            }
        };
        self.note(r);
    }

    /// The set's verdict, after the shards.
    pub(crate) fn finish(self, shown: &str, rep: &IndexReport, o: &Options) -> io::Result<()> {
        self.finish_tail(shown, rep, IndexTail::new(rep).profile(o.profile))
    }

    /// The verdict of a set fetched from `resolved`, with what it cost.
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    pub(crate) fn finish_remote(
        self,
        shown: &str,
        rep: &IndexReport,
        resolved: &str,
        cost: wire::RemoteCost,
        o: &Options,
    ) -> io::Result<()> {
        let tail = IndexTail::new(rep)
            .with_remote(resolved, cost)
            .profile(o.profile);
        self.finish_tail(shown, rep, tail)
    }

    fn finish_tail(
        mut self,
        shown: &str,
        rep: &IndexReport,
        tail_record: IndexTail<'_>,
    ) -> io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if self.quiet && !self.json && tail_record.status() == wire::Status::Valid {
            return Ok(());
        }
        if self.json {
            let mut tail = Vec::new();
            wire::write_json(&mut tail, &tail_record)?;
            self.out.write_all(b"],")?;
            self.out.write_all(tail.get(1..).unwrap_or(&[]))?;
            return self.out.write_all(b"}\n");
        }
        let out = &mut *self.out;
        let portable_first = (tail_record.status() == wire::Status::Invalid && rep.is_valid())
            .then(|| rep.portable().and_then(|p| p.findings().first()))
            .flatten();
        let mut errors = rep.errors().iter();
        match errors.next() {
            None if portable_first.is_some() => {
                if let Some(f) = portable_first {
                    writeln!(out, "{shown}: error {}", f.finding())?;
                }
            }
            None => writeln!(
                out,
                "{shown}: ok (index of {} shards; {})",
                rep.shards().total(),
                totals_human(
                    rep.tensors(),
                    rep.parameters(),
                    &strict_totals(rep.totals_by_dtype())
                )
            )?,
            Some(first) => writeln!(out, "{shown}: error {first}")?,
        }
        for e in errors {
            writeln!(out, "  error {e}")?;
        }
        if rep.omitted() > 0 {
            writeln!(out, "  ... and {} more errors", rep.omitted())?;
        }
        for w in rep.warnings() {
            writeln!(out, "  warning {w}")?;
        }
        if let Some(p) = rep.portable() {
            portable_human(out, p, "")?;
        }
        out.write_all(&self.human_shards)
    }

    /// The set could not be checked (a shard or the directory could not be read).
    pub(crate) fn fail(mut self, shown: &str, e: &ReadError) -> io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if self.json {
            self.out
                .write_all(b"],\"status\":\"io_error\",\"io_error\":")?;
            wire::write_json(self.out, &e.to_string())?;
            self.out.write_all(b",\"read_error\":")?;
            wire::write_json(self.out, e.kind().as_str())?;
            return self.out.write_all(b"}}\n");
        }
        writeln!(self.out, "{shown}: not checked: {e}")
    }
}

/// The text summary: `summary: N files: V valid, I invalid, C could not be checked (T s)`.
/// A sharded set counts as one file (its shards are not counted again); "could not be
/// checked" counts the paths not checked and those that could not be read.
pub(crate) fn summary(out: &mut dyn Write, t: &Summary, elapsed: Duration) -> io::Result<()> {
    let failed = t.io_errors + t.not_checked;
    let n = t.valid + t.invalid + failed;
    writeln!(
        out,
        "summary: {n} file{}: {} valid, {} invalid, {failed} could not be checked ({:.2} s)",
        if n == 1 { "" } else { "s" },
        t.valid,
        t.invalid,
        elapsed.as_secs_f64()
    )
}
