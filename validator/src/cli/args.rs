//! The command line, parsed by hand: a dozen flags do not need a parser crate, and this keeps
//! the binary's dependencies to the library's.

use std::ffi::OsString;

use stcheck::wire::Profile;
use stcheck::{Config, ReadMode};

pub(crate) const HELP: &str = "\
stcheck: a strict validator for safetensors files

Usage: stcheck [OPTIONS] PATH...

Each PATH is a file, a directory (walked recursively for *.safetensors and
*.safetensors.index.json files), '-' for one file on standard input, or a URL
(http://, https://, or hf://ORG/REPO[@REVISION]/FILE for the Hugging Face hub;
HF_ENDPOINT sets its host, HF_TOKEN is sent to it only). A URL is checked
without downloading it: range requests for the header, the file's length from
the server; --deep and --sha256 stream the body once. A
*.safetensors.index.json file or URL is checked together with the shards it
names.

Output (stdout): one line per file, `path: ok (...)` or `path: error RULE-ID: ...`,
warnings indented below; `path: not checked: reason` for a path that could not
be checked. Error lines about unreadable paths go to stderr as
`stcheck: path: message`.

Fail closed: the run succeeds only if every path that looks like a checkpoint
was checked and is valid. What could not be checked is never valid and fails the
run (exit 2): a FIFO, socket or device (only regular files are read; pipe data
through '-'), a symbolic link not followed, a dangling or looping link, an
unreadable file or directory, and a directory with nothing to check.

Links: a PATH that is a link is followed. Below a directory PATH, a link is
followed when its resolved target stays inside that directory; a link to a file
outside it is not checked (unless --follow-links). Links to directories are
never walked: one inside is walked under its own path, one outside every
directory PATH is not checked. A shard link must stay inside the directory PATH
the index was found under (the index's directory for an index named directly).

Options:
      --json                   JSON Lines on stdout: one {\"type\":...,\"data\":...} object
                               per file, index and a final summary (docs/json-output.md)
  -v, --verbose                list every tensor
  -j, --jobs N                 check N files in parallel (default: the number of cores);
                               output keeps the input order
      --no-mmap                read files instead of memory-mapping them (safer for files
                               that another process may still be writing)
      --stream                 validate files in one forward pass through a fixed buffer
                               (standard input always streams)
      --follow-links           also follow links to regular files outside the directory
                               PATH (and shard links leaving it), as in a Hugging Face
                               cache snapshot whose files link to ../../blobs/; never to
                               a FIFO or device, and directories outside every PATH are
                               still never walked
      --allow-empty            accept a directory PATH with no *.safetensors or
                               *.safetensors.index.json file in it
      --profile strict|reference
                               strict (default): the rules of SPEC.md;
                               reference: the verdict of the safetensors 0.8.0 crate
      --compare-reference      also report the reference crate's verdict, and how it
                               differs from the strict one
      --deny-warnings          treat every warning as an error
      --max-header-size BYTES  reject headers longer than BYTES (default 100000000)
      --max-warnings-per-rule N
                               show at most N warnings of each rule per file, the first
                               in file order (default 100); the count of all is kept
      --deep                   also scan the tensor data: BOOL bytes, NaN/Inf counts per
                               tensor, files that are also another format
      --sha256                 with the data scan, the SHA-256 of each file (same pass);
                               implies --deep
      --deny-nonfinite         make any NaN or infinity an error; implies --deep
      --header NAME:VALUE      send this header with requests for URLs (repeatable),
                               only to the URL's own host (never after a redirect to
                               another); never printed
      --ca-file PEM            trust these certificates for https URLs instead of the
                               built-in roots
  -h, --help                   print this help
  -V, --version                print the version

Exit codes:
  0  every file is valid, and every path was checked
  1  at least one file or sharded set is invalid (and every path was checked)
  2  usage error, or at least one path could not be checked (missing, permission
     denied, not a regular file, a link not followed, nothing found): such a path
     is never counted as valid or invalid
A closed output pipe ends the run quietly, with the status of the files checked so far.
";

#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) paths: Vec<OsString>,
    pub(crate) json: bool,
    pub(crate) verbose: bool,
    pub(crate) jobs: usize,
    pub(crate) mode: ReadMode,
    pub(crate) follow_links: bool,
    pub(crate) allow_empty: bool,
    pub(crate) profile: Profile,
    pub(crate) compare_reference: bool,
    pub(crate) config: Config,
    /// `--header NAME:VALUE`, sent with requests for URLs (never to another host).
    pub(crate) headers: Vec<(String, String)>,
    /// `--ca-file PATH`: the certificates trusted for https URLs instead of the built-in ones.
    pub(crate) ca_file: Option<std::path::PathBuf>,
}

impl Options {
    /// Whether the reference crate runs (its verdict decides, or is compared).
    pub(crate) fn wants_reference(&self) -> bool {
        self.compare_reference || self.profile == Profile::Reference
    }

    /// The configuration for one job, with `threads` for a deep scan of one mapped file.
    pub(crate) fn config_for(&self, threads: usize) -> Config {
        self.config.clone().threads(threads)
    }
}

#[derive(Debug)]
pub(crate) enum Command {
    Run(Options),
    Help,
    Version,
}

fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Parse the arguments after the program name.
pub(crate) fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, String> {
    let mut o = Options {
        paths: Vec::new(),
        json: false,
        verbose: false,
        jobs: default_jobs(),
        mode: ReadMode::Mmap,
        follow_links: false,
        allow_empty: false,
        profile: Profile::Strict,
        compare_reference: false,
        config: Config::default(),
        headers: Vec::new(),
        ca_file: None,
    };
    let mut no_mmap = false;
    let mut stream = false;
    let mut args = args.into_iter();
    let mut only_paths = false;
    while let Some(arg) = args.next() {
        if only_paths {
            o.paths.push(arg);
            continue;
        }
        let Some(s) = arg.to_str() else {
            o.paths.push(arg);
            continue;
        };
        if s == "-" || !s.starts_with('-') {
            o.paths.push(arg);
            continue;
        }
        // `--name=value` or `--name value`.
        let (name, inline) = match s.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            // `-j4`
            _ if s.starts_with("-j") && s.len() > 2 => ("-j", Some(s[2..].to_owned())),
            _ => (s, None),
        };
        let mut value = |what: &str| -> Result<String, String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => match args.next() {
                    Some(v) => v
                        .into_string()
                        .map_err(|_| format!("{name}: {what} is not valid UTF-8")),
                    None => Err(format!("{name} needs a value ({what})")),
                },
            }
        };
        let takes_value = matches!(
            name,
            "-j" | "--jobs"
                | "--profile"
                | "--max-header-size"
                | "--max-warnings-per-rule"
                | "--header"
                | "--ca-file"
        );
        if inline.is_some() && !takes_value {
            return Err(format!("{name} takes no value"));
        }
        match name {
            "--" => only_paths = true,
            "-h" | "--help" => return Ok(Command::Help),
            "-V" | "--version" => return Ok(Command::Version),
            "--json" => o.json = true,
            "-v" | "--verbose" => o.verbose = true,
            "--no-mmap" => no_mmap = true,
            "--stream" => stream = true,
            "--follow-links" => o.follow_links = true,
            "--allow-empty" => o.allow_empty = true,
            "--compare-reference" => o.compare_reference = true,
            "--deny-warnings" => o.config.deny_warnings = true,
            "--deep" => o.config.deep = true,
            "--sha256" => {
                o.config.deep = true;
                o.config.sha256 = true;
            }
            "--deny-nonfinite" => {
                o.config.deep = true;
                o.config.deny_nonfinite = true;
            }
            "-j" | "--jobs" => {
                let v = value("a number of jobs")?;
                o.jobs = match v.parse::<usize>() {
                    Ok(0) | Err(_) => {
                        return Err(format!("--jobs: {v:?} is not a positive integer"))
                    }
                    Ok(n) => n,
                };
            }
            "--profile" => {
                let v = value("strict or reference")?;
                o.profile = match v.as_str() {
                    "strict" => Profile::Strict,
                    "reference" => Profile::Reference,
                    _ => return Err(format!("--profile: {v:?} is not strict or reference")),
                };
            }
            "--max-header-size" => {
                let v = value("a number of bytes")?;
                o.config.max_header_size = v
                    .parse::<u64>()
                    .map_err(|_| format!("--max-header-size: {v:?} is not a number of bytes"))?;
            }
            "--header" => {
                let v = value("NAME:VALUE")?;
                let Some((name, val)) = v.split_once(':') else {
                    return Err("--header: expected NAME:VALUE".to_owned());
                };
                o.headers
                    .push((name.trim().to_owned(), val.trim().to_owned()));
            }
            "--ca-file" => {
                o.ca_file = Some(value("a PEM file")?.into());
            }
            "--max-warnings-per-rule" => {
                let v = value("a number of warnings")?;
                o.config.max_warnings_per_rule = match v.parse::<usize>() {
                    Ok(0) | Err(_) => {
                        return Err(format!(
                            "--max-warnings-per-rule: {v:?} is not a positive integer"
                        ))
                    }
                    Ok(n) => n,
                };
            }
            _ => return Err(format!("unknown option {name} (see --help)")),
        }
    }
    if no_mmap && stream {
        return Err("--no-mmap and --stream exclude each other".to_owned());
    }
    o.mode = if stream {
        ReadMode::Stream
    } else if no_mmap {
        ReadMode::Read
    } else {
        ReadMode::Mmap
    };
    o.config.reference = o.wants_reference();
    if o.config.reads_data() && o.profile == Profile::Reference {
        return Err("--deep, --sha256 and --deny-nonfinite need the strict profile".to_owned());
    }
    if o.paths.is_empty() {
        return Err("no PATH given (see --help)".to_owned());
    }
    if o.paths.iter().filter(|p| *p == "-").count() > 1 {
        return Err("'-' (standard input) can be given only once".to_owned());
    }
    Ok(Command::Run(o))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Options, String> {
        match parse(args.iter().map(OsString::from))? {
            Command::Run(o) => Ok(o),
            other => Err(format!("{other:?}")),
        }
    }

    #[test]
    fn values_inline_and_separate() {
        let o = run(&["--jobs=3", "--max-header-size", "100", "a"]).expect("valid arguments");
        assert_eq!(o.jobs, 3);
        assert_eq!(o.config.max_header_size, 100);
        assert_eq!(o.paths, vec![OsString::from("a")]);
    }

    #[test]
    fn double_dash_ends_options() {
        assert_eq!(run(&["-j4", "a"]).expect("valid arguments").jobs, 4);
        let o = run(&["--", "--json"]).expect("valid arguments");
        assert!(!o.json);
        assert_eq!(o.paths, vec![OsString::from("--json")]);
    }

    #[test]
    fn bad_usage_is_reported() {
        assert!(run(&["--jobs", "0", "a"]).is_err());
        assert!(run(&["--profile", "lax", "a"]).is_err());
        assert!(run(&["--json=1", "a"]).is_err());
        assert!(run(&["--bogus", "a"]).is_err());
        assert!(run(&[]).is_err());
        assert!(run(&["-", "-"]).is_err());
        assert!(run(&["--stream", "--no-mmap", "a"]).is_err());
    }
}
