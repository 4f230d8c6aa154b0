//! Header bytes: the fast path accepts only what the serde path accepts, identically.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| stcheck_fuzzing::check_fast_path(data));
