//! The gate's event vocabulary: what a [`Sink`] is told about each target (where it stands,
//! how its bytes were obtained, what it cost, what the server said) and how a target ended.
//! A leaf: the driver (`run`) and the remote source both use it, neither imports the other
//! for it.

use std::io;
use std::path::Path;

use serde::Serialize;
use stcheck::index::{IndexReport, ShardOutcome};
use stcheck::{Checked, Profile, ReadError, ReadMode};

/// Where a target stands, for output: what is shown (escaped; an address without its
/// secrets), and the place it names.
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a> {
    /// The text every output shows for it.
    pub text: &'a str,
    /// The place itself.
    pub place: Place<'a>,
}

impl Shown<'_> {
    /// For an index shown here, the text its shards are shown under: the index's directory as
    /// shown, ending in `/` (for a URL, up to its last `/`), or nothing for an index named
    /// without a directory.
    pub fn shard_dir(&self) -> String {
        match self.place {
            Place::Path(p) => match p.parent() {
                Some(d) if !d.as_os_str().is_empty() => {
                    format!("{}/", crate::fs::display_path(d))
                }
                _ => String::new(),
            },
            Place::Url(_) | Place::Stdin => match self.text.rfind('/') {
                Some(k) => self.text[..=k].to_owned(),
                None => String::new(),
            },
        }
    }
}

/// The place a target names.
#[derive(Debug, Clone, Copy)]
pub enum Place<'a> {
    /// A path.
    Path(&'a Path),
    /// An address (as given: printers show it through [`crate::target`]).
    Url(&'a str),
    /// Standard input, or bytes handed over by a caller.
    Stdin,
}

/// What checking one address cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Cost {
    /// HTTP requests sent, redirects and retries included.
    pub requests: u32,
    /// Response body bytes received (headers not counted).
    pub bytes: u64,
    /// Redirects followed.
    pub redirects: u32,
    /// Requests repeated after 429, 5xx or a failed connection.
    pub retries: u32,
}

impl Cost {
    /// The sum of two costs (saturating).
    pub fn add(&mut self, other: &Cost) {
        self.requests = self.requests.saturating_add(other.requests);
        self.bytes = self.bytes.saturating_add(other.bytes);
        self.redirects = self.redirects.saturating_add(other.redirects);
        self.retries = self.retries.saturating_add(other.retries);
    }
}

/// What a server (the Hugging Face hub) said about a file it served: the commit, the entity
/// tag, the published SHA-256. Every field is absent when the server did not say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HubInfo {
    /// The commit the hub served the file from (`X-Repo-Commit`; for a file of a repository
    /// listed by the run, the commit its revision was resolved to when the hub did not say).
    pub commit: Option<String>,
    /// The file's entity tag, quotes removed: `X-Linked-Etag` where the hub sends it (for a
    /// file in LFS, its SHA-256), else the `ETag` of the response that delivered the bytes.
    pub etag: Option<String>,
    /// The SHA-256 the hub publishes for the file (an `X-Linked-Etag` of 64 hex digits, or the
    /// LFS object id of the repository's listing), lower case.
    pub lfs_sha256: Option<String>,
    /// An `X-Linked-Etag` of 40 hex digits, lower case: the git blob id of a file not in LFS,
    /// not a SHA-256, so not compared with the file's.
    pub git_blob_id: Option<String>,
    /// An `X-Linked-Etag` that is neither a SHA-256 nor a git blob id, shown safely (its
    /// letters and digits, at most 80): a published id that cannot confirm the bytes, so a
    /// check with the SHA-256 fails the file (`INTEGRITY-SHA256`), as a malformed listed id.
    pub linked_etag_malformed: Option<String>,
}

/// The sources of a published SHA-256, as messages and records name them (the user's is named
/// as the face names its option, [`crate::options::RunOptions::expected_id`]).
const LISTING: &str = "the hub's listing (lfs.oid)";
const LINKED_ETAG: &str = "X-Linked-Etag";

