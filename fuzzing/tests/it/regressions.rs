//! Every input a fuzz target found, as a named test with its input file under
//! `tests/regressions/`. See `fuzz/README.md` for how a crash becomes one of these.

use stcheck::reference::{self, Verdict};
use stcheck::{Config, Rule};
use stcheck_fuzzing::{self as fuzzing, Differential};

fn regression(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/regressions/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Found by `differential` (seeded from corpus/invalid/data/length-sum-overflow): eight
/// contiguous U8 tensors of 2^61-1 bytes each. The reference adds their total (2^64-8) to
/// 8 + N without a check: it panics with overflow checks on, and wraps to a rejection without.
/// stcheck must reject it cleanly, and the harness must survive the reference's panic.
#[test]
fn reference_length_sum_overflow_854() {
    let file = regression("reference-length-sum-overflow-854.safetensors");
    assert_eq!(file.len(), 854);

    let err = stcheck::validate(&file, &Config::default()).expect_err("the file is invalid");
    assert_eq!(err.rule(), Rule::DataTruncated, "{err}");
    // The data region is empty: the fault is at its start, 8 + N.
    assert_eq!(err.offset(), 854);

    let verdict = reference::verdict(&file);
    if cfg!(debug_assertions) {
        assert!(
            matches!(&verdict, Verdict::Panic(m) if m.contains("overflow")),
            "{verdict:?}"
        );
        assert_eq!(
            fuzzing::check_differential(&file),
            Differential::ReferencePanic {
                message: "attempt to add with overflow".to_owned(),
                strict: Rule::DataTruncated,
            }
        );
    } else {
        assert!(!verdict.accepts(), "{verdict:?}");
    }

    // The streaming validator agrees, whatever the chunking.
    fuzzing::check_stream(&file, &[0, 7, 0xFF, 200]);
    fuzzing::check_validate(&file);
}

/// Found while writing the `stream` harness: a reader that answers `Interrupted` forever made
/// `validate_reader` spin. The harness's reader now never interrupts twice in a row; this
/// test keeps a schedule of only interruptions terminating.
#[test]
fn stream_harness_all_interrupted_schedule_terminates() {
    let file = regression("reference-length-sum-overflow-854.safetensors");
    fuzzing::check_stream(&file, &[0xFF]);
    fuzzing::check_stream(&file[..20], &[0xFF, 0xFF]);
}

/// A reference finding listed in SPEC.md (section 5, SIZE-OVERFLOW), kept here as an input of
/// the differential harness: the reference multiplies the shape left to right, so a leading
/// zero dimension hides the overflow of `2^63 x 2^63` and it loads the file. Strict rejects
/// it, and the harness must classify it as a documented difference, not a finding.
#[test]
fn reference_zero_dimension_hides_shape_overflow() {
    let file = regression("reference-zero-dim-hides-overflow.safetensors");
    let err = stcheck::validate(&file, &Config::default()).expect_err("the shape overflows");
    assert_eq!(err.rule(), Rule::SizeOverflow, "{err}");
    assert_eq!(err.tensor(), Some("t"));
    assert!(reference::verdict(&file).accepts());
    assert_eq!(
        fuzzing::check_differential(&file),
        Differential::Documented(Rule::SizeOverflow)
    );
    fuzzing::check_validate(&file);
    fuzzing::check_stream(&file, &[3]);
}

/// The same reference finding with the zero last: `[2^64-1, 0]` has no elements, but
/// `(2^64-1) x 8 bits` overflows, which strict checks over the non-zero dimensions. The
/// reference's product is `2^64-1 x 0 = 0` and it loads the file.
#[test]
fn reference_max_dimension_then_zero() {
    let file = regression("reference-max-dim-then-zero.safetensors");
    let err = stcheck::validate(&file, &Config::default()).expect_err("the shape overflows");
    assert_eq!(err.rule(), Rule::SizeOverflow, "{err}");
    assert!(reference::verdict(&file).accepts());
    assert_eq!(
        fuzzing::check_differential(&file),
        Differential::Documented(Rule::SizeOverflow)
    );
}

/// Found by `writer` (kept as fuzz/corpus/writer/regression-name-repeated-under-another-dtype):
/// the canonical writer looked for a repeated name among neighbours in its writing order
/// (dtype, then name), where two tensors of one name and different dtypes are not neighbours,
/// and wrote a file the validator rejects (`JSON-DUPLICATE-KEY`).
#[test]
fn writer_refuses_a_name_repeated_under_another_dtype() {
    use stcheck::write::{serialize, TensorSpec, WriteError};
    use stcheck::Dtype;
    let got = serialize(
        &[
            TensorSpec::new("w", Dtype::F32, &[1], &[0; 4]),
            TensorSpec::new("v", Dtype::U8, &[1], &[0]),
            TensorSpec::new("w", Dtype::U8, &[1], &[0]),
        ],
        &[],
    );
    assert_eq!(got, Err(WriteError::DuplicateName("w".into())));
    fuzzing::check_writer(b"}\0:&\0}\0\0:\x94\xb0");
}
