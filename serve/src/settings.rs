//! The service's settings: where it listens, its limits (named as clamd names them), who may
//! call it, and the check options, from a TOML file (`--config FILE`) and the command line
//! (which wins), both through one table of keys ([`Settings::set`]).

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use stcheck_gate::options::RunOptions;

use crate::options::{self, Value};

/// The service's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// `StreamMaxLength`: the most bytes of one stream (default 64 GiB).
    pub max_stream: u64,
    /// `MaxThreads`: streams checked at once.
    pub workers: usize,
    /// `MaxQueue`: streams waiting for a worker; past it a stream is answered busy at once.
    pub queue: usize,
    /// `MaxConnections`: connections open at once; past it a connection is answered busy and
    /// closed.
    pub max_connections: usize,
    /// `ReadTimeout`: the longest wait for the next bytes of a stream.
    pub read_timeout: Duration,
    /// `CommandReadTimeout`: the longest wait for a whole command (clamd) or request head
    /// (HTTP).
    pub command_timeout: Duration,
    /// `IdleTimeout`: the longest wait for the next command of a session.
    pub idle_timeout: Duration,
    /// `StreamDeadline`: the most time one stream may take, from its command to its end.
    pub stream_deadline: Duration,
    /// `ShutdownGrace`: after SIGTERM, how long streams in flight may take to finish.
    pub grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Limits {
            max_stream: 64 << 30,
            workers: (2 * cores).max(4),
            queue: 64,
            max_connections: 4096,
            read_timeout: Duration::from_secs(30),
            command_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            stream_deadline: Duration::from_secs(3600),
            grace: Duration::from_secs(30),
        }
    }
}

/// Everything the service is started with.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The clamd TCP address (default 127.0.0.1:3310); `None`: no TCP clamd.
    pub clamd: Option<SocketAddr>,
    /// The clamd Unix socket.
    pub clamd_socket: Option<PathBuf>,
    /// The HTTP address.
    pub http: Option<SocketAddr>,
    /// A clamd address off loopback is allowed (the protocol has no authentication).
    pub clamd_allow_remote: bool,
    /// The file holding the HTTP bearer token.
    pub token_file: Option<PathBuf>,
    /// Verdict log lines as JSON.
    pub log_json: bool,
    /// The limits.
    pub limits: Limits,
    /// The check options of every stream (an HTTP request's query adds to them).
    pub options: RunOptions,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            clamd: Some(SocketAddr::from(([127, 0, 0, 1], 3310))),
            clamd_socket: None,
            http: None,
            clamd_allow_remote: false,
            token_file: None,
            log_json: false,
            limits: Limits::default(),
            options: RunOptions::default(),
        }
    }
}

/// `stcheck serve --help`.
pub const HELP: &str = "\
stcheck serve: a safetensors gate in an upload path, speaking clamd (INSTREAM) and HTTP

Usage: stcheck serve [OPTIONS]

