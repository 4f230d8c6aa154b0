//! The shards of an index fetched by URL: a [`ShardSource`] whose files are the index's
//! siblings on the same server, fetched a few at a time ahead of the checker, under the one
//! deadline of the set.
//!
//! The checker ([`stcheck::index::check_index_with`]) asks for the shards one after another, in
//! the index's order, and hands each result on as it comes. Here a planner walks the index
//! for the same names in the same order and queues at most `window` of them; up to
//! [`RemoteOptions::max_concurrent_shards`](super::RemoteOptions::max_concurrent_shards)
//! workers fetch the queued ones, and the checker takes each result from the queue when it
//! asks for it. The first worker is the set's own; the planner adds the others while queued
//! shards wait for one, each with a helper taken from the client's pool
//! ([`RemoteOptions::shard_helpers`](super::RemoteOptions::shard_helpers)) without waiting
//! for it, and a worker gives its helper back when no shard is left for it: however many sets
//! are checked at once, their shards in flight are one a set plus the pool. Nothing is fetched before the checker asks for its first shard (an index it
//! rejects costs no shard request), and nothing more once it is done or has failed.
//!
//! Memory follows the headers, not the number of workers: a shard holds its header's length
//! of a budget ([`RemoteOptions::shard_header_budget`](super::RemoteOptions::shard_header_budget))
//! from the moment the length is known until the checker has taken its result; a shard that
//! would pass the budget waits, except the one the checker wants next.

use std::collections::HashSet;
use std::hash::BuildHasher;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use super::address::Url;
use super::budget::{
    lock, Ending, Entry, EntryState, Fetched, Leaving, Permit, Planned, Shared, Slot, State,
};
use super::deadline::Deadline;
use super::fetch;
use super::http::Session;
use super::{Cost, Depth, ErrorKind, Found, IndexCheck, Remote, RemoteError, ShardFetch};
use stcheck::index::{check_shard_name, IndexReport, ShardOutcome, ShardSource};
use stcheck::Checked;
use stcheck::Config;
use stcheck::{ReadError, ReadErrorKind};

/// How long the checker waits for a worker past the deadline before giving up by itself (a
/// worker's own error, which says what it was doing, normally comes first).
const GRACE: Duration = Duration::from_secs(5);

/// Shards next to an index URL. Each is checked like a file named by URL (header-level or
/// deep, as asked), all under the set's deadline.
pub(super) struct RemoteShards<'r> {
    remote: &'r Remote,
    index: Url,
    depth: Depth,
    shared: Shared,
    /// What each shard handed to the checker cost, in the order checked.
    costs: Mutex<Vec<(String, Cost)>>,
    /// The shard being handed to the checker now, as fetched: given to `on_shard` with its
    /// outcome (the checker hands the outcome on while the shard is handed to it).
    handed: Mutex<Option<ShardFetch>>,
    /// The kind of the failure that ended the set's check, if one did.
    failure: Mutex<Option<ErrorKind>>,
    /// What the repository's listing says: the index directory's files and their SHA-256.
    known: super::Known,
    /// The commit of the index, which every shard's responses must name too.
    pin: Option<String>,
}

impl<'r> RemoteShards<'r> {
    /// The shards of the index at `index`, all under `deadline`.
    pub(super) fn new(
        remote: &'r Remote,
        index: Url,
        depth: Depth,
        deadline: Deadline,
        known: &super::Known,
        pin: Option<String>,
    ) -> Self {
        let workers = remote.options.max_concurrent_shards.max(1);
        RemoteShards {
            remote,
            index,
            depth,
            shared: Shared {
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
                over: AtomicBool::new(false),
                deadline,
                budget: remote.options.shard_header_budget,
                window: workers.saturating_mul(2),
            },
            costs: Mutex::new(Vec::new()),
            handed: Mutex::new(None),
            failure: Mutex::new(None),
            known: known.clone(),
            pin,
        }
    }

