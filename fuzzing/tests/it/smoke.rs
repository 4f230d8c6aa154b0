//! Every fuzz target's logic, run on stable as a seeded smoke test (as wasm-tools does), so the
//! fuzz code cannot rot between fuzzing runs. The targets in `fuzz/fuzz_targets/` call the
//! same functions of `stcheck_fuzzing`.

use std::collections::BTreeMap;

use stcheck_fuzzing::{self as fuzzing, Differential, Mutation, Rng, Source, Structured};

const ITERATIONS: u64 = 3000;

#[test]
fn validate_target_on_seeded_inputs() {
    let mut rng = Rng::new(0x5eed_0001);
    for _ in 0..ITERATIONS {
        let file = fuzzing::smoke_file(&mut rng);
        fuzzing::check_validate(&file);
    }
}

#[test]
fn structured_target_applies_every_mutation() {
    let mut rng = Rng::new(0x5eed_0002);
    let mut applied: BTreeMap<&str, u64> = BTreeMap::new();
    let mut unmutated = 0u64;
    for _ in 0..ITERATIONS {
        let case = Structured::generate(&mut rng);
        match case.check() {
            Some(name) => *applied.entry(name).or_default() += 1,
            None => unmutated += 1,
        }
    }
    // The smoke test is only worth something if it reaches every mutation and the unmutated
    // path; a generator change that starves one of them must fail here.
    assert!(unmutated > 0, "no unmutated case checked");
    for name in Mutation::NAMES {
        assert!(
            applied.get(name).copied().unwrap_or(0) > 0,
            "mutation {name} never applied: {applied:?}"
        );
    }
}

#[test]
fn structured_generator_on_exhausted_input_still_generates() {
    // libFuzzer starts from tiny inputs; zeros must select valid, small choices.
    let case = Structured::generate(&mut fuzzing::ByteSource::new(&[]));
    assert!(case.model.tensors.is_empty());
    case.check();
}

#[test]
fn fast_path_target_on_seeded_headers() {
    let mut rng = Rng::new(0x5eed_0006);
    for _ in 0..ITERATIONS {
        let file = fuzzing::smoke_file(&mut rng);
        fuzzing::check_fast_path(file.get(8..).unwrap_or(&[]));
        // Canonical files, whose headers the fast path takes, unmutated.
        let case = Structured::generate(&mut rng);
        let file = case.model.serialize();
        fuzzing::check_fast_path(file.get(8..).unwrap_or(&[]));
    }
}

#[test]
fn stream_target_on_seeded_inputs_and_chunkings() {
    let mut rng = Rng::new(0x5eed_0003);
    for _ in 0..ITERATIONS {
        let file = fuzzing::smoke_file(&mut rng);
        let len = rng.below(8) as usize;
        let schedule = rng.bytes(len);
        fuzzing::check_stream(&file, &schedule);
    }
}

#[test]
fn stream_input_split_keeps_seed_files_whole() {
    let file = stcheck::write::serialize(
        &[stcheck::write::TensorSpec::new(
            "w",
            stcheck::Dtype::U8,
            &[3],
            &[1, 2, 3],
        )],
        &[],
    )
    .expect("a valid model");
    let mut seed = file.clone();
    seed.push(0);
    let (f, schedule) = fuzzing::split_stream_input(&seed);
    assert_eq!(f, &file[..]);
    assert!(schedule.is_empty());
    let mut with_schedule = file.clone();
    with_schedule.extend_from_slice(&[5, 0xFF, 2]);
    let (f, schedule) = fuzzing::split_stream_input(&with_schedule);
    assert_eq!(f, &file[..]);
    assert_eq!(schedule, &[5, 0xFF]);
}

#[test]
fn differential_target_on_seeded_inputs() {
    let mut rng = Rng::new(0x5eed_0004);
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    for _ in 0..ITERATIONS {
        let file = fuzzing::smoke_file(&mut rng);
        let key = match fuzzing::check_differential(&file) {
            Differential::BothAccept => "both-accept".to_owned(),
            Differential::BothReject => "both-reject".to_owned(),
            Differential::Documented(rule) => format!("documented {rule}"),
            Differential::ReferencePanic { strict, .. } => format!("reference panic ({strict})"),
        };
        *seen.entry(key).or_default() += 1;
    }
    assert!(
        seen.get("both-accept").copied().unwrap_or(0) > 0,
        "{seen:?}"
    );
    assert!(
        seen.get("both-reject").copied().unwrap_or(0) > 0,
        "{seen:?}"
    );
}

#[test]
fn index_target_on_seeded_sets() {
    let mut rng = Rng::new(0x5eed_0005);
    for _ in 0..ITERATIONS / 3 {
        fuzzing::IndexCase::generate(&mut rng).check();
    }
}
