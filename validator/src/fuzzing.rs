//! Fuzzing logic shared by the `fuzz/` targets and the seeded smoke tests that ordinary
//! `cargo test` runs on stable. Not a stable API.