    /// The kind of the failure that ended the check, if a shard's did: a deadline passed
    /// (the set's) is [`ErrorKind::Timeout`].
    pub(super) fn failure(&self) -> Option<ErrorKind> {
        *self.failure.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Check the set whose index holds `index`: the planner and the workers run while the
    /// checker does, and stop when it is done.
    pub(super) fn check(
        &self,
        index: &[u8],
        config: &Config,
        on_shard: &mut dyn FnMut(&str, ShardOutcome<'_, '_>, Option<&ShardFetch>),
    ) -> Result<IndexReport, ReadError> {
        std::thread::scope(|s| {
            // The set's own worker; the planner adds helpers while shards wait for one.
            self.add_worker(s, config, None);
            let planner = std::thread::Builder::new()
                .name("stcheck-shard-plan".into())
                .spawn_scoped(s, || self.plan(index, config, s));
            if planner.is_err() {
                lock(&self.shared.state).planned = true;
            }
            // However the check ends, the planner and the workers stop with it (the planner
            // told after the set is over).
            let _wake = WakeOnEnd(&self.remote.helpers);
            let _end = Ending(&self.shared);
            super::verdict::index_verdict(index, self, config, &mut |name, outcome| {
                let handed = self
                    .handed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                on_shard(name, outcome, handed.as_ref());
            })
        })
    }

    /// What each shard cost, in the order they were checked, and what fetches whose result
    /// was not used cost (a shard under way when the set failed).
    pub(super) fn into_costs(self) -> (Vec<(String, Cost)>, Cost) {
        let unused = lock(&self.shared.state).unused;
        let costs = self
            .costs
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        (costs, unused)
    }

    /// Start a worker in `s` (holding `helper`, given back when it ends); `false` when no
    /// thread could be started.
    fn add_worker<'s>(
        &'s self,
        s: &'s std::thread::Scope<'s, '_>,
        config: &'s Config,
        helper: Option<Helper<'r>>,
    ) -> bool {
        lock(&self.shared.state).workers += 1;
        let spawned = std::thread::Builder::new()
            .name("stcheck-shard".into())
            .spawn_scoped(s, move || {
                let _helper = helper;
                self.work(config);
            });
        if spawned.is_err() {
            lock(&self.shared.state).workers -= 1;
            self.shared.changed.notify_all();
        }
        spawned.is_ok()
    }

