//! The service's settings: where it listens, its limits (named as clamd names them), who may
//! call it, and the check options, from a TOML file (`--config FILE`) and the command line
//! (which wins), both through one table of keys ([`Settings::set_text`]).

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use stcheck_gate::options::RunOptions;

use stcheck_gate::options::{Face, Value};

use crate::options;

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
    /// `IdleTimeout`: the longest wait for the next command of a clamd session, and for the
    /// next request on an HTTP connection (from its opening or its last answer).
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
    /// HTTP over TLS: the service's certificate chain (PEM).
    pub tls_cert: Option<PathBuf>,
    /// Its private key (PEM).
    pub tls_key: Option<PathBuf>,
    /// The CA certificates (PEM) that callers' client certificates must chain to; with it,
    /// a caller without such a certificate is refused in the handshake.
    pub tls_client_ca: Option<PathBuf>,
    /// Verdict log lines as JSON.
    pub log_json: bool,
    /// Listen only on the sockets a service manager passed (systemd socket activation); do not
    /// start without them.
    pub listen: bool,
    /// The limits.
    pub limits: Limits,
    /// The check options of every stream (an HTTP request's query adds to them).
    pub options: RunOptions,
    /// Where these settings came from, to read them again on SIGHUP.
    pub source: Source,
}

/// Where settings come from: a configuration file, then the command line's flags (which win).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Source {
    /// `--config FILE`.
    pub config: Option<PathBuf>,
    /// The other flags, by name without `--`, each with its value (`None`: given bare).
    pub flags: Vec<(String, Option<String>)>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            clamd: Some(SocketAddr::from(([127, 0, 0, 1], 3310))),
            clamd_socket: None,
            http: None,
            clamd_allow_remote: false,
            token_file: None,
            tls_cert: None,
            tls_key: None,
            tls_client_ca: None,
            log_json: false,
            listen: false,
            limits: Limits::default(),
            options: RunOptions::default(),
            source: Source::default(),
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
  --token-file FILE        HTTP bearer token (to bind HTTP off loopback: this or a client CA)
  --tls-cert FILE          HTTP over TLS: the service's certificate chain (PEM)
  --tls-key FILE           its private key (PEM)
  --tls-client-ca FILE     callers must present a client certificate from these CAs (PEM)
  --clamd-allow-remote     allow a clamd address off loopback (clamd has no authentication)
  --listen                 only the sockets systemd passes (LISTEN_FDS, named clamd or http
                           by LISTEN_FDNAMES); without it, passed sockets are used if any
  --config FILE            a TOML file with these keys (without --); flags win; SIGHUP
                           reads it again

Limits:
  --max-stream BYTES       the most bytes of a stream (default 64 GiB; K, M, G, T suffixes)
  --workers N              streams checked at once (default 2 x cores, at least 4)
  --queue N                streams waiting for a worker; past it: busy at once (default 64)
  --max-connections N      connections at once; past it: busy at once (default 4096)
  --read-timeout SECONDS   the longest wait for a stream's next bytes (default 30)
  --command-timeout SECONDS  the longest wait for a command or request head (default 10)
  --idle-timeout SECONDS   the longest wait for a clamd session's next command or an HTTP
                           connection's next request (default 30)
  --stream-deadline SECONDS  the most time one stream may take (default 3600)
  --grace SECONDS          after SIGTERM, time for streams in flight (default 30)
  --log-json               verdict log lines as JSON

";