Where it listens (loopback by default):
  --clamd ADDR             clamd protocol on TCP (default 127.0.0.1:3310; \"off\": none)
  --clamd-socket PATH      clamd protocol on a Unix socket (its file permissions decide)
  --http ADDR              HTTP API: POST /v1/check, /healthz, /readyz, /metrics, /v1/rules/RULE
  --token-file FILE        HTTP bearer token (needed to bind HTTP off loopback)
  --clamd-allow-remote     allow a clamd address off loopback (clamd has no authentication)
  --config FILE            a TOML file with these keys (without --); flags win

Limits:
  --max-stream BYTES       the most bytes of a stream (default 64 GiB; K, M, G, T suffixes)
  --workers N              streams checked at once (default 2 x cores, at least 4)
  --queue N                streams waiting for a worker; past it: busy at once (default 64)
  --max-connections N      connections at once; past it: busy at once (default 4096)
  --read-timeout SECONDS   the longest wait for a stream's next bytes (default 30)
  --command-timeout SECONDS  the longest wait for a command or request head (default 10)
  --idle-timeout SECONDS   the longest wait for a session's next command (default 30)
  --stream-deadline SECONDS  the most time one stream may take (default 3600)
  --grace SECONDS          after SIGTERM, time for streams in flight (default 30)
  --log-json               verdict log lines as JSON

Check options (as stcheck's): --profile strict|portable, --deep, --sha256, --deny-nonfinite,
  --deny RULE[,RULE], --allow RULE[,RULE], --deny-warnings, --portable-to READERS,
  --refusals-are-errors, --max-header-size BYTES, --max-warnings-per-rule N

See docs/serve.md.
";

/// What the command line asks for.
#[derive(Debug)]
pub enum Parsed {
    /// Run with these settings.
    Run(Box<Settings>),
    /// Print the help.
    Help,
}

impl Settings {
    /// The settings of `args` (after `serve`), the configuration file first.
    pub fn from_args(args: &[OsString]) -> Result<Parsed, String> {
        let mut pairs: Vec<(String, Option<String>)> = Vec::new();
        let mut config: Option<PathBuf> = None;
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let arg = arg
                .to_str()
                .ok_or_else(|| format!("{}: not UTF-8", arg.to_string_lossy()))?;
            if arg == "-h" || arg == "--help" {
                return Ok(Parsed::Help);
            }
            let Some(flag) = arg.strip_prefix("--") else {
                return Err(format!("{arg}: stcheck serve takes no paths (see --help)"));
            };
            let (key, inline) = match flag.split_once('=') {
                Some((k, v)) => (k, Some(v.to_owned())),
                None => (flag, None),
            };
            let wants = takes_value(key).ok_or_else(|| format!("--{key}: no such option"))?;
            let value = match (wants, inline) {
                (true, Some(v)) => Some(v),
                (true, None) => Some(
                    it.next()
                        .and_then(|v| v.to_str())
                        .ok_or_else(|| format!("--{key}: needs a value"))?
                        .to_owned(),
                ),
                (false, Some(_)) => return Err(format!("--{key}: takes no value")),
                (false, None) => None,
            };
            if key == "config" {
                config = value.map(PathBuf::from);
            } else {
                pairs.push((key.to_owned(), value));
            }
        }
        let mut settings = Settings::default();
        if let Some(path) = config {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("--config {}: {e}", path.display()))?;
            settings
                .apply_toml(&text)
                .map_err(|e| format!("--config {}: {e}", path.display()))?;
        }
        for (key, value) in &pairs {
            let value = match value {
                Some(v) => Value::Text(v),
                None => Value::Flag(true),
            };
            settings.set(key, value).map_err(|e| format!("--{e}"))?;
        }
        Ok(Parsed::Run(Box::new(settings)))
    }

    /// The keys of a TOML configuration, set in the file's order.
    pub fn apply_toml(&mut self, text: &str) -> Result<(), String> {
        let table: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
        for (key, value) in &table {
            match value {
                toml::Value::Boolean(b) => self.set(key, Value::Flag(*b))?,
                toml::Value::Integer(n) => self.set(key, Value::Text(&n.to_string()))?,
                toml::Value::Float(x) => self.set(key, Value::Text(&x.to_string()))?,
                toml::Value::String(s) => self.set(key, Value::Text(s))?,
                toml::Value::Array(items) => {
                    for item in items {
                        match item {
                            toml::Value::String(s) => self.set(key, Value::Text(s))?,
                            _ => return Err(format!("{key}: a list of strings is expected")),
                        }
                    }
                }
                _ => return Err(format!("{key}: not a value this key takes")),
            }
        }
        Ok(())
    }

    /// Set `key` (a flag's name without `--`) to `value`.
    pub fn set(&mut self, key: &str, value: Value<'_>) -> Result<(), String> {
        let text = match value {
            Value::Text(t) => t,
            Value::Flag(_) => "",
        };
        let on = matches!(value, Value::Flag(true));
        let l = &mut self.limits;
        let addr = |t: &str| -> Result<Option<SocketAddr>, String> {
            if t == "off" {
                return Ok(None);
            }
            t.parse()
                .map(Some)
                .map_err(|_| format!("{key}: {t:?} is not an address (IP:PORT)"))
        };
        let count = |t: &str| -> Result<usize, String> {
            t.trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{key}: {t:?} is not a positive integer"))
        };
        let seconds = |t: &str| -> Result<Duration, String> {
            t.trim()
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
                .map(Duration::from_secs_f64)
                .ok_or_else(|| format!("{key}: {t:?} is not a number of seconds above 0"))
        };
        match key {
            "clamd" => self.clamd = addr(text)?,
            "clamd-socket" => self.clamd_socket = Some(PathBuf::from(text)),
            "http" => self.http = addr(text)?,
            "token-file" => self.token_file = Some(PathBuf::from(text)),
            "clamd-allow-remote" => self.clamd_allow_remote = on,
            "log-json" => self.log_json = on,
            "max-stream" => l.max_stream = bytes(text).map_err(|e| format!("{key}: {e}"))?,
            "workers" => l.workers = count(text)?,
            "queue" => {
                l.queue = text
                    .trim()
                    .parse()
                    .map_err(|_| format!("{key}: {text:?} is not a number"))?
            }
            "max-connections" => l.max_connections = count(text)?,
            "read-timeout" => l.read_timeout = seconds(text)?,
            "command-timeout" => l.command_timeout = seconds(text)?,
            "idle-timeout" => l.idle_timeout = seconds(text)?,
            "stream-deadline" => l.stream_deadline = seconds(text)?,
            "grace" => l.grace = seconds(text)?,
            _ => {
                if !options::set(&mut self.options, key, value)? {
                    return Err(format!("{key}: no such option"));
                }
            }
        }
        Ok(())
    }
}