    /// A worker more for the queued shards no worker is free for, with a helper of the
    /// client's pool, if one is free and the set has fewer than
    /// [`RemoteOptions::max_concurrent_shards`](super::RemoteOptions::max_concurrent_shards).
    fn grow<'s>(&'s self, s: &'s std::thread::Scope<'s, '_>, config: &'s Config) -> bool {
        let most = self.remote.options.max_concurrent_shards.max(1);
        let wanted = {
            let st = self.shared.lock();
            let waiting = st
                .queue
                .iter()
                .filter(|e| matches!(e.state, EntryState::Waiting))
                .count();
            let busy = st
                .queue
                .iter()
                .filter(|e| matches!(e.state, EntryState::Fetching))
                .count();
            st.workers < most && waiting > st.workers.saturating_sub(busy)
        };
        wanted
            && Helper::take(&self.remote.helpers)
                .is_some_and(|helper| self.add_worker(s, config, Some(helper)))
    }

    /// Once every name is planned: take the helpers other sets give back while shards of this
    /// set wait for a worker, until none waits or the set is over.
    fn keep_growing<'s>(&'s self, s: &'s std::thread::Scope<'s, '_>, config: &'s Config) {
        let pool = &self.remote.helpers;
        loop {
            let seen = pool.returned();
            if self.shared.over.load(Ordering::Relaxed) {
                return;
            }
            while self.grow(s, config) {}
            let waiting = self
                .shared
                .lock()
                .queue
                .iter()
                .any(|e| matches!(e.state, EntryState::Waiting));
            if !waiting {
                return;
            }
            pool.wait_past(seen);
        }
    }

    /// Queue the names the checker will ask for, in its order, as room comes; add workers
    /// while queued shards wait for one.
    fn plan<'s>(&'s self, index: &[u8], config: &'s Config, s: &'s std::thread::Scope<'s, '_>) {
        let shared = &self.shared;
        let planned = Planned(shared);
        {
            let mut st = shared.lock();
            while !st.started && !shared.over.load(Ordering::Relaxed) {
                st = shared.wait(st, None).0;
            }
        }
        // Distinct names, as the checker takes them; a hash collision only leaves a name
        // unplanned (the checker then fetches it itself).
        let hasher = std::collections::hash_map::RandomState::new();
        let mut seen = HashSet::new();
        stcheck::index::visit_shard_names(index, config, &mut |name| {
            if check_shard_name(name).is_err() || !seen.insert(hasher.hash_one(name)) {
                return ControlFlow::Continue(());
            }
            let mut st = shared.lock();
            while st.queue.len() >= shared.window {
                if shared.over.load(Ordering::Relaxed) {
                    return ControlFlow::Break(());
                }
                st = shared.wait(st, None).0;
            }
            if shared.over.load(Ordering::Relaxed) {
                return ControlFlow::Break(());
            }
            let id = st.next_id;
            st.next_id += 1;
            st.queue.push_back(Entry {
                id,
                name: name.to_owned(),
                state: EntryState::Waiting,
            });
            drop(st);
            shared.changed.notify_all();
            self.grow(s, config);
            ControlFlow::Continue(())
        });
        // Planned: a worker with no shard waiting now leaves (its helper goes back).
        drop(planned);
        self.keep_growing(s, config);
    }

    /// Fetch queued shards until the plan is done or the set is over.
    fn work(&self, config: &Config) {
        let shared = &self.shared;
        let _leaving = Leaving(shared);
        loop {
            let (id, name) = {
                let mut st = shared.lock();
                loop {
                    if shared.over.load(Ordering::Relaxed) {
                        return;
                    }
                    if let Some(next) = take_waiting(&mut st) {
                        break next;
                    }
                    if st.planned {
                        return;
                    }
                    st = shared.wait(st, None).0;
                }
            };
            let fetched = self.fetch(&name, config, Some(Slot { shared, id }));
            self.leave(id, fetched);
        }
    }

    /// Put a worker's result in its entry (or count it as unused when the entry is gone).
    fn leave(&self, id: u64, fetched: Fetched) {
        let shared = &self.shared;
        let mut st = shared.lock();
        let unused = match st.queue.iter_mut().find(|e| e.id == id) {
            Some(e) => {
                e.state = EntryState::Done(Box::new(fetched));
                None
            }
            None => {
                st.held = st.held.saturating_sub(fetched.held);
                st.unused.add(&fetched.cost);
                Some(fetched)
            }
        };
        drop(st);
        shared.changed.notify_all();
        drop(unused);
    }

    /// One shard's check at `name`, in `slot` of the queue or (`None`) on the checker's own
    /// thread.
    fn fetch(&self, name: &str, config: &Config, slot: Option<Slot<'_>>) -> Fetched {
        let url = self.index.sibling(name);
        debug_assert_eq!(url.origin(), self.index.origin());
        let mut session =
            Session::new(self.remote, &url, self.shared.deadline).pinned(self.pin.clone());
        if let Some(slot) = slot {
            session = session.in_set(slot);
        }
        let published = self.known.sha256.get(name).map(String::as_str);
        let result = fetch::check_file(&mut session, &url, config, self.depth, published, None);
        let held = session.permit.take().map_or(0, Permit::keep);
        Fetched {
            result: result.map(|f| f.checked),
            cost: session.cost,
            hub: session.hub,
            held,
        }
    }

    /// The result for `name`, the shard the checker asks for: from the queue (waiting for a
    /// worker if need be), or fetched here when it was not planned.
    fn take(&self, name: &str, config: &Config) -> Fetched {
        let shared = &self.shared;
        let mut st = shared.lock();
        if !st.started {
            st.started = true;
            shared.changed.notify_all();
        }
        let give_up = shared.deadline.at().and_then(|t| t.checked_add(GRACE));
        loop {
            if let Some(pos) = st.queue.iter().position(|e| e.name == name) {
                // Names planned before it that the checker skipped: dropped.
                for e in st.queue.drain(..pos).collect::<Vec<_>>() {
                    if let EntryState::Done(f) = e.state {
                        st.held = st.held.saturating_sub(f.held);
                        st.unused.add(&f.cost);
                    }
                }
                shared.changed.notify_all();
                break;
            }
            if !st.queue.is_empty() || st.planned {
                // Not planned (or already dropped): fetched here.
                drop(st);
                return self.fetch(name, config, None);
            }
            let (g, in_time) = shared.wait(st, give_up);
            st = g;
            if !in_time {
                return timed_out(shared);
            }
        }
        // The front is the shard asked for.
        loop {
            let workers = st.workers;
            let front = st.queue.front().map(|e| match e.state {
                EntryState::Done(_) => Front::Done,
                EntryState::Waiting => Front::Waiting(e.id),
                EntryState::Fetching => Front::Fetching,
            });
            match front {
                Some(Front::Done) => {
                    if let Some(Entry {
                        state: EntryState::Done(f),
                        ..
                    }) = st.queue.pop_front()
                    {
                        drop(st);
                        shared.changed.notify_all();
                        return *f;
                    }
                }
                Some(Front::Waiting(id)) if workers == 0 => {
                    // No worker left to take it: fetched here, in its slot.
                    if let Some(e) = st.queue.front_mut() {
                        e.state = EntryState::Fetching;
                    }
                    drop(st);
                    let fetched = self.fetch(name, config, Some(Slot { shared, id }));
                    self.leave(id, fetched);
                    st = shared.lock();
                }
                Some(Front::Fetching) if workers == 0 => {
                    // A worker ended without leaving its result (it cannot, short of a bug).
                    return Fetched {
                        result: Err(RemoteError::new(
                            ErrorKind::Shard,
                            "the fetch of this shard ended without a result",
                        )),
                        cost: Cost::default(),
                        hub: super::HubInfo::default(),
                        held: 0,
                    };
                }
                Some(_) => {
                    let (g, in_time) = shared.wait(st, give_up);
                    st = g;
                    if !in_time {
                        return timed_out(shared);
                    }
                }
                None => {
                    drop(st);
                    return self.fetch(name, config, None);
                }
            }
        }
    }
}

