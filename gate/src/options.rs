//! One option resolution for every face: [`RunOptions`] (what a run checks and how its bytes
//! are read) turned into the core's [`Config`] by [`RunOptions::resolve`], with every
//! implication, every conflict check and every value check in one place.
//!
//! The options are data, as ripgrep's flag definitions are: [`OPTIONS`] holds one [`Spec`]
//! per option, with its name on each [`Face`] (the CLI's flag, the Python keyword, the
//! JavaScript property, a service's query/config key), the [`Kind`] of its value, its default,
//! a doc line and its help text. From it the CLI reads its flags ([`RunOptions::set_text`])
//! and writes their help, Python and JavaScript read their options ([`RunOptions::set`] with a
//! [`Value`]), and messages name each option as the face's users write it. A test checks that
//! Python's `options()` and the TypeScript `Options` list exactly the table's keys.
//!
//! Adding an option: a field of [`RunOptions`], an [`Opt`], its row in [`OPTIONS`] (in the
//! help's order), its arm in [`RunOptions::set`] if its kind has several fields, its checks
//! in [`RunOptions::resolve`]; then the keyword in Python's `options()` and `docs/python.md`,
//! the property in `js/lib/stcheck.d.ts` (if the face takes it), and the CLI's help layout
//! (`cli/src/args.rs`, `HELP_OPTIONS`).

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
    /// A service taking options as query parameters or config keys: `deny`, `deep`,
    /// `max-header-size` ([`Spec::key`]: the CLI's flag without its dashes).
    Service,
}

/// The options every face knows by a name of its own: one row each of [`OPTIONS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Opt {
    /// `--profile` / `profile=`.
    Profile,
    /// `--deep` / `deep=True`.
    Deep,
    /// `--sha256` / `sha256=True`.
    Sha256,
    /// `--expect-sha256` / `expect_sha256=`.
    ExpectSha256,
    /// `--deny-warnings` / `deny_warnings=True`.
    DenyWarnings,
    /// `--deny-nonfinite` / `deny_nonfinite=True`.
    DenyNonfinite,
    /// `--deny RULE` / `deny=[...]`.
    Deny,
    /// `--allow RULE` / `allow=[...]`.
    Allow,
    /// `--max-header-size` / `max_header_size=`.
    MaxHeaderSize,
    /// `--max-warnings-per-rule` / `max_warnings_per_rule=`.
    MaxWarningsPerRule,
    /// `--compare-reference` / `compare_reference=True`.
    CompareReference,
    /// `--portable-to` / `portable_to=`.
    PortableTo,
    /// `--refusals-are-errors` / `refusals_are_errors=True`.
    RefusalsAreErrors,
    /// `--mmap`, `--no-mmap`, `--stream` / `mode=`.
    Mode,
    /// `--follow-links` / `follow_links=True`.
    FollowLinks,
    /// `--allow-empty` / `allow_empty=True`.
    AllowEmpty,
    /// `--allow-other-formats` / `allow_other_formats=True`.
    AllowOtherFormats,
    /// `--exclude` / `exclude=`.
    Exclude,
    /// `--with-sets` (the command line only).
    WithSets,
    /// `--url-jobs` (the command line only).
    UrlJobs,
    /// `--max-requests` / `max_requests=`.
    MaxRequests,
    /// `--timeout` / `timeout=`.
    Timeout,
    /// `--header` / `headers=`.
    Header,
    /// `--ca-file` / `ca_file=`.
    CaFile,
}

/// The kind of value an option takes, which decides how a string is read as one
/// ([`RunOptions::set_text`]) and how a face hands over a typed one ([`Value`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// On or off: a CLI flag without a value, `True`/`true` elsewhere.
    Flag,
    /// One name of a closed set (a profile, a read mode).
    Name,
    /// Rule IDs; in a string, comma-separated; each use adds to the list.
    Rules,
    /// Reader IDs; in a string, comma-separated; the list is replaced.
    Readers,
    /// Globs; in a string, one; each use adds to the list.
    Globs,
    /// An integer above 0.
    Count,
    /// A number of bytes.
    Bytes,
    /// A number of seconds above 0, fractions allowed, at most [`MAX_TIMEOUT_SECS`].
    Seconds,
    /// Request headers; in a string, one `NAME:VALUE`; each use adds one.
    Headers,
    /// A file's path.
    Path,
    /// A SHA-256: 64 hex digits, any case.
    Sha256,
}

