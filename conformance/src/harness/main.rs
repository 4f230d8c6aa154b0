//! From a parsed command line to an exit code: the parts of `stconform` and `stwrite` that
//! are the same (help, errors, the built-in adapter, the known-failures file, progress, and
//! the end of a run: save, bless, compare, print, exit).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::args::{self, Args, CommonArgs, Own};
use super::config::{AdapterConfig, Config};
use super::known::{Difference, Extra, Known, Universe};
use super::paths;
use super::pool::Tripwire;
use super::results::write_json;
use super::{Judged, Results, Verdict};

/// Exit status: every result is as expected.
pub const EXIT_OK: u8 = 0;
/// Exit status: a result differs.
pub const EXIT_DIFFERS: u8 = 1;
/// Exit status: a usage or I/O error, or a run that could not be made.
pub const EXIT_ERROR: u8 = 2;

/// A subcommand: its name and what runs it.
pub type Command<O> = (&'static str, fn(&Args<O>) -> ExitCode);

/// Which runner this is.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    /// The program's name, the prefix of its messages (`stconform`).
    pub name: &'static str,
    /// Its `--help` text.
    pub usage: &'static str,
    /// The built-in adapters' file, relative to the repository (`conformance/adapters.json`).
    pub config: &'static str,
    /// That file as the program was built with it (used when no checkout is around).
    pub embedded_config: &'static str,
    /// What an adapter is called in messages (`adapter`, `writer`).
    pub adapter: &'static str,
    /// What it runs an adapter on (`case`, `task`).
    pub item: &'static str,
}

impl Tool {
    /// The whole `--help`: the runner's usage, then the options every runner takes.
    pub fn help(&self) -> String {
        let common = args::COMMON_HELP
            .replace("{item}", self.item)
            .replace("{adapter}", self.adapter);
        format!("{}\n\n{common}", self.usage)
    }

    /// Print `prog: msg` on standard error; exit status 2.
    pub fn fail(&self, msg: impl std::fmt::Display) -> ExitCode {
        eprintln!("{}: {msg}", self.name);
        ExitCode::from(EXIT_ERROR)
    }

    /// Help, parsing and dispatch: `--help` prints the usage; a parse error fails with it;
    /// the first word that is not an option picks a subcommand of `commands` (`list` is
    /// everyone's); without one, `run` runs the adapter.
    pub fn main<O: Own>(&self, commands: &[Command<O>], run: fn(Args<O>) -> ExitCode) -> ExitCode {
        let argv: Vec<String> = std::env::args().skip(1).collect();
        if args::wants_help(&argv) {
            println!("{}", self.help());
            return ExitCode::SUCCESS;
        }
        if argv
            .iter()
            .take_while(|a| *a != "--")
            .any(|a| a == "--version")
        {
            println!("{}", version_line(self.name));
            return ExitCode::SUCCESS;
        }
        let a = match args::parse_with::<O>(&argv) {
            Ok(a) => a,
            Err(e) => return self.fail(format!("{e} (see --help)")),
        };
        let Some(word) = a.common.rest.first() else {
            return run(a);
        };
        if word == "list" {
            return self.list(&a.common);
        }
        match commands.iter().find(|(name, _)| name == word) {
            Some((_, command)) => command(&a),
            None => self.fail(format!("unknown command {word:?} (see --help)")),
        }
    }

    /// The built-in adapters: `--config`, else the file under the current directory or the
    /// checkout the runner was built from, else the copy inside the program (an installed
    /// runner; its path is shown as `built-in`).
    pub fn load_config(&self, common: &CommonArgs) -> Result<(Config, PathBuf), String> {
        let path = match &common.config {
            Some(p) => p.clone(),
            None => {
                let found = paths::local_or_repo(self.config);
                if !found.is_file() {
                    let c = Config::embedded(self.embedded_config)?;
                    return Ok((c, PathBuf::from("built-in")));
                }
                found
            }
        };
        Config::load(&path).map(|c| (c, path))
    }

    /// `list`: the built-in adapters, one a line: name, `ci` or `manual`, description.
    pub fn list(&self, common: &CommonArgs) -> ExitCode {
        let config = match self.load_config(common) {
            Ok((c, _)) => c,
            Err(e) => return self.fail(e),
        };
        for a in &config.adapters {
            println!(
                "{}\t{}\t{}",
                a.name,
                if a.ci { "ci" } else { "manual" },
                a.description
            );
        }
        ExitCode::SUCCESS
    }