impl HubInfo {
    /// Take a response's `X-Linked-Etag` (`raw`, as sent): what its bytes say it is decides
    /// what it is: 64 hex digits, the LFS SHA-256 ([`HubInfo::lfs_sha256`], compared); 40 hex
    /// digits, a git blob id ([`HubInfo::git_blob_id`], not compared); anything else, a
    /// published id that cannot confirm the bytes ([`HubInfo::linked_etag_malformed`]).
    pub fn note_linked_etag(&mut self, raw: &[u8]) {
        let text = String::from_utf8_lossy(raw);
        let text = text.trim();
        let v = text.strip_prefix("W/").unwrap_or(text).trim_matches('"');
        let hex = |n: usize| v.len() == n && v.bytes().all(|b| b.is_ascii_hexdigit());
        self.lfs_sha256 = None;
        self.git_blob_id = None;
        self.linked_etag_malformed = None;
        if hex(64) {
            self.lfs_sha256 = Some(v.to_ascii_lowercase());
        } else if hex(40) {
            self.git_blob_id = Some(v.to_ascii_lowercase());
        } else {
            let shown = v.chars().filter(char::is_ascii_alphanumeric).take(80);
            self.linked_etag_malformed = Some(shown.collect());
        }
    }

    /// The ids the server published for the file, by source, for the one integrity decision
    /// ([`stcheck::Checked::compare_published`]): the repository listing's `listed` (its
    /// `lfs.oid`, where the repository was listed), then the `X-Linked-Etag` if it was a
    /// SHA-256 or malformed (a git blob id is not compared).
    pub fn published_ids(&self, listed: Option<&str>) -> Vec<(&'static str, String)> {
        let mut ids = Vec::new();
        if let Some(listed) = listed {
            ids.push((LISTING, listed.to_owned()));
        }
        let linked = self
            .lfs_sha256
            .as_ref()
            .or(self.linked_etag_malformed.as_ref());
        if let Some(linked) = linked {
            ids.push((LINKED_ETAG, linked.clone()));
        }
        ids
    }
}

/// How a file's bytes were obtained.
#[derive(Debug, Clone)]
pub enum Via {
    /// Read from the file system (or standard input) as the mode says.
    Local(ReadMode),
    /// Handed over in memory by the caller (a face's `bytes`): no read mode.
    Memory,
    /// Fetched from a server: the URL requested (for display) and what it cost.
    Remote {
        /// The `http(s)` URL requested, for display.
        resolved: String,
        /// What it cost.
        cost: Cost,
        /// What the server said about the file (or the index).
        hub: HubInfo,
    },
}

impl Via {
    /// Whether the bytes came over HTTP(S).
    pub fn is_remote(&self) -> bool {
        matches!(self, Via::Remote { .. })
    }
}

/// Why a target has no verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unchecked {
    /// By policy or by its nature: a special file, a link not followed, a loop, an empty
    /// directory, a file that changed.
    Policy,
    /// Reading it failed (or a server did).
    Unreadable,
}

/// Where the events of a check go: the printers, or a face's own collector. Every method may
/// fail with the output's error (a closed pipe ends a run).
///
/// Each event carries what the gate decided: the [`Status`] under the run's profile and the
/// text every output shows (a shard's too), so that no sink decides either again.
pub trait Sink {
    /// A checked file (a file, standard input, or a URL that names a file) and its status
    /// ([`Status::Valid`] or [`Status::Invalid`]).
    fn file(
        &mut self,
        at: &Shown<'_>,
        checked: &Checked<'_>,
        via: &Via,
        status: Status,
    ) -> io::Result<()>;

