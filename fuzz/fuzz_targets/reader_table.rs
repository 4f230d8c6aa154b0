//! Any text as a reader table: loads or is refused with a message; a loaded table judges a file.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| stcheck_fuzzing::check_reader_table(data));
