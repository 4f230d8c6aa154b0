//! One option resolution for every face: [`RunOptions`] (what a run checks and how its bytes
//! are read) turned into the core's [`Config`] by [`RunOptions::resolve`], with every
//! implication and every conflict check in one place. The command line fills it from its flags,
//! the Python package from its keyword arguments; both then get the same `Config` and the
//! same errors, each naming the options as its users spell them ([`Face`]).

use std::path::PathBuf;
use std::time::Duration;

use stcheck::{Config, Profile, ReadMode, Rule, Severity};

/// Who the options come from: the names used in messages (`--deny` or `deny=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Face {
    /// The command line: `--deny`, `--follow-links`.
    #[default]
    Cli,
    /// The Python package: `deny=`, `follow_links=True`.
    Python,
    /// The JavaScript package (`js/`): `deny`, `deep: true` (its options object's keys).
    Js,
}

/// The options every face knows by a name of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Opt {
    /// `--deny RULE` / `deny=[...]`.
    Deny,
    /// `--allow RULE` / `allow=[...]`.
    Allow,
    /// `--deep` / `deep=True`.
    Deep,
    /// `--sha256` / `sha256=True`.
    Sha256,
    /// `--deny-nonfinite` / `deny_nonfinite=True`.
    DenyNonfinite,
    /// `--profile` / `profile=`.
    Profile,
    /// `--portable-to` / `portable_to=`.
    PortableTo,
    /// `--refusals-are-errors` / `refusals_are_errors=True`.
    RefusalsAreErrors,
    /// `--follow-links` / `follow_links=True`.
    FollowLinks,
    /// `--allow-empty` / `allow_empty=True`.
    AllowEmpty,
    /// `--max-header-size` / `max_header_size=`.
    MaxHeaderSize,
    /// `--max-warnings-per-rule` / `max_warnings_per_rule=`.
    MaxWarningsPerRule,
    /// `--timeout` / `timeout=`.
    Timeout,
    /// `--allow-other-formats` / `allow_other_formats=True`.
    AllowOtherFormats,
    /// `--exclude` / `exclude=`.
    Exclude,
}

impl Face {
    /// How this face's users write `opt`.
    pub fn name(self, opt: Opt) -> &'static str {
        use Opt::*;
        match (self, opt) {
            (Face::Cli, Deny) => "--deny",
            (Face::Cli, Allow) => "--allow",
            (Face::Cli, Deep) => "--deep",
            (Face::Cli, Sha256) => "--sha256",
            (Face::Cli, DenyNonfinite) => "--deny-nonfinite",
            (Face::Cli, Profile) => "--profile",
            (Face::Cli, PortableTo) => "--portable-to",
            (Face::Cli, RefusalsAreErrors) => "--refusals-are-errors",
            (Face::Cli, FollowLinks) => "--follow-links",
            (Face::Cli, AllowEmpty) => "--allow-empty",
            (Face::Cli, MaxHeaderSize) => "--max-header-size",
            (Face::Cli, MaxWarningsPerRule) => "--max-warnings-per-rule",
            (Face::Cli, Timeout) => "--timeout",
            (Face::Cli, AllowOtherFormats) => "--allow-other-formats",
            (Face::Cli, Exclude) => "--exclude",
            (Face::Python, Deny) => "deny=",
            (Face::Python, Allow) => "allow=",
            (Face::Python, Deep) => "deep=True",
            (Face::Python, Sha256) => "sha256=True",
            (Face::Python, DenyNonfinite) => "deny_nonfinite=True",
            (Face::Python, Profile) => "profile=",
            (Face::Python, PortableTo) => "portable_to=",
            (Face::Python, RefusalsAreErrors) => "refusals_are_errors=True",
            (Face::Python, FollowLinks) => "follow_links=True",
            (Face::Python, AllowEmpty) => "allow_empty=True",
            (Face::Python, MaxHeaderSize) => "max_header_size=",
            (Face::Python, MaxWarningsPerRule) => "max_warnings_per_rule=",
            (Face::Python, Timeout) => "timeout=",
            (Face::Python, AllowOtherFormats) => "allow_other_formats=True",
            (Face::Python, Exclude) => "exclude=",
            (Face::Js, Deny) => "deny",
            (Face::Js, Allow) => "allow",
            (Face::Js, Deep) => "deep: true",
            (Face::Js, Sha256) => "sha256: true",
            (Face::Js, DenyNonfinite) => "denyNonfinite: true",
            (Face::Js, Profile) => "profile",
            (Face::Js, PortableTo) => "portableTo",
            (Face::Js, RefusalsAreErrors) => "refusalsAreErrors: true",
            (Face::Js, FollowLinks) => "followLinks: true",
            (Face::Js, AllowEmpty) => "allowEmpty: true",
            (Face::Js, MaxHeaderSize) => "maxHeaderSize",
            (Face::Js, MaxWarningsPerRule) => "maxWarningsPerRule",
            (Face::Js, Timeout) => "timeout",
            (Face::Js, AllowOtherFormats) => "allowOtherFormats: true",
            (Face::Js, Exclude) => "exclude",
        }
    }
}

