//! Every hard limit and every configurable option, with its default, in one place.

/// The largest header length N accepted by default: 100,000,000 bytes, the reference
/// implementation's own limit. [`Config::max_header_size`] can lower it (or raise it, for a
/// caller that knows what it does: memory use grows with it, see below).
pub const DEFAULT_MAX_HEADER_SIZE: u64 = 100_000_000;

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
/// 4 x N bytes beyond the header itself (one record of about 64 bytes per tensor, whose JSON
/// entry takes at least 40 bytes, and 8 bytes per shape dimension, whose JSON takes at least
/// 2 bytes), plus the input when it is not memory-mapped.
pub const MEMORY_FACTOR_PER_HEADER_BYTE: u64 = 4;

/// The options of the validator. `Config::default()` is the strict profile.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Config {
    /// Largest header length N accepted, in bytes. Default: [`DEFAULT_MAX_HEADER_SIZE`].
    pub max_header_size: u64,
    /// Turn every warning into an error (the first warning in file order is reported).
    /// Default: `false`.
    pub deny_warnings: bool,
    /// With the deep scan, make any NaN or infinity an error (`DATA-NONFINITE`).
    /// Default: `false`.
    pub deny_nonfinite: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_header_size: DEFAULT_MAX_HEADER_SIZE,
            deny_warnings: false,
            deny_nonfinite: false,
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
}