/// One run option: its name on each face, the kind of its value, its default and its
/// documentation. The faces' parsers, the names in messages, the CLI's help and the tests of
/// the Python and TypeScript option lists all come from [`OPTIONS`].
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Spec {
    /// Which option.
    pub opt: Opt,
    /// The command-line flag (`None`: the CLI spells it otherwise, as the read mode's
    /// `--mmap`, `--no-mmap` and `--stream`).
    pub cli: Option<&'static str>,
    /// What the flag's value is called in the help (`""` for a flag).
    pub value: &'static str,
    /// The keyword of the Python package (`None`: not taken there).
    pub python: Option<&'static str>,
    /// The property of the JavaScript package's options object (`None`: not taken there).
    pub js: Option<&'static str>,
    /// The service's query parameter and config key: the CLI's flag without its dashes.
    pub key: &'static str,
    /// How messages name it on each face, in [`Face`]'s order (`--deep`, `deep=True`,
    /// `deep: true`, `deep=true`); a face that does not take it still has a spelling.
    names: [&'static str; 4],
    /// The kind of its value.
    pub kind: Kind,
    /// The default, as the documentation states it.
    pub default: &'static str,
    /// One line saying what it does.
    pub doc: &'static str,
    /// The command line's help text for it, wrapped, without the indentation.
    pub help: &'static str,
}

impl Spec {
    /// The row of `opt`.
    pub fn of(opt: Opt) -> &'static Spec {
        // Every `Opt` has its row (a test checks it); the first row is never reached.
        OPTIONS.iter().find(|s| s.opt == opt).unwrap_or(&OPTIONS[0])
    }

    /// The name `face` gives it, as a message names it (`--deep`, `deep=True`, `deep: true`).
    pub fn name(&self, face: Face) -> &'static str {
        match self.names[face as usize] {
            // The read mode has no one flag: `--mmap`, `--no-mmap`, `--stream`.
            "" => self.names[Face::Service as usize],
            name => name,
        }
    }

    /// The row whose key on `face` is `key` (the face's bare key: `max_requests`, `maxRequests`,
    /// `--max-requests`).
    pub fn find(face: Face, key: &str) -> Option<&'static Spec> {
        OPTIONS.iter().find(|s| s.key(face) == Some(key))
    }

    /// The bare key `face` takes it by (`None`: that face does not take it).
    pub fn key(&self, face: Face) -> Option<&'static str> {
        match face {
            Face::Cli => self.cli,
            Face::Python => self.python,
            Face::Js => self.js,
            Face::Service => Some(self.key),
        }
    }
}