/// A helper of the client's pool ([`RemoteOptions::shard_helpers`](super::RemoteOptions::shard_helpers)),
/// given back when dropped.
struct Helper<'r>(&'r HelperPool);

impl<'r> Helper<'r> {
    /// A free helper of `pool`, if there is one (never waits).
    fn take(pool: &'r HelperPool) -> Option<Self> {
        pool.free
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .ok()
            .map(|_| Helper(pool))
    }
}

impl Drop for Helper<'_> {
    fn drop(&mut self) {
        self.0.free.fetch_add(1, Ordering::AcqRel);
        self.0.wake();
    }
}

/// The helpers of a client's sets ([`RemoteOptions::shard_helpers`](super::RemoteOptions::shard_helpers)),
/// and a wake-up for the sets that wait for one: a set whose names are all planned still takes
/// the helpers other sets give back while it has shards waiting (a set that got none at the
/// start, when the first sets took them all, no longer fetches its last shards one at a time).
#[derive(Debug)]
pub(super) struct HelperPool {
    free: AtomicUsize,
    /// Counts the helpers given back and the sets ended, for the sets waiting for either.
    returned: Mutex<u64>,
    wake: Condvar,
}

impl HelperPool {
    pub(super) fn new(helpers: usize) -> Self {
        HelperPool {
            free: AtomicUsize::new(helpers),
            returned: Mutex::new(0),
            wake: Condvar::new(),
        }
    }

