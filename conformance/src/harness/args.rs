//! The command line both runners take: the options they share, and a hook for each runner's
//! own.

use std::path::PathBuf;

use super::pool::DEFAULT_MAX_STARTUP_DEATHS;

/// The options both runners take.
#[derive(Debug, Clone, Default)]
pub struct CommonArgs {
    /// `--config FILE`: the built-in adapters.
    pub config: Option<PathBuf>,
    /// `--corpus DIR|FILE.tar.gz`: the corpus (a directory or a release archive).
    pub corpus: Option<PathBuf>,
    /// `--adapter NAME`.
    pub adapter: Option<String>,
    /// What follows `--`: the adapter's command.
    pub command: Vec<String>,
    /// `--timeout SECONDS`.
    pub timeout: Option<f64>,
    /// `-j`, `--jobs N`.
    pub jobs: Option<usize>,
    /// `--run GLOB` (repeatable).
    pub run: Vec<String>,
    /// `--skip GLOB` (repeatable).
    pub skip: Vec<String>,
    /// `--known-failures FILE`.
    pub known: Option<PathBuf>,
    /// `--no-known-failures`.
    pub no_known: bool,
    /// `--bless`.
    pub bless: bool,
    /// `--json`.
    pub json: bool,
    /// `--save FILE`.
    pub save: Option<PathBuf>,
    /// `-v`, `--verbose`.
    pub verbose: bool,
    /// `--max-startup-deaths N` (default [`DEFAULT_MAX_STARTUP_DEATHS`]; 0: never stop).
    pub max_startup_deaths: Option<usize>,
    /// Words that are not options: a subcommand and its arguments.
    pub rest: Vec<String>,
}

impl CommonArgs {
    /// `--max-startup-deaths`, or its default.
    pub fn max_startup_deaths(&self) -> usize {
        self.max_startup_deaths
            .unwrap_or(DEFAULT_MAX_STARTUP_DEATHS)
    }
}

/// The help of the options every runner takes; `{item}` is replaced by the runner's word for
/// what it runs (`case`, `task`), `{adapter}` by its word for an adapter.
pub const COMMON_HELP: &str = "Options of every runner:
  --adapter NAME         the adapter's name (for reports); with no command after --, the
                         built-in {adapter} of that name in --config
  --corpus DIR|FILE.tar.gz
                         the corpus: a corpus/ directory or a release archive (made by
                         `stcorpus pack`; unpacked into ~/.cache/stcheck/corpus
                         and checked against the archive on every run).
                         Default: $STCONFORM_CORPUS, else ./corpus, else the copy bundled
                         with an installed runner, else the repository's
  --config FILE          the built-in {adapter}s (default: see above)
  --timeout SECONDS      per-{item} timeout (default: see above)
  -j, --jobs N           parallel workers (default: the number of CPUs, at most 8)
  --run GLOB             only {item}s whose ID matches (repeatable; * and ?)
  --skip GLOB            skip {item}s whose ID matches (repeatable)
  --known-failures FILE  compare with FILE (default: the built-in {adapter}'s file, if any)
  --no-known-failures    do not compare with a known-failures file
  --bless                write this run's results into the known-failures file (refused when
                         every result is a CRASH or a TIMEOUT: the {adapter} never ran)
  --max-startup-deaths N stop the run when the {adapter} gives no answer (it crashes, dies
                         or times out) on N {item}s in a row before it has answered any, and
                         show its standard error's error lines (default: 5; 0: never stop)
  --json                 print the results as JSON on stdout (the summary goes to stderr)
  --save FILE            also write the results as JSON to FILE
  -v, --verbose          list every {item} in the summary, not only those that are not PASS
  --version              the program's version and its corpus release
  -h, --help             this help

Exit codes:
  0  every result is as expected: as recorded in the known-failures file, or, without one,
     no failure
  1  a result differs: a new failure, a changed result (or a writer's form), or a known
     failure that now passes
  2  usage or I/O error, or a run stopped because the {adapter} never answered";

/// The words of a command line, for a runner's own options.
#[derive(Debug)]
pub struct Cursor<'a> {
    argv: &'a [String],
    at: usize,
}

