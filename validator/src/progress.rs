//! The progress hook of a check (for a progress bar by bytes).

/// A hook told how a check advances through a file, in bytes: for a progress bar (by bytes,
/// with a rate and an estimate of the time left) over long checks — a deep scan, a hash, a
/// file read through a pipe.
///
/// [`Progress::advance`] is called with the number of bytes newly done; by the time the check
/// returns, the counts add up to [`Checked::bytes_read`](crate::Checked::bytes_read). A mapped file's deep scan calls it
/// every [`crate::deep::PROGRESS_STEP`] bytes, from the scanning threads (hence `Sync`); a
/// read or streamed file after each buffer; a check that does not read the data, once for
/// the header and once for the rest. The hook must be cheap and must not block: it runs on
/// the checking threads. Closures `Fn(u64) + Sync` are hooks.
pub trait Progress: Sync {
    /// `bytes` more bytes of the file are done.
    fn advance(&self, bytes: u64);
}

impl<F: Fn(u64) + Sync> Progress for F {
    fn advance(&self, bytes: u64) {
        self(bytes)
    }
}

/// The hook of checks nobody watches.
pub(crate) fn no_progress() -> &'static dyn Progress {
    &|_: u64| {}
}