    /// The adapter a run is for: its name, command, its entry in the config (for a built-in
    /// one) and its known-failures file (`--known-failures`, else the built-in one's; none
    /// with `--no-known-failures`).
    pub fn adapter(&self, common: &CommonArgs) -> Result<Adapter, String> {
        let Some(name) = common.adapter.clone() else {
            return Err(format!(
                "--adapter NAME is required (see --help)\n{}",
                self.usage.lines().take(3).collect::<Vec<_>>().join("\n")
            ));
        };
        let mut known = common.known.clone();
        let mut builtin = None;
        let command = if common.command.is_empty() {
            let (config, path) = self.load_config(common)?;
            let Some(entry) = config.adapter(&name) else {
                return Err(format!(
                    "no {} {name:?} in {} (or give its command after --)",
                    self.adapter,
                    path.display()
                ));
            };
            if let Some(why) = config.unavailable(entry) {
                return Err(why);
            }
            if known.is_none() {
                known = config.known_failures(entry);
            }
            builtin = Some(entry.clone());
            config.command(entry, &paths::bin_dir())
        } else {
            common.command.clone()
        };
        if common.no_known {
            known = None;
        }
        Ok(Adapter {
            name,
            command,
            builtin,
            known,
        })
    }
}

/// `--version`: the program, its version and the corpus release it was built with.
pub fn version_line(program: &str) -> String {
    format!(
        "{program} {} (corpus {}, manifest {})",
        env!("CARGO_PKG_VERSION"),
        crate::corpus::CORPUS_VERSION,
        crate::corpus::MANIFEST_VERSION
    )
}

/// The adapter of a run, resolved.
#[derive(Debug, Clone)]
pub struct Adapter {
    /// Its name.
    pub name: String,
    /// Program and arguments.
    pub command: Vec<String>,
    /// Its entry in the config, for a built-in adapter.
    pub builtin: Option<AdapterConfig>,
    /// The known-failures file to compare with (or to bless).
    pub known: Option<PathBuf>,
}

impl Adapter {
    /// Read the known-failures file. A file to be blessed may not exist yet; otherwise a
    /// missing file is an error.
    pub fn load_known<V: Verdict, X: Extra>(
        &self,
        bless: bool,
    ) -> Result<Option<Known<V, X>>, String> {
        match &self.known {
            Some(p) if p.is_file() => std::fs::read_to_string(p)
                .map_err(|e| e.to_string())
                .and_then(|t| Known::parse(&t))
                .map(Some)
                .map_err(|e| format!("{}: {e}", p.display())),
            Some(p) if !bless => Err(format!("{}: no such known-failures file", p.display())),
            _ => Ok(None),
        }
    }
}

/// `[done/total]` on one rewritten line of standard error, on a terminal only.
#[derive(Debug)]
pub struct Progress {
    total: usize,
    done: AtomicUsize,
    tty: bool,
}

impl Progress {
    /// Progress over `total` items.
    pub fn new(total: usize) -> Progress {
        Progress {
            total,
            done: AtomicUsize::new(0),
            tty: std::io::stderr().is_terminal(),
        }
    }

    /// One more item done.
    pub fn step(&self) {
        let n = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if self.tty {
            eprint!("\r[{n}/{}]", self.total);
            if n == self.total {
                eprint!("\r");
            }
        }
    }
}

/// Whether a line of standard error looks like an error: a Python exception or traceback, a
/// Node `TypeError:`, a Rust panic, `cannot`, `not found`, `denied`, `failed`.
pub fn is_error_line(line: &str) -> bool {
    const MARKS: &[&str] = &[
        "error",
        "exception",
        "traceback",
        "panicked",
        "fatal",
        "cannot",
        "can't",
        "not found",
        "no such",
        "denied",
        "failed",
        "abort",
    ];
    let low = line.to_lowercase();
    MARKS.iter().any(|m| low.contains(m))
}