    fn returned(&self) -> u64 {
        *self.returned.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wake(&self) {
        *self.returned.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.wake.notify_all();
    }

    /// Wait until a helper is given back or a set ends after [`HelperPool::returned`] said
    /// `seen`.
    fn wait_past(&self, seen: u64) {
        let mut n = self.returned.lock().unwrap_or_else(PoisonError::into_inner);
        while *n == seen {
            n = self.wake.wait(n).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Wakes the sets waiting for a helper when a set's check ends (its planner among them).
struct WakeOnEnd<'a>(&'a HelperPool);

impl Drop for WakeOnEnd<'_> {
    fn drop(&mut self) {
        self.0.wake();
    }
}

/// The state of the front of the queue.
enum Front {
    Done,
    Waiting(u64),
    Fetching,
}

/// The first queued shard no worker has taken, now taken.
fn take_waiting(st: &mut State) -> Option<(u64, String)> {
    if !st.started {
        return None;
    }
    let e = st
        .queue
        .iter_mut()
        .find(|e| matches!(e.state, EntryState::Waiting))?;
    e.state = EntryState::Fetching;
    Some((e.id, e.name.clone()))
}

fn timed_out(shared: &Shared) -> Fetched {
    Fetched {
        result: Err(shared.deadline.passed()),
        cost: Cost::default(),
        hub: super::HubInfo::default(),
        held: 0,
    }
}

impl ShardSource for RemoteShards<'_> {
    /// A server has no directory listing: `INDEX-SHARD-UNLISTED` is checked only with a
    /// repository's listing of the hub.
    fn list(&self) -> Result<Vec<String>, ReadError> {
        Ok(self.known.listed.clone().unwrap_or_default())
    }

    /// `name` has passed `check_shard_name` (a plain file name), so its URL is in the index's
    /// directory on the index's origin by construction.
    fn check(
        &self,
        name: &str,
        config: &Config,
        f: &mut dyn FnMut(Checked<'_>),
    ) -> Result<(), ReadError> {
        let fetched = self.take(name, config);
        // Given back once the result has been handed on.
        let _held = Permit {
            shared: &self.shared,
            bytes: fetched.held,
        };
        self.costs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((name.to_owned(), fetched.cost));
        match fetched.result {
            Ok(checked) => {
                *self.handed.lock().unwrap_or_else(PoisonError::into_inner) = Some(ShardFetch {
                    url: self.index.sibling(name).shown(),
                    cost: fetched.cost,
                    hub: fetched.hub,
                });
                f(checked);
                Ok(())
            }
            // The remote form of "no such file".
            Err(e)
                if e.kind() == ErrorKind::Status && matches!(e.http_status(), Some(404 | 410)) =>
            {
                Err(ReadError::new(ReadErrorKind::NotFound, e.message()))
            }
            Err(e) => {
                *self.failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(e.kind());
                Err(ReadError::from(e))
            }
        }
    }
}

/// Fetch an index (at most one byte past the header limit) and check it with its shards.
pub(super) fn check_index(
    remote: &Remote,
    session: &mut Session<'_>,
    url: &Url,
    config: &Config,
    depth: Depth,
    known: &super::Known,
    on_shard: &mut dyn FnMut(&str, ShardOutcome<'_, '_>, Option<&ShardFetch>),
) -> Result<Found, RemoteError> {
    // Fetched already by the repository's plan (same commit, same limit): not again.
    let bytes: std::sync::Arc<[u8]> = match known.indexes.get(&url.file_name()) {
        Some(f) => {
            session.cost.add(&f.cost);
            session.hub = f.hub.clone();
            f.bytes.clone()
        }
        None => fetch::fetch_index_bytes(session, url, config)?.into(),
    };
    let pin = session.pin().or_else(|| session.hub.commit.clone());
    let source = RemoteShards::new(remote, url.clone(), depth, session.deadline(), known, pin);
    let report = source.check(&bytes, config, on_shard);
    // The set's deadline passed is a timeout, whichever shard was under way.
    let kind = match source.failure() {
        Some(ErrorKind::Timeout) => ErrorKind::Timeout,
        // A shard of another commit than its index's: the set is not that commit's either.
        Some(ErrorKind::CommitMoved) => ErrorKind::CommitMoved,
        _ => ErrorKind::Shard,
    };
    let (shards, unused) = source.into_costs();
    for (_, c) in &shards {
        session.cost.add(c);
    }
    session.cost.add(&unused);
    let report = report.map_err(|e| RemoteError::new(kind, session.scrub(&e.to_string())))?;
    Ok(Found::Index(Box::new(IndexCheck { report, shards })))
}
