//! Streaming through arbitrary short reads vs the whole buffer: same verdict, rule, offset.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| stcheck_fuzzing::check_stream_input(data));
