//! Listening sockets passed by a service manager: systemd's socket activation (the protocol of
//! `sd_listen_fds(3)`): `LISTEN_PID` is this process, `LISTEN_FDS` sockets from descriptor 3
//! on, and `LISTEN_FDNAMES` names each one (`FileDescriptorName=` in the socket unit):
//! `clamd` (a TCP or Unix stream socket) or `http` (TCP). Passed sockets replace the
//! addresses of the settings; `--listen` makes them required.

use std::net::TcpListener;
use std::os::unix::net::UnixListener;

/// The sockets passed.
#[derive(Debug, Default)]
pub struct Passed {
    /// The clamd protocol on TCP.
    pub clamd: Option<TcpListener>,
    /// The clamd protocol on a Unix socket.
    pub clamd_unix: Option<UnixListener>,
    /// HTTP.
    pub http: Option<TcpListener>,
}

impl Passed {
    /// Whether no socket was passed.
    pub fn is_empty(&self) -> bool {
        self.clamd.is_none() && self.clamd_unix.is_none() && self.http.is_none()
    }
}

/// The sockets passed to this process, read from the environment once, before any thread is
/// started (the variables are removed, so that a child never takes them for its own); `None`
/// when none were passed to this process. An error when they are passed but cannot all be
/// used: the service does not start with some of its sockets.
pub fn from_env() -> Result<Option<Passed>, String> {
    let var = |name: &str| std::env::var(name).ok();
    let (Some(pid), Some(count)) = (var("LISTEN_PID"), var("LISTEN_FDS")) else {
        return Ok(None);
    };
    if pid.trim().parse::<u32>().ok() != Some(std::process::id()) {
        // Meant for another process (a parent that did not clear them).
        return Ok(None);
    }
    let count: usize = count
        .trim()
        .parse()
        .map_err(|_| format!("LISTEN_FDS={count:?} is not a number"))?;
    let names = var("LISTEN_FDNAMES").unwrap_or_default();
    let names: Vec<&str> = names.split(':').filter(|n| !n.is_empty()).collect();
    if names.len() != count {
        return Err(format!(
            "{count} socket(s) passed (LISTEN_FDS) and {} name(s) (LISTEN_FDNAMES): name each \
             one clamd or http (FileDescriptorName= in the socket unit)",
            names.len()
        ));
    }
    // listenfd reads LISTEN_FDS again and removes it and LISTEN_PID; the names too.
    let mut fds = listenfd::ListenFd::from_env();
    std::env::remove_var("LISTEN_FDNAMES");
    let mut passed = Passed::default();
    let twice = |name: &str| format!("LISTEN_FDNAMES names {name} twice");
    for (i, name) in names.iter().enumerate() {
        let fd = i + 3;
        match *name {
            "clamd" => match fds.take_tcp_listener(i) {
                Ok(Some(l)) if passed.clamd.is_none() => passed.clamd = Some(l),
                Ok(Some(_)) => return Err(twice("clamd on TCP")),
                Ok(None) => return Err(format!("descriptor {fd} is not there")),
                Err(_) => match fds.take_unix_listener(i) {
                    Ok(Some(l)) if passed.clamd_unix.is_none() => passed.clamd_unix = Some(l),
                    Ok(Some(_)) => return Err(twice("clamd on a Unix socket")),
                    Ok(None) => return Err(format!("descriptor {fd} is not there")),
                    Err(e) => {
                        return Err(format!(
                            "descriptor {fd} (clamd) is neither a TCP nor a Unix stream \
                             socket: {e}"
                        ))
                    }
                },
            },
            "http" => match fds.take_tcp_listener(i) {
                Ok(Some(l)) if passed.http.is_none() => passed.http = Some(l),
                Ok(Some(_)) => return Err(twice("http")),
                Ok(None) => return Err(format!("descriptor {fd} is not there")),
                Err(e) => return Err(format!("descriptor {fd} (http) is not a TCP socket: {e}")),
            },
            other => {
                return Err(format!(
                    "LISTEN_FDNAMES names descriptor {fd} {other:?}: clamd or http is expected"
                ))
            }
        }
    }
    Ok(Some(passed))
}
