//! URLs, `hf://` addresses, redirect targets: a planted secret never shown; built URLs parse again.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| { let _ = stcheck_fuzzing::check_address(data); });
