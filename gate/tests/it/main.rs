//! The gate's integration tests, one binary (each former test file is a module): the file-system policy, the remote source against a loopback server, the hub route.
//!
//! One binary per crate (as ripgrep's `tests/integration`): after a change to the core, cargo
//! links one test binary per crate instead of one per file. What several crates' tests share
//! is in `stcheck-testkit`.

mod hub_gate;
mod remote_corpus;
mod remote_env;
mod remote_hostile;
mod remote_index;
mod remote_pinning;
mod remote_polite;
mod remote_tls;

/// The tests that set the process environment (`HF_ENDPOINT`, `HF_TOKEN`) hold this lock for
/// their whole run: they share one process, and neither may read what the other set.
#[cfg(feature = "remote")]
fn env_lock() -> std::sync::MutexGuard<'static, ()> {
    static ENV: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ENV.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Client options for tests: short timeouts and backoff, so a misbehaving server costs
/// little time (the defaults are for real servers).
#[cfg(feature = "remote")]
fn test_options() -> stcheck_gate::remote::RemoteOptions {
    use std::time::Duration;
    let mut o = stcheck_gate::remote::RemoteOptions::default();
    o.connect_timeout = Duration::from_secs(5);
    o.read_timeout = Duration::from_secs(5);
    o.total_timeout = Duration::from_secs(20);
    o.stream_timeout = Some(Duration::from_secs(20));
    o.backoff = Duration::from_millis(5);
    o.max_retry_after = Duration::from_secs(1);
    o
}
