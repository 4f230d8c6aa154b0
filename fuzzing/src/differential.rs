//! Target `differential`: the reference crate.

use crate::*;

/// What the differential check saw on one input, when it is no violation of the contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Differential {
    /// Both accept and read the same tensors.
    BothAccept,
    /// Both reject.
    BothReject,
    /// The reference accepts, strict rejects under a rule documented as a difference.
    Documented(Rule),
    /// The reference panicked (a finding in the reference crate); strict rejected the input
    /// with this rule.
    ReferencePanic {
        /// The panic message.
        message: String,
        /// Strict's rule.
        strict: Rule,
    },
}

/// Run the reference with the panic hook silenced, so a panic in the reference is caught by
/// [`reference::verdict`] even under libFuzzer, whose hook aborts the process on any panic.
pub(crate) fn reference_verdict_quiet(file: &[u8]) -> Verdict {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let v = reference::verdict(file);
    std::panic::set_hook(previous);
    v
}

/// Strict's tensors in the reference's form, sorted as [`reference::verdict`] sorts.
pub(crate) fn as_ref_tensors(report: &Report<'_>) -> Vec<RefTensor> {
    let mut v: Vec<RefTensor> = report
        .tensors()
        .map(|t| RefTensor {
            name: t.name.to_owned(),
            dtype: t.dtype.name().to_owned(),
            shape: t.shape.to_vec(),
            file_begin: t.file_begin,
            file_end: t.file_end,
        })
        .collect();
    v.sort_by(|a, b| (a.file_begin, a.file_end, &a.name).cmp(&(b.file_begin, b.file_end, &b.name)));
    v
}

/// The differential check. Panics (a finding against the documented contract) when strict
/// accepts and the reference does not accept the same tensors, when the reference accepts
/// and strict rejects under a rule not on the documented list, or when the reference panics
/// and strict accepts. A reference panic on an input strict rejects is returned, not raised.
pub fn check_differential(file: &[u8]) -> Differential {
    let strict = stcheck::validate(file, &Config::default());
    let reference = reference_verdict_quiet(file);
    match (&strict, reference) {
        (Ok(report), Verdict::Accept(theirs)) => {
            let ours = as_ref_tensors(report);
            assert_eq!(
                ours, theirs,
                "FUZZ FINDING: strict and the reference accept with different tensors"
            );
            Differential::BothAccept
        }
        (Ok(_), other) => {
            panic!("FUZZ FINDING: strict accepts a file the reference does not load: {other:?}")
        }
        (Err(e), Verdict::Accept(_)) => {
            assert!(
                e.rule().reference_divergence().is_some(),
                "FUZZ FINDING: the reference accepts, strict rejects under {} which is not on \
                 the documented list of differences: {e}",
                e.rule()
            );
            Differential::Documented(e.rule())
        }
        (Err(_), Verdict::Reject(_)) => Differential::BothReject,
        (Err(e), Verdict::Panic(message)) => Differential::ReferencePanic {
            message,
            strict: e.rule(),
        },
    }
}

pub(crate) static REFERENCE_PANICS: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// The `differential` target: [`check_differential`], reporting each distinct reference panic
/// once on stderr as `REFERENCE FINDING: ...`, and saving the input under
/// `$STCHECK_FINDINGS_DIR` when that is set. The harness keeps running.
pub fn differential_target(file: &[u8]) {
    if let Differential::ReferencePanic { message, strict } = check_differential(file) {
        let mut seen = REFERENCE_PANICS.lock().unwrap_or_else(|p| p.into_inner());
        if seen
            .get_or_insert_with(HashSet::new)
            .insert(message.clone())
        {
            eprintln!(
                "REFERENCE FINDING: safetensors 0.8.0 panicked ({message:?}) on a {}-byte input \
                 that strict rejects with {strict}",
                file.len()
            );
            if let Some(dir) = std::env::var_os("STCHECK_FINDINGS_DIR") {
                let path = std::path::Path::new(&dir)
                    .join(format!("reference-panic-{}.safetensors", seen_hash(file)));
                if let Err(e) = std::fs::write(&path, file) {
                    eprintln!("could not save {}: {e}", path.display());
                }
            }
        }
    }
}

pub(crate) fn seen_hash(data: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(data);
    d.iter().take(8).map(|b| format!("{b:02x}")).collect()
}
