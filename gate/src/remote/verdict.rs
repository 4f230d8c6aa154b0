//! The one place where the remote fetch (`stcheck_gate::remote`) meets the validator: a remote file
//! is one more byte source of the one [`Checker`]. A header-level check feeds it the first bytes as
//! ranged responses bring them, asking for what [`Checker::wanted`] says, with the file's length
//! from the server; a deep check hands it the body as a stream ([`stcheck::check_reader`]). Either
//! way the verdict, rule, offset and message are those of the local check of the same bytes.

use std::io::Read;

use stcheck::index::{self, IndexReport, ShardOutcome, ShardSource};
use stcheck::Config;
use stcheck::ReadError;
use stcheck::{Checked, Checker, Need};

use super::Depth;

/// The configuration a check at `depth` runs with: the deep depth turns the deep scan (and
/// the hash, if asked) on; a configuration that reads the data makes any check deep.
pub(super) fn config_for(config: &Config, depth: Depth) -> Config {
    match depth {
        Depth::Header => config.clone(),
        Depth::Deep { sha256 } => config.clone().deep(true).sha256(config.sha256 || sha256),
    }
}

/// Whether a check under `config` streams the whole body.
pub(super) fn reads_data(config: &Config) -> bool {
    config.reads_data()
}

/// A header-level check of a file of `len` bytes, fed as ranges arrive.
#[derive(Debug)]
pub(super) struct Feed {
    checker: Checker<'static>,
}

impl Feed {
    pub(super) fn new(config: &Config, len: u64) -> Self {
        Feed {
            checker: Checker::new(config).with_len(len),
        }
    }

    /// How many bytes from the start were consumed.
    pub(super) fn consumed(&self) -> u64 {
        self.checker.consumed()
    }

    /// How many more bytes the check wants, or `None` when it has what it needs.
    pub(super) fn wanted(&self) -> Option<u64> {
        self.checker.wanted()
    }

    /// The next bytes, in order; `false` when nothing more is needed.
    pub(super) fn feed(&mut self, bytes: &[u8]) -> bool {
        self.checker.feed(bytes) == Need::More
    }

    /// In the header stage: the rest of the header (or as much of it as `reader` gives) read
    /// from `reader` straight into the buffer the checker keeps ([`Checker::read_header`]), so
    /// a large header is held once, not once in a response buffer and again in the checker's.
    /// The bytes taken; `None` outside the header stage, where nothing is read.
    pub(super) fn read_header(&mut self, reader: &mut dyn Read) -> std::io::Result<Option<u64>> {
        self.checker.read_header(reader)
    }

    /// The verdicts, every one asked for (see [`Checker::try_finish`]).
    pub(super) fn try_finish(self) -> Result<Checked<'static>, ReadError> {
        self.checker.try_finish()
    }
}

/// The whole file, streamed once in bounded memory. `Err` is a read error (no verdict).
pub(super) fn stream_verdict<R: Read>(
    reader: R,
    config: &Config,
) -> Result<Checked<'static>, ReadError> {
    stcheck::check_reader(reader, config)
}

/// A sharded checkpoint: the index's bytes and its shards through `source`.
pub(super) fn index_verdict(
    index_bytes: &[u8],
    source: &dyn ShardSource,
    config: &Config,
    on_shard: &mut dyn FnMut(&str, ShardOutcome<'_, '_>),
) -> Result<IndexReport, ReadError> {
    index::check_index_with(index_bytes, source, config, on_shard)
}

/// The most bytes of an index read: one past the limit, so a longer one is rejected as the
/// local check rejects it.
pub(super) fn index_read_limit(config: &Config) -> u64 {
    config.header_limit().saturating_add(1)
}

/// Whether `name` (as the index writes it) ends like an index.
pub(super) fn is_index_name(name: &str) -> bool {
    name.ends_with(index::INDEX_SUFFIX)
}
