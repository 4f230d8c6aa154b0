//! JSON Lines (`--format json`, `docs/json-output.md`): [`JsonLines`] is a [`Sink`] of the
//! gate's events that writes one record per line as they come. A sharded set is one record,
//! streamed: its head and each shard's record as the shards are checked, its verdict after
//! them, so a set of a million shards is never held in memory.

use std::io::{self, Write};

use stcheck::index::{IndexReport, ShardOutcome};
use stcheck::{Checked, ReadError, ReadMode};
use stcheck_gate::{Shown, Sink, Status, Unchecked, Via};

use crate::records::{
    self, FileRecord, IndexFailure, IndexTail, MissingShardRecord, NotCheckedRecord, Row, Summary,
    UnreadableRecord,
};
use crate::Options;

/// The JSON Lines printer.
#[derive(Debug)]
pub struct JsonLines<W: Write> {
    out: W,
    o: Options,
    /// The open set: whether its shards are fetched, and how many were written.
    index: Option<OpenIndex>,
    /// The rows of the records written, one per record, when asked for
    /// ([`JsonLines::with_rows`]).
    rows: Option<Vec<Row>>,
    /// Whether the records of files are written (not with [`JsonLines::rows_only`]).
    records: bool,
}

#[derive(Debug)]
struct OpenIndex {
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
            rows: None,
            records: true,
        }
    }

    /// Also keep each record's [`Row`], made from the record as it is written
    /// ([`JsonLines::take_rows`] hands them over).
    pub fn with_rows(mut self) -> Self {
        self.rows = Some(Vec::new());
        self
    }

    /// Keep each file's [`Row`] without writing its record (a face that answers from the row
    /// alone, as the service's clamd protocol does, makes no JSON it never sends). The rows
    /// are the ones [`JsonLines::with_rows`] keeps.
    pub fn rows_only(mut self) -> Self {
        self.rows = Some(Vec::new());
        self.records = false;
        self
    }

    /// The rows of the records written since the last call, in their order (none unless
    /// [`JsonLines::with_rows`]).
    pub fn take_rows(&mut self) -> Vec<Row> {
        self.rows.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn keep(&mut self, row: impl FnOnce() -> Row) {
        if let Some(rows) = &mut self.rows {
            rows.push(row());
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
        records::write_line(&mut self.out, "summary", t)
    }
}

/// `record` of a file obtained as `via` says, for its `mode`.
fn read_via<'a>(record: FileRecord<'a>, via: &Via) -> FileRecord<'a> {
    match via {
        Via::Local(mode) => record.read_as(*mode),
        Via::Memory => record,
        Via::Remote { .. } => record.by_url(),
    }
}

/// `record` of a file or shard with how it was read: for one fetched from a server, its URL,
/// cost and what the server said (the same fields for a file and for a shard of a set).
fn fetched<'a>(record: FileRecord<'a>, via: Option<&'a Via>) -> FileRecord<'a> {
    match via {
        Some(Via::Remote {
            resolved,
            cost,
            hub,
        }) => record.with_remote(resolved, *cost).with_hub(hub.into()),
        Some(Via::Local(_) | Via::Memory) | None => record,
    }
}

impl<W: Write> Sink for JsonLines<W> {
    fn file(
        &mut self,
        at: &Shown<'_>,
        c: &Checked<'_>,
        via: &Via,
        status: Status,
    ) -> io::Result<()> {
        let record = FileRecord::new(at.text, c, self.o, status);
        let record = fetched(read_via(record, via), Some(via));
        if self.records {
            records::write_line(&mut self.out, "file", &record)?;
        }
        self.keep(|| record.row());
        Ok(())
    }

    fn index_start(&mut self, at: &Shown<'_>, mode: Option<ReadMode>) -> io::Result<()> {
        self.index = Some(OpenIndex { mode, written: 0 });
        self.out
            .write_all(b"{\"type\":\"index\",\"data\":{\"path\":")?;
        records::write_json(&mut self.out, at.text)?;
        self.out.write_all(b",\"shards\":[")
    }

    fn shard(
        &mut self,
        at: &Shown<'_>,
        name: &str,
        outcome: ShardOutcome<'_, '_>,
        via: Option<&Via>,
        status: Status,
    ) -> io::Result<()> {
        let Some(index) = &mut self.index else {
            return Ok(());
        };
        let path = at.text;
        if index.written > 0 {
            self.out.write_all(b",")?;
        }
        index.written += 1;
        let mode = index.mode;
        match outcome {
            ShardOutcome::Checked(c) => {
                let record = FileRecord::shard(name, path, c, self.o, status);
                // As the shard was read, or else as the set's shards are.
                let record = match (via, mode) {
                    (Some(via), _) => read_via(record, via),
                    (None, Some(mode)) => record.read_as(mode),
                    (None, None) => record.by_url(),
                };
                let record = fetched(record, via);
                records::write_json(&mut self.out, &record)
            }
            ShardOutcome::NotChecked(f) => {
                records::write_json(&mut self.out, &MissingShardRecord::new(name, path, f))
            }
        }
    }

    fn index_end(
        &mut self,
        at: &Shown<'_>,
        outcome: Result<&IndexReport, &ReadError>,
        via: &Via,
        status: Status,
    ) -> io::Result<()> {
        self.index = None;
        // The tail's fields close the record the head opened.
        self.out.write_all(b"],")?;
        match outcome {
            Ok(rep) => {
                let tail = IndexTail::new(rep, status);
                let tail = match via {
                    Via::Remote {
                        resolved,
                        cost,
                        hub,
                    } => tail.with_remote(resolved, *cost).with_hub(hub.into()),
                    Via::Local(_) | Via::Memory => tail,
                };
                records::write_fields(&mut self.out, &tail)?;
                self.out.write_all(b"}}\n")?;
                self.keep(|| tail.row(at.text));
            }
            Err(e) => {
                let tail = IndexFailure::new(e);
                records::write_fields(&mut self.out, &tail)?;
                self.out.write_all(b"}}\n")?;
                self.keep(|| tail.row(at.text));
            }
        }
        Ok(())
    }

    fn not_checked(&mut self, at: &Shown<'_>, why: &ReadError, how: Unchecked) -> io::Result<()> {
        match how {
            Unchecked::Policy => {
                let record = NotCheckedRecord::new(at.text, why);
                if self.records {
                    records::write_line(&mut self.out, "not_checked", &record)?;
                }
                self.keep(|| record.row());
            }
            Unchecked::Unreadable => {
                let record = UnreadableRecord::new(at.text, why);
                if self.records {
                    records::write_line(&mut self.out, "file", &record)?;
                }
                self.keep(|| record.row());
            }
        }
        Ok(())
    }
}
