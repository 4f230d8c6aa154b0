//! The text lines (README.md "What it prints"): one line per file, `path: ok (...)`,
//! `path: error RULE: ...` or `path: not checked: ...`, warnings and shards indented below, then
//! the summary. [`Text`] is a [`Sink`] of the gate's events.

use std::io::{self, Write};
use std::time::Duration;

use stcheck::index::{IndexReport, ShardOutcome};
use stcheck::reference::Verdict;
use stcheck::{Checked, DtypeTotal, Profile, ReadError, Report};
use stcheck_gate::{Shown, Sink, Status, Unchecked, Via};

use crate::records::{self, Summary};
use crate::Options;

/// The text printer: lines to `out` as the events come. A set's shard lines are kept until its
/// verdict line is written above them.
#[derive(Debug)]
pub struct Text<W: Write> {
    out: W,
    o: Options,
    /// The open set: its shards' lines.
    index: Option<Vec<u8>>,
}

impl<W: Write> Text<W> {
    /// A printer writing to `out` with `o`.
    pub fn new(out: W, o: Options) -> Self {
        Text {
            out,
            o,
            index: None,
        }
    }

    /// The writer.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// The writer, given back.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// The summary line, last.
    pub fn summary(&mut self, t: &Summary, elapsed: Duration) -> io::Result<()> {
        summary(&mut self.out, t, elapsed)
    }
}

impl<W: Write> Sink for Text<W> {
    fn file(
        &mut self,
        at: &Shown<'_>,
        c: &Checked<'_>,
        _via: &Via,
        status: Status,
    ) -> io::Result<()> {
        if self.o.quiet && status == Status::Valid {
            return Ok(());
        }
        file_human(&mut self.out, at.text, c, &self.o, "")
    }

    fn index_start(&mut self, _at: &Shown<'_>, _mode: Option<stcheck::ReadMode>) -> io::Result<()> {
        self.index = Some(Vec::new());
        Ok(())
    }

    fn shard(
        &mut self,
        at: &Shown<'_>,
        _name: &str,
        outcome: ShardOutcome<'_, '_>,
        _via: Option<&Via>,
        status: Status,
    ) -> io::Result<()> {
        let Some(lines) = &mut self.index else {
            return Ok(());
        };
        match outcome {
            ShardOutcome::Checked(c) if !(self.o.quiet && status == Status::Valid) => {
                let path = format!("shard {}", at.text);
                file_human(lines, &path, c, &self.o, "  ")
            }
            _ => Ok(()),
        }
    }

    fn index_end(
        &mut self,
        at: &Shown<'_>,
        outcome: Result<&IndexReport, &ReadError>,
        _via: &Via,
        status: Status,
    ) -> io::Result<()> {
        let shards = self.index.take().unwrap_or_default();
        let rep = match outcome {
            Ok(rep) => rep,
            Err(e) => return writeln!(self.out, "{}: not checked: {e}", at.text),
        };
        let valid = status == Status::Valid;
        if self.o.quiet && valid {
            return Ok(());
        }
        let out = &mut self.out;
        let shown = at.text;
        let portable_first = (!valid && rep.is_valid())
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
        out.write_all(&shards)
    }

    fn not_checked(&mut self, at: &Shown<'_>, why: &ReadError, how: Unchecked) -> io::Result<()> {
        match how {
            Unchecked::Policy => writeln!(self.out, "{}: not checked: {}", at.text, why.message()),
            Unchecked::Unreadable => writeln!(self.out, "{}: not checked: {why}", at.text),
        }
    }
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
                    records::reference_parameters(ts),
                    &records::reference_totals(ts)
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
                    if let Some(d) = records::divergence(c) {
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
        s.push_str(&format!("; sha256 {}", records::hex(h)));
    }
    s
}

/// The text summary: `summary: N files: V valid, I invalid, C could not be checked (T s)`.
/// A sharded set counts as one file (its shards are not counted again); "could not be
/// checked" counts the paths not checked and those that could not be read.
/// The text summary line.
pub fn summary(out: &mut dyn Write, t: &Summary, elapsed: Duration) -> io::Result<()> {
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
