//! The command line, parsed by hand: a dozen flags do not need a parser crate, and this keeps
//! the binary's dependencies to the library's.

use std::ffi::OsString;

use stcheck::{Profile, ReadMode, Rule};
use stcheck_gate::options::{Face, Kind, Opt, RunOptions, Spec, Value};
use stcheck_gate::Gate;

/// The help before the options.
const HELP_TOP: &str = "\
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
--sha256 stream the body once, and --sha256 compares the hash with the ids the
hub publishes and the one --expect-sha256 gives (INTEGRITY-SHA256). A
*.safetensors.index.json file or URL is checked together with the shards it
names.

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
";

/// The help after the options.
const HELP_END: &str = "\
Exit codes:
  0  every file is valid, and every path was checked
  1  at least one file or sharded set is invalid (and every path was checked)
  2  usage error, or at least one path could not be checked (missing, permission
     denied, not a regular file, a link not followed, nothing found): such a path
     is never counted as valid or invalid
A closed output pipe ends the run quietly, with the status of the files checked so far.
";

/// An entry of the help's options: the command line's own, or a run option of the gate's
/// table, written from its row ([`stcheck_gate::options::Spec::help`]).
enum Help {
    Own(&'static str),
    Run(Opt),
}

/// The options of the help, in its order.
const HELP_OPTIONS: &[Help] = &[
    Help::Own(
        "      --format text|json|sarif|github
                               text (default): the lines above;
                               json: JSON Lines, one {\"type\":...,\"data\":...} object
                               per file, index and a final summary (docs/json-output.md);
                               sarif: one SARIF 2.1.0 log for code scanning (docs/sarif.md);
                               github: GitHub Actions annotations, ::error file=...::
                               per finding (the byte offset in its message), then the
                               summary line
",
    ),
    Help::Own(
        "      --json                   the same as --format json
",
    ),
    Help::Own(
        "  -q, --quiet                  text: print only what failed (invalid files and sets, paths
                               not checked) and the summary
",
    ),
    Help::Own(
        "  -v, --verbose                list every tensor
",
    ),
    Help::Own(
        "      --progress               always draw the progress bar on stderr
",
    ),
    Help::Own(
        "      --no-progress            never draw it (default: drawn when stderr is a terminal;
                               by bytes, with rate and time left, for --deep and --sha256,
                               else by files; never on stdout)
",
    ),
    Help::Own(
        "  -j, --jobs N                 check N files in parallel (default: the number of cores);
                               output keeps the input order
",
    ),
    Help::Run(Opt::UrlJobs),
    Help::Run(Opt::MaxRequests),
    Help::Own(
        "      --mmap                   memory-map files instead of reading them: faster only for
                               --deep/--sha256 of files already in the page cache (reading
                               copies every byte out of it), and a file truncated while it
                               is checked kills the process with SIGBUS; only for files
                               nobody else can write
",
    ),
    Help::Own(
        "      --no-mmap                read files with ordinary reads (the default; kept so that
                               scripts which ask for it keep working)
",
    ),
    Help::Own(
        "      --stream                 validate files in one forward pass through a fixed buffer
                               (standard input always streams)
",
    ),
    Help::Run(Opt::FollowLinks),
    Help::Run(Opt::AllowEmpty),
    Help::Run(Opt::Exclude),
    Help::Run(Opt::WithSets),
    Help::Run(Opt::AllowOtherFormats),
    Help::Run(Opt::Profile),
    Help::Run(Opt::PortableTo),
    Help::Run(Opt::RefusalsAreErrors),
    Help::Run(Opt::CompareReference),
    Help::Run(Opt::Deny),
    Help::Run(Opt::Allow),
    Help::Run(Opt::DenyWarnings),
    Help::Run(Opt::MaxHeaderSize),
    Help::Run(Opt::MaxWarningsPerRule),
    Help::Run(Opt::Deep),
    Help::Run(Opt::Sha256),
    Help::Run(Opt::ExpectSha256),
    Help::Run(Opt::DenyNonfinite),
    Help::Run(Opt::Header),
    Help::Run(Opt::CaFile),
    Help::Run(Opt::Timeout),
    Help::Own(
        "      --explain RULE           print the rule's text from SPEC.md (statement, rationale,
                               the reference's behaviour) and exit
",
    ),
    Help::Own(
        "  -h, --help                   print this help
",
    ),
    Help::Own(
        "  -V, --version                print the version

",
    ),
];

/// The help: `--help` prints it.
pub(crate) fn help() -> String {
    let mut out = String::from(HELP_TOP);
    for entry in HELP_OPTIONS {
        match entry {
            Help::Own(text) => out.push_str(text),
            Help::Run(opt) => {
                let spec = Spec::of(*opt);
                let mut head = format!("      {}", spec.cli.unwrap_or_default());
                if !spec.value.is_empty() {
                    head = format!("{head} {}", spec.value);
                }
                // The text starts in column 31, on the flag's line when the flag leaves room.
                let mut lines = spec.help.lines();
                if head.len() < 30 {
                    let first = lines.next().unwrap_or_default();
                    out.push_str(&format!("{head:<31}{first}\n"));
                } else {
                    out.push_str(&format!("{head}\n"));
                }
                for line in lines {
                    out.push_str(&format!("{:31}{line}\n", ""));
                }
            }
        }
    }
    out.push_str(HELP_END);
    out
}

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
        // A run option: the gate's table reads its value.
        if let Some(spec) = Spec::find(Face::Cli, name) {
            if spec.kind == Kind::Flag {
                if inline.is_some() {
                    return Err(format!("{name} takes no value"));
                }
                run.set(spec.opt, Value::Bool(true))
            } else {
                run.set_text(spec.opt, &value(spec.value)?)
            }
            .map_err(|e| e.0)?;
            continue;
        }
        let takes_value = matches!(name, "-j" | "--jobs" | "--format" | "--explain");
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
            "-v" | "--verbose" => o.verbose = true,
            "--no-mmap" => no_mmap = true,
            "--mmap" => mmap = true,
            "--stream" => stream = true,
            "-j" | "--jobs" => {
                let v = value("a number of jobs")?;
                o.jobs = match v.parse::<usize>() {
                    Ok(0) | Err(_) => {
                        return Err(format!("--jobs: {v:?} is not a positive integer"))
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
    fn help_is_its_golden() {
        // The run options' part is written from the gate's table; the whole stays as it was.
        let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/help.txt");
        let want = std::fs::read_to_string(golden).expect("the golden reads");
        assert_eq!(help(), want);
    }

    #[test]
    fn run_option_values_are_refused_by_the_table() {
        for (args, want) in [
            (
                &["--url-jobs", "0"][..],
                "--url-jobs: 0 is not a positive integer",
            ),
            (
                &["--max-requests=0"],
                "--max-requests: 0 is not a positive integer",
            ),
            (
                &["--max-requests", "x"],
                "--max-requests: \"x\" is not a positive integer",
            ),
            (
                &["--timeout", "1e9"],
                "--timeout: 1000000000 is not a number of seconds above 0 (at most 31536000)",
            ),
            (
                &["--profile", "lax"],
                "--profile: \"lax\" is not strict, reference or portable",
            ),
            (&["--deep=yes"], "--deep takes no value"),
            (&["--header", "X"], "--header: expected NAME:VALUE"),
        ] {
            let args: Vec<&str> = args.iter().copied().chain(["a"]).collect();
            assert_eq!(run(&args).expect_err(want), want);
        }
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