/// A usage error: options that cannot go together, or a value that is not one. Its message
/// names the options as the face's users write them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// What a run checks and how it reads its bytes, as every face gives it. `Default` is the
/// strict profile, header checks, ordinary reads.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct RunOptions {
    /// Whose verdict decides.
    pub profile: Profile,
    /// Scan the data (`DATA-*`).
    pub deep: bool,
    /// The SHA-256 of each file (implies `deep`).
    pub sha256: bool,
    /// Every warning an error.
    pub deny_warnings: bool,
    /// Any NaN or infinity an error (implies `deep`).
    pub deny_nonfinite: bool,
    /// Warning rules made errors, by ID (any case).
    pub deny: Vec<String>,
    /// Warning rules not reported, by ID (any case); an error rule is a usage error.
    pub allow: Vec<String>,
    /// The largest header length accepted (default: the core's).
    pub max_header_size: Option<u64>,
    /// Warnings kept per rule (default: the core's).
    pub max_warnings_per_rule: Option<usize>,
    /// Also give the reference crate's verdict.
    pub compare_reference: bool,
    /// The readers of the portable profile (implies it); `None`: every reader of the table.
    pub portable_to: Option<Vec<String>>,
    /// A reader's refusal is an error (the portable profile only).
    pub refusals_are_errors: bool,
    /// How files are read.
    pub mode: ReadMode,
    /// Follow links to regular files outside the directory named.
    pub follow_links: bool,
    /// A directory with nothing to check is not a failure.
    pub allow_empty: bool,
    /// Files of other weight formats (pickle `.bin`/`.pt`, GGUF, ...) found by a walk or in a
    /// repository are accepted unseen instead of reported as not checked
    /// (`--allow-other-formats`).
    pub allow_other_formats: bool,
    /// Paths a walk leaves out: gitignore-style globs (`--exclude`, see [`crate::glob`]),
    /// matched against the path below the directory named.
    pub exclude: Vec<String>,
    /// A `*.safetensors` file named (not found by a walk) is checked with the sharded sets of
    /// its directory: every `*.safetensors.index.json` there is checked too (`--with-sets`,
    /// for pre-commit hooks, which pass only the staged files).
    pub with_sets: bool,
    /// The most URL targets checked at the same time by a caller that runs targets in
    /// parallel (`--url-jobs`; `None`: [`DEFAULT_URL_JOBS`]). A URL's check waits on the
    /// network, so this bound is apart from the CPU's (`--jobs`).
    pub url_jobs: Option<usize>,
    /// The most HTTP requests of the whole run, redirects and retries included
    /// (`--max-requests`; `None`: [`DEFAULT_MAX_REQUESTS`]). A URL whose check would pass it
    /// is not checked.
    pub max_requests: Option<u64>,
    /// The deadline of each URL (a file with its data, or a set with all its shards).
    pub timeout: Option<Duration>,
    /// Extra request headers for URLs (`NAME`, `VALUE`), sent only to the URL's own host.
    pub headers: Vec<(String, String)>,
    /// A PEM bundle of the certificates trusted for https URLs instead of the built-in ones.
    pub ca_file: Option<PathBuf>,
    /// Who the options come from (the names in messages).
    pub face: Face,
}

