//! The plan of a run's URLs: a whole repository on the hub listed once (its files become
//! targets at the commit its revision names, what its listing says kept for their checks), and
//! the check of one URL, told to a [`Sink`] as [`crate::Gate::check`] tells of any target. The
//! driver reaches all of it through [`Urls`], behind its one `remote` feature gate.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use stcheck::index;
use stcheck::{Config, Profile, ReadError, ReadErrorKind};

use super::{Deadline, ErrorKind, Known, Remote, RemoteError};
use crate::event::{shown_shard, Done, HubInfo, Place, Shown, Sink, Status, Unchecked, Via};
use crate::options::RunOptions;
use crate::walk::Target;

/// The most index bytes a repository's plan keeps, all its indexes together, for their checks
/// (each index is fetched once to know which shards it names; kept, its check does not fetch
/// it again). An index past this bound is fetched again by its check.
const PREFETCHED_INDEX_BYTES: usize = 8 << 20;

/// What a run's URLs share: the client (built on first use) and what the listings of the run's
/// repositories say, by directory at a commit (`hf://org/repo@COMMIT/dir`): the directory's
/// safetensors files and their SHA-256.
#[derive(Debug, Default)]
pub(crate) struct Urls {
    client: OnceLock<Result<Remote, RemoteError>>,
    listed: Mutex<HashMap<String, Arc<Known>>>,
}

impl Urls {
    /// `targets` with each whole repository among them replaced by its targets
    /// ([`Urls::repository`]), in the order given. The repositories are listed at once, up to
    /// the URL jobs (`--url-jobs`) at a time on the run's one client and its kept connections:
    /// a listing is a few round trips (revision, pages, indexes), and one after another they
    /// were half of a run of whole repositories at a real hub's latency.
    pub(crate) fn expand(
        &self,
        o: &RunOptions,
        config: &Config,
        targets: Vec<Target>,
    ) -> Vec<Target> {
        use super::Remote;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let addresses: Vec<String> = targets
            .iter()
            .filter_map(|t| match t {
                Target::Url(a) if Remote::is_repository(a) => Some(a.clone()),
                _ => None,
            })
            .collect();
        if addresses.is_empty() {
            return targets;
        }
        let planned: Vec<OnceLock<Vec<Target>>> =
            addresses.iter().map(|_| OnceLock::new()).collect();
        let next = AtomicUsize::new(0);
        let work = || {
            while let Some((address, slot)) = {
                let i = next.fetch_add(1, Ordering::Relaxed);
                addresses.get(i).zip(planned.get(i))
            } {
                let mut out = Vec::new();
                self.repository(o, config, address, &mut out);
                let _ = slot.set(out);
            }
        };
        std::thread::scope(|s| {
            // This thread is one of the jobs: a thread that cannot be started is one job less.
            for _ in 1..o.url_jobs().min(addresses.len()) {
                let spawned = std::thread::Builder::new()
                    .name("stcheck-hub-plan".into())
                    .spawn_scoped(s, work);
                if spawned.is_err() {
                    break;
                }
            }
            work();
        });
        let mut planned = planned.into_iter().map(OnceLock::into_inner);
        let mut out = Vec::with_capacity(targets.len());
        for t in targets {
            match t {
                Target::Url(a) if Remote::is_repository(&a) => match planned.next().flatten() {
                    Some(listed) => out.extend(listed),
                    None => self.repository(o, config, &a, &mut out),
                },
                t => out.push(t),
            }
        }
        out
    }