    /// A sharded set begins: its shards follow, then [`Sink::index_end`]. `mode`: how its
    /// shards are read, `None` when they are fetched from a server.
    fn index_start(&mut self, at: &Shown<'_>, mode: Option<ReadMode>) -> io::Result<()>;

    /// One shard of the set begun last, in the index's order: where it stands (`at.text` is
    /// the index's directory as shown, then the shard's escaped name), the name the index
    /// gives it, and how it was read: for a set named by URL, the shard's own URL, cost and
    /// what the server said about it (`None` for a shard that was not read). `status`: a
    /// checked shard's under the run's profile; [`Status::Invalid`] for one not checked.
    fn shard(
        &mut self,
        at: &Shown<'_>,
        name: &str,
        outcome: ShardOutcome<'_, '_>,
        via: Option<&Via>,
        status: Status,
    ) -> io::Result<()>;

    /// The set's verdict, or why it has none (a shard or the directory could not be read),
    /// and its status ([`Status::IoError`] for the latter).
    fn index_end(
        &mut self,
        at: &Shown<'_>,
        outcome: Result<&IndexReport, &ReadError>,
        via: &Via,
        status: Status,
    ) -> io::Result<()>;

    /// A target with no verdict.
    fn not_checked(&mut self, at: &Shown<'_>, why: &ReadError, how: Unchecked) -> io::Result<()>;
}

/// How a target ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Valid under the run's profile.
    Valid,
    /// Invalid under it.
    Invalid,
    /// Could not be read (never valid).
    IoError,
    /// Not checked by policy (never valid).
    NotChecked,
}

/// The end of one target: its status, whether it was a sharded set, and the output's error.
#[derive(Debug)]
pub struct Done {
    /// How it ended.
    pub status: Status,
    /// Whether it was a sharded set (the summary counts sets and files apart).
    pub is_index: bool,
    /// The first error of the sink, if any: the target's events stopped there.
    pub written: io::Result<()>,
    /// The OS error number of a target that could not be read, where there is one (a face
    /// that raises `OSError`s wants it).
    pub os_error: Option<i32>,
}

impl Status {
    /// `"valid"`, `"invalid"`, `"io_error"` or `"not_checked"`, as records and rows write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Valid => "valid",
            Status::Invalid => "invalid",
            Status::IoError => "io_error",
            Status::NotChecked => "not_checked",
        }
    }

    /// The status of a file's verdict under `profile`: the gate's one rule, for a face that
    /// checks bytes without the driver (the WebAssembly package).
    pub fn of_file(c: &Checked<'_>, profile: Profile) -> Status {
        if c.is_valid_under(profile) {
            Status::Valid
        } else {
            Status::Invalid
        }
    }

    /// The status of a shard under `profile`: a shard not checked makes its set invalid.
    pub fn of_shard(outcome: &ShardOutcome<'_, '_>, profile: Profile) -> Status {
        match outcome {
            ShardOutcome::Checked(c) => Status::of_file(c, profile),
            ShardOutcome::NotChecked(_) => Status::Invalid,
        }
    }

    /// The status of a set's verdict under `profile`, or of a set that could not be read.
    pub fn of_index(result: Result<&IndexReport, &ReadError>, profile: Profile) -> Status {
        match result {
            Ok(r) if r.is_valid_under(profile) => Status::Valid,
            Ok(_) => Status::Invalid,
            Err(_) => Status::IoError,
        }
    }
}

impl Done {
    /// A file's verdict handed to `sink`, with its status under `profile`.
    pub(crate) fn file(
        profile: Profile,
        at: &Shown<'_>,
        c: &Checked<'_>,
        via: &Via,
        sink: &mut dyn Sink,
    ) -> Done {
        let status = Status::of_file(c, profile);
        Done {
            status,
            is_index: false,
            written: sink.file(at, c, via, status),
            os_error: None,
        }
    }

    /// The end of a sharded set: its verdict (or why it has none) handed to `sink` after the
    /// shards, unless writing them failed already.
    pub(crate) fn index(
        profile: Profile,
        at: &Shown<'_>,
        result: Result<&IndexReport, &ReadError>,
        via: &Via,
        written: io::Result<()>,
        sink: &mut dyn Sink,
    ) -> Done {
        let status = Status::of_index(result, profile);
        Done {
            status,
            is_index: true,
            written: written.and_then(|()| sink.index_end(at, result, via, status)),
            os_error: result.err().and_then(os_error),
        }
    }

    /// The end of a target with no verdict (by policy or because reading it failed, as `how`
    /// says), told to `sink`.
    pub(crate) fn unchecked(
        at: &Shown<'_>,
        why: &ReadError,
        how: Unchecked,
        is_index: bool,
        sink: &mut dyn Sink,
    ) -> Done {
        Done {
            status: match how {
                Unchecked::Policy => Status::NotChecked,
                Unchecked::Unreadable => Status::IoError,
            },
            is_index,
            written: sink.not_checked(at, why, how),
            os_error: os_error(why),
        }
    }
}

/// The OS error number behind a read error, where there is one.
fn os_error(e: &ReadError) -> Option<i32> {
    std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<io::Error>())
        .and_then(io::Error::raw_os_error)
}

/// The text a shard is shown as: its set's shard directory ([`Shown::shard_dir`]), then its name
/// as the index gives it, escaped.
pub fn shown_shard(dir: &str, name: &str) -> String {
    format!("{dir}{}", stcheck::escape(name))
}