/// The default bound of URL targets checked at once: enough to hide a hub's latency, few
/// enough to be polite to it.
pub const DEFAULT_URL_JOBS: usize = 8;

/// The default budget of HTTP requests of a run.
pub const DEFAULT_MAX_REQUESTS: u64 = 1_000_000;

impl RunOptions {
    /// The bound of URL targets checked at once.
    pub fn url_jobs(&self) -> usize {
        self.url_jobs.unwrap_or(DEFAULT_URL_JOBS).max(1)
    }

    /// The name of `opt` for this run's face.
    pub fn name(&self, opt: Opt) -> &'static str {
        self.face.name(opt)
    }

    /// Whether the reference crate runs (its verdict decides, or is compared).
    pub fn wants_reference(&self) -> bool {
        self.compare_reference || self.profile == Profile::Reference
    }

    /// The core's configuration for these options, or the first conflict found.
    pub fn resolve(&self) -> Result<Config, UsageError> {
        let n = |o| self.name(o);
        let err = |m: String| Err(UsageError(m));
        let mut config = Config::default();
        if let Some(m) = self.max_header_size {
            config.max_header_size = m;
        }
        if let Some(m) = self.max_warnings_per_rule {
            if m == 0 {
                return err(format!(
                    "{}: 0 is not a positive integer",
                    n(Opt::MaxWarningsPerRule)
                ));
            }
            config.max_warnings_per_rule = m;
        }
        config.deny_warnings = self.deny_warnings;
        config.deep = self.deep || self.sha256 || self.deny_nonfinite;
        config.sha256 = self.sha256;
        config.deny_nonfinite = self.deny_nonfinite;
        for id in &self.deny {
            let rule = rule_arg(n(Opt::Deny), id).map_err(UsageError)?;
            if !config.deny.contains(&rule) {
                config.deny.push(rule);
            }
        }
        for id in &self.allow {
            let rule = rule_arg(n(Opt::Allow), id).map_err(UsageError)?;
            if rule.severity() == Severity::Error {
                return err(format!(
                    "{} {rule}: {rule} is an error, and errors cannot be allowed (a gate's \
                     verdict stays a gate's verdict); only warnings can be hidden",
                    n(Opt::Allow)
                ));
            }
            if !config.allow.contains(&rule) {
                config.allow.push(rule);
            }
        }
        let profile = if self.portable_to.is_some() {
            if self.profile == Profile::Reference {
                return err(format!(
                    "{} needs the portable profile, not the reference one",
                    n(Opt::PortableTo)
                ));
            }
            Profile::Portable
        } else {
            self.profile
        };
        config.reference = self.compare_reference || profile == Profile::Reference;
        if profile == Profile::Portable {
            let table = stcheck::portable::ReaderTable::builtin()
                .map_err(|e| UsageError(format!("the built-in reader table does not load: {e}")))?;
            let mut options = match &self.portable_to {
                None => stcheck::portable::Options::all(table),
                Some(ids) => stcheck::portable::Options::readers(table, ids).map_err(|e| {
                    let known: Vec<&str> = table.readers().iter().map(|r| r.id()).collect();
                    UsageError(format!(
                        "{}: {e} (readers: {})",
                        n(Opt::PortableTo),
                        known.join(", ")
                    ))
                })?,
            };
            options.refusals_are_errors = self.refusals_are_errors;
            config.portable = Some(options);
        } else if self.refusals_are_errors {
            return err(format!(
                "{} needs the portable profile",
                n(Opt::RefusalsAreErrors)
            ));
        }
        if config.reads_data() && profile == Profile::Reference {
            return err(format!(
                "{}, {} and {} need the strict profile",
                n(Opt::Deep),
                n(Opt::Sha256),
                n(Opt::DenyNonfinite)
            ));
        }
        if let Some(r) = config.allow.iter().find(|r| config.deny.contains(r)) {
            return err(format!(
                "{} {r} and {} {r} exclude each other",
                n(Opt::Allow),
                n(Opt::Deny)
            ));
        }
        if config.deny_nonfinite && config.allow.contains(&Rule::DataNonFinite) {
            return err(format!(
                "{} DATA-NONFINITE and {} exclude each other",
                n(Opt::Allow),
                n(Opt::DenyNonfinite)
            ));
        }
        self.exclude_globs()?;
        if let Some(t) = self.timeout {
            if t.is_zero() {
                return err(format!(
                    "{}: 0 is not a number of seconds above 0",
                    n(Opt::Timeout)
                ));
            }
        }
        Ok(config)
    }

    /// The compiled `--exclude` patterns, or the first that cannot be used.
    pub fn exclude_globs(&self) -> Result<Vec<crate::glob::Glob>, UsageError> {
        self.exclude
            .iter()
            .map(|p| {
                crate::glob::Glob::new(p)
                    .map_err(|e| UsageError(format!("{}: {e}", self.name(Opt::Exclude))))
            })
            .collect()
    }

    /// The profile that decides: the portable one when readers are named.
    pub fn effective_profile(&self) -> Profile {
        if self.portable_to.is_some() && self.profile != Profile::Reference {
            Profile::Portable
        } else {
            self.profile
        }
    }

    /// The link policy of walks and shards, with this face's option name in its messages.
    pub fn link_policy(&self) -> crate::fs::LinkPolicy {
        crate::fs::LinkPolicy::confined()
            .follow_outside(self.follow_links)
            .option_name(self.name(Opt::FollowLinks))
    }
}

