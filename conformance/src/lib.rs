/// The conformance runner: manifest, protocol, classification, known failures, reports.
pub mod runner;

/// The golden corpus: text recipes, the deterministic generator, and the manifest.
pub mod corpus;

/// The writer suite: tasks, the writer protocol, judging, known failures, reports.
pub mod writers;

/// What the reader and writer runners share: arguments, config, known failures, the pool, the
/// report's tail and the end of a run.
pub mod harness;

/// The static HTML results page (readers and writers).
pub mod page;
