//! The conformance suite: the conformance runner for readers ([`runner`], behind `stconform`),
//! the golden corpus and its generator ([`corpus`]), the writer suite ([`writers`], behind
//! `stwrite`), what the two runners share ([`harness`]) and the static results page
//! ([`page`]).

// Each module's summary is its own `//!` docs: an outer `///` here would be joined to them and
// their links resolved from this scope, where they do not resolve.
pub mod corpus;
pub mod harness;
pub mod page;
pub mod runner;
pub mod writers;
