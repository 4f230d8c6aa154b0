//! `stcheck serve`: stcheck in an upload path, as a service speaking the clamd protocol
//! (`INSTREAM`, on TCP and a Unix socket) and HTTP (`POST /v1/check`), fail-closed: a stream
//! over its limit, cut off or past its deadline is an error answer, never OK. See
//! `docs/serve.md`.
//!
//! - [`clamd`]: the command and chunk grammars, pure functions;
//! - [`query`]: the HTTP query's options, a pure function;
//! - [`options`]: the check options, rows of the gate's one table of run options;
//! - `settings`: addresses, limits and options from the command line and a TOML file;
//! - `face`: the one use of the gate, the core's streaming checker and the printer's record;
//! - `Server`: the listeners, admission, connections, log and stop.
//!
//! The last three, and `main`, are the feature `server` (on by default: tokio, hyper, toml).
//! Without it the crate is the three grammars only, for fuzz targets.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod clamd;
#[cfg(feature = "server")]
mod face;
#[cfg(feature = "server")]
pub mod listen;
#[cfg(feature = "server")]
mod log;
#[cfg(feature = "server")]
mod metrics;
pub mod options;
pub mod query;
#[cfg(feature = "server")]
mod server;
#[cfg(feature = "server")]
pub mod settings;
#[cfg(feature = "server")]
mod tls;

#[cfg(feature = "server")]
use std::ffi::OsString;
#[cfg(feature = "server")]
use std::process::ExitCode;

#[cfg(feature = "server")]
pub use server::Server;
#[cfg(feature = "server")]
pub use settings::{Limits, Settings};

#[cfg(feature = "server")]
/// `stcheck serve ARGS...` (`args` without `serve`): runs until SIGTERM or SIGINT, then stops
/// gracefully and exits 0; 2 when it cannot start. SIGHUP reads the configuration again
/// ([`Server::reload`]).
pub fn main(args: &[OsString]) -> ExitCode {
    let settings = match Settings::from_args(args) {
        Ok(settings::Parsed::Run(s)) => *s,
        Ok(settings::Parsed::Help) => {
            print!("{}", settings::help());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("stcheck serve: {e}");
            return ExitCode::from(2);
        }
    };
    // Before any thread: the variables are read and removed.
    let passed = match listen::from_env() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("stcheck serve: the sockets passed cannot be used: {e}");
            return ExitCode::from(2);
        }
    };
    if settings.listen && passed.as_ref().is_none_or(listen::Passed::is_empty) {
        eprintln!(
            "stcheck serve: --listen: no sockets were passed to this process (LISTEN_PID, \
             LISTEN_FDS and LISTEN_FDNAMES of systemd's socket activation)"
        );
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("stcheck serve: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let code = runtime.block_on(async {
        // The handlers are in place before anything listens: a SIGTERM sent as soon as the
        // service answers is a graceful stop, never the default action.
        let mut stop = match StopSignal::new() {
            Ok(s) => s,
            Err(e) => {
                eprintln!("stcheck serve: cannot wait for signals: {e}");
                return ExitCode::from(2);
            }
        };
        let server = match Server::start_with(settings, passed).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("stcheck serve: {e}");
                return ExitCode::from(2);
            }
        };
        for line in server.banner() {
            server.say(&line);
        }
        while let Signal::Reload = stop.recv().await {
            match server.reload() {
                Ok(lines) => {
                    server.say("SIGHUP: the configuration is read again");
                    for line in lines {
                        server.say(&line);
                    }
                }
                Err(e) => server.say(&format!(
                    "SIGHUP: the new configuration is refused, the one in force is kept: {e}"
                )),
            }
        }
        server.say("stopping: no new connections; streams in flight may finish");
        server.shutdown().await;
        server.say("stopped");
        server.flush_log();
        ExitCode::SUCCESS
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    code
}

/// SIGTERM, SIGINT and SIGHUP, caught from the moment it is made.
#[cfg(feature = "server")]
struct StopSignal {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

/// What a signal asks for.
#[cfg(feature = "server")]
enum Signal {
    Stop,
    Reload,
}

#[cfg(feature = "server")]
impl StopSignal {
    fn new() -> std::io::Result<StopSignal> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(StopSignal {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// The next one.
    async fn recv(&mut self) -> Signal {
        tokio::select! {
            _ = self.term.recv() => Signal::Stop,
            _ = self.int.recv() => Signal::Stop,
            _ = self.hup.recv() => Signal::Reload,
        }
    }
}
