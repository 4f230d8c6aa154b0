//! `stcheck serve`: stcheck in an upload path, as a service speaking the clamd protocol
//! (`INSTREAM`, on TCP and a Unix socket) and HTTP (`POST /v1/check`), fail-closed: a stream
//! over its limit, cut off or past its deadline is an error answer, never OK. See
//! `docs/serve.md`.
//!
//! - [`clamd`]: the command and chunk grammars, pure functions;
//! - [`query`]: the HTTP query's options, a pure function;
//! - [`options`]: the check options by their command-line names;
//! - [`settings`]: addresses, limits and options from the command line and a TOML file;
//! - `face`: the one use of the gate, the core's streaming checker and the printer's record;
//! - [`Server`]: the listeners, admission, connections, log and stop.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod clamd;
mod face;
mod metrics;
pub mod options;
pub mod query;
mod server;
pub mod settings;

use std::ffi::OsString;
use std::process::ExitCode;

pub use server::Server;
pub use settings::{Limits, Settings};

/// `stcheck serve ARGS...` (`args` without `serve`): runs until SIGTERM or SIGINT, then stops
/// gracefully and exits 0; 2 when it cannot start.
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
        let server = match Server::start(settings).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("stcheck serve: {e}");
                return ExitCode::from(2);
            }
        };
        for line in server.banner() {
            eprintln!("stcheck serve: {line}");
        }
        if let Err(e) = stop_signal().await {
            eprintln!("stcheck serve: cannot wait for signals: {e}");
            return ExitCode::from(2);
        }
        eprintln!("stcheck serve: stopping: no new connections; streams in flight may finish");
        server.shutdown().await;
        eprintln!("stcheck serve: stopped");
        ExitCode::SUCCESS
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    code
}

/// SIGTERM or SIGINT.
async fn stop_signal() -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}
