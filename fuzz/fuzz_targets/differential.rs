//! The reference crate on the same bytes; reference panics are reported, not fatal.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| stcheck_fuzzing::differential_target(data));
