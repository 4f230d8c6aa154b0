//! The deep scan and hash: one thread, split across threads, fed in pieces; deny_nonfinite; the warning cap.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| stcheck_fuzzing::check_deep_scan(data));
