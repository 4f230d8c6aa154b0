//! The harness the reader runner (`stconform`) and the writer runner (`stwrite`) share, as
//! toml-test runs its decoder and encoder tests with one runner: the command line, the
//! built-in adapters, known failures, the pool of workers, the report's tail and the run's
//! ending (save, bless, compare, exit code). What differs between the two (the protocols, the
//! judging, the reports' bodies) stays in [`crate::runner`] and [`crate::writers`].
//!
//! Modules: [`args`] (the options both take), [`config`] (the built-in adapters), [`known`]
//! (known-failures files), [`paths`] (where the corpus and the config are found), [`pool`]
//! (running items on a bounded number of threads, stopping an adapter that never starts),
//! [`report`] (Markdown helpers, counts and the known-failures tail), [`results`] (results
//! files) and [`main`] (from parsed options to an exit code).

pub mod args;
pub mod config;
pub mod copy;
pub mod known;
pub mod main;
pub mod paths;
pub mod pool;
pub mod report;
pub mod results;

use std::fmt::Display;
use std::hash::Hash;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// An outcome type of a runner: the reader's [`crate::runner::Outcome`] or the writer's
/// [`crate::writers::WriterOutcome`].
pub trait Verdict:
    Copy + Eq + Ord + Hash + Display + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// The outcome of an item that did what it should.
    const PASS: Self;
    /// Every outcome, in report order.
    const ALL: &'static [Self];
    /// The upper-case name (`"SHOULD_HAVE_REJECTED"`).
    fn name(self) -> &'static str;
    /// Whether the adapter broke an expectation.
    fn is_failure(self) -> bool;
    /// Whether the adapter gave no answer at all: it crashed or timed out (a run made only of
    /// these is not blessed).
    fn is_no_answer(self) -> bool;
}

/// One judged item of a run (a case, a task).
pub trait Judged {
    /// Its outcome type.
    type V: Verdict;
    /// The item's ID.
    fn id(&self) -> &str;
    /// Its outcome.
    fn outcome(&self) -> Self::V;
    /// The rule IDs of the form warnings of the file it wrote, when it wrote one with the
    /// task's content (writers only).
    fn form(&self) -> Option<&[String]> {
        None
    }
}

/// The results of one adapter's run (the `--json` document).
pub trait Results: Serialize {
    /// One item's result.
    type Item: Judged;
    /// The adapter's name.
    fn adapter(&self) -> &str;
    /// Every item run, in order.
    fn items(&self) -> &[Self::Item];

    /// The result of one item.
    fn item(&self, id: &str) -> Option<&Self::Item> {
        self.items().iter().find(|c| c.id() == id)
    }

    /// Whether any item failed.
    fn any_failure(&self) -> bool {
        self.items().iter().any(|c| c.outcome().is_failure())
    }
}

/// `impl Judged` for an item type with `id` and `outcome` fields; `form: method` names the
/// method that gives its form warnings (writers).
macro_rules! impl_judged {
    ($t:ty, $v:ty $(, form: $form:ident)?) => {
        impl $crate::harness::Judged for $t {
            type V = $v;
            fn id(&self) -> &str {
                &self.id
            }
            fn outcome(&self) -> $v {
                self.outcome
            }
            $(fn form(&self) -> Option<&[String]> {
                self.$form()
            })?
        }
    };
}
pub(crate) use impl_judged;

/// `impl Results` for a results type whose items are in the field `$field`.
macro_rules! impl_results {
    ($t:ty, $field:ident, $item:ty) => {
        impl $crate::harness::Results for $t {
            type Item = $item;
            fn adapter(&self) -> &str {
                &self.adapter
            }
            fn items(&self) -> &[$item] {
                &self.$field
            }
        }
    };
}
pub(crate) use impl_results;

/// `impl Display` by the type's `name()`.
macro_rules! display_by_name {
    ($t:ty) => {
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}
pub(crate) use display_by_name;

/// `impl Verdict` (and `Display`) for an outcome enum with `ALL`, `name()` and `is_failure()`
/// of its own; the outcomes listed after it are the ones that mean "no answer".
macro_rules! impl_verdict {
    ($t:ident, pass: $pass:ident, no_answer: $($none:ident)|+) => {
        $crate::harness::display_by_name!($t);

        impl $crate::harness::Verdict for $t {
            const PASS: $t = $t::$pass;
            const ALL: &'static [$t] = $t::ALL;
            fn name(self) -> &'static str {
                $t::name(self)
            }
            fn is_failure(self) -> bool {
                $t::is_failure(self)
            }
            fn is_no_answer(self) -> bool {
                matches!(self, $($t::$none)|+)
            }
        }
    };
}
pub(crate) use impl_verdict;

/// What every run of an adapter is given, reader or writer.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// The adapter's name, for reports.
    pub adapter: String,
    /// Program and arguments (the runner appends what the protocol says).
    pub command: Vec<String>,
    /// Per-item timeout.
    pub timeout: std::time::Duration,
    /// Worker threads (at least 1).
    pub jobs: usize,
    /// `--run` patterns (empty: every item).
    pub run: Vec<String>,
    /// `--skip` patterns.
    pub skip: Vec<String>,
    /// Stop the run after this many items in a row on which the adapter gave no answer
    /// before it ever answered one (0: never stop).
    pub max_startup_deaths: usize,
}

impl RunSpec {
    /// One worker, no filter, the default start-up tripwire.
    pub fn new(
        adapter: impl Into<String>,
        command: Vec<String>,
        timeout: std::time::Duration,
    ) -> RunSpec {
        RunSpec {
            adapter: adapter.into(),
            command,
            timeout,
            jobs: 1,
            run: Vec::new(),
            skip: Vec::new(),
            max_startup_deaths: pool::DEFAULT_MAX_STARTUP_DEATHS,
        }
    }

    /// A run that resolves `common`'s options over the defaults.
    pub fn from_args(
        common: &args::CommonArgs,
        adapter: &main::Adapter,
        timeout: std::time::Duration,
    ) -> RunSpec {
        RunSpec {
            adapter: adapter.name.clone(),
            command: adapter.command.clone(),
            timeout: common
                .timeout
                .map(std::time::Duration::from_secs_f64)
                .unwrap_or(timeout),
            jobs: common.jobs.unwrap_or_else(pool::default_jobs),
            run: common.run.clone(),
            skip: common.skip.clone(),
            max_startup_deaths: common.max_startup_deaths(),
        }
    }
}
