//! The shipped adapter config and known-failures files are consistent with each other and
//! with the corpus manifest.

use std::path::Path;

use stcheck_conformance::runner::config::Config;
use stcheck_conformance::runner::known::KnownFailures;
use stcheck_conformance::runner::Manifest;

fn dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_adapter_has_a_known_failures_file_that_names_real_cases() {
    let config = Config::load(&dir().join("adapters.json")).expect("adapters.json");
    let manifest = Manifest::load(&dir().join("../corpus/manifest.json")).expect("manifest");
    assert!(config.adapters.len() >= 7);
    for a in &config.adapters {
        let path = config
            .known_failures(a)
            .unwrap_or_else(|| panic!("{}: no known-failures file", a.name));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let known =
            KnownFailures::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(known.adapter, a.name, "{}", path.display());
        for id in known.results.keys() {
            assert!(
                manifest.case(id).is_some(),
                "{}: unknown case {id}",
                path.display()
            );
        }
    }
    for name in [
        "stcheck-strict",
        "stcheck-reference",
        "reference-crate",
        "python-safe-open",
        "python-deserialize",
    ] {
        assert!(
            config.adapter(name).is_some_and(|a| a.ci),
            "{name} must run in CI"
        );
    }
}

/// The acceptance criterion, as recorded: stcheck's strict profile fails no case (its only
/// non-PASS results are choices on implementation-defined cases).
#[test]
fn stcheck_strict_has_no_known_failure() {
    for name in ["stcheck-strict", "stcheck-strict-deep"] {
        let text = std::fs::read_to_string(dir().join(format!("known-failures/{name}.json")))
            .expect("file");
        let known = KnownFailures::parse(&text).expect("parse");
        for (id, e) in &known.results {
            assert!(!e.result().is_failure(), "{name}: {id} is {}", e.result());
        }
    }
}

/// stcheck's reference profile and the reference crate are recorded with the same results.
#[test]
fn the_reference_profile_and_the_crate_are_recorded_alike() {
    let read = |n: &str| {
        let text =
            std::fs::read_to_string(dir().join(format!("known-failures/{n}.json"))).expect("file");
        KnownFailures::parse(&text).expect("parse").results
    };
    let a: Vec<_> = read("stcheck-reference")
        .into_iter()
        .map(|(k, v)| (k, v.result()))
        .collect();
    let b: Vec<_> = read("reference-crate")
        .into_iter()
        .map(|(k, v)| (k, v.result()))
        .collect();
    assert_eq!(a, b);
}
