//! The service's HTTP query of `POST /v1/check`: any bytes, never a panic (see
//! `stcheck_fuzzing::check_query`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| { let _ = stcheck_fuzzing::check_query(data); });
