//! GitHub Actions workflow commands (`--format github`): one annotation per finding, shown by
//! the runner on the file in a pull request's diff and in the run's summary:
//!
//! ```text
//! ::error file=models/m.safetensors,line=1,title=JSON-DUPLICATE-KEY::tensor "w": duplicate tensor name (at offset 0x4b)
//! ```
//!
//! A safetensors file has no lines: every annotation is at line 1, and the byte offset of the
//! finding is in its message. Errors are `::error`, warnings `::warning`; a path that could not
//! be checked is an `::error` titled `not checked`. A URL or standard input has no file in the
//! workspace: its annotation names no file and the message starts with what was checked. The
//! text summary line ends the output. Findings are those of the strict (or portable) verdict,
//! as in SARIF.

use std::io::{self, Write};
use std::path::Path;

use stcheck::index::{IndexReport, ShardOutcome};
use stcheck::{Checked, Finding, ReadError};
use stcheck_gate::{Place, Shown, Sink, Status, Unchecked, Via};

/// The workflow-command printer: annotations to `out` as the events come.
#[derive(Debug)]
pub struct Github<W: Write> {
    out: W,
}

/// Where an annotation stands: a file of the workspace, or a place shown in the message.
#[derive(Debug, Clone, Copy)]
enum Anchor<'a> {
    File(&'a Path),
    Shown(&'a str),
}

impl<W: Write> Github<W> {
    /// A printer writing to `out`.
    pub fn new(out: W) -> Self {
        Github { out }
    }

    /// The writer.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    fn finding(&mut self, at: Anchor<'_>, f: &Finding, as_error: bool) -> io::Result<()> {
        let id = f.rule().id();
        let text = f.to_string();
        let text = text.strip_prefix(id).unwrap_or(&text);
        let text = text.strip_prefix(": ").unwrap_or(text);
        let level = if as_error { "error" } else { "warning" };
        annotation(&mut self.out, level, at, id, text)
    }

    /// The annotations of one checked file: its error, or its warnings and portable findings.
    fn checked(&mut self, at: Anchor<'_>, c: &Checked<'_>) -> io::Result<()> {
        match &c.verdict {
            Err(e) => self.finding(at, e.finding(), true),
            Ok(rep) => {
                for w in rep.warnings() {
                    self.finding(at, w, false)?;
                }
                for f in c.portable.iter().flat_map(|p| p.findings()) {
                    self.finding(at, f.finding(), true)?;
                }
                Ok(())
            }
        }
    }
}

fn anchor<'a>(at: &Shown<'a>) -> Anchor<'a> {
    match at.place {
        Place::Path(p) => Anchor::File(p),
        Place::Url(_) | Place::Stdin => Anchor::Shown(at.text),
    }
}

/// One workflow command. Property values escape `%`, CR, LF, `:` and `,`; the message escapes
/// `%`, CR and LF (the runner's rules), so no name in a file can end the command early or
/// forge another one.
fn annotation(
    out: &mut dyn Write,
    level: &str,
    at: Anchor<'_>,
    title: &str,
    message: &str,
) -> io::Result<()> {
    match at {
        Anchor::File(p) => {
            let path = p.to_string_lossy();
            let path = path.strip_prefix("./").unwrap_or(&path);
            writeln!(
                out,
                "::{level} file={},line=1,title={}::{}",
                escape(path, true),
                escape(title, true),
                escape(message, false)
            )
        }
        Anchor::Shown(shown) => writeln!(
            out,
            "::{level} title={}::{}: {}",
            escape(title, true),
            escape(shown, false),
            escape(message, false)
        ),
    }
}

fn escape(s: &str, property: bool) -> String {
    let mut e = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' => e.push_str("%25"),
            '\r' => e.push_str("%0D"),
            '\n' => e.push_str("%0A"),
            ':' if property => e.push_str("%3A"),
            ',' if property => e.push_str("%2C"),
            c => e.push(c),
        }
    }
    e
}

impl<W: Write> Sink for Github<W> {
    fn file(
        &mut self,
        at: &Shown<'_>,
        c: &Checked<'_>,
        _via: &Via,
        _status: Status,
    ) -> io::Result<()> {
        self.checked(anchor(at), c)
    }

    fn index_start(&mut self, _at: &Shown<'_>, _mode: Option<stcheck::ReadMode>) -> io::Result<()> {
        Ok(())
    }

    fn shard(
        &mut self,
        at: &Shown<'_>,
        name: &str,
        outcome: ShardOutcome<'_, '_>,
        _via: Option<&Via>,
        _status: Status,
    ) -> io::Result<()> {
        let ShardOutcome::Checked(c) = outcome else {
            return Ok(());
        };
        match at.place {
            Place::Path(p) => self.checked(Anchor::File(p), c),
            Place::Url(_) | Place::Stdin => {
                self.checked(Anchor::Shown(&format!("shard {name}")), c)
            }
        }
    }

    fn index_end(
        &mut self,
        at: &Shown<'_>,
        outcome: Result<&IndexReport, &ReadError>,
        _via: &Via,
        _status: Status,
    ) -> io::Result<()> {
        let a = anchor(at);
        let rep = match outcome {
            Ok(rep) => rep,
            Err(e) => return annotation(&mut self.out, "error", a, "not checked", &e.to_string()),
        };
        for e in rep.errors() {
            self.finding(a, e, true)?;
        }
        for w in rep.warnings() {
            self.finding(a, w, false)?;
        }
        for f in rep.portable().iter().flat_map(|p| p.findings()) {
            self.finding(a, f.finding(), true)?;
        }
        Ok(())
    }

    fn not_checked(&mut self, at: &Shown<'_>, why: &ReadError, how: Unchecked) -> io::Result<()> {
        let why = match how {
            Unchecked::Policy => why.message().to_owned(),
            Unchecked::Unreadable => why.to_string(),
        };
        annotation(&mut self.out, "error", anchor(at), "not checked", &why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(at: Anchor<'_>, title: &str, message: &str) -> String {
        let mut out = Vec::new();
        annotation(&mut out, "error", at, title, message).expect("a Vec takes every write");
        String::from_utf8(out).expect("the command is UTF-8")
    }

    #[test]
    fn commands_escape_what_would_end_them() {
        assert_eq!(
            line(
                Anchor::File(Path::new("./a,b:c%.safetensors")),
                "LAYOUT-GAP",
                "tensor \"x\": gap (at offset 0x10)"
            ),
            "::error file=a%2Cb%3Ac%25.safetensors,line=1,title=LAYOUT-GAP::tensor \"x\": gap (at offset 0x10)\n"
        );
        assert_eq!(
            line(
                Anchor::Shown("https://h/m.safetensors"),
                "not checked",
                "a\nb\r::error::forged, 100%"
            ),
            "::error title=not checked::https://h/m.safetensors: a%0Ab%0D::error::forged, 100%25\n"
        );
    }
}
