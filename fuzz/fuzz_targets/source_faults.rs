//! A file changed while it is checked (at a point the input chooses), and a reader that fails.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| stcheck_fuzzing::check_source_faults(data));
