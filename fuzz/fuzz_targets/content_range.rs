//! `Content-Range` values: a consistent span of the total that prints back to itself.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| { let _ = stcheck_fuzzing::check_content_range(data); });
