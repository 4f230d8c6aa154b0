//! A deadline for all a file or a set fetches, and the error of one passed. A leaf of the
//! remote source.

use std::time::{Duration, Instant};

use super::{ErrorKind, RemoteError};

/// When a job must be over, and what the time was allowed for (for messages). One deadline
/// covers everything a job fetches: a file with its data, or an index with all its shards.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    at: Option<Instant>,
    allowed: Duration,
    what: &'static str,
}

impl Deadline {
    /// What a file's deadline is for.
    pub(super) const FILE: &'static str = "one file";
    /// What a set's deadline is for.
    pub(super) const SET: &'static str = "the whole set (the index and all its shards)";
    /// What a run's one deadline is for ([`crate::Gate::one_deadline`]).
    pub(super) const RUN: &'static str =
        "all the addresses of this call (one deadline for them all)";
    /// What a repository's deadline is for.
    pub(super) const REPOSITORY: &'static str =
        "the whole repository (its listing, its indexes and every file and set in it)";

    /// `allowed` from now (`None`: no deadline), for `what`.
    pub(super) fn after(allowed: Option<Duration>, what: &'static str) -> Self {
        Deadline {
            at: allowed.and_then(|d| Instant::now().checked_add(d)),
            allowed: allowed.unwrap_or(Duration::MAX),
            what,
        }
    }

    /// This deadline, or `outer` if that one passes first: a repository's, which every check
    /// of its files shares, or a run's ([`Deadline::RUN`]), which all its addresses share.
    pub(super) fn within(self, outer: Option<Deadline>) -> Deadline {
        match (outer, self.at) {
            (Some(o), Some(at)) if o.at.is_some_and(|o| o < at) => o,
            (Some(o), None) if o.at.is_some() => o,
            _ => self,
        }
    }

    /// When it passes, if it does.
    pub(super) fn at(&self) -> Option<Instant> {
        self.at
    }

    /// The time left, `Err` once it has passed.
    pub(super) fn remaining(&self) -> Result<Option<Duration>, RemoteError> {
        match self.at {
            None => Ok(None),
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Ok(Some(left)),
                _ => Err(self.passed()),
            },
        }
    }

    /// The error of a deadline passed.
    pub(super) fn passed(&self) -> RemoteError {
        RemoteError::new(ErrorKind::Timeout, self.message())
    }

    pub(super) fn message(&self) -> String {
        format!(
            "gave up after {} s, the time allowed for {}",
            self.allowed.as_secs_f64(),
            self.what
        )
    }
}
