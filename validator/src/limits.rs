//! Every hard limit and every configurable option, with its default, in one place.

/// The largest header length N accepted by default: 100,000,000 bytes, the reference
/// implementation's own limit. [`Config::max_header_size`] can lower it (or raise it, for a
/// caller that knows what it does: memory use grows with it, see below).
pub const DEFAULT_MAX_HEADER_SIZE: u64 = 100_000_000;

/// The largest header length any configuration accepts: 2^31 - 1 bytes. Positions in the header
/// are kept as 32-bit numbers (half the size of the per-tensor records), and no real header
/// comes within a factor of 20 of it. [`Config::max_header_size`] above it acts as this.
pub const MAX_HEADER_SIZE_CEILING: u64 = (1 << 31) - 1;

/// How many warnings of one rule a report keeps, by default: the first ones in file order.
/// The exact count of every rule is kept beside them ([`crate::Report::warning_counts`]), so a
/// header with a million suspicious names costs a hundred findings, not a million.
pub const DEFAULT_MAX_WARNINGS_PER_RULE: usize = 100;

/// The nesting level at which stage 1 reports `JSON-DEPTH`: 127 nested arrays or objects are
/// followed, the 128th is rejected. This is serde_json's fixed recursion limit; the schema
/// itself never nests deeper than 3 (root object, entry object, shape array), so every deeper
/// header is rejected anyway.
pub const MAX_JSON_DEPTH: usize = 128;

/// How many bytes at the start of a file decide `FRAME-NOT-SAFETENSORS` (what a file with an
/// impossible length field is instead): enough for every signature it knows (the farthest is
/// tar's `ustar` at offset 257) and a line of text to quote. A stream whose length field is
/// above the limit is read this far before it is rejected.
pub const HEAD_LEN: usize = 512;

/// The size of the fixed buffer the streaming validator reads the data region through.
pub const STREAM_BUFFER_SIZE: usize = 1 << 20;

/// Memory bound, documented for users: validating a header of N bytes allocates at most about
/// 2 x N bytes beyond the header itself: a 40-byte record per tensor (whose JSON entry takes at
/// least 40 bytes), 8 bytes per shape dimension (whose JSON takes at least 2 bytes), about 6
/// bytes per object key for the duplicate-key tables (a key with its value takes at least 6),
/// and a bounded number of warnings ([`DEFAULT_MAX_WARNINGS_PER_RULE`] per rule). The header
/// itself is mapped or, when read, held once. `benches/memory.sh` measures it.
pub const MEMORY_FACTOR_PER_HEADER_BYTE: u64 = 2;

/// The options of the validator. `Config::default()` is the strict profile, header checks only.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Config {
    /// Largest header length N accepted, in bytes. Default: [`DEFAULT_MAX_HEADER_SIZE`];
    /// values above [`MAX_HEADER_SIZE_CEILING`] act as the ceiling.
    pub max_header_size: u64,
    /// Turn every warning into an error (the first warning in file order is reported).
    /// Default: `false`.
    pub deny_warnings: bool,
    /// Make any NaN or infinity an error (`DATA-NONFINITE`); implies the deep scan.
    /// Default: `false`.
    pub deny_nonfinite: bool,
    /// Scan the tensor data: BOOL bytes, NaN/Inf counts, polyglot signatures (`DATA-*`).
    /// Every byte of the file is read. Default: `false`.
    pub deep: bool,
    /// Compute the SHA-256 of the whole file, in the same pass as the deep scan. Every byte
    /// of the file is read. Default: `false`.
    pub sha256: bool,
    /// Threads to split one mapped file's deep scan across; 0 or 1 = single-threaded. With
    /// `sha256`, one of them hashes while the others scan. Results are identical to the
    /// single-threaded scan. Read and streamed input is scanned on one thread. Default: 0.
    pub threads: usize,
    /// The smallest share of the data region worth a thread of its own; 0 means the built-in
    /// 4 MiB. Default: 0.
    pub min_bytes_per_thread: u64,
    /// How many warnings of each rule a report keeps (the first ones in file order; the
    /// count of all is kept). Default: [`DEFAULT_MAX_WARNINGS_PER_RULE`].
    pub max_warnings_per_rule: usize,
    /// Also run the reference crate (`safetensors` 0.8.0) on the file, for its verdict: on
    /// the length field and header over a sparse temporary file of the file's length (the
    /// crate reads nothing else), or on a whole buffer in memory. Headers of more than
    /// [`crate::reference::MAX_MEMBERS`] JSON members are refused (the check is not done),
    /// for the crate's own memory. Default: `false`.
    pub reference: bool,
    /// The portable profile (SPEC.md, "Portable profile"): a file (or set) strict accepts is
    /// also judged against the readers of the reader table chosen here, and the result is in
    /// [`crate::Checked::portable`]. Default: `None` (strict only).
    pub portable: Option<crate::portable::table::Options>,
    /// Warning rules made errors, one by one (`--deny RULE`). Default: none.
    pub deny: Vec<crate::Rule>,
    /// Warning rules not reported at all (`--allow RULE`); an error rule here has no effect.
    /// Default: none.
    pub allow: Vec<crate::Rule>,
    /// How the caller's users write the options a message asks them to change. Default: the
    /// command line's flags.
    pub names: OptionNames,
}

