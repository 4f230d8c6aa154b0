//! The one driver: targets in, events out. [`Gate::check`] runs one [`Target`] — a file, a
//! sharded set on disk, standard input, a URL, or a path the walk did not check — through the
//! core's one checker with the run's [`Config`], and tells a [`Sink`] what happened as it
//! happens (a sharded set's shards as they are checked). The printers of `stcheck-print`
//! are sinks; the command line orders and counts their output, the Python package collects
//! it. No face checks a target any other way.

use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde::Serialize;
use stcheck::index::{self, IndexReport, ShardOutcome, ShardSource};
use stcheck::{Checked, Config, Profile, Progress, ReadError, ReadErrorKind, ReadMode};

use crate::options::{RunOptions, UsageError};
use crate::shards::FsSource;
use crate::walk::Target;

/// Where a target stands, for output: what is shown (escaped; an address without its
/// secrets), and the place it names.
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a> {
    /// The text every output shows for it.
    pub text: &'a str,
    /// The place itself.
    pub place: Place<'a>,
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
pub trait Sink {
    /// A checked file (a file, standard input, or a URL that names a file).
    fn file(&mut self, at: &Shown<'_>, checked: &Checked<'_>, via: &Via) -> io::Result<()>;

    /// A sharded set begins: its shards follow (shown under `shard_dir`, which ends in `/` or
    /// is empty), then [`Sink::index_end`]. `mode`: how its shards are read, `None` when
    /// they are fetched from a server.
    fn index_start(
        &mut self,
        at: &Shown<'_>,
        shard_dir: &str,
        mode: Option<ReadMode>,
    ) -> io::Result<()>;

    /// One shard of the set begun last, in the index's order, and how it was read: for a set
    /// named by URL, the shard's own URL, cost and what the server said about it (`None` for a
    /// shard that was not read).
    fn shard(
        &mut self,
        name: &str,
        outcome: ShardOutcome<'_, '_>,
        via: Option<&Via>,
    ) -> io::Result<()>;

    /// The set's verdict, or why it has none (a shard or the directory could not be read).
    fn index_end(
        &mut self,
        at: &Shown<'_>,
        outcome: Result<&IndexReport, &ReadError>,
        via: &Via,
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

/// The OS error number behind a read error, where there is one.
fn os_error(e: &ReadError) -> Option<i32> {
    std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<io::Error>())
        .and_then(io::Error::raw_os_error)
}

/// The most index bytes a repository's plan keeps, all its indexes together, for their checks
/// (each index is fetched once to know which shards it names; kept, its check does not fetch
/// it again). An index past this bound is fetched again by its check.
#[cfg(feature = "remote")]
const PREFETCHED_INDEX_BYTES: usize = 8 << 20;

/// A run's options, resolved once, and what its targets share (the client of its URLs).
#[derive(Debug)]
pub struct Gate {
    options: RunOptions,
    config: Config,
    profile: Profile,
    #[cfg(feature = "remote")]
    client: std::sync::OnceLock<Result<crate::remote::Remote, String>>,
    /// What the listings of the run's repositories say, by directory at a commit
    /// (`hf://org/repo@COMMIT/dir`): the directory's safetensors files and their SHA-256.
    #[cfg(feature = "remote")]
    listed:
        std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<crate::remote::Known>>>,
}

impl Gate {
    /// A gate for `options`: resolved now, so a usage error comes before any check.
    pub fn new(options: RunOptions) -> Result<Gate, UsageError> {
        let config = options.resolve()?;
        let profile = options.effective_profile();
        Ok(Gate {
            options,
            config,
            profile,
            #[cfg(feature = "remote")]
            client: std::sync::OnceLock::new(),
            #[cfg(feature = "remote")]
            listed: std::sync::Mutex::default(),
        })
    }

    /// The options.
    pub fn options(&self) -> &RunOptions {
        &self.options
    }

    /// The core's configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The profile that decides.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The targets of `args` (paths, `-` for standard input, addresses): directories walked,
    /// links judged, and the files a set of the run names as shards left to that set.
    pub fn targets(&self, args: &[OsString]) -> Vec<Target> {
        let targets = crate::walk::expand_for(args, &self.options);
        self.plan(targets, false).targets
    }

    /// [`Gate::targets`] with what each is expected to read (for a progress bar by bytes),
    /// when `size_shards`: a file's size, the sum of a set's shards, 0 for what is not read;
    /// the total is `None` when standard input is among them. Without `size_shards` a file's
    /// size is known only where it was looked up anyway (when a set is among the targets) and
    /// is 0 otherwise.
    ///
    /// A whole repository on the hub (`hf://org/repo[@revision]`) is listed here, once, at the
    /// commit its revision names now: its `*.safetensors` files and indexes become targets at
    /// that commit (the shards an index names left to it, as in a walk), its files of other
    /// weight formats are not checked (unless allowed), and a repository that cannot be
    /// listed is not checked.
    pub fn plan(&self, targets: Vec<Target>, size_shards: bool) -> Plan {
        #[cfg(feature = "remote")]
        let targets = self.expand_repositories(targets);
        plan(targets, self, size_shards)
    }

    #[cfg(feature = "remote")]
    fn expand_repositories(&self, targets: Vec<Target>) -> Vec<Target> {
        use crate::remote::Remote;
        if !targets
            .iter()
            .any(|t| matches!(t, Target::Url(a) if Remote::is_repository(a)))
        {
            return targets;
        }
        let mut out = Vec::with_capacity(targets.len());
        for t in targets {
            match t {
                Target::Url(a) if Remote::is_repository(&a) => self.repository(&a, &mut out),
                t => out.push(t),
            }
        }
        out
    }

    /// The targets of the repository at `address`.
    #[cfg(feature = "remote")]
    fn repository(&self, address: &str, out: &mut Vec<Target>) {
        use crate::fs::{checkpoint_kind, other_format, Checkpoint, NotChecked};
        use std::collections::{BTreeMap, HashSet};
        use std::ffi::OsStr;
        let fail = |m: String| {
            Target::UrlNotChecked(address.to_owned(), ReadError::new(ReadErrorKind::Io, m))
        };
        let client = match self.client() {
            Ok(c) => c,
            Err(e) => return out.push(fail(e)),
        };
        let base = |p: &str| -> (String, String) {
            match p.rsplit_once('/') {
                Some((d, n)) => (d.to_owned(), n.to_owned()),
                None => (String::new(), p.to_owned()),
            }
        };
        let keep = |p: &str| {
            let name = OsStr::new(p.rsplit('/').next().unwrap_or(p));
            checkpoint_kind(name).is_some() || other_format(name).is_some()
        };
        let listing = match client.list_repository(address, &keep) {
            Ok(l) => l,
            Err(e) => {
                return out.push(fail(format!(
                    "could not list the repository's files: {}",
                    e.message()
                )))
            }
        };
        let mut files = listing.files.clone();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let at = |f: &crate::remote::RepoFile| listing.address_of(address, f);
        // What each directory holds, for INDEX-SHARD-UNLISTED and INTEGRITY-SHA256.
        let mut dirs: BTreeMap<String, crate::remote::Known> = BTreeMap::new();
        for f in &files {
            let (dir, name) = base(&f.path);
            let known = dirs.entry(dir).or_default();
            if checkpoint_kind(OsStr::new(&name)) == Some(Checkpoint::Safetensors) {
                known.listed.get_or_insert_with(Vec::new).push(name.clone());
            }
            if let Some(sha) = &f.lfs_sha256 {
                known.sha256.insert(name, sha.clone());
            }
        }
        // The shards each index names are checked with it, not on their own (as in a walk).
        // The indexes fetched for their names are kept for their checks (up to
        // PREFETCHED_INDEX_BYTES in all; past that a set's check fetches its index again).
        let mut named: HashSet<String> = HashSet::new();
        let mut kept = 0usize;
        for f in &files {
            let (dir, name) = base(&f.path);
            if checkpoint_kind(OsStr::new(&name)) != Some(Checkpoint::Index) {
                continue;
            }
            let Some(addr) = at(f) else { continue };
            // An index that cannot be read here is reported by its own check.
            if let Ok(fetched) = client.fetch_index(&addr, &self.config) {
                index::visit_shard_names(&fetched.bytes, &self.config, &mut |shard| {
                    named.insert(if dir.is_empty() {
                        shard.to_owned()
                    } else {
                        format!("{dir}/{shard}")
                    });
                    std::ops::ControlFlow::Continue(())
                });
                kept = kept.saturating_add(fetched.bytes.len());
                if kept <= PREFETCHED_INDEX_BYTES {
                    let known = dirs.entry(dir).or_default();
                    known.indexes.insert(name, fetched);
                }
            }
        }
        if let Ok(mut listed) = self.listed.lock() {
            for (dir, known) in dirs {
                let key = match HfDirKey::of_repo(address, &listing.commit, &dir) {
                    Some(k) => k,
                    None => continue,
                };
                listed.insert(key, std::sync::Arc::new(known));
            }
        }
        let before = out.len();
        for f in &files {
            let Some(addr) = at(f) else { continue };
            let name = base(&f.path).1;
            let name = OsStr::new(&name);
            match checkpoint_kind(name) {
                Some(Checkpoint::Index) => out.push(Target::Url(addr)),
                Some(Checkpoint::Safetensors) => {
                    if !named.contains(&f.path) {
                        out.push(Target::Url(addr));
                    }
                }
                None => {
                    if let (Some(format), false) =
                        (other_format(name), self.options.allow_other_formats)
                    {
                        let why = NotChecked::OtherFormat {
                            format,
                            option: self.options.name(crate::options::Opt::AllowOtherFormats),
                        };
                        out.push(Target::UrlNotChecked(addr, why.into()));
                    }
                }
            }
        }
        if out.len() == before && !self.options.allow_empty {
            let why = NotChecked::Empty {
                option: self.options.name(crate::options::Opt::AllowEmpty),
            };
            out.push(Target::UrlNotChecked(address.to_owned(), why.into()));
        }
    }

    /// What the run's listings say about the file or index at `address`: shared, not copied
    /// (a directory of the hub can list many thousands of files, each checked on its own).
    #[cfg(feature = "remote")]
    fn known(&self, address: &str) -> std::sync::Arc<crate::remote::Known> {
        let Some(key) = HfDirKey::of_file(address) else {
            return std::sync::Arc::default();
        };
        self.listed
            .lock()
            .ok()
            .and_then(|l| l.get(&key).cloned())
            .unwrap_or_default()
    }

    /// Check one target with `threads` for a file's deep scan, telling `progress` of the bytes
    /// done and `sink` of what happened, in order.
    pub fn check(
        &self,
        target: &Target,
        threads: usize,
        progress: &dyn Progress,
        sink: &mut dyn Sink,
    ) -> Done {
        let config = self.config.clone().threads(threads);
        match target {
            Target::File(path) => self.file(path, &config, progress, sink),
            Target::Stdin => {
                let at = Shown {
                    text: "<stdin>",
                    place: Place::Stdin,
                };
                let result = stcheck::check_reader_with(io::stdin().lock(), &config, progress);
                match result {
                    Ok(c) => self.checked(&at, &c, &Via::Local(ReadMode::Stream), sink),
                    Err(e) => unchecked(&at, &e, Unchecked::Unreadable, false, sink),
                }
            }
            Target::Index(path, root) => self.index(path, root.as_deref(), &config, progress, sink),
            Target::Url(url) => self.url(url, &config, sink),
            Target::UrlNotChecked(url, why) => {
                let text = crate::target::shown_url(url);
                let at = Shown {
                    text: &text,
                    place: Place::Url(url),
                };
                let how = if why.is_policy() {
                    Unchecked::Policy
                } else {
                    Unchecked::Unreadable
                };
                unchecked(&at, why, how, false, sink)
            }
            Target::NotChecked(path, why) => {
                let text = crate::fs::display_path(path);
                let at = Shown {
                    text: &text,
                    place: Place::Path(path),
                };
                unchecked(&at, why, Unchecked::Policy, false, sink)
            }
            Target::WalkError(path, e) => {
                let text = crate::fs::display_path(path);
                let at = Shown {
                    text: &text,
                    place: Place::Path(path),
                };
                let e = ReadError::new(ReadErrorKind::Io, e.to_string());
                unchecked(&at, &e, Unchecked::Unreadable, false, sink)
            }
        }
    }

    /// A file's verdict handed to the sink, with its status.
    pub fn checked(&self, at: &Shown<'_>, c: &Checked<'_>, via: &Via, sink: &mut dyn Sink) -> Done {
        let status = if c.is_valid_under(self.profile) {
            Status::Valid
        } else {
            Status::Invalid
        };
        Done {
            status,
            is_index: false,
            written: sink.file(at, c, via),
            os_error: None,
        }
    }

    fn file(
        &self,
        path: &Path,
        config: &Config,
        progress: &dyn Progress,
        sink: &mut dyn Sink,
    ) -> Done {
        let text = crate::fs::display_path(path);
        let at = Shown {
            text: &text,
            place: Place::Path(path),
        };
        let mode = self.options.mode;
        let result = crate::fs::open_regular(path)
            .map_err(|e| ReadError::from(e).with_path(path))
            .and_then(|file| {
                stcheck::check_opened(file.file(), file.stamp(), config, mode, progress, |c| {
                    self.checked(&at, &c, &Via::Local(mode), sink)
                })
            });
        match result {
            Ok(done) => done,
            Err(e) => not_checked(&at, &e, sink),
        }
    }

    /// The shard source of the index at `path`, its links confined to `root` (the directory
    /// named that the index was found under), by default the index's directory.
    pub fn shard_source(&self, path: &Path, root: Option<&Path>) -> FsSource {
        let s = FsSource::for_index(path)
            .link_policy(self.options.link_policy())
            .read_mode(self.options.mode);
        match root {
            Some(r) => s.confine_to(r),
            None => s,
        }
    }

    fn index(
        &self,
        path: &Path,
        root: Option<&Path>,
        config: &Config,
        progress: &dyn Progress,
        sink: &mut dyn Sink,
    ) -> Done {
        let source = Watched {
            source: self.shard_source(path, root),
            progress,
        };
        self.index_from(path, &source, config, sink)
    }

    /// Check the sharded set of the index at `path` with its shards from `source` (a face that
    /// keeps what it checked wraps [`Gate::shard_source`]), telling `sink` as
    /// [`Gate::check`] does; `threads` for each shard's deep scan.
    pub fn check_index_from(
        &self,
        path: &Path,
        source: &dyn ShardSource,
        threads: usize,
        sink: &mut dyn Sink,
    ) -> Done {
        let config = self.config.clone().threads(threads);
        self.index_from(path, source, &config, sink)
    }

    /// Check a whole file held in memory, shown as `name`: a file record with no read mode.
    pub fn check_bytes(
        &self,
        name: &str,
        bytes: &[u8],
        threads: usize,
        sink: &mut dyn Sink,
    ) -> Done {
        let config = self.config.clone().threads(threads);
        let at = Shown {
            text: name,
            place: Place::Stdin,
        };
        let c = stcheck::Checker::check_slice(&config, bytes);
        self.checked(&at, &c, &Via::Memory, sink)
    }

    fn index_from(
        &self,
        path: &Path,
        source: &dyn ShardSource,
        config: &Config,
        sink: &mut dyn Sink,
    ) -> Done {
        let text = crate::fs::display_path(path);
        let at = Shown {
            text: &text,
            place: Place::Path(path),
        };
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => format!("{}/", crate::fs::display_path(p)),
            _ => String::new(),
        };
        let mut written = sink.index_start(&at, &dir, Some(self.options.mode));
        let result = read_index(path, config).and_then(|bytes| {
            let via = Via::Local(self.options.mode);
            index::check_index_with(&bytes, source, config, &mut |name, outcome| {
                if written.is_ok() {
                    written = sink.shard(name, outcome, Some(&via));
                }
            })
        });
        let written = written
            .and_then(|()| sink.index_end(&at, result.as_ref(), &Via::Local(self.options.mode)));
        Done {
            status: self.index_status(&result),
            is_index: true,
            written,
            os_error: result.as_ref().err().and_then(os_error),
        }
    }

    fn index_status(&self, result: &Result<IndexReport, ReadError>) -> Status {
        match result {
            Ok(r) if r.is_valid_under(self.profile) => Status::Valid,
            Ok(_) => Status::Invalid,
            Err(_) => Status::IoError,
        }
    }

    #[cfg(feature = "remote")]
    fn client(&self) -> Result<&crate::remote::Remote, String> {
        self.client
            .get_or_init(|| remote_client(&self.options))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// A file or sharded set named by URL, checked by the remote source.
    #[cfg(feature = "remote")]
    fn url(&self, url: &str, config: &Config, sink: &mut dyn Sink) -> Done {
        use crate::remote::{Depth, Found};
        let text = crate::target::shown_url(url);
        let at = Shown {
            text: &text,
            place: Place::Url(url),
        };
        let client = match self.client() {
            Ok(c) => c,
            Err(e) => {
                let e = ReadError::new(ReadErrorKind::Io, e);
                return unchecked(&at, &e, Unchecked::Unreadable, false, sink);
            }
        };
        let depth = if config.reads_data() {
            Depth::Deep {
                sha256: config.sha256,
            }
        } else {
            Depth::Header
        };
        let is_index = url.split(['?', '#']).next().is_some_and(|p| {
            let name = p.rsplit('/').next().unwrap_or(p);
            crate::fs::checkpoint_kind(std::ffi::OsStr::new(name))
                == Some(crate::fs::Checkpoint::Index)
        });
        let known = self.known(url);
        let pinned = HfDirKey::commit_of(url);
        let hub = |h: &HubInfo| {
            let mut h = h.clone();
            if h.commit.is_none() {
                h.commit = pinned.clone();
            }
            h
        };
        if !is_index {
            let checked = client.check_known(url, config, depth, &known, &mut |_, _, _| {});
            let via = Via::Remote {
                resolved: checked.resolved.clone().unwrap_or_else(|| text.clone()),
                cost: checked.cost,
                hub: hub(&checked.hub),
            };
            if let Some(m) = moved(&pinned, &checked.hub) {
                let e = ReadError::new(ReadErrorKind::Io, m);
                return unchecked(&at, &e, Unchecked::Unreadable, false, sink);
            }
            return match &checked.outcome {
                Ok(Found::File(f)) => self.checked(&at, &f.checked, &via, sink),
                Ok(Found::Index(_)) => {
                    let e = ReadError::new(ReadErrorKind::Io, "an index where a file was named");
                    unchecked(&at, &e, Unchecked::Unreadable, false, sink)
                }
                Err(e) => {
                    let e = ReadError::new(ReadErrorKind::Io, e.message());
                    unchecked(&at, &e, Unchecked::Unreadable, false, sink)
                }
            };
        }
        let dir = match text.rfind('/') {
            Some(k) => text[..=k].to_owned(),
            None => String::new(),
        };
        let mut written = sink.index_start(&at, &dir, None);
        let checked = client.check_known(url, config, depth, &known, &mut |name, outcome, f| {
            if written.is_ok() {
                let via = f.map(|f| Via::Remote {
                    resolved: f.url.clone(),
                    cost: f.cost,
                    hub: hub(&f.hub),
                });
                written = sink.shard(name, outcome, via.as_ref());
            }
        });
        let via = Via::Remote {
            resolved: checked.resolved.clone().unwrap_or_else(|| text.clone()),
            cost: checked.cost,
            hub: hub(&checked.hub),
        };
        let result = match checked.outcome {
            Ok(_) if moved(&pinned, &checked.hub).is_some() => Err(ReadError::new(
                ReadErrorKind::Io,
                moved(&pinned, &checked.hub).unwrap_or_default(),
            )),
            Ok(Found::Index(ic)) => Ok(ic.report),
            Ok(Found::File(_)) => Err(ReadError::new(
                ReadErrorKind::Io,
                "a file where an index was named",
            )),
            Err(e) => Err(ReadError::new(ReadErrorKind::Io, e.message())),
        };
        let written = written.and_then(|()| sink.index_end(&at, result.as_ref(), &via));
        Done {
            status: self.index_status(&result),
            is_index: true,
            written,
            os_error: result.as_ref().err().and_then(os_error),
        }
    }

    /// Built without the `remote` feature: a URL cannot be checked.
    #[cfg(not(feature = "remote"))]
    fn url(&self, url: &str, _: &Config, sink: &mut dyn Sink) -> Done {
        let text = crate::target::shown_url(url);
        let at = Shown {
            text: &text,
            place: Place::Url(url),
        };
        let e = ReadError::new(
            ReadErrorKind::Io,
            "built without the `remote` feature: URLs cannot be checked",
        );
        unchecked(&at, &e, Unchecked::Unreadable, false, sink)
    }
}

/// Why a file requested at commit `pinned` is not that commit's: the hub said it served
/// another (`X-Repo-Commit`). No verdict is given on bytes of an unknown commit.
#[cfg(feature = "remote")]
fn moved(pinned: &Option<String>, hub: &HubInfo) -> Option<String> {
    match (pinned, &hub.commit) {
        (Some(p), Some(c)) if !p.eq_ignore_ascii_case(c) => Some(format!(
            "requested at commit {p}, the server answered with commit {c} (X-Repo-Commit): \
             not the bytes asked for"
        )),
        _ => None,
    }
}

/// The key of a directory of a repository at a commit: `hf://[kind/]org/repo@COMMIT/dir`.
#[cfg(feature = "remote")]
struct HfDirKey;

#[cfg(feature = "remote")]
impl HfDirKey {
    /// The key of `dir` of the repository `address` at `commit`.
    fn of_repo(address: &str, commit: &str, dir: &str) -> Option<String> {
        let file = crate::remote::file_at(address, commit, "x")?;
        let repo = file.strip_suffix("/x")?;
        Some(if dir.is_empty() {
            repo.to_owned()
        } else {
            format!("{repo}/{dir}")
        })
    }

    /// The key of the directory of the file `address` (an `hf://` address of a file).
    fn of_file(address: &str) -> Option<String> {
        if !address
            .get(..5)
            .is_some_and(|p| p.eq_ignore_ascii_case("hf://"))
        {
            return None;
        }
        address.rsplit_once('/').map(|(d, _)| d.to_owned())
    }

    /// The revision of an `hf://` file address, if it is a full commit id (40 hex digits).
    fn commit_of(address: &str) -> Option<String> {
        crate::remote::revision_of(address)
            .filter(|r| r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit()))
    }
}

/// The client of a run's URLs: `HF_TOKEN` / `HF_ENDPOINT` from the environment, the run's
/// headers, CA file and deadline.
#[cfg(feature = "remote")]
fn remote_client(o: &RunOptions) -> Result<crate::remote::Remote, String> {
    use crate::remote::{Remote, RemoteOptions};
    let mut opts = RemoteOptions::from_env();
    for (name, value) in &o.headers {
        opts = opts
            .header(name, value)
            .map_err(|e| format!("{}: {e}", o.name(crate::options::Opt::Header)))?;
    }
    opts = opts.budget_option(o.name(crate::options::Opt::MaxRequests));
    // One deadline for each URL, whatever its depth: the file with its data, or the set with
    // all its shards.
    opts.max_requests = o
        .max_requests
        .unwrap_or(crate::options::DEFAULT_MAX_REQUESTS);
    if let Some(t) = o.timeout {
        opts.total_timeout = t;
        opts.stream_timeout = Some(t);
    }
    if let Some(path) = &o.ca_file {
        let pem = std::fs::read(path)
            .map_err(|e| format!("CA file {}: {e}", crate::fs::display_path(path)))?;
        opts = opts.ca_bundle_pem(pem);
    }
    Remote::new(opts).map_err(|e| e.to_string())
}

/// Tell `sink` that the target at `at` could not be checked (by policy or because reading it
/// failed, as `why` says), for a face that opened or read it itself: the end of that target.
pub fn not_checked(at: &Shown<'_>, why: &ReadError, sink: &mut dyn Sink) -> Done {
    let how = match why.is_policy() {
        true => Unchecked::Policy,
        false => Unchecked::Unreadable,
    };
    unchecked(at, why, how, false, sink)
}

fn unchecked(
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

/// Read an index file: at most one byte past the limit (a longer index is rejected without
/// reading it).
pub fn read_index(path: &Path, config: &Config) -> Result<Vec<u8>, ReadError> {
    let (file, _) = crate::fs::open_regular(path)
        .map_err(|e| ReadError::from(e).with_path(path))?
        .into_parts();
    let mut bytes = Vec::new();
    file.take(config.header_limit().saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::from(e).with_path(path))?;
    Ok(bytes)
}

/// The shards of an index on the file system, each check telling the job's progress hook.
struct Watched<'p> {
    source: FsSource,
    progress: &'p dyn Progress,
}

impl ShardSource for Watched<'_> {
    fn list(&self) -> Result<Vec<String>, ReadError> {
        self.source.list()
    }

    fn check(
        &self,
        name: &str,
        config: &Config,
        f: &mut dyn FnMut(Checked<'_>),
    ) -> Result<(), ReadError> {
        self.source.check_with(name, config, self.progress, f)
    }
}

/// The targets to check, with the bytes each is expected to read (see [`Gate::plan`]).
#[derive(Debug)]
pub struct Plan {
    /// The targets, in output order.
    pub targets: Vec<Target>,
    /// What each is expected to read.
    pub bytes: Vec<u64>,
    /// The sum, `None` when standard input is among them.
    pub total_bytes: Option<u64>,
}

/// The (device, inode) of a path's file, following links, and its length.
fn identity(path: &Path) -> Option<((u64, u64), u64)> {
    let m = std::fs::metadata(path).ok()?;
    let id = crate::fs::FileId::of(&m)?;
    Some(((id.device(), id.inode()), m.len()))
}

/// A file met both as a shard of an index and on its own is read once: as part of the index.
fn plan(targets: Vec<Target>, gate: &Gate, size_shards: bool) -> Plan {
    use std::collections::HashSet;
    let read_indexes = size_shards || targets.iter().any(|j| matches!(j, Target::File(_)));
    let mut shards: HashSet<(u64, u64)> = HashSet::new();
    let mut index_bytes: Vec<u64> = Vec::new();
    for target in &targets {
        let Target::Index(path, root) = target else {
            continue;
        };
        let mut sum = 0u64;
        if !read_indexes {
            index_bytes.push(sum);
            continue;
        }
        if let Ok(bytes) = read_index(path, &gate.config) {
            let src = gate.shard_source(path, root.as_deref());
            let mut seen = HashSet::new();
            let mut last = String::new();
            index::visit_shard_names(&bytes, &gate.config, &mut |name| {
                // Entries in a row usually name one shard: look it up once.
                if name == last {
                    return std::ops::ControlFlow::Continue(());
                }
                name.clone_into(&mut last);
                // A shard the index cannot open is reported there; a file of the walk that the
                // index cannot reach stays a target of its own.
                if let Ok((shard, _)) = src.resolve(name) {
                    if let Some((id, len)) = identity(&shard) {
                        shards.insert(id);
                        if seen.insert(id) {
                            sum = sum.saturating_add(len);
                        }
                    }
                }
                std::ops::ControlFlow::Continue(())
            });
        }
        index_bytes.push(sum);
    }
    let mut index_bytes = index_bytes.into_iter();
    let mut total = Some(0u64);
    let mut sized = Vec::with_capacity(targets.len());
    let mut bytes = Vec::with_capacity(targets.len());
    for target in targets {
        let n = match &target {
            // Without sizes and without a set to leave shards to, a file needs no `stat` here.
            Target::File(_) if !size_shards && shards.is_empty() => 0,
            Target::File(path) => match identity(path) {
                Some((id, _)) if shards.contains(&id) => continue,
                Some((_, len)) => len,
                None => 0,
            },
            Target::Index(..) => index_bytes.next().unwrap_or(0),
            Target::Stdin => {
                total = None;
                0
            }
            // A URL's length is known only once it is checked: it adds nothing to the total.
            Target::Url(_)
            | Target::UrlNotChecked(..)
            | Target::NotChecked(..)
            | Target::WalkError(..) => 0,
        };
        total = total.map(|t| t.saturating_add(n));
        sized.push(target);
        bytes.push(n);
    }
    Plan {
        targets: sized,
        bytes,
        total_bytes: total,
    }
}

/// Where a target's path is, for a caller that shows it (the same text the sinks get).
pub fn shown_path(path: &Path) -> String {
    crate::fs::display_path(path)
}

/// A path as a target, for a caller that checks one path without walking (a file, an index
/// by its name, or what the walk makes of a directory).
pub fn target_of(path: PathBuf) -> Target {
    let is_index = path
        .file_name()
        .is_some_and(|n| crate::fs::checkpoint_kind(n) == Some(crate::fs::Checkpoint::Index));
    if is_index {
        Target::Index(path, None)
    } else {
        Target::File(path)
    }
}