/// `stcheck serve --help`: [`HELP`], then the check options of the gate's table that a stream
/// can use, with their one-line documentation.
pub fn help() -> String {
    let mut out = HELP.trim_end().to_owned();
    out.push('\n');
    out.push_str(
        "\nCheck options (as stcheck's; in a config file and an HTTP query by their keys):\n",
    );
    for spec in stcheck_gate::options::OPTIONS {
        let Some(flag) = spec.cli.filter(|f| options::find(Face::Cli, f).is_some()) else {
            continue;
        };
        let name = match spec.value {
            "" => flag.to_owned(),
            v => format!("{flag} {v}"),
        };
        out.push_str(&format!("  {name:<26} {} ({})\n", spec.doc, spec.key));
    }
    out.push_str("\nSee docs/serve.md.\n");
    out
}

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
        let source = Source {
            config,
            flags: pairs,
        };
        Ok(Parsed::Run(Box::new(Settings::from_source(source)?)))
    }

    /// The settings `source` gives: the defaults, the file's keys, then the flags. Read again
    /// the same way on SIGHUP.
    pub fn from_source(source: Source) -> Result<Settings, String> {
        let mut settings = Settings::default();
        if let Some(path) = &source.config {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--config {}: {e}", path.display()))?;
            settings
                .apply_toml(&text)
                .map_err(|e| format!("--config {}: {e}", path.display()))?;
        }
        for (key, value) in &source.flags {
            settings
                .set_text(key, value.as_deref())
                .map_err(|e| format!("--{e}"))?;
        }
        settings.source = source;
        Ok(settings)
    }

    /// The keys of a TOML configuration, set in the file's order: the service's own (`http`,
    /// `max-stream`) and the check options by their service keys (`deep`, `deny`), `-` and
    /// `_` alike.
    pub fn apply_toml(&mut self, text: &str) -> Result<(), String> {
        let table: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
        for (key, value) in &table {
            if own_key(key).is_some() {
                let text = match value {
                    toml::Value::Boolean(b) => b.to_string(),
                    toml::Value::Integer(n) => n.to_string(),
                    toml::Value::Float(x) => x.to_string(),
                    toml::Value::String(s) => s.clone(),
                    _ => return Err(format!("{key}: not a value this key takes")),
                };
                self.set_text(key, Some(&text))?;
                continue;
            }
            let spec = options::find(Face::Service, key)
                .ok_or_else(|| format!("{key}: no such option"))?;
            let run = &mut self.options;
            match value {
                toml::Value::String(s) => options::set_text(run, spec, Some(s))?,
                toml::Value::Boolean(b) => options::set(run, spec, Value::Bool(*b))?,
                toml::Value::Integer(n) => options::set(run, spec, Value::Int(i128::from(*n)))?,
                toml::Value::Float(x) => options::set(run, spec, Value::Float(*x))?,
                toml::Value::Array(items) => {
                    let list = items
                        .iter()
                        .map(|i| i.as_str().map(str::to_owned))
                        .collect::<Option<Vec<String>>>()
                        .ok_or_else(|| format!("{key}: a list of strings is expected"))?;
                    options::set(run, spec, Value::List(list))?
                }
                _ => return Err(format!("{key}: not a value this key takes")),
            }
        }
        Ok(())
    }

    /// Set the option `key` (a flag's name without `--`) from its text (`None`: a flag given
    /// bare, or `true`/`false` from a file).
    pub fn set_text(&mut self, key: &str, text: Option<&str>) -> Result<(), String> {
        let Some(own) = own_key(key) else {
            let spec = options::find(Face::Cli, &format!("--{key}"))
                .or_else(|| options::find(Face::Service, key))
                .ok_or_else(|| format!("{key}: no such option"))?;
            return options::set_text(&mut self.options, spec, text);
        };
        let text = text.unwrap_or("true");
        let flag = || match text {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(format!("{key}: {text:?} is not true or false")),
        };
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
        match own {
            "clamd" => self.clamd = addr(text)?,
            "clamd-socket" => self.clamd_socket = Some(PathBuf::from(text)),
            "http" => self.http = addr(text)?,
            "token-file" => self.token_file = Some(PathBuf::from(text)),
            "tls-cert" => self.tls_cert = Some(PathBuf::from(text)),
            "tls-key" => self.tls_key = Some(PathBuf::from(text)),
            "tls-client-ca" => self.tls_client_ca = Some(PathBuf::from(text)),
            "clamd-allow-remote" => self.clamd_allow_remote = flag()?,
            "log-json" => self.log_json = flag()?,
            "listen" => self.listen = flag()?,
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
            _ => l.grace = seconds(text)?,
        }
        Ok(())
    }
}

/// The service's own options (not run options): whether each takes a value, by its name
/// (`_` for `-` alike).
const OWN: &[(&str, bool)] = &[
    ("clamd", true),
    ("clamd-socket", true),
    ("http", true),
    ("token-file", true),
    ("tls-cert", true),
    ("tls-key", true),
    ("tls-client-ca", true),
    ("config", true),
    ("max-stream", true),
    ("workers", true),
    ("queue", true),
    ("max-connections", true),
    ("read-timeout", true),
    ("command-timeout", true),
    ("idle-timeout", true),
    ("stream-deadline", true),
    ("grace", true),
    ("clamd-allow-remote", false),
    ("log-json", false),
    ("listen", false),
];

/// The service's own option `key` names, as spelled in [`OWN`].
fn own_key(key: &str) -> Option<&'static str> {
    let key = key.replace('_', "-");
    OWN.iter().find(|(k, _)| *k == key).map(|(k, _)| *k)
}

/// Whether the flag `--key` takes a value; `None`: no such option.
fn takes_value(key: &str) -> Option<bool> {
    if let Some(own) = own_key(key) {
        return OWN.iter().find(|(k, _)| *k == own).map(|(_, v)| *v);
    }
    options::find(Face::Cli, &format!("--{key}")).map(options::takes_value)
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
        s.apply_toml(
            "max-stream = \"1G\"\nworkers = 3\ndeny = [\"LAYOUT-ALIGN\"]\ndeep = true\n\
             deny_nonfinite = true\nmax_warnings_per_rule = 5\n",
        )
        .expect("toml");
        assert_eq!(s.limits.max_stream, 1 << 30);
        assert_eq!(s.limits.workers, 3);
        assert!(s.options.deep && s.options.deny_nonfinite);
        assert_eq!(s.options.max_warnings_per_rule, Some(5));
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
            &["--follow-links"],
            &["--profile", "lax"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(bytes("64G"), Ok(64 << 30));
        assert!(bytes("99999999999T").is_err());
    }
}
