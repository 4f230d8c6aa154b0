//! Target `validate`: any bytes.

use crate::*;

/// A comparable summary of a verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Accepted: the owned report's tensors (name, dtype, shape, begin, end) and warnings.
    Accept {
        /// The tensors in offset order.
        tensors: Vec<(String, Dtype, Vec<u64>, u64, u64)>,
        /// The warnings.
        warnings: Vec<stcheck::Warning>,
    },
    /// Rejected with this error.
    Reject(Error),
}

/// Summarise a verdict.
pub fn outcome(result: &Result<Report<'_>, Error>) -> Outcome {
    match result {
        Ok(r) => Outcome::Accept {
            tensors: r
                .tensors()
                .map(|t| (t.name.to_owned(), t.dtype, t.shape.to_vec(), t.begin, t.end))
                .collect(),
            warnings: r.warnings().to_vec(),
        },
        Err(e) => Outcome::Reject(e.clone()),
    }
}

/// The `validate` target: never panics, every offset within the input, deterministic, and
/// `deny_warnings` promotes exactly the first warning.
pub fn check_validate(data: &[u8]) {
    let config = Config::default();
    let first = stcheck::validate(data, &config);
    let len = data.len() as u64;
    match &first {
        Err(e) => assert!(
            e.offset() <= len,
            "FUZZ FINDING: error offset {} beyond the input's {len} bytes: {e}",
            e.offset()
        ),
        Ok(r) => {
            for w in r.warnings() {
                assert!(
                    w.offset() <= len,
                    "FUZZ FINDING: warning offset beyond the input's {len} bytes: {w}"
                );
            }
            assert_eq!(
                r.file_len(),
                len,
                "FUZZ FINDING: accepted file of another length"
            );
            for t in r.tensors() {
                assert!(
                    t.file_begin <= t.file_end && t.file_end <= len && t.header_offset < len,
                    "FUZZ FINDING: tensor {:?} lies outside the file",
                    t.name
                );
                assert_eq!(t.data(data).len() as u64, t.byte_len());
            }
        }
    }
    let a = outcome(&first);
    let b = outcome(&stcheck::validate(data, &config));
    assert_eq!(a, b, "FUZZ FINDING: validating twice gave two verdicts");

    let strict = outcome(&stcheck::validate(
        data,
        &config.clone().deny_warnings(true),
    ));
    let expected = match a {
        Outcome::Accept { warnings, .. } if !warnings.is_empty() => {
            Outcome::Reject(warnings[0].clone().into())
        }
        other => other,
    };
    assert_eq!(
        strict, expected,
        "FUZZ FINDING: deny_warnings did not promote exactly the first warning"
    );
}
