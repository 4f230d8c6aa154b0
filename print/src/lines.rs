//! JSON Lines (`--format json`, `docs/json-output.md`): [`JsonLines`] is a [`Sink`] of the
//! gate's events that writes one record per line as they come. A sharded set is one record,
//! streamed: its head and each shard's record as the shards are checked, its verdict after
//! them, so a set of a million shards is never held in memory.

use std::io::{self, Write};

use stcheck::index::{IndexReport, ShardOutcome};
use stcheck::{Checked, ReadError, ReadMode};
use stcheck_gate::{Shown, Sink, Unchecked, Via};

use crate::records::{
    self as wire, FileRecord, IndexTail, MissingShardRecord, NotCheckedRecord, Summary,
    UnreadableRecord,
};
use crate::Options;

/// The JSON Lines printer.
#[derive(Debug)]
pub struct JsonLines<W: Write> {
    out: W,
    o: Options,
    /// The open set: its shards' directory, whether they are fetched, and how many were
    /// written.
    index: Option<OpenIndex>,
}

#[derive(Debug)]
struct OpenIndex {
    dir: String,
    /// How the shards are read (`None`: fetched).
    mode: Option<ReadMode>,
    written: usize,
}

impl<W: Write> JsonLines<W> {
    /// A printer writing to `out` with `o`.
    pub fn new(out: W, o: Options) -> Self {
        JsonLines {
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

    /// The summary record, last.
    pub fn summary(&mut self, t: &Summary) -> io::Result<()> {
        wire::write_line(&mut self.out, "summary", t)
    }

    /// The record options for a file read as `mode` (`None`: by URL).
    fn options(&self, mode: Option<ReadMode>) -> wire::Options {
        wire::Options::new(mode)
            .profile(self.o.profile)
            .verbose(self.o.verbose)
    }

    fn options_via(&self, via: &Via) -> wire::Options {
        match via {
            Via::Local(mode) => self.options(Some(*mode)),
            Via::Memory => self.options(None),
            Via::Remote { .. } => self.options(None).remote(),
        }
    }
}

impl<W: Write> Sink for JsonLines<W> {
    fn file(&mut self, at: &Shown<'_>, c: &Checked<'_>, via: &Via) -> io::Result<()> {
        let record = FileRecord::new(at.text, c, self.options_via(via));
        let record = match via {
            Via::Remote {
                resolved,
                cost,
                hub,
            } => record.with_remote(resolved, *cost).with_hub(hub.into()),
            Via::Local(_) | Via::Memory => record,
        };
        wire::write_line(&mut self.out, "file", &record)
    }

    fn index_start(
        &mut self,
        at: &Shown<'_>,
        shard_dir: &str,
        mode: Option<ReadMode>,
    ) -> io::Result<()> {
        self.index = Some(OpenIndex {
            dir: shard_dir.to_owned(),
            mode,
            written: 0,
        });
        self.out
            .write_all(b"{\"type\":\"index\",\"data\":{\"path\":")?;
        wire::write_json(&mut self.out, at.text)?;
        self.out.write_all(b",\"shards\":[")
    }

    fn shard(&mut self, name: &str, outcome: ShardOutcome<'_, '_>) -> io::Result<()> {
        let Some(index) = &mut self.index else {
            return Ok(());
        };
        let path = format!("{}{}", index.dir, stcheck::escape(name));
        if index.written > 0 {
            self.out.write_all(b",")?;
        }
        index.written += 1;
        let opts = match index.mode {
            Some(mode) => self.options(Some(mode)),
            None => self.options(None).remote(),
        };
        match outcome {
            ShardOutcome::Checked(c) => {
                wire::write_json(&mut self.out, &FileRecord::shard(name, &path, c, opts))
            }
            ShardOutcome::NotChecked(f) => {
                wire::write_json(&mut self.out, &MissingShardRecord::new(name, &path, f))
            }
        }
    }

    fn index_end(
        &mut self,
        _at: &Shown<'_>,
        outcome: Result<&IndexReport, &ReadError>,
        via: &Via,
    ) -> io::Result<()> {
        self.index = None;
        match outcome {
            Ok(rep) => {
                let tail = IndexTail::new(rep).profile(self.o.profile);
                let tail = match via {
                    Via::Remote {
                        resolved,
                        cost,
                        hub,
                    } => tail.with_remote(resolved, *cost).with_hub(hub.into()),
                    Via::Local(_) | Via::Memory => tail,
                };
                // The tail's fields close the record the head opened.
                self.out.write_all(b"],")?;
                wire::write_fields(&mut self.out, &tail)?;
                self.out.write_all(b"}}\n")
            }
            Err(e) => {
                self.out
                    .write_all(b"],\"status\":\"io_error\",\"io_error\":")?;
                wire::write_json(&mut self.out, &e.to_string())?;
                self.out.write_all(b",\"read_error\":")?;
                wire::write_json(&mut self.out, e.kind().as_str())?;
                self.out.write_all(b"}}\n")
            }
        }
    }

    fn not_checked(&mut self, at: &Shown<'_>, why: &ReadError, how: Unchecked) -> io::Result<()> {
        match how {
            Unchecked::Policy => wire::write_line(
                &mut self.out,
                "not_checked",
                &NotCheckedRecord::new(at.text, why),
            ),
            Unchecked::Unreadable => {
                wire::write_line(&mut self.out, "file", &UnreadableRecord::new(at.text, why))
            }
        }
    }
}
