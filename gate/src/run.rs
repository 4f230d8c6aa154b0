//! The one driver: targets in, events out. [`Gate::check`] runs one [`Target`] — a file, a
//! sharded set on disk, standard input, a URL, or a path the walk did not check — through the
//! core's one checker with the run's [`Config`], and tells a [`Sink`] what happened as it
//! happens (a sharded set's shards as they are checked). The printers of `stcheck-print`
//! are sinks; the command line orders and counts their output, the Python package collects
//! it. No face checks a target any other way.

use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use stcheck::index::{self, ShardSource};
use stcheck::{Checked, Config, Profile, Progress, ReadError, ReadErrorKind, ReadMode};

use crate::event::{shown_shard, Done, Place, Shown, Sink, Status, Unchecked, Via};
use crate::options::{RunOptions, UsageError};
use crate::shards::FsSource;
use crate::walk::Target;

/// A run's options, resolved once, and what its targets share (the client of its URLs).
#[derive(Debug)]
pub struct Gate {
    options: RunOptions,
    config: Config,
    profile: Profile,
    /// The client of the run's URLs and what the listings of its repositories say.
    #[cfg(feature = "remote")]
    urls: crate::remote::plan::Urls,
    /// The one deadline of all the run's URLs, if [`Gate::one_deadline`] set one.
    #[cfg(feature = "remote")]
    until: Option<crate::remote::Deadline>,
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
            urls: Default::default(),
            #[cfg(feature = "remote")]
            until: None,
        })
    }

    /// From now on, every URL this gate checks shares one deadline: the time one URL is
    /// allowed (`--timeout`; by default 120 s for a header check, 1 hour when the data is
    /// read), counted from this call. A URL still being checked when it passes, or started
    /// after, is not checked (a timeout), whatever its own deadline. For a face that checks a
    /// batch of URLs at once (the Python package's batch calls): however many URLs it holds
    /// and however they are scheduled, the batch takes no longer than one URL may. Files on
    /// disk have no deadline.
    pub fn one_deadline(self) -> Gate {
        #[cfg(feature = "remote")]
        let until = self.urls.deadline_from_now(&self.options, &self.config);
        Gate {
            #[cfg(feature = "remote")]
            until,
            ..self
        }
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
        let targets = self.urls.expand(&self.options, &self.config, targets);
        plan(targets, self, size_shards)
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
                    Ok(mut c) => self.checked(&at, &mut c, &Via::Local(ReadMode::Stream), sink),
                    Err(e) => Done::unchecked(&at, &e, Unchecked::Unreadable, false, sink),
                }
            }
            Target::Index(path, root) => self.index(path, root.as_deref(), &config, progress, sink),
            Target::Url(url) => self.url(url, &config, sink),
            Target::UrlNotChecked(url, why) => {
                let text = target.shown();
                let at = Shown {
                    text: &text,
                    place: Place::Url(url),
                };
                let how = if why.is_policy() {
                    Unchecked::Policy
                } else {
                    Unchecked::Unreadable
                };
                Done::unchecked(&at, why, how, false, sink)
            }
            Target::NotChecked(path, why) => {
                let text = target.shown();
                let at = Shown {
                    text: &text,
                    place: Place::Path(path),
                };
                Done::unchecked(&at, why, Unchecked::Policy, false, sink)
            }
            Target::WalkError(path, e) => {
                let text = target.shown();
                let at = Shown {
                    text: &text,
                    place: Place::Path(path),
                };
                let e = ReadError::new(ReadErrorKind::Io, e.to_string());
                Done::unchecked(&at, &e, Unchecked::Unreadable, false, sink)
            }
        }
    }

    /// A file's verdict handed to the sink, with its status, once the id the user gives for it
    /// (`--expect-sha256`) is compared with its SHA-256: the one integrity decision
    /// ([`Checked::compare_published`]; a file fetched by URL has it made with every id its
    /// server publishes, by the remote source).
    pub fn checked(
        &self,
        at: &Shown<'_>,
        c: &mut Checked<'_>,
        via: &Via,
        sink: &mut dyn Sink,
    ) -> Done {
        if let Some(id) = self.options.expected_id() {
            c.compare_published(&[id]);
        }
        Done::file(self.profile, at, c, via, sink)
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
                stcheck::check_opened(
                    file.file(),
                    file.stamp(),
                    config,
                    mode,
                    progress,
                    |mut c| self.checked(&at, &mut c, &Via::Local(mode), sink),
                )
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
        let mut c = stcheck::Checker::check_slice(&config, bytes);
        self.checked(&at, &mut c, &Via::Memory, sink)
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
        let dir = at.shard_dir();
        let shard_path = |name: &str| path.parent().unwrap_or(Path::new("")).join(name);
        let mut written = sink.index_start(&at, Some(self.options.mode));
        let result = read_index(path, config).and_then(|bytes| {
            let via = Via::Local(self.options.mode);
            index::check_index_with(&bytes, source, config, &mut |name, outcome| {
                if written.is_ok() {
                    let text = shown_shard(&dir, name);
                    let p = shard_path(name);
                    let at = Shown {
                        text: &text,
                        place: Place::Path(&p),
                    };
                    let status = Status::of_shard(&outcome, self.profile);
                    written = sink.shard(&at, name, outcome, Some(&via), status);
                }
            })
        });
        let via = Via::Local(self.options.mode);
        Done::index(self.profile, &at, result.as_ref(), &via, written, sink)
    }

    /// A file or sharded set named by URL, checked by the remote source.
    #[cfg(feature = "remote")]
    fn url(&self, url: &str, config: &Config, sink: &mut dyn Sink) -> Done {
        self.urls
            .check(&self.options, self.profile, url, config, self.until, sink)
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
        Done::unchecked(&at, &e, Unchecked::Unreadable, false, sink)
    }
}

/// Tell `sink` that the target at `at` could not be checked (by policy or because reading it
/// failed, as `why` says), for a face that opened or read it itself: the end of that target.
pub fn not_checked(at: &Shown<'_>, why: &ReadError, sink: &mut dyn Sink) -> Done {
    let how = match why.is_policy() {
        true => Unchecked::Policy,
        false => Unchecked::Unreadable,
    };
    Done::unchecked(at, why, how, false, sink)
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
