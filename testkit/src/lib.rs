//! What the integration tests of stcheck's crates share (a dev-dependency only, never
//! published): a loopback HTTP server ([`http`]), running a command-line binary and reading
//! what it printed ([`cli`]), and the corpus manifest as types ([`corpus`]).

pub mod cli;
pub mod corpus;
pub mod http;

/// `{:?}` of `x`, cut to `n` characters (a corpus file can hold a 65,536-character name).
pub fn short<T: std::fmt::Debug>(x: &T, n: usize) -> String {
    let s = format!("{x:?}");
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s,
    }
}
