//! The state a set's shard fetching shares between its planner, its workers and its checker:
//! the queue of shards in the index's order, and the budget of header bytes the shards fetched
//! ahead may hold ([`Slot::reserve`], [`Permit`]). A leaf of the remote source: the HTTP
//! session of a shard holds its [`Slot`] and [`Permit`] without knowing the set
//! (`shards.rs`) that made them.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use super::deadline::Deadline;
use super::{Cost, ErrorKind, RemoteError};
use stcheck::Checked;

/// What the planner, the workers and the checker share.
pub(super) struct Shared {
    pub(super) state: Mutex<State>,
    pub(super) changed: Condvar,
    /// The check of the set is over: nothing more is fetched, fetches under way stop.
    pub(super) over: AtomicBool,
    pub(super) deadline: Deadline,
    /// Header bytes the shards fetched ahead may hold together.
    pub(super) budget: u64,
    /// The most shards queued (waiting, being fetched, or fetched and not yet taken).
    pub(super) window: usize,
}

#[derive(Default)]
pub(super) struct State {
    /// The checker asked for its first shard: the index is accepted, fetching may start.
    pub(super) started: bool,
    /// The planner has queued every name it will.
    pub(super) planned: bool,
    /// Workers running.
    pub(super) workers: usize,
    /// In the index's order; the front is the shard the checker wants next.
    pub(super) queue: VecDeque<Entry>,
    pub(super) next_id: u64,
    /// Header bytes held by the shards fetched ahead.
    pub(super) held: u64,
    /// What fetches whose result was not used cost.
    pub(super) unused: Cost,
}

pub(super) struct Entry {
    pub(super) id: u64,
    pub(super) name: String,
    pub(super) state: EntryState,
}

pub(super) enum EntryState {
    Waiting,
    Fetching,
    Done(Box<Fetched>),
}

/// One shard's check, as a worker leaves it for the checker.
pub(super) struct Fetched {
    pub(super) result: Result<Checked<'static>, RemoteError>,
    pub(super) cost: Cost,
    /// What the server said about the shard.
    pub(super) hub: super::HubInfo,
    /// Header bytes of the budget held until the checker has handed the result on.
    pub(super) held: u64,
}

pub(super) fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Wait for a change, at most until `until`; `false` once `until` has passed.
    pub(super) fn wait<'g>(
        &self,
        guard: MutexGuard<'g, State>,
        until: Option<Instant>,
    ) -> (MutexGuard<'g, State>, bool) {
        match until {
            None => (
                self.changed
                    .wait(guard)
                    .unwrap_or_else(PoisonError::into_inner),
                true,
            ),
            Some(t) => match t.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => {
                    let (g, _) = self
                        .changed
                        .wait_timeout(guard, left)
                        .unwrap_or_else(PoisonError::into_inner);
                    (g, true)
                }
                _ => (guard, false),
            },
        }
    }

    pub(super) fn release(&self, bytes: u64) {
        if bytes > 0 {
            let mut st = self.lock();
            st.held = st.held.saturating_sub(bytes);
            drop(st);
            self.changed.notify_all();
        }
    }

    pub(super) fn end(&self) {
        let st = self.lock();
        self.over.store(true, Ordering::Relaxed);
        drop(st);
        self.changed.notify_all();
    }
}

/// A shard fetched ahead: its place in its set's queue.
#[derive(Clone, Copy)]
pub(super) struct Slot<'a> {
    pub(super) shared: &'a Shared,
    pub(super) id: u64,
}

impl<'a> Slot<'a> {
    /// `Err` once the set no longer wants this shard (its check is over or failed).
    pub(super) fn going_on(&self) -> Result<(), RemoteError> {
        if self.shared.over.load(Ordering::Relaxed) {
            return Err(ended());
        }
        Ok(())
    }

    /// Hold `bytes` of header of the set's budget; wait while that would pass the budget,
    /// unless this is the shard the checker wants next.
    pub(super) fn reserve(&self, bytes: u64) -> Result<Permit<'a>, RemoteError> {
        let shared = self.shared;
        let mut st = shared.lock();
        loop {
            if shared.over.load(Ordering::Relaxed) {
                return Err(ended());
            }
            let Some(pos) = st.queue.iter().position(|e| e.id == self.id) else {
                return Err(ended());
            };
            if pos == 0 || st.held.saturating_add(bytes) <= shared.budget {
                st.held = st.held.saturating_add(bytes);
                return Ok(Permit { shared, bytes });
            }
            let (g, in_time) = shared.wait(st, shared.deadline.at());
            st = g;
            if !in_time {
                return Err(shared.deadline.passed());
            }
        }
    }
}

/// Header bytes held of a set's budget, given back when dropped.
pub(super) struct Permit<'a> {
    pub(super) shared: &'a Shared,
    pub(super) bytes: u64,
}

impl Permit<'_> {
    /// The bytes, still held, for the checker to give back.
    pub(super) fn keep(mut self) -> u64 {
        std::mem::take(&mut self.bytes)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.shared.release(self.bytes);
    }
}

/// The share of a set's budget a shard takes for the length field `field`: the header's
/// length, or nothing for a header above `limit`, which is rejected before it is read.
pub(super) fn header_share(field: [u8; 8], limit: u64) -> u64 {
    match u64::from_le_bytes(field) {
        n if n > limit => 0,
        n => n,
    }
}

pub(super) fn ended() -> RemoteError {
    RemoteError::new(ErrorKind::Shard, "the check of the set ended")
}

/// Counts a worker out when it ends, however it ends.
pub(super) struct Leaving<'a>(pub(super) &'a Shared);

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        st.workers = st.workers.saturating_sub(1);
        drop(st);
        self.0.changed.notify_all();
    }
}

/// Ends the set's fetching when the check ends, however it ends.
pub(super) struct Ending<'a>(pub(super) &'a Shared);

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// Marks the plan complete when the planner ends, however it ends.
pub(super) struct Planned<'a>(pub(super) &'a Shared);

impl Drop for Planned<'_> {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        st.planned = true;
        drop(st);
        self.0.changed.notify_all();
    }
}