/// Every run option, in the order of the command line's help.
pub const OPTIONS: &[Spec] = &[
    Spec {
        opt: Opt::UrlJobs,
        kind: Kind::Count,
        cli: Some("--url-jobs"),
        value: "N",
        python: Some("url_jobs"),
        js: None,
        key: "url-jobs",
        names: ["--url-jobs", "url_jobs=", "urlJobs", "url-jobs"],
        default: "64",
        doc: "The most URLs checked at the same time.",
        help: "check N URLs in parallel (default 64: a URL waits on the\n\
               network, not the CPU; --jobs still caps the local files)",
    },
    Spec {
        opt: Opt::MaxRequests,
        kind: Kind::Count,
        cli: Some("--max-requests"),
        value: "N",
        python: Some("max_requests"),
        js: None,
        key: "max-requests",
        names: [
            "--max-requests",
            "max_requests=",
            "maxRequests",
            "max-requests",
        ],
        default: "1000000",
        doc: "The most HTTP requests of the whole run, redirects and retries included.",
        help: "send at most N HTTP requests in the whole run (redirects\n\
               and retries included; default 1000000); a URL past the\n\
               budget is not checked (exit 2)",
    },
    Spec {
        opt: Opt::Mode,
        kind: Kind::Name,
        cli: None,
        value: "",
        python: Some("mode"),
        js: None,
        key: "mode",
        names: ["", "mode=", "mode", "mode"],
        default: "read",
        doc: "How files are read: read, mmap or stream.",
        help: "",
    },
    Spec {
        opt: Opt::FollowLinks,
        kind: Kind::Flag,
        cli: Some(crate::fs::FOLLOW_LINKS_OPTION),
        value: "",
        python: Some("follow_links"),
        js: None,
        key: "follow-links",
        names: [
            crate::fs::FOLLOW_LINKS_OPTION,
            "follow_links=True",
            "followLinks: true",
            "follow-links",
        ],
        default: "off",
        doc: "Follow links to regular files outside the directory named.",
        help: "also follow links to regular files outside the directory\n\
               PATH (and shard links leaving it), as in a Hugging Face\n\
               cache snapshot whose files link to ../../blobs/; never to\n\
               a FIFO or device, and directories outside every PATH are\n\
               still never walked",
    },
    Spec {
        opt: Opt::AllowEmpty,
        kind: Kind::Flag,
        cli: Some(crate::fs::ALLOW_EMPTY_OPTION),
        value: "",
        python: Some("allow_empty"),
        js: None,
        key: "allow-empty",
        names: [
            crate::fs::ALLOW_EMPTY_OPTION,
            "allow_empty=True",
            "allowEmpty: true",
            "allow-empty",
        ],
        default: "off",
        doc: "A directory with nothing to check is not a failure.",
        help: "accept a directory PATH with no *.safetensors or\n\
               *.safetensors.index.json file in it",
    },
    Spec {
        opt: Opt::Exclude,
        kind: Kind::Globs,
        cli: Some("--exclude"),
        value: "GLOB",
        python: Some("exclude"),
        js: None,
        key: "exclude",
        names: ["--exclude", "exclude=", "exclude", "exclude"],
        default: "none",
        doc: "Gitignore-style globs of paths a walk leaves out.",
        help: "leave out paths below a directory PATH that match GLOB\n\
               (repeatable; gitignore-style: a GLOB without '/' matches\n\
               a name at any depth, one with '/' the path from PATH;\n\
               '*', '?', '[a-z]', '**'; a trailing '/' matches\n\
               directories only; an excluded directory is not walked)",
    },
    Spec {
        opt: Opt::WithSets,
        kind: Kind::Flag,
        cli: Some("--with-sets"),
        value: "",
        python: None,
        js: None,
        key: "with-sets",
        names: [
            "--with-sets",
            "with_sets=True",
            "withSets: true",
            "with-sets",
        ],
        default: "off",
        doc: "A *.safetensors file named is checked with the sharded sets of its directory.",
        help: "a *.safetensors FILE named is checked with the sharded\n\
               sets of its directory: each *.safetensors.index.json\n\
               there is checked too, with its shards (the pre-commit\n\
               hooks pass it: a commit of one shard checks its set)",
    },
    Spec {
        opt: Opt::AllowOtherFormats,
        kind: Kind::Flag,
        cli: Some(crate::fs::ALLOW_OTHER_FORMATS_OPTION),
        value: "",
        python: Some("allow_other_formats"),
        js: None,
        key: "allow-other-formats",
        names: [
            crate::fs::ALLOW_OTHER_FORMATS_OPTION,
            "allow_other_formats=True",
            "allowOtherFormats: true",
            "allow-other-formats",
        ],
        default: "off",
        doc: "Files of other weight formats are accepted unseen, not reported as not checked.",
        help: "accept weight files of other formats (pickle .bin/.pt/\n\
               .pth/.ckpt/.pkl, GGUF, .h5, .msgpack, .onnx, ...) found\n\
               in a directory PATH or an hf:// repository; by default\n\
               each is reported as not checked (exit 2)",
    },
    Spec {
        opt: Opt::Profile,
        kind: Kind::Name,
        cli: Some("--profile"),
        value: "strict|reference|portable",
        python: Some("profile"),
        js: Some("profile"),
        key: "profile",
        names: ["--profile", "profile=", "profile", "profile"],
        default: "strict",
        doc: "Whose verdict decides: strict, reference or portable.",
        help: "strict (default): the rules of SPEC.md;\n\
               reference: the verdict of the safetensors 0.8.0 crate;\n\
               portable: strict, and read the same way by every reader\n\
               of the reader table (corpus/readers.json, SPEC.md\n\
               \"Portable profile\"); the report says which readers load\n\
               the file and which refuse it, and why",
    },
    Spec {
        opt: Opt::PortableTo,
        kind: Kind::Readers,
        cli: Some("--portable-to"),
        value: "READERS",
        python: Some("portable_to"),
        js: Some("portableTo"),
        key: "portable-to",
        names: ["--portable-to", "portable_to=", "portableTo", "portable-to"],
        default: "every reader of the table",
        doc: "The readers the portable profile promises (implies it).",
        help: "the readers the portable profile promises, comma-separated\n\
               (default: all: hub-js, mlx, mlx-numpy, python-numpy,\n\
               rust-safetensors); implies --profile portable",
    },
    Spec {
        opt: Opt::RefusalsAreErrors,
        kind: Kind::Flag,
        cli: Some("--refusals-are-errors"),
        value: "",
        python: Some("refusals_are_errors"),
        js: Some("refusalsAreErrors"),
        key: "refusals-are-errors",
        names: [
            "--refusals-are-errors",
            "refusals_are_errors=True",
            "refusalsAreErrors: true",
            "refusals-are-errors",
        ],
        default: "off",
        doc: "A chosen reader's refusal rejects the file (the portable profile).",
        help: "with the portable profile, a chosen reader that refuses the\n\
               file (an unsupported dtype, say) also rejects it",
    },
    Spec {
        opt: Opt::CompareReference,
        kind: Kind::Flag,
        cli: Some("--compare-reference"),
        value: "",
        python: Some("compare_reference"),
        js: Some("compareReference"),
        key: "compare-reference",
        names: [
            "--compare-reference",
            "compare_reference=True",
            "compareReference: true",
            "compare-reference",
        ],
        default: "off",
        doc: "Also give the reference crate's verdict and how it differs.",
        help: "also report the reference crate's verdict, and how it\n\
               differs from the strict one",
    },
    Spec {
        opt: Opt::Deny,
        kind: Kind::Rules,
        cli: Some("--deny"),
        value: "RULE",
        python: Some("deny"),
        js: Some("deny"),
        key: "deny",
        names: ["--deny", "deny=", "deny", "deny"],
        default: "none",
        doc: "Warning rules made errors, by ID.",
        help: "make the warning RULE an error (repeat, or RULE,RULE)",
    },
    Spec {
        opt: Opt::Allow,
        kind: Kind::Rules,
        cli: Some("--allow"),
        value: "RULE",
        python: Some("allow"),
        js: Some("allow"),
        key: "allow",
        names: ["--allow", "allow=", "allow", "allow"],
        default: "none",
        doc: "Warning rules not reported, by ID (never an error rule).",
        help: "do not report the warning RULE (repeat, or RULE,RULE);\n\
               an error rule cannot be allowed",
    },
    Spec {
        opt: Opt::DenyWarnings,
        kind: Kind::Flag,
        cli: Some("--deny-warnings"),
        value: "",
        python: Some("deny_warnings"),
        js: Some("denyWarnings"),
        key: "deny-warnings",
        names: [
            "--deny-warnings",
            "deny_warnings=True",
            "denyWarnings: true",
            "deny-warnings",
        ],
        default: "off",
        doc: "Every warning an error.",
        help: "treat every warning as an error (except those --allow hides)",
    },
    Spec {
        opt: Opt::MaxHeaderSize,
        kind: Kind::Bytes,
        cli: Some("--max-header-size"),
        value: "BYTES",
        python: Some("max_header_size"),
        js: Some("maxHeaderSize"),
        key: "max-header-size",
        names: [
            "--max-header-size",
            "max_header_size=",
            "maxHeaderSize",
            "max-header-size",
        ],
        default: "100000000",
        doc: "The longest header accepted, in bytes.",
        help: "reject headers longer than BYTES (default 100000000)",
    },
    Spec {
        opt: Opt::MaxWarningsPerRule,
        kind: Kind::Count,
        cli: Some("--max-warnings-per-rule"),
        value: "N",
        python: Some("max_warnings_per_rule"),
        js: Some("maxWarningsPerRule"),
        key: "max-warnings-per-rule",
        names: [
            "--max-warnings-per-rule",
            "max_warnings_per_rule=",
            "maxWarningsPerRule",
            "max-warnings-per-rule",
        ],
        default: "100",
        doc: "Warnings shown per rule and file (all are counted).",
        help: "show at most N warnings of each rule per file, the first\n\
               in file order (default 100); the count of all is kept",
    },
    Spec {
        opt: Opt::Deep,
        kind: Kind::Flag,
        cli: Some("--deep"),
        value: "",
        python: Some("deep"),
        js: Some("deep"),
        key: "deep",
        names: ["--deep", "deep=True", "deep: true", "deep"],
        default: "off",
        doc: "Also scan the tensor data.",
        help: "also scan the tensor data: BOOL bytes, NaN/Inf counts per\n\
               tensor, files that are also another format",
    },
    Spec {
        opt: Opt::Sha256,
        kind: Kind::Flag,
        cli: Some("--sha256"),
        value: "",
        python: Some("sha256"),
        js: Some("sha256"),
        key: "sha256",
        names: ["--sha256", "sha256=True", "sha256: true", "sha256"],
        default: "off",
        doc: "The SHA-256 of each file (implies the data scan).",
        help: "with the data scan, the SHA-256 of each file (same pass);\n\
               implies --deep",
    },
    Spec {
        opt: Opt::ExpectSha256,
        kind: Kind::Sha256,
        cli: Some("--expect-sha256"),
        value: "HEX",
        python: Some("expect_sha256"),
        js: Some("expectSha256"),
        // The service's query parameter was published as `expected-sha256` before the other
        // faces took the option: its one key that is not the flag without its dashes.
        key: "expected-sha256",
        names: [
            "--expect-sha256",
            "expect_sha256=",
            "expectSha256",
            "expected-sha256",
        ],
        default: "none",
        doc: "The SHA-256 the one file checked must have, one more published id (implies sha256).",
        help: "the SHA-256 (64 hex digits) the file must have: one more\n\
               published id, compared with the file's SHA-256 and every\n\
               id its server publishes (INTEGRITY-SHA256 on any\n\
               disagreement); implies --sha256; only with exactly one\n\
               file checked (not a directory, a set or a repository\n\
               of several files)",
    },
    Spec {
        opt: Opt::DenyNonfinite,
        kind: Kind::Flag,
        cli: Some("--deny-nonfinite"),
        value: "",
        python: Some("deny_nonfinite"),
        js: Some("denyNonfinite"),
        key: "deny-nonfinite",
        names: [
            "--deny-nonfinite",
            "deny_nonfinite=True",
            "denyNonfinite: true",
            "deny-nonfinite",
        ],
        default: "off",
        doc: "Any NaN or infinity an error (implies the data scan).",
        help: "make any NaN or infinity an error; implies --deep",
    },
    Spec {
        opt: Opt::Header,
        kind: Kind::Headers,
        cli: Some("--header"),
        value: "NAME:VALUE",
        python: Some("headers"),
        js: None,
        key: "header",
        names: ["--header", "headers=", "header", "header"],
        default: "none",
        doc: "Extra request headers for URLs, sent only to the URL's own host.",
        help: "send this header with requests for URLs (repeatable),\n\
               only to the URL's own host (never after a redirect to\n\
               another); never printed",
    },
    Spec {
        opt: Opt::CaFile,
        kind: Kind::Path,
        cli: Some("--ca-file"),
        value: "PEM",
        python: Some("ca_file"),
        js: None,
        key: "ca-file",
        names: ["--ca-file", "ca_file=", "caFile", "ca-file"],
        default: "the built-in roots",
        doc: "A PEM bundle of the certificates trusted for https URLs.",
        help: "trust these certificates for https URLs instead of the\n\
               built-in roots",
    },
    Spec {
        opt: Opt::Timeout,
        kind: Kind::Seconds,
        cli: Some("--timeout"),
        value: "SECONDS",
        python: Some("timeout"),
        js: None,
        key: "timeout",
        names: ["--timeout", "timeout=", "timeout", "timeout"],
        default: "120 s, or 3600 s when the data is read",
        doc: "The most time one URL may take, everything included (a repository: all of it).",
        help: "the most time one URL may take, everything included\n\
               (redirects, retries, the data with --deep, and for an\n\
               index all its shards, fetched 4 at a time; for a whole\n\
               repository hf://ORG/REPO, its listing and every file and\n\
               set in it together); past it the URL is not checked\n\
               (exit 2) and the run goes on. Default:\n\
               120, or 3600 when the data is read (--deep, --sha256,\n\
               --deny-nonfinite). A body slower than 1 KiB per 30 s is\n\
               dropped sooner",
    },
];