    /// The targets of the repository at `address`.
    fn repository(
        &self,
        o: &RunOptions,
        run_config: &Config,
        address: &str,
        out: &mut Vec<Target>,
    ) {
        use crate::fs::{
            checkpoint_kind, describe_other_format, other_format, Checkpoint, NotChecked,
        };
        use std::collections::{BTreeMap, HashSet};
        use std::ffi::OsStr;
        let fail = |e: RemoteError| Target::UrlNotChecked(address.to_owned(), e.into());
        let client = match self.client(o) {
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
        // One deadline for the whole repository: its listing, the indexes fetched for their
        // shards' names, and every check of its files and sets (`Known::deadline`).
        let depth = match run_config.reads_data() {
            true => super::Depth::Deep {
                sha256: run_config.sha256,
            },
            false => super::Depth::Header,
        };
        let deadline =
            super::Deadline::after(depth.timeout(client.options()), super::Deadline::REPOSITORY);
        // What the plan keeps of a repository (the listing's names and ids, and the names of
        // the shards its indexes name) is bounded by the header limit N each: within SPEC
        // section 3's bound of about 2 x N whatever the hub lists.
        let max_kept = run_config.max_header_size;
        let bound = (max_kept, o.name(crate::options::Opt::MaxHeaderSize));
        let listing = match client.list_repository_within(address, &keep, Some(deadline), bound) {
            Ok(l) => l,
            Err(e) => {
                let message = format!("could not list the repository's files: {}", e.message);
                return out.push(fail(RemoteError { message, ..e }));
            }
        };
        let mut files = listing.files.clone();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let at = |f: &super::RepoFile| listing.address_of(address, f);
        // What each directory holds, for INDEX-SHARD-UNLISTED and INTEGRITY-SHA256.
        let mut dirs: BTreeMap<String, super::Known> = BTreeMap::new();
        for f in &files {
            let (dir, name) = base(&f.path);
            let known = dirs.entry(dir).or_default();
            known.deadline = Some(deadline);
            if checkpoint_kind(OsStr::new(&name)) == Some(Checkpoint::Safetensors) {
                known.listed.get_or_insert_with(Vec::new).push(name.clone());
            }
            // A malformed id too: compared, it fails the file (INTEGRITY-SHA256).
            if let Some(sha) = f.lfs_sha256.as_ref().or(f.lfs_oid_malformed.as_ref()) {
                known.sha256.insert(name, sha.clone());
            }
        }
        // The shards each index names are checked with it, not on their own (as in a walk).
        // The indexes fetched for their names are kept for their checks (up to
        // PREFETCHED_INDEX_BYTES in all; past that a set's check fetches its index again).
        let mut named: HashSet<String> = HashSet::new();
        let mut named_bytes = 0u64;
        let mut kept = 0usize;
        for f in &files {
            let (dir, name) = base(&f.path);
            if checkpoint_kind(OsStr::new(&name)) != Some(Checkpoint::Index) {
                continue;
            }
            let Some(addr) = at(f) else { continue };
            // An index that cannot be read here is reported by its own check.
            if let Ok(fetched) = client.fetch_index_within(&addr, run_config, Some(deadline)) {
                index::visit_shard_names(&fetched.bytes, run_config, &mut |shard| {
                    let path = if dir.is_empty() {
                        shard.to_owned()
                    } else {
                        format!("{dir}/{shard}")
                    };
                    let cost = (path.len() + std::mem::size_of::<String>()) as u64;
                    if named.insert(path) {
                        named_bytes = named_bytes.saturating_add(cost);
                    }
                    match named_bytes > max_kept {
                        true => std::ops::ControlFlow::Break(()),
                        false => std::ops::ControlFlow::Continue(()),
                    }
                });
                if named_bytes > max_kept {
                    let message = format!(
                        "the repository's indexes name more than {max_kept} bytes of shard \
                         names (the header limit, {}, bounds what the plan keeps)",
                        o.name(crate::options::Opt::MaxHeaderSize)
                    );
                    return out.push(fail(RemoteError::new(ErrorKind::Response, message)));
                }
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
                        (describe_other_format(name, None), o.allow_other_formats)
                    {
                        let why = NotChecked::OtherFormat {
                            format,
                            option: o.name(crate::options::Opt::AllowOtherFormats),
                        };
                        out.push(Target::UrlNotChecked(addr, why.into()));
                    }
                }
            }
        }
        if out.len() == before && !o.allow_empty {
            let why = NotChecked::Empty {
                option: o.name(crate::options::Opt::AllowEmpty),
            };
            out.push(Target::UrlNotChecked(address.to_owned(), why.into()));
        }
    }

    /// What the run's listings say about the file or index at `address`: shared, not copied
    /// (a directory of the hub can list many thousands of files, each checked on its own).
    fn known(&self, address: &str) -> std::sync::Arc<super::Known> {
        let Some(key) = HfDirKey::of_file(address) else {
            return std::sync::Arc::default();
        };
        self.listed
            .lock()
            .ok()
            .and_then(|l| l.get(&key).cloned())
            .unwrap_or_default()
    }

