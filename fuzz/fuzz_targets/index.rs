//! Generated shard sets and their index, with at most one change whose verdict is asserted.
#![no_main]
libfuzzer_sys::fuzz_target!(|case: stcheck_fuzzing::IndexCase| case.check());
