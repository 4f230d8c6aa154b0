//! A file over loopback HTTP, every answer drawn from the input: the local verdict or "could not check".
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = stcheck_fuzzing::check_remote_range(data);
});
