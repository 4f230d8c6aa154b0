//! A corpus release archive unpacked: nothing written outside the cache, links inside, caps hold.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| stcheck_fuzzing::check_corpus_archive(data));
