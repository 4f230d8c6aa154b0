//! A file checked mapped, read in ranges and streamed gives the verdict of the same bytes in memory.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| stcheck_fuzzing::check_file_source(data));