/// Clip a line for a message: 200 characters, control characters replaced.
pub fn clip_line(l: &str) -> String {
    l.chars()
        .take(200)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The lines of an adapter's standard error that say what went wrong: those that look like
/// an error ([`is_error_line`]), at most `max`; where none does, its first lines. A version
/// banner or a blank line is never chosen over an error.
pub fn error_lines(stderr: &[u8], max: usize) -> Vec<String> {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let marked: Vec<String> = lines
        .iter()
        .filter(|l| is_error_line(l))
        .take(max)
        .map(|l| clip_line(l))
        .collect();
    if marked.is_empty() {
        lines.iter().take(max).map(|l| clip_line(l)).collect()
    } else {
        marked
    }
}

/// The message of a run stopped by its [`Tripwire`].
pub fn startup_message(tool: &Tool, stop: &Tripwire, max: usize) -> String {
    let mut s = format!(
        "the {} died, gave no answer or refused with the same words {} times in a row before \
         answering anything: it is not reading the files (an exception at start-up exits 1, \
         which protocol v1 reads as a refusal). The run was stopped (--max-startup-deaths \
         {max}; 0 never stops).",
        tool.adapter,
        stop.deaths()
    );
    let lines = error_lines(&stop.last_stderr(), 5);
    if lines.is_empty() {
        s.push_str(" It wrote nothing on standard error.");
    } else {
        s.push_str(" Its standard error said:");
        for l in lines {
            s.push_str("\n  ");
            s.push_str(&l);
        }
    }
    s
}

/// What the end of a run needs to know of the runner.
#[derive(Debug)]
pub struct Ending<'a, V: Verdict, X: Extra, U: Universe + ?Sized> {
    /// The runner.
    pub tool: &'a Tool,
    /// The command line.
    pub common: &'a CommonArgs,
    /// The adapter.
    pub adapter: &'a Adapter,
    /// Its known failures, as read.
    pub known: Option<Known<V, X>>,
    /// The items that exist.
    pub universe: &'a U,
}

impl<V: Verdict, X: Extra, U: Universe + ?Sized> Ending<'_, V, X, U> {
    /// Save, bless, compare, print the summary (`summary` renders it, with the differences
    /// from the known failures) and the JSON, and give the exit code. A run in which the
    /// adapter answered nothing (every item crashed or timed out) is not blessed.
    pub fn finish<R>(
        self,
        results: &R,
        summary: impl FnOnce(Option<&[Difference<V>]>) -> String,
    ) -> ExitCode
    where
        R: Results,
        R::Item: Judged<V = V>,
    {
        let tool = self.tool;
        let common = self.common;
        if let Some(save) = &common.save {
            if let Err(e) = write_json(save, results) {
                return tool.fail(e);
            }
        }
        if common.bless {
            let Some(p) = &self.adapter.known else {
                return tool.fail(format!(
                    "--bless needs --known-failures FILE or a built-in {} with one",
                    tool.adapter
                ));
            };
            let items = results.items();
            if !items.is_empty() && items.iter().all(|c| c.outcome().is_no_answer()) {
                eprint!("{}", summary(None));
                return tool.fail(format!(
                    "not blessing {}: every one of the {} results is a crash or a timeout, so \
                     the {} never ran properly (fix it, or its command, and run again)",
                    p.display(),
                    items.len(),
                    tool.adapter
                ));
            }
            let blessed = self
                .known
                .clone()
                .unwrap_or_default()
                .bless(results, self.universe);
            if let Err(e) = write_json(p, &blessed) {
                return tool.fail(e);
            }
            eprintln!(
                "{}: wrote {} ({} non-PASS results{})",
                tool.name,
                p.display(),
                blessed.results.len(),
                blessed.form.note()
            );
        }
        let differences = if common.bless {
            None
        } else {
            self.known.as_ref().map(|k| k.check(results, self.universe))
        };
        let text = summary(differences.as_deref());
        if common.json {
            match serde_json::to_string_pretty(results) {
                Ok(j) => println!("{j}"),
                Err(e) => return tool.fail(e),
            }
            eprint!("{text}");
        } else {
            print!("{text}");
        }
        let bad = match &differences {
            Some(d) => !d.is_empty(),
            None => !common.bless && results.items().iter().any(|c| c.outcome().is_failure()),
        };
        ExitCode::from(if bad { EXIT_DIFFERS } else { EXIT_OK })
    }
}

/// The directory of a file, absolute.
pub fn absolute_dir(path: &Path) -> Result<PathBuf, String> {
    let abs = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(abs.parent().map(Path::to_path_buf).unwrap_or_default())
}