impl Face {
    /// How this face's users write `opt` in a message.
    pub fn name(self, opt: Opt) -> &'static str {
        Spec::of(opt).name(self)
    }

    /// How this face's users choose the reference profile (`--profile reference`,
    /// `profile="reference"`).
    pub fn reference_profile(self) -> &'static str {
        match self {
            Face::Cli => "--profile reference",
            Face::Python => "profile=\"reference\"",
            Face::Js => "profile: \"reference\"",
            Face::Service => "profile reference",
        }
    }

    /// The names the core's messages give the options they ask to change.
    pub fn core_names(self) -> stcheck::OptionNames {
        let mut names = stcheck::OptionNames::default();
        names.max_header_size = self.name(Opt::MaxHeaderSize);
        names.compare_reference = self.name(Opt::CompareReference);
        names.reference_profile = self.reference_profile();
        names
    }
}

/// The longest timeout: a year, far past any real transfer (and any `Instant` overflow).
pub const MAX_TIMEOUT_SECS: f64 = 365.0 * 24.0 * 3600.0;

/// What a timeout must be.
const SECONDS: &str = "a number of seconds above 0 (at most 31536000)";

/// What an expected SHA-256 must be.
const SHA256: &str = "a SHA-256 (64 hex digits)";

/// A value as a face hands it over for an option: typed as that face has it (Python's and
/// JSON's `None`/`null`, booleans, numbers, lists), or a string for faces whose values are
/// text (the command line, a query string), read by [`RunOptions::set_text`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// Not given (`None`, `null`): the option's default.
    Default,
    /// `True`, `false`.
    Bool(bool),
    /// A whole number.
    Int(i128),
    /// A number with a fraction or an exponent.
    Float(f64),
    /// A string.
    Text(String),
    /// A list of strings.
    List(Vec<String>),
    /// Pairs of strings (request headers: name, value).
    Pairs(Vec<(String, String)>),
    /// A path, which need not be UTF-8.
    Path(PathBuf),
}

