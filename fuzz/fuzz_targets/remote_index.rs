//! A fetched index's shard names: each a URL in the index's own directory and host.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| { let _ = stcheck_fuzzing::check_remote_index(data); });
