//! The command line, parsed by hand: a dozen flags do not need a parser crate, and this keeps
//! the binary's dependencies to the library's.

use std::ffi::OsString;

use stcheck::{Profile, ReadMode, Rule};
use stcheck_gate::options::RunOptions;
use stcheck_gate::Gate;

pub(crate) const HELP: &str = "\
stcheck: a strict validator for safetensors files

Usage: stcheck [OPTIONS] PATH...
       stcheck --explain RULE

Each PATH is a file, a directory (walked recursively for *.safetensors and
*.safetensors.index.json files, names in any case), '-' for one file on
standard input, or a URL (http://, https://, or hf://ORG/REPO[@REVISION]/FILE
for the Hugging Face hub; HF_ENDPOINT sets its host, HF_TOKEN is sent to it
only). hf://ORG/REPO[@REVISION] (or hf://datasets/ORG/REPO...) checks a whole
repository: its files are listed at the commit the revision names, and checked
as a directory's would be. A URL is checked without downloading it: range
requests for the header, the file's length from the server; --deep and
--sha256 stream the body once, and --sha256 compares the hash with the one the
hub publishes (INTEGRITY-SHA256). A *.safetensors.index.json file or URL is
checked together with the shards it names.

Output (stdout, text): one line per file, then a summary line:
  path: ok (3 tensors, 25 parameters; U8 16, F16 9)
  path: error RULE-ID: tensor \"name\": message (at offset 0x4b)
  path: not checked: reason
  summary: 3 files: 1 valid, 1 invalid, 1 could not be checked (0.02 s)
