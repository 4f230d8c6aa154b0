//! Any bytes: never panics, offsets within the input, deterministic verdict.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| stcheck_fuzzing::check_validate(data));
