//! `stcheck-gate`: where a gate's bytes come from and what it refuses, around the verdicts of
//! the core (`stcheck`).
//!
//! - [`fs`]: the file-system policy: regular files only, opened without blocking on FIFOs and
//!   devices, links followed only inside the directory named, and the walker;
//! - [`shards`]: the shards of an index on disk ([`shards::FsSource`]);
//! - [`remote`] (feature `remote`, on by default): files and sets on an HTTP(S) server or the
//!   Hugging Face hub, checked with range requests;
//! - [`options`]: [`options::RunOptions`], the one resolution of every face's options into
//!   the core's `Config`;
//! - [`glob`]: the gitignore-style patterns of `--exclude`;
//! - [`target`]: how a target is shown (credentials never are);
//! - [`walk`]: the command line's PATH arguments as a list of targets.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod event;
pub mod fs;
pub mod glob;
pub mod options;
#[cfg(feature = "remote")]
pub mod remote;
mod run;
pub mod shards;
pub mod target;
pub mod walk;

pub use event::{shown_shard, Cost, Done, HubInfo, Place, Shown, Sink, Status, Unchecked, Via};
pub use run::{not_checked, read_index, shown_path, target_of, Gate, Plan};
pub use walk::Target;