/// The rule named by `id` (in any case) for `option`, or a message naming the rules near it.
pub fn rule_arg(option: &str, id: &str) -> Result<Rule, String> {
    let id = id.trim();
    if let Some(rule) = Rule::from_id_any_case(id) {
        return Ok(rule);
    }
    let near: Vec<&str> = Rule::near(id).iter().map(|r| r.id()).collect();
    Err(match near.as_slice() {
        [] => format!("{option}: no rule {id:?} (the rule IDs are in SPEC.md, section 4)"),
        [one] => format!("{option}: no rule {id:?}; did you mean {one}?"),
        many => format!(
            "{option}: no rule {id:?}; did you mean one of {}?",
            many.join(", ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicts_name_the_faces_options() {
        let o = RunOptions {
            deny: vec!["LAYOUT-ALIGN".into()],
            allow: vec!["layout-align".into()],
            ..RunOptions::default()
        };
        assert_eq!(
            o.resolve().expect_err("conflict").0,
            "--allow LAYOUT-ALIGN and --deny LAYOUT-ALIGN exclude each other"
        );
        let p = RunOptions {
            face: Face::Python,
            ..o.clone()
        };
        assert_eq!(
            p.resolve().expect_err("conflict").0,
            "allow= LAYOUT-ALIGN and deny= LAYOUT-ALIGN exclude each other"
        );
        let js = RunOptions {
            face: Face::Js,
            ..o
        };
        assert_eq!(
            js.resolve().expect_err("conflict").0,
            "allow LAYOUT-ALIGN and deny LAYOUT-ALIGN exclude each other"
        );
    }

    #[test]
    fn implications() {
        let c = RunOptions {
            sha256: true,
            ..RunOptions::default()
        }
        .resolve()
        .expect("ok");
        assert!(c.deep && c.sha256);
        let c = RunOptions {
            portable_to: Some(vec!["mlx".into()]),
            ..RunOptions::default()
        }
        .resolve()
        .expect("ok");
        assert!(c.portable.is_some());
        assert!(RunOptions {
            profile: Profile::Reference,
            deep: true,
            ..RunOptions::default()
        }
        .resolve()
        .is_err());
    }
}