impl Value {
    /// The value as a message shows it: numbers as they are, strings quoted.
    fn shown(&self) -> String {
        match self {
            Value::Default => "None".to_owned(),
            Value::Bool(b) => b.to_string(),
            Value::Int(n) => n.to_string(),
            Value::Float(f) => f.to_string(),
            Value::Text(t) => format!("{t:?}"),
            Value::List(l) => format!("{l:?}"),
            Value::Pairs(p) => format!("{p:?}"),
            Value::Path(p) => format!("{p:?}"),
        }
    }

    /// A JSON value (an options object's property) as a value.
    pub fn from_json(v: &serde_json::Value) -> Value {
        use serde_json::Value as J;
        match v {
            J::Null => Value::Default,
            J::Bool(b) => Value::Bool(*b),
            J::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => Value::Int(i128::from(u)),
                (None, Some(i)) => Value::Int(i128::from(i)),
                _ => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            J::String(s) => Value::Text(s.clone()),
            J::Array(items) => {
                let mut list = Vec::with_capacity(items.len());
                for item in items {
                    match item {
                        J::String(s) => list.push(s.clone()),
                        _ => return Value::Text(v.to_string()),
                    }
                }
                Value::List(list)
            }
            J::Object(_) => Value::Text(v.to_string()),
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
    /// The SHA-256 the one file checked must have, 64 lower-case hex digits
    /// (`--expect-sha256`; implies `sha256`): one more published id in the integrity decision
    /// ([`stcheck::Checked::compare_published`]), named by this face's option name. A run with
    /// it checks exactly one file ([`RunOptions::one_file`]).
    pub expect_sha256: Option<String>,
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
/// enough to be polite to it. Chosen by measurement at a 50 ms round trip
/// (`benches/remote_rtt.py`, figures in `docs/performance.md`). The hub answers a file's
/// `resolve` URL with a redirect to its storage, so a header check costs two round trips:
/// 400 such checks ran at 261 files/s with 32 jobs, 335 with 48, 425 with 64 and 491 with 96
/// (one run, load 12); 64 is the first with a margin past the 300 files/s a gate needs. Each
/// job keeps one connection to a host, the sets' shards add at most as many helpers
/// (`RemoteOptions::shard_helpers`), so a run has at most twice this many requests in flight
/// to a host, and a server that asks for a wait (429, `RateLimit`) holds every job back.
pub const DEFAULT_URL_JOBS: usize = 64;

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

    /// The id the user gives for the file (`--expect-sha256`), as the integrity decision
    /// takes it: `(source, hex)`, the source being this face's name of the option.
    pub fn expected_id(&self) -> Option<(&'static str, &str)> {
        // The face's bare key: `--expect-sha256`, `expect_sha256`, `expectSha256`.
        let spec = Spec::of(Opt::ExpectSha256);
        let source = spec.key(self.face).unwrap_or(spec.key);
        self.expect_sha256.as_deref().map(|hex| (source, hex))
    }

    /// Whether the reference crate runs (its verdict decides, or is compared).
    pub fn wants_reference(&self) -> bool {
        self.compare_reference || self.profile == Profile::Reference
    }

    /// Set `opt` to `value`, as its face handed it over. What the value's kind cannot hold is
    /// refused here (a word for a number, a negative count, a timeout past
    /// [`MAX_TIMEOUT_SECS`], an unknown profile); ranges a Rust caller could also set wrong
    /// (a count of 0) are refused by [`RunOptions::resolve`], for every face alike. A list adds
    /// to the list (`--deny A --deny B`), except the readers, which replace it.
    pub fn set(&mut self, opt: Opt, value: Value) -> Result<(), UsageError> {
        let name = self.name(opt);
        let spec = Spec::of(opt);
        let shown = value.shown();
        // A flag's value is named by the bare key (`deep`, not `deep=True`).
        let key = match spec.kind {
            Kind::Flag => spec.key(self.face).unwrap_or(name),
            _ => name,
        };
        let not = |what: &str| UsageError(format!("{key}: {shown} is not {what}"));
        let named = |e: stcheck::UnknownName| UsageError(format!("{name}: {e}"));
        match spec.kind {
            Kind::Flag => {
                let on = match value {
                    Value::Bool(b) => b,
                    Value::Default => false,
                    _ => return Err(not("true or false")),
                };
                *self.flag(opt) = on;
            }
            Kind::Name => {
                let text = match &value {
                    Value::Text(t) => t.as_str(),
                    Value::Default => spec.default,
                    _ => return Err(not("a name")),
                };
                match opt {
                    Opt::Mode => self.mode = text.parse().map_err(named)?,
                    _ => self.profile = text.parse().map_err(named)?,
                }
            }
            Kind::Rules | Kind::Readers | Kind::Globs => {
                let (given, list) = match value {
                    Value::List(l) => (true, l),
                    Value::Default => (false, Vec::new()),
                    _ => return Err(not("a list of strings")),
                };
                match opt {
                    Opt::Deny => self.deny.extend(list),
                    Opt::Allow => self.allow.extend(list),
                    Opt::Exclude => self.exclude.extend(list),
                    _ => self.portable_to = given.then_some(list),
                }
            }
            Kind::Count | Kind::Bytes => {
                let what = match spec.kind {
                    Kind::Bytes => "a number of bytes",
                    _ => "a positive integer",
                };
                let n = match value {
                    Value::Int(n) => Some(u64::try_from(n).map_err(|_| not(what))?),
                    Value::Default => None,
                    _ => return Err(not(what)),
                };
                let count = |n: Option<u64>| -> Result<Option<usize>, UsageError> {
                    n.map(usize::try_from).transpose().map_err(|_| not(what))
                };
                match opt {
                    Opt::UrlJobs => self.url_jobs = count(n)?,
                    Opt::MaxWarningsPerRule => self.max_warnings_per_rule = count(n)?,
                    Opt::MaxRequests => self.max_requests = n,
                    _ => self.max_header_size = n,
                }
            }
            Kind::Seconds => {
                let s = match value {
                    // i128 to f64: exact below 2^53, and any larger count of seconds is refused.
                    Value::Int(n) => n as f64,
                    Value::Float(f) => f,
                    Value::Default => {
                        self.timeout = None;
                        return Ok(());
                    }
                    _ => return Err(not(SECONDS)),
                };
                if !(s.is_finite() && s > 0.0 && s <= MAX_TIMEOUT_SECS) {
                    return Err(not(SECONDS));
                }
                self.timeout = Some(Duration::from_secs_f64(s));
            }
            Kind::Headers => match value {
                Value::Pairs(p) => self.headers.extend(p),
                Value::Default => {}
                _ => return Err(not("a list of (name, value) pairs")),
            },
            Kind::Sha256 => {
                self.expect_sha256 = match value {
                    Value::Text(t) => {
                        let hex = t.trim().to_ascii_lowercase();
                        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                            return Err(not(SHA256));
                        }
                        Some(hex)
                    }
                    Value::Default => None,
                    _ => return Err(not(SHA256)),
                }
            }
            Kind::Path => {
                self.ca_file = match value {
                    Value::Text(t) => Some(t.into()),
                    Value::Path(p) => Some(p),
                    Value::Default => None,
                    _ => return Err(not("a path")),
                }
            }
        }
        Ok(())
    }

    /// Set `opt` from its value written as text (a command-line flag's value, a query
    /// parameter, a config string): a flag's text is `true` or `false`, a list's is
    /// comma-separated (a glob and a header are one each), a header's is `NAME:VALUE`.
    pub fn set_text(&mut self, opt: Opt, text: &str) -> Result<(), UsageError> {
        let value = match Spec::of(opt).kind {
            Kind::Flag => match text {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => Value::Text(text.to_owned()),
            },
            Kind::Count | Kind::Bytes => text
                .trim()
                .parse()
                .map_or_else(|_| Value::Text(text.to_owned()), Value::Int),
            Kind::Seconds => text
                .trim()
                .parse()
                .map_or_else(|_| Value::Text(text.to_owned()), Value::Float),
            Kind::Rules => Value::List(text.split(',').map(str::to_owned).collect()),
            Kind::Readers => Value::List(text.split(',').map(|r| r.trim().to_owned()).collect()),
            Kind::Globs => Value::List(vec![text.to_owned()]),
            Kind::Headers => {
                let Some((name, value)) = text.split_once(':') else {
                    return Err(UsageError(format!(
                        "{}: expected NAME:VALUE",
                        self.name(opt)
                    )));
                };
                Value::Pairs(vec![(name.trim().to_owned(), value.trim().to_owned())])
            }
            Kind::Name | Kind::Path | Kind::Sha256 => Value::Text(text.to_owned()),
        };
        self.set(opt, value)
    }

    /// The field of a flag.
    fn flag(&mut self, opt: Opt) -> &mut bool {
        match opt {
            Opt::Deep => &mut self.deep,
            Opt::Sha256 => &mut self.sha256,
            Opt::DenyWarnings => &mut self.deny_warnings,
            Opt::DenyNonfinite => &mut self.deny_nonfinite,
            Opt::CompareReference => &mut self.compare_reference,
            Opt::RefusalsAreErrors => &mut self.refusals_are_errors,
            Opt::FollowLinks => &mut self.follow_links,
            Opt::AllowEmpty => &mut self.allow_empty,
            Opt::AllowOtherFormats => &mut self.allow_other_formats,
            _ => &mut self.with_sets,
        }
    }

    /// The core's configuration for these options, or the first conflict found.
    pub fn resolve(&self) -> Result<Config, UsageError> {
        let n = |o| self.name(o);
        let err = |m: String| Err(UsageError(m));
        let mut config = Config::default();
        config.names = self.face.core_names();
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
        let sha256 = self.sha256 || self.expect_sha256.is_some();
        config.deep = self.deep || sha256 || self.deny_nonfinite;
        config.sha256 = sha256;
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
            let s = t.as_secs_f64();
            if t.is_zero() || s > MAX_TIMEOUT_SECS {
                return err(format!("{}: {s} is not {SECONDS}", n(Opt::Timeout)));
            }
        }
        for (opt, count) in [
            (Opt::UrlJobs, self.url_jobs.map(|n| n as u64)),
            (Opt::MaxRequests, self.max_requests),
        ] {
            if count == Some(0) {
                return err(format!("{}: 0 is not a positive integer", n(opt)));
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
    fn every_option_has_one_row_and_unique_names() {
        use std::collections::HashSet;
        let mut opts = HashSet::new();
        for face in [Face::Cli, Face::Python, Face::Js, Face::Service] {
            let mut keys = HashSet::new();
            for spec in OPTIONS {
                if let Some(k) = spec.key(face) {
                    assert!(keys.insert(k), "{face:?}: {k} twice");
                    assert_eq!(Spec::find(face, k).map(|s| s.opt), Some(spec.opt));
                }
                assert!(!spec.name(face).is_empty(), "{:?}", spec.opt);
            }
        }
        for spec in OPTIONS {
            assert!(
                opts.insert(format!("{:?}", spec.opt)),
                "{:?} twice",
                spec.opt
            );
            assert_eq!(Spec::of(spec.opt).opt, spec.opt);
            assert!(spec.doc.ends_with('.'), "{:?}", spec.opt);
            assert_eq!(spec.cli.is_some(), !spec.help.is_empty(), "{:?}", spec.opt);
        }
        assert_eq!(opts.len(), 24);
        assert_eq!(
            SECONDS,
            format!("a number of seconds above 0 (at most {MAX_TIMEOUT_SECS})")
        );
        assert_eq!(Face::Python.name(Opt::Deep), "deep=True");
        assert_eq!(Face::Js.name(Opt::Deny), "deny");
        assert_eq!(Face::Service.name(Opt::MaxHeaderSize), "max-header-size");
        assert_eq!(Face::Cli.name(Opt::Mode), "mode");
        for spec in OPTIONS {
            if let (Some(flag), false) = (spec.cli, spec.opt == Opt::ExpectSha256) {
                assert_eq!(flag.strip_prefix("--"), Some(spec.key));
            }
        }
        assert_eq!(
            Face::default().core_names(),
            stcheck::OptionNames::default()
        );
    }

    /// The option names a source file lists between `start` and `end`: each `name:` or
    /// `name?:` at the start of a line (TypeScript) or `name: type = default,` (Python).
    fn listed(file: &str, start: &str, end: &str) -> Vec<String> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        let text = std::fs::read_to_string(&path).expect("the source file reads");
        let from = text.find(start).expect("the list starts") + start.len();
        let to = from + text[from..].find(end).expect("the list ends");
        text[from..to]
            .lines()
            .map(str::trim)
            .filter(|l| !l.starts_with("//") && !l.starts_with('*') && !l.starts_with("/*"))
            .filter_map(|l| l.split_once(':').map(|(k, _)| k.trim_end_matches('?')))
            .filter(|k| !k.is_empty() && k.chars().all(|c| c.is_alphanumeric() || c == '_'))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn the_python_and_typescript_lists_are_the_tables() {
        // file, where its list starts and ends, the face, and what the face takes beside the
        // run options (how records are shown and read).
        let lists = [
            (
                "../python/py_src/stcheck/_check.py",
                "def options(\n    *,\n",
                ") -> Dict[str, Any]:",
                Face::Python,
                &["threads", "verbose"][..],
            ),
            (
                "../js/lib/stcheck.d.ts",
                "export interface Options {\n",
                "\n}",
                Face::Js,
                &["verbose", "path", "throwOnInvalid"],
            ),
        ];
        for (file, start, end, face, own) in lists {
            let listed = listed(file, start, end);
            let mut got: Vec<&str> = listed.iter().map(String::as_str).collect();
            got.retain(|k| !own.contains(k));
            let want: Vec<&str> = OPTIONS.iter().filter_map(|s| s.key(face)).collect();
            assert_eq!(sorted(got), sorted(want), "{file}");
        }
    }

    fn sorted(mut v: Vec<&str>) -> Vec<&str> {
        v.sort_unstable();
        v
    }

    #[test]
    fn values_are_read_by_kind_and_refused_alike() {
        let mut o = RunOptions::default();
        o.set_text(Opt::Deny, "LAYOUT-ALIGN,name-path")
            .expect("rules");
        o.set_text(Opt::PortableTo, "mlx, hub-js").expect("readers");
        o.set_text(Opt::Timeout, "0.5").expect("seconds");
        o.set_text(Opt::Header, "X-A: b").expect("a header");
        o.set_text(Opt::Profile, "portable").expect("a profile");
        o.set(Opt::Deep, Value::Bool(true)).expect("a flag");
        assert_eq!(o.deny, ["LAYOUT-ALIGN", "name-path"]);
        assert_eq!(o.portable_to, Some(vec!["mlx".into(), "hub-js".into()]));
        assert_eq!(o.timeout, Some(Duration::from_millis(500)));
        assert_eq!(o.headers, [("X-A".to_owned(), "b".to_owned())]);
        assert_eq!(o.profile, Profile::Portable);
        assert!(o.deep);
        let refusal = |face, opt, v: Value| {
            let mut o = RunOptions {
                face,
                ..RunOptions::default()
            };
            match o.set(opt, v) {
                Err(e) => e.0,
                Ok(()) => o.resolve().expect_err("refused").0,
            }
        };
        for (opt, v, want) in [
            (
                Opt::UrlJobs,
                Value::Int(0),
                "--url-jobs: 0 is not a positive integer",
            ),
            (
                Opt::MaxRequests,
                Value::Int(0),
                "--max-requests: 0 is not a positive integer",
            ),
            (
                Opt::MaxRequests,
                Value::Int(-1),
                "--max-requests: -1 is not a positive integer",
            ),
            (
                Opt::Timeout,
                Value::Float(1e9),
                "--timeout: 1000000000 is not a number of seconds above 0 (at most 31536000)",
            ),
            (
                Opt::Profile,
                Value::Text("lax".into()),
                "--profile: \"lax\" is not strict, reference or portable",
            ),
        ] {
            assert_eq!(refusal(Face::Cli, opt, v.clone()), want);
            let python = want.replacen(Face::Cli.name(opt), Face::Python.name(opt), 1);
            assert_eq!(refusal(Face::Python, opt, v), python);
        }
        let mut o = RunOptions::default();
        let e = o.set_text(Opt::Timeout, "soon").expect_err("not a number");
        assert_eq!(
            e.0,
            "--timeout: \"soon\" is not a number of seconds above 0 (at most 31536000)"
        );
        let e = o.set_text(Opt::Header, "X-A").expect_err("no colon");
        assert_eq!(e.0, "--header: expected NAME:VALUE");
        // A Rust caller's timeout past the bound is refused by the resolution itself.
        let o = RunOptions {
            timeout: Some(Duration::from_secs(1 << 40)),
            ..RunOptions::default()
        };
        assert!(o
            .resolve()
            .expect_err("too long")
            .0
            .starts_with("--timeout: "));
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