impl Cursor<'_> {
    /// The value of `flag`: the next word.
    pub fn value(&mut self, flag: &str) -> Result<String, String> {
        self.at += 1;
        self.argv
            .get(self.at)
            .cloned()
            .ok_or_else(|| format!("{flag} needs a value"))
    }

    /// A number of seconds in `low..=86400` (`low` excluded when `positive`).
    pub fn seconds(&mut self, flag: &str, positive: bool) -> Result<f64, String> {
        let v = self.value(flag)?;
        let t: f64 = v.parse().map_err(|_| format!("bad {flag} {v:?}"))?;
        let low_ok = if positive { t > 0.0 } else { t >= 0.0 };
        if !(low_ok && t <= 86_400.0) {
            return Err(format!("bad {flag} {v:?}"));
        }
        Ok(t)
    }

    /// A whole number, at least `min`.
    pub fn count(&mut self, flag: &str, min: usize) -> Result<usize, String> {
        let v = self.value(flag)?;
        v.parse()
            .ok()
            .filter(|&n| n >= min)
            .ok_or(format!("bad {flag} {v:?}"))
    }
}

/// Whether the command line asks for help (`-h`/`--help` before any `--`).
pub fn wants_help(argv: &[String]) -> bool {
    argv.iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "-h" || a == "--help")
}

/// Parse `argv`. `own` is given each word the common options do not know, with a cursor to
/// take its value; it returns whether it took the word.
pub fn parse(
    argv: &[String],
    mut own: impl FnMut(&str, &mut Cursor<'_>) -> Result<bool, String>,
) -> Result<CommonArgs, String> {
    let mut a = CommonArgs::default();
    let mut c = Cursor { argv, at: 0 };
    while c.at < argv.len() {
        let arg = argv[c.at].as_str();
        match arg {
            "--" => {
                a.command = argv[c.at + 1..].to_vec();
                break;
            }
            "--config" => a.config = Some(c.value(arg)?.into()),
            "--corpus" => a.corpus = Some(c.value(arg)?.into()),
            "--adapter" => a.adapter = Some(c.value(arg)?),
            "--timeout" => a.timeout = Some(c.seconds(arg, true)?),
            "-j" | "--jobs" => a.jobs = Some(c.count("--jobs", 1)?),
            "--run" => a.run.push(c.value(arg)?),
            "--skip" => a.skip.push(c.value(arg)?),
            "--known-failures" => a.known = Some(c.value(arg)?.into()),
            "--no-known-failures" => a.no_known = true,
            "--bless" => a.bless = true,
            "--json" => a.json = true,
            "--save" => a.save = Some(c.value(arg)?.into()),
            "-v" | "--verbose" => a.verbose = true,
            "--max-startup-deaths" => a.max_startup_deaths = Some(c.count(arg, 0)?),
            _ if own(arg, &mut c)? => {}
            _ if arg.starts_with('-') => return Err(format!("unknown option {arg}")),
            _ => a.rest.push(arg.to_owned()),
        }
        c.at += 1;
    }
    Ok(a)
}

/// A runner's own options, parsed beside the common ones.
pub trait Own: Default {
    /// Take `arg` (with its value from `c`) if it is one of these options.
    fn take(&mut self, arg: &str, c: &mut Cursor<'_>) -> Result<bool, String>;
}

/// A parsed command line: the common options and the runner's own.
#[derive(Debug, Clone, Default)]
pub struct Args<O> {
    /// The options both runners take.
    pub common: CommonArgs,
    /// The runner's own.
    pub own: O,
}

/// Parse a runner's command line.
pub fn parse_with<O: Own>(argv: &[String]) -> Result<Args<O>, String> {
    let mut own = O::default();
    let common = parse(argv, |arg, c| own.take(arg, c))?;
    Ok(Args { common, own })
}
