//! The service's clamd commands and `INSTREAM` chunk framing: any bytes, never a panic, the
//! stream the chunk lengths announce (see `stcheck_fuzzing::check_clamd`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| { let _ = stcheck_fuzzing::check_clamd(data); });
