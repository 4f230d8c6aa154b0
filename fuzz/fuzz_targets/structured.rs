//! A generated valid model, written canonically, then at most one mutation with its verdict.
#![no_main]
libfuzzer_sys::fuzz_target!(|case: stcheck_fuzzing::Structured| {
    case.check();
});
