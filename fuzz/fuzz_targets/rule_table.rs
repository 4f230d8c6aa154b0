//! Rule IDs, profiles and read modes looked up by name (exact, any case, near): never another one.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| stcheck_fuzzing::check_rule_table(data));
