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
        Err(e) => {
            assert!(
                e.offset() <= len,
                "FUZZ FINDING: error offset {} beyond the input's {len} bytes: {e}",
                e.offset()
            );
            // Without deny options no warning is promoted; the error shows its rule, and
            // its finding is the error's.
            assert!(
                !e.is_promoted_warning() && e.kind() == e.rule().kind(),
                "FUZZ FINDING: {e:?} rejects under the default options"
            );
            assert!(format!("{e:?}").contains(e.rule().id()));
            assert_eq!(e.finding().to_string(), e.to_string());
        }
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
    // What a gate calls a file by its first bytes (`format_of`) agrees with the verdict: a
    // valid file is a safetensors file; one `FRAME-NOT-SAFETENSORS` names is another format.
    let format = stcheck::format_of(data);
    match &first {
        Ok(_) => assert_eq!(
            format,
            Some(stcheck::FileFormat::Safetensors),
            "FUZZ FINDING: a valid file not named a safetensors file"
        ),
        Err(e) if e.rule() == Rule::FrameNotSafetensors => assert!(
            matches!(format, Some(stcheck::FileFormat::Other(_))),
            "FUZZ FINDING: {e}, but format_of names it {format:?}"
        ),
        Err(_) => {}
    }
    assert_eq!(format, stcheck::format_of(data));
    if let Some(f) = &format {
        assert!(!f.to_string().is_empty());
    }
    if let Ok(report) = &first {
        check_rule_options(data, report);
    }
    let a = outcome(&first);
    let b = outcome(&stcheck::validate(data, &config));
    assert_eq!(a, b, "FUZZ FINDING: validating twice gave two verdicts");

    let strict = outcome(&stcheck::validate(
        data,
        &config.clone().deny_warnings(true),
    ));
    if let Outcome::Reject(e) = &strict {
        assert_eq!(
            e.is_promoted_warning(),
            !matches!(&a, Outcome::Reject(_)),
            "FUZZ FINDING: {e} promoted or not"
        );
    }
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

/// On an accepted file: a warning rule denied by name (`deny`) makes its first warning the
/// error; allowed by name (`allow`) hides exactly its warnings; a header limit one below the
/// header's length rejects the file with `FRAME-HEADER-LIMIT`, at its length accepts it alike.
fn check_rule_options(data: &[u8], report: &Report<'_>) {
    let n = u64::from_le_bytes(
        data[..8]
            .try_into()
            .expect("an accepted file has a length field"),
    );
    let same = outcome(&Ok(report.clone()));
    let at_limit = stcheck::validate(data, &Config::default().max_header_size(n));
    assert_eq!(
        outcome(&at_limit),
        same,
        "FUZZ FINDING: a header at the limit"
    );
    match stcheck::validate(
        data,
        &Config::default().max_header_size(n.saturating_sub(1)),
    ) {
        Err(e) if e.rule() == Rule::FrameHeaderLimit && n > 0 => {}
        other => panic!("FUZZ FINDING: a header of {n} bytes over a limit one less: {other:?}"),
    }
    for rule in warning_rules(report.warnings(), 3) {
        let first = report.warnings().iter().find(|w| w.rule() == rule);
        let denied = stcheck::validate(data, &by_name(rule, false));
        assert_eq!(
            outcome(&denied),
            Outcome::Reject(first.expect("a warning of the rule").clone().into()),
            "FUZZ FINDING: {rule} denied by name"
        );
        let allowed = stcheck::validate(data, &by_name(rule, true));
        let Ok(allowed) = allowed else {
            panic!("FUZZ FINDING: {rule} allowed, and the file is rejected: {allowed:?}");
        };
        assert_eq!(
            allowed.warnings(),
            &without(report.warnings(), rule)[..],
            "FUZZ FINDING: {rule} allowed hides other warnings"
        );
        assert!(allowed.warning_counts().all(|(r, _)| r != rule));
    }
}

/// The first `most` distinct rules of `warnings`, in order.
pub(crate) fn warning_rules(warnings: &[stcheck::Warning], most: usize) -> Vec<Rule> {
    let mut rules: Vec<Rule> = Vec::new();
    for w in warnings {
        if rules.len() < most && !rules.contains(&w.rule()) {
            rules.push(w.rule());
        }
    }
    rules
}

/// The default options with `rule` allowed by name (`allow`), or denied by name (`deny`).
pub(crate) fn by_name(rule: Rule, allow: bool) -> Config {
    let mut config = Config::default();
    match allow {
        true => config.allow = vec![rule],
        false => config.deny = vec![rule],
    }
    config
}

/// `warnings` without those of `rule`.
pub(crate) fn without(warnings: &[stcheck::Warning], rule: Rule) -> Vec<stcheck::Warning> {
    warnings
        .iter()
        .filter(|w| w.rule() != rule)
        .cloned()
        .collect()
}
