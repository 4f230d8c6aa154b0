//! The shards of an index fetched by URL: a [`ShardSource`] whose files are the index's
//! siblings on the same server.

use std::cell::RefCell;

use super::address::Url;
use super::fetch;
use super::http::Session;
use super::{Cost, Depth, ErrorKind, Remote};
use crate::check::Checked;
use crate::error::{ReadError, ReadErrorKind};
use crate::index::ShardSource;
use crate::limits::Config;

/// Shards next to an index URL. Each shard is checked like a file named by URL (header-level
/// or deep, as asked), with its own deadline and cost.
pub(super) struct RemoteShards<'r> {
    remote: &'r Remote,
    index: Url,
    depth: Depth,
    costs: RefCell<Vec<(String, Cost)>>,
}

impl<'r> RemoteShards<'r> {
    pub(super) fn new(remote: &'r Remote, index: Url, depth: Depth) -> Self {
        RemoteShards {
            remote,
            index,
            depth,
            costs: RefCell::new(Vec::new()),
        }
    }

    /// What each shard cost, in the order they were checked.
    pub(super) fn into_costs(self) -> Vec<(String, Cost)> {
        self.costs.into_inner()
    }
}

impl ShardSource for RemoteShards<'_> {
    /// A server has no directory listing: `INDEX-SHARD-UNLISTED` cannot be checked remotely.
    fn list(&self) -> Result<Vec<String>, ReadError> {
        Ok(Vec::new())
    }

    /// `name` has passed `check_shard_name` (a plain file name), so its URL is in the index's
    /// directory on the index's origin by construction.
    fn check(
        &self,
        name: &str,
        config: &Config,
        f: &mut dyn FnMut(Checked<'_>),
    ) -> Result<(), ReadError> {
        let url = self.index.sibling(name);
        debug_assert_eq!(url.origin(), self.index.origin());
        let mut session = Session::new(self.remote, &url, self.depth.timeout(&self.remote.options));
        let result = fetch::check_file(&mut session, &url, config, self.depth);
        self.costs
            .borrow_mut()
            .push((name.to_owned(), session.cost));
        match result {
            Ok(file) => {
                f(file.checked);
                Ok(())
            }
            // The remote form of "no such file".
            Err(e)
                if e.kind() == ErrorKind::Status && matches!(e.http_status(), Some(404 | 410)) =>
            {
                Err(ReadError::new(ReadErrorKind::NotFound, e.message()))
            }
            Err(e) => Err(ReadError::new(ReadErrorKind::Io, e.message())),
        }
    }
}
