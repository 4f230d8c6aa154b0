//! The portable profile: an answer exactly for valid files, the same whole or fed, check_file's, PORTABLE-* findings.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| stcheck_fuzzing::check_portable(data));
