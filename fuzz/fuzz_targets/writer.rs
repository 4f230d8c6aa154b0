//! The canonical writer: what it writes validates with no warning and reads back; a refusal has a message.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| stcheck_fuzzing::check_writer(data));
