//! An `--exclude` pattern and a path: bounded, counted work and the reference matcher's answer.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| { let _ = stcheck_fuzzing::check_glob(data); });
