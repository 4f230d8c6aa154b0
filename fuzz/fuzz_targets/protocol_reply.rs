//! The conformance runner's decoding of adapter replies and output: no panic, clipped printable reasons.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| stcheck_fuzzing::check_protocol_reply(data));
