//! A hub listing's pages and `Link` headers: usable paths only, one origin, no page twice.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| { let _ = stcheck_fuzzing::check_hub_listing(data); });
