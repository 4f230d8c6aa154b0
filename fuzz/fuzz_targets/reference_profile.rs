//! The reference crate's verdict from the head over a sparse file equals its verdict on the whole buffer.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| stcheck_fuzzing::check_reference_profile(data));