Warnings of a valid file follow it, indented (`  warning RULE-ID: ...`); the
deep scan and the hash are on the file's own line (`...; deep: N data bytes
scanned, no NaN or infinity; sha256 HEX`), so `grep -v ': ok'` keeps exactly the
failures, the warnings and the summary (-v and --compare-reference add lines). A sharded set's shards follow its line,
indented (`  shard dir/name: ...`). Everything needed to judge the run is on
stdout; errors reading a path are repeated on stderr as `stcheck: path: message`.

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
      --format text|json|sarif|github
                               text (default): the lines above;
                               json: JSON Lines, one {\"type\":...,\"data\":...} object
                               per file, index and a final summary (docs/json-output.md);
                               sarif: one SARIF 2.1.0 log for code scanning (docs/sarif.md);
                               github: GitHub Actions annotations, ::error file=...::
                               per finding (the byte offset in its message), then the
                               summary line
      --json                   the same as --format json
  -q, --quiet                  text: print only what failed (invalid files and sets, paths
                               not checked) and the summary
  -v, --verbose                list every tensor
      --progress               always draw the progress bar on stderr
      --no-progress            never draw it (default: drawn when stderr is a terminal;
                               by bytes, with rate and time left, for --deep and --sha256,
                               else by files; never on stdout)
  -j, --jobs N                 check N files in parallel (default: the number of cores);
                               output keeps the input order
      --url-jobs N             check N URLs in parallel (default 8: a URL waits on the
                               network, not the CPU; --jobs still caps the local files)
      --max-requests N         send at most N HTTP requests in the whole run (redirects
                               and retries included; default 1000000); a URL past the
                               budget is not checked (exit 2)
      --mmap                   memory-map files instead of reading them: faster only for
                               --deep/--sha256 of files already in the page cache (reading
                               copies every byte out of it), and a file truncated while it
                               is checked kills the process with SIGBUS; only for files
                               nobody else can write
      --no-mmap                read files with ordinary reads (the default; kept so that
                               scripts which ask for it keep working)
      --stream                 validate files in one forward pass through a fixed buffer
                               (standard input always streams)
      --follow-links           also follow links to regular files outside the directory
                               PATH (and shard links leaving it), as in a Hugging Face
                               cache snapshot whose files link to ../../blobs/; never to
                               a FIFO or device, and directories outside every PATH are
                               still never walked
      --allow-empty            accept a directory PATH with no *.safetensors or
                               *.safetensors.index.json file in it
      --exclude GLOB           leave out paths below a directory PATH that match GLOB
                               (repeatable; gitignore-style: a GLOB without '/' matches
                               a name at any depth, one with '/' the path from PATH;
                               '*', '?', '[a-z]', '**'; a trailing '/' matches
                               directories only; an excluded directory is not walked)
      --with-sets              a *.safetensors FILE named is checked with the sharded
                               sets of its directory: each *.safetensors.index.json
                               there is checked too, with its shards (the pre-commit
                               hooks pass it: a commit of one shard checks its set)
      --allow-other-formats    accept weight files of other formats (pickle .bin/.pt/
                               .pth/.ckpt/.pkl, GGUF, .h5, .msgpack, .onnx, ...) found
                               in a directory PATH or an hf:// repository; by default
                               each is reported as not checked (exit 2)
      --profile strict|reference|portable
                               strict (default): the rules of SPEC.md;
                               reference: the verdict of the safetensors 0.8.0 crate;
                               portable: strict, and read the same way by every reader
                               of the reader table (corpus/readers.json, SPEC.md
                               \"Portable profile\"); the report says which readers load
                               the file and which refuse it, and why
      --portable-to READERS    the readers the portable profile promises, comma-separated
                               (default: all: hub-js, mlx, mlx-numpy, python-numpy,
                               rust-safetensors); implies --profile portable
      --refusals-are-errors    with the portable profile, a chosen reader that refuses the
                               file (an unsupported dtype, say) also rejects it
      --compare-reference      also report the reference crate's verdict, and how it
                               differs from the strict one
      --deny RULE              make the warning RULE an error (repeat, or RULE,RULE)
      --allow RULE             do not report the warning RULE (repeat, or RULE,RULE);
                               an error rule cannot be allowed
      --deny-warnings          treat every warning as an error (except those --allow hides)
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
      --timeout SECONDS        the most time one URL may take, everything included
                               (redirects, retries, the data with --deep, and for an
                               index all its shards, fetched 4 at a time); past it the
                               URL is not checked (exit 2) and the run goes on. Default:
                               120, or 3600 when the data is read (--deep, --sha256,
                               --deny-nonfinite). A body slower than 1 KiB per 30 s is
                               dropped sooner
      --explain RULE           print the rule's text from SPEC.md (statement, rationale,
                               the reference's behaviour) and exit
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

/// The output form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Text,
    Json,
    Sarif,
    Github,
}

/// Whether the progress bar is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProgressMode {
    /// When standard error is a terminal.
    Auto,
    Always,
    Never,
}

#[derive(Debug)]
pub(crate) struct Options {
    pub(crate) paths: Vec<OsString>,
    pub(crate) format: Format,
    pub(crate) quiet: bool,
    pub(crate) progress: ProgressMode,
    pub(crate) verbose: bool,
    /// `--jobs`, when given.
    pub(crate) jobs: Option<usize>,
    /// What the run checks and how, resolved once (the gate's one option resolution).
    pub(crate) gate: Gate,
}

impl Options {
    /// How many files are checked at once: `--jobs`, else the number of cores. Asked only
    /// when there is more than one file, or one file's data to scan: finding the number of
    /// cores reads the cgroup's CPU quota, a cost a one-file header check does not pay.
    pub(crate) fn jobs(&self) -> usize {
        self.jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// The printers' options.
    pub(crate) fn print(&self) -> stcheck_print::Options {
        stcheck_print::Options::new(self.gate.profile())
            .verbose(self.verbose)
            .quiet(self.quiet)
            .compare_reference(self.gate.options().compare_reference)
    }
}

#[derive(Debug)]
pub(crate) enum Command {
    Run(Box<Options>),
    Explain(Rule),
    Help,
    Version,
}

/// Parse the arguments after the program name.
pub(crate) fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, String> {
    let mut o = Parsed {
        paths: Vec::new(),
        format: Format::Text,
        quiet: false,
        progress: ProgressMode::Auto,
        verbose: false,
        jobs: None,
    };
    let mut run = RunOptions::default();
    let mut no_mmap = false;
    let mut mmap = false;
    let mut stream = false;
    let mut args = args.into_iter();
    let mut only_paths = false;
    // --help, --version or --explain: they print and check nothing.
    let mut info: Option<(&str, Command)> = None;
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
                | "--url-jobs"
                | "--max-requests"
                | "--exclude"
                | "--profile"
                | "--portable-to"
                | "--max-header-size"
                | "--max-warnings-per-rule"
                | "--header"
                | "--ca-file"
                | "--timeout"
                | "--format"
                | "--deny"
                | "--allow"
                | "--explain"
        );
        if inline.is_some() && !takes_value {
            return Err(format!("{name} takes no value"));
        }
        match name {
            "--" => only_paths = true,
            "-h" | "--help" => {
                info.get_or_insert(("--help", Command::Help));
            }
            "-V" | "--version" => {
                info.get_or_insert(("--version", Command::Version));
            }
            "--json" => o.format = Format::Json,
            "--format" => {
                let v = value("text, json, sarif or github")?;
                o.format = match v.as_str() {
                    "text" => Format::Text,
                    "json" => Format::Json,
                    "sarif" => Format::Sarif,
                    "github" => Format::Github,
                    _ => {
                        return Err(format!(
                            "--format: {v:?} is not text, json, sarif or github"
                        ))
                    }
                };
            }
            "-q" | "--quiet" => o.quiet = true,
            "--progress" => o.progress = ProgressMode::Always,
            "--no-progress" => o.progress = ProgressMode::Never,
            "--explain" => {
                let v = value("a rule ID")?;
                let rule = rule_arg("--explain", &v)?;
                info.get_or_insert(("--explain", Command::Explain(rule)));
            }
            "--deny" => run
                .deny
                .extend(value("a rule ID")?.split(',').map(str::to_owned)),
            "--allow" => run
                .allow
                .extend(value("a rule ID")?.split(',').map(str::to_owned)),
            "-v" | "--verbose" => o.verbose = true,
            "--no-mmap" => no_mmap = true,
            "--mmap" => mmap = true,
            "--stream" => stream = true,
            "--follow-links" => run.follow_links = true,
            "--allow-empty" => run.allow_empty = true,
            "--allow-other-formats" => run.allow_other_formats = true,
            "--with-sets" => run.with_sets = true,
            "--url-jobs" => {
                let v = value("a number of jobs")?;
                run.url_jobs = match v.parse::<usize>() {
                    Ok(0) | Err(_) => {
                        return Err(format!("--url-jobs: {v:?} is not a positive integer"))
                    }
                    Ok(n) => Some(n),
                };
            }
            "--max-requests" => {
                let v = value("a number of requests")?;
                run.max_requests = match v.parse::<u64>() {
                    Ok(0) | Err(_) => {
                        return Err(format!("--max-requests: {v:?} is not a positive integer"))
                    }
                    Ok(n) => Some(n),
                };
            }
            "--exclude" => run.exclude.push(value("a glob")?),
            "--compare-reference" => run.compare_reference = true,
            "--deny-warnings" => run.deny_warnings = true,
            "--deep" => run.deep = true,
            "--sha256" => run.sha256 = true,
            "--deny-nonfinite" => run.deny_nonfinite = true,
            "-j" | "--jobs" => {
                let v = value("a number of jobs")?;
                o.jobs = match v.parse::<usize>() {
                    Ok(0) | Err(_) => {
                        return Err(format!("--jobs: {v:?} is not a positive integer"))
                    }
                    Ok(n) => Some(n),
                };
            }
            "--profile" => {
                let v = value("strict, reference or portable")?;
                run.profile = match v.as_str() {
                    "strict" => Profile::Strict,
                    "reference" => Profile::Reference,
                    "portable" => Profile::Portable,
                    _ => {
                        return Err(format!(
                            "--profile: {v:?} is not strict, reference or portable"
                        ))
                    }
                };
            }
            "--portable-to" => {
                let v = value("reader IDs, comma-separated")?;
                run.portable_to = Some(v.split(',').map(|r| r.trim().to_owned()).collect());
            }
            "--refusals-are-errors" => run.refusals_are_errors = true,
            "--max-header-size" => {
                let v = value("a number of bytes")?;
                run.max_header_size =
                    Some(v.parse::<u64>().map_err(|_| {
                        format!("--max-header-size: {v:?} is not a number of bytes")
                    })?);
            }
            "--header" => {
                let v = value("NAME:VALUE")?;
                let Some((name, val)) = v.split_once(':') else {
                    return Err("--header: expected NAME:VALUE".to_owned());
                };
                run.headers
                    .push((name.trim().to_owned(), val.trim().to_owned()));
            }
            "--ca-file" => {
                run.ca_file = Some(value("a PEM file")?.into());
            }
            "--timeout" => run.timeout = Some(seconds("--timeout", &value("seconds")?)?),
            "--max-warnings-per-rule" => {
                let v = value("a number of warnings")?;
                // 0 is refused by the one resolution (RunOptions::resolve), for every face.
                run.max_warnings_per_rule = match v.parse::<usize>() {
                    Err(_) => {
                        return Err(format!(
                            "--max-warnings-per-rule: {v:?} is not a positive integer"
                        ))
                    }
                    Ok(n) => Some(n),
                };
            }
            _ => return Err(format!("unknown option {name} (see --help)")),
        }
    }
    if let Some((option, command)) = info {
        // A gate that runs `stcheck model.safetensors --explain RULE` must not pass: the path
        // would not be checked.
        if let Some(p) = o.paths.first() {
            return Err(format!(
                "{option} checks nothing, so a PATH next to it ({}) would not be checked; run \
                 {option} on its own",
                stcheck_gate::fs::display_path(std::path::Path::new(p))
            ));
        }
        return Ok(command);
    }
    match (mmap, no_mmap, stream) {
        (_, true, true) => return Err("--no-mmap and --stream exclude each other".to_owned()),
        (true, true, _) => return Err("--mmap and --no-mmap exclude each other".to_owned()),
        (true, _, true) => return Err("--mmap and --stream exclude each other".to_owned()),
        _ => {}
    }
    run.mode = if stream {
        ReadMode::Stream
    } else if mmap {
        ReadMode::Mmap
    } else {
        ReadMode::Read
    };
    let named = match o.format {
        Format::Sarif => Some("sarif"),
        Format::Github => Some("github"),
        Format::Text | Format::Json => None,
    };
    if let Some(name) = named.filter(|_| run.effective_profile() == Profile::Reference) {
        return Err(format!(
            "--format {name} needs the strict profile: its findings name the rules of SPEC.md, \
             and the reference profile's verdicts have none (use --compare-reference)"
        ));
    }
    let gate = Gate::new(run).map_err(|e| e.0)?;
    if o.paths.is_empty() {
        return Err("no PATH given (see --help)".to_owned());
    }
    if o.paths.iter().filter(|p| *p == "-").count() > 1 {
        return Err("'-' (standard input) can be given only once".to_owned());
    }
    Ok(Command::Run(Box::new(Options {
        paths: o.paths,
        format: o.format,
        quiet: o.quiet,
        progress: o.progress,
        verbose: o.verbose,
        jobs: o.jobs,
        gate,
    })))
}

/// The options of the output while they are parsed.
struct Parsed {
    paths: Vec<OsString>,
    format: Format,
    quiet: bool,
    progress: ProgressMode,
    verbose: bool,
    jobs: Option<usize>,
}

/// The longest `--timeout`: a year, far past any real transfer (and any `Instant` overflow).
const MAX_TIMEOUT_SECS: f64 = 365.0 * 24.0 * 3600.0;

/// A positive, finite number of seconds (fractions allowed) for `option`.
fn seconds(option: &str, v: &str) -> Result<std::time::Duration, String> {
    match v.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= MAX_TIMEOUT_SECS => {
            Ok(std::time::Duration::from_secs_f64(s))
        }
        _ => Err(format!(
            "{option}: {v:?} is not a number of seconds above 0 (at most {MAX_TIMEOUT_SECS})"
        )),
    }
}

/// The rule named by `id` (in any case) for `option`, or a usage error naming the rules near it.
fn rule_arg(option: &str, id: &str) -> Result<Rule, String> {
    stcheck_gate::options::rule_arg(option, id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Options, String> {
        match parse(args.iter().map(OsString::from))? {
            Command::Run(o) => Ok(*o),
            other => Err(format!("{other:?}")),
        }
    }

    #[test]
    fn values_inline_and_separate() {
        let o = run(&["--jobs=3", "--max-header-size", "100", "a"]).expect("valid arguments");
        assert_eq!(o.jobs, Some(3));
        assert_eq!(o.gate.config().max_header_size, 100);
        assert_eq!(o.paths, vec![OsString::from("a")]);
    }

    #[test]
    fn double_dash_ends_options() {
        assert_eq!(run(&["-j4", "a"]).expect("valid arguments").jobs, Some(4));
        let o = run(&["--", "--json"]).expect("valid arguments");
        assert_eq!(o.format, Format::Text);
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
        assert!(run(&["--format", "xml", "a"]).is_err());
        assert!(run(&["--format", "sarif", "--profile", "reference", "a"]).is_err());
        assert!(run(&["--format", "github", "--profile", "reference", "a"]).is_err());
        for bad in ["0", "-2", "x", "inf", "NaN", "1e9", ""] {
            let e = run(&["--timeout", bad, "a"]).expect_err(bad);
            assert!(e.starts_with("--timeout: "), "{e}");
        }
        assert!(run(&["--timeout"]).is_err());
    }

    #[test]
    fn timeouts() {
        use std::time::Duration;
        assert_eq!(run(&["a"]).map(|o| o.gate.options().timeout), Ok(None));
        assert_eq!(
            run(&["--timeout", "90", "a"]).map(|o| o.gate.options().timeout),
            Ok(Some(Duration::from_secs(90)))
        );
        assert_eq!(
            run(&["--timeout=0.5", "a"]).map(|o| o.gate.options().timeout),
            Ok(Some(Duration::from_millis(500)))
        );
    }

    #[test]
    fn formats() {
        assert_eq!(run(&["--json", "a"]).map(|o| o.format), Ok(Format::Json));
        assert_eq!(
            run(&["--format=sarif", "a"]).map(|o| o.format),
            Ok(Format::Sarif)
        );
        assert_eq!(
            run(&["--format=github", "a"]).map(|o| o.format),
            Ok(Format::Github)
        );
        assert_eq!(
            run(&["--format", "text", "a"]).map(|o| o.format),
            Ok(Format::Text)
        );
        assert_eq!(
            run(&["--no-progress", "a"]).map(|o| o.progress),
            Ok(ProgressMode::Never)
        );
    }

    #[test]
    fn warning_controls() {
        let o = run(&[
            "--deny",
            "LAYOUT-ALIGN,name-path",
            "--allow",
            "FRAME-ALIGN",
            "a",
        ])
        .expect("valid arguments");
        assert_eq!(
            o.gate.config().deny,
            vec![Rule::LayoutAlign, Rule::NamePath]
        );
        assert_eq!(o.gate.config().allow, vec![Rule::FrameAlign]);
        let e = run(&["--allow", "LAYOUT-GAP", "a"]).expect_err("an error rule");
        assert!(e.contains("LAYOUT-GAP is an error"), "{e}");
        let e = run(&["--deny", "LAYOUT-ALIGNN", "a"]).expect_err("no such rule");
        assert!(e.ends_with("did you mean LAYOUT-ALIGN?"), "{e}");
        let e = run(&["--deny", "NAME", "a"]).expect_err("no such rule");
        assert!(e.contains("NAME-CONTROL, NAME-EMPTY"), "{e}");
        assert!(run(&["--deny", "NAME-PATH", "--allow", "NAME-PATH", "a"]).is_err());
        assert!(run(&["--deny-nonfinite", "--allow", "DATA-NONFINITE", "a"]).is_err());
    }

    #[test]
    fn modes_that_check_nothing_refuse_a_path() {
        for args in [
            &["bad.safetensors", "--explain", "LAYOUT-GAP"][..],
            &["--explain", "LAYOUT-GAP", "bad.safetensors"],
            &["bad.safetensors", "--help"],
            &["-V", "bad.safetensors"],
        ] {
            let e = parse(args.iter().map(OsString::from)).expect_err("a usage error");
            assert!(e.contains("would not be checked"), "{args:?}: {e}");
        }
        assert!(matches!(
            parse(["--help"].map(OsString::from)),
            Ok(Command::Help)
        ));
    }

    #[test]
    fn explain() {
        match parse(["--explain", "layout-gap"].map(OsString::from)) {
            Ok(Command::Explain(r)) => assert_eq!(r, Rule::LayoutGap),
            other => panic!("{other:?}"),
        }
        let e = parse(["--explain", "LAYOUT-GAPS"].map(OsString::from)).expect_err("unknown");
        assert!(e.contains("did you mean LAYOUT-GAP?"), "{e}");
    }
}