    fn client(&self, o: &RunOptions) -> Result<&super::Remote, RemoteError> {
        self.client
            .get_or_init(|| remote_client(o))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// When a run's one deadline, set now, passes: the time one address is allowed at the
    /// depth `config` checks (`--timeout`, else the client's default), from now. `None`: no
    /// deadline (none is set, or the client cannot be built and no address will be fetched).
    pub(crate) fn deadline_from_now(&self, o: &RunOptions, config: &Config) -> Option<Deadline> {
        let allowed = depth(config).timeout(&self.client(o).ok()?.options)?;
        Some(Deadline::after(Some(allowed), Deadline::RUN))
    }

    /// A file or sharded set named by URL, checked by the remote source, over by `until` at
    /// the latest (a run's one deadline) whatever its own deadline.
    pub(crate) fn check(
        &self,
        o: &RunOptions,
        profile: Profile,
        url: &str,
        config: &Config,
        until: Option<Deadline>,
        sink: &mut dyn Sink,
    ) -> Done {
        use super::Found;
        let text = crate::target::shown_url(url);
        let at = Shown {
            text: &text,
            place: Place::Url(url),
        };
        let client = match self.client(o) {
            Ok(c) => c,
            Err(e) => {
                let e = ReadError::from(e);
                return Done::unchecked(&at, &e, Unchecked::Unreadable, false, sink);
            }
        };
        let depth = depth(config);
        let is_index = crate::target::names_index(url);
        let mut known = self.known(url);
        // The id the user gives for the file: one more published id, in the same decision as
        // the hub's (the run checks this one file: `RunOptions::one_file`).
        if let (Some((source, hex)), false) = (o.expected_id(), is_index) {
            Arc::make_mut(&mut known).expected = Some((source, hex.to_owned()));
        }
        // A run's one deadline ends the address's check too, as a repository's does.
        if until.is_some() {
            let k = Arc::make_mut(&mut known);
            k.deadline = k.deadline.map_or(until, |d| Some(d.within(until)));
        }
        // The session of `check_known` is pinned to this commit and refuses a response of another
        // (`commit_moved`); here it only fills the commit a hub that said none served.
        let pinned = super::pinned_commit(url);
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
            return match &checked.outcome {
                Ok(Found::File(f)) => Done::file(profile, &at, &f.checked, &via, sink),
                Ok(Found::Index(_)) => {
                    let e = ReadError::new(ReadErrorKind::Io, "an index where a file was named");
                    Done::unchecked(&at, &e, Unchecked::Unreadable, false, sink)
                }
                Err(e) => {
                    let e = ReadError::from(e.clone());
                    Done::unchecked(&at, &e, Unchecked::Unreadable, false, sink)
                }
            };
        }
        let dir = at.shard_dir();
        let mut written = sink.index_start(&at, None);
        let checked = client.check_known(url, config, depth, &known, &mut |name, outcome, f| {
            if written.is_ok() {
                let via = f.map(|f| Via::Remote {
                    resolved: f.url.clone(),
                    cost: f.cost,
                    hub: hub(&f.hub),
                });
                let text = shown_shard(&dir, name);
                let at = Shown {
                    text: &text,
                    place: Place::Url(&text),
                };
                let status = Status::of_shard(&outcome, profile);
                written = sink.shard(&at, name, outcome, via.as_ref(), status);
            }
        });
        let via = Via::Remote {
            resolved: checked.resolved.clone().unwrap_or_else(|| text.clone()),
            cost: checked.cost,
            hub: hub(&checked.hub),
        };
        let result = match checked.outcome {
            Ok(Found::Index(ic)) => Ok(ic.report),
            Ok(Found::File(_)) => Err(ReadError::new(
                ReadErrorKind::Io,
                "a file where an index was named",
            )),
            Err(e) => Err(e.into()),
        };
        Done::index(profile, &at, result.as_ref(), &via, written, sink)
    }
}

/// How deep `config` checks a URL.
fn depth(config: &Config) -> super::Depth {
    match config.reads_data() {
        true => super::Depth::Deep {
            sha256: config.sha256,
        },
        false => super::Depth::Header,
    }
}

/// The key of a directory of a repository at a commit: `hf://[kind/]org/repo@COMMIT/dir`.
struct HfDirKey;

impl HfDirKey {
    /// The key of `dir` of the repository `address` at `commit`.
    fn of_repo(address: &str, commit: &str, dir: &str) -> Option<String> {
        let file = super::file_at(address, commit, "x")?;
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
}

/// The client of a run's URLs: `HF_TOKEN` / `HF_ENDPOINT` from the environment, the run's
/// headers, CA file and deadline.
fn remote_client(o: &RunOptions) -> Result<super::Remote, RemoteError> {
    use super::{Remote, RemoteOptions};
    let mut opts = RemoteOptions::from_env();
    for (name, value) in &o.headers {
        opts = opts.header(name, value).map_err(|e| {
            let option = o.name(crate::options::Opt::Header);
            RemoteError::new(ErrorKind::Setup, format!("{option}: {e}"))
        })?;
    }
    opts = opts.budget_option(o.name(crate::options::Opt::MaxRequests));
    // The sets' shards fetched beside their own one: as many as the URL jobs, all sets
    // together, so a run sends at most twice its URL jobs' requests at once.
    opts.shard_helpers = o.url_jobs();
    // A set may use the whole pool (the last one of a run once the others have ended).
    opts.max_concurrent_shards = o.url_jobs();
    // One kept connection for each job that may talk to a host at once.
    opts.connections_per_host = o.url_jobs().saturating_add(opts.shard_helpers);
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
        let pem = std::fs::read(path).map_err(|e| {
            let message = format!("CA file {}: {e}", crate::fs::display_path(path));
            RemoteError::new(ErrorKind::Setup, message)
        })?;
        opts = opts.ca_bundle_pem(pem);
    }
    Remote::new(opts)
}