/// Whether the service's option `key` takes a value; `None`: no such option.
fn takes_value(key: &str) -> Option<bool> {
    match key {
        "clamd" | "clamd-socket" | "http" | "token-file" | "config" | "max-stream" | "workers"
        | "queue" | "max-connections" | "read-timeout" | "command-timeout" | "idle-timeout"
        | "stream-deadline" | "grace" => Some(true),
        "clamd-allow-remote" | "log-json" => Some(false),
        _ => options::takes_value(key),
    }
}

/// A number of bytes, with an optional binary suffix (`64G` is 64 GiB).
pub fn bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, shift) = match t.char_indices().last() {
        Some((at, 'K' | 'k')) => (&t[..at], 10),
        Some((at, 'M' | 'm')) => (&t[..at], 20),
        Some((at, 'G' | 'g')) => (&t[..at], 30),
        Some((at, 'T' | 't')) => (&t[..at], 40),
        _ => (t, 0),
    };
    digits
        .parse::<u64>()
        .ok()
        .filter(|&n| n > 0)
        .and_then(|n| n.checked_mul(1u64 << shift))
        .ok_or_else(|| format!("{text:?} is not a positive number of bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Settings, String> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        match Settings::from_args(&args)? {
            Parsed::Run(s) => Ok(*s),
            Parsed::Help => Err("help".into()),
        }
    }

    #[test]
    fn flags_over_the_file() {
        let mut s = Settings::default();
        s.apply_toml("max-stream = \"1G\"\nworkers = 3\ndeny = [\"LAYOUT-ALIGN\"]\ndeep = true\n")
            .expect("toml");
        assert_eq!(s.limits.max_stream, 1 << 30);
        assert_eq!(s.limits.workers, 3);
        assert!(s.options.deep);
        assert_eq!(s.options.deny, ["LAYOUT-ALIGN"]);
        let s = parse(&[
            "--http",
            "127.0.0.1:0",
            "--clamd=off",
            "--read-timeout",
            "0.5",
        ])
        .expect("flags");
        assert_eq!(s.clamd, None);
        assert_eq!(s.limits.read_timeout, Duration::from_millis(500));
        for bad in [
            &["--max-stream", "0"][..],
            &["--workers", "x"],
            &["--bogus"],
            &["model.safetensors"],
            &["--deep=1"],
            &["--http"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(bytes("64G"), Ok(64 << 30));
        assert!(bytes("99999999999T").is_err());
    }
}