/// How the options a message of the core asks to change are written on the caller's face
/// (`--compare-reference`, `compare_reference=True`, ...). The gate fills them for its face
/// (`stcheck_gate::options::Face`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct OptionNames {
    /// The largest header length: `--max-header-size`.
    pub max_header_size: &'static str,
    /// The reference verdict beside the strict one: `--compare-reference`.
    pub compare_reference: &'static str,
    /// The reference profile chosen: `--profile reference`.
    pub reference_profile: &'static str,
}

impl Default for OptionNames {
    fn default() -> Self {
        OptionNames {
            max_header_size: "--max-header-size",
            compare_reference: "--compare-reference",
            reference_profile: "--profile reference",
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_header_size: DEFAULT_MAX_HEADER_SIZE,
            deny_warnings: false,
            deny_nonfinite: false,
            deep: false,
            sha256: false,
            threads: 0,
            min_bytes_per_thread: 0,
            max_warnings_per_rule: DEFAULT_MAX_WARNINGS_PER_RULE,
            reference: false,
            portable: None,
            deny: Vec::new(),
            allow: Vec::new(),
            names: OptionNames::default(),
        }
    }
}

impl Config {
    /// The strict profile with default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Set [`Config::max_header_size`].
    pub fn max_header_size(mut self, bytes: u64) -> Self {
        self.max_header_size = bytes;
        self
    }

    /// Set [`Config::deny_warnings`].
    pub fn deny_warnings(mut self, yes: bool) -> Self {
        self.deny_warnings = yes;
        self
    }

    /// Set [`Config::deny_nonfinite`].
    pub fn deny_nonfinite(mut self, yes: bool) -> Self {
        self.deny_nonfinite = yes;
        self
    }

    /// Set [`Config::deep`].
    pub fn deep(mut self, yes: bool) -> Self {
        self.deep = yes;
        self
    }

    /// Set [`Config::sha256`].
    pub fn sha256(mut self, yes: bool) -> Self {
        self.sha256 = yes;
        self
    }

    /// Set [`Config::threads`].
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n;
        self
    }

    /// Set [`Config::min_bytes_per_thread`].
    pub fn min_bytes_per_thread(mut self, bytes: u64) -> Self {
        self.min_bytes_per_thread = bytes;
        self
    }

    /// Set [`Config::max_warnings_per_rule`].
    pub fn max_warnings_per_rule(mut self, n: usize) -> Self {
        self.max_warnings_per_rule = n;
        self
    }

    /// Set [`Config::reference`].
    pub fn reference(mut self, yes: bool) -> Self {
        self.reference = yes;
        self
    }

    /// Set [`Config::portable`].
    pub fn portable(mut self, options: Option<crate::portable::table::Options>) -> Self {
        self.portable = options;
        self
    }

    /// Whether the check reads every byte of the file (deep scan, hash, or denied non-finite
    /// values, which imply the deep scan).
    pub fn reads_data(&self) -> bool {
        self.deep || self.sha256 || self.deny_nonfinite
    }

    /// Whether a warning of `rule` is an error under this configuration (`deny_warnings`, or
    /// the rule denied by name): the one place where warnings become errors.
    pub fn denies(&self, rule: crate::Rule) -> bool {
        rule.severity() == crate::Severity::Warning
            && (self.deny_warnings || self.deny.contains(&rule))
    }

    /// Whether a warning of `rule` is hidden (allowed by name).
    pub fn allows(&self, rule: crate::Rule) -> bool {
        rule.severity() == crate::Severity::Warning && self.allow.contains(&rule)
    }

    /// The header length limit in force: [`Config::max_header_size`], at most the ceiling.
    pub fn header_limit(&self) -> u64 {
        self.max_header_size.min(MAX_HEADER_SIZE_CEILING)
    }
}
