//! The reference profile: the verdict of the real `safetensors` 0.8.0 crate on the same bytes.
//!
//! Nothing here reimplements the reference's behaviour; it calls the crate. Its known
//! differences from the strict profile are listed in `SPEC.md` ("Differences from the
//! reference") and summarised per rule by [`crate::Rule::reference_divergence`].

use std::panic::{catch_unwind, AssertUnwindSafe};

/// The reference implementation's verdict on a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// `SafeTensors::deserialize` succeeded.
    Accept(Vec<RefTensor>),
    /// It returned an error (its message).
    Reject(String),
    /// It panicked (the panic message). In builds with overflow checks, its final length
    /// check can overflow on hostile offsets.
    Panic(String),
}

impl Verdict {
    /// Whether the reference would load the file.
    pub fn accepts(&self) -> bool {
        matches!(self, Verdict::Accept(_))
    }
}

/// A tensor as the reference reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefTensor {
    /// Name (for duplicates, the one the reference kept).
    pub name: String,
    /// Dtype, as the reference names it.
    pub dtype: String,
    /// Shape.
    pub shape: Vec<u64>,
    /// Absolute file offsets of the tensor's bytes.
    pub file_begin: u64,
    /// One past the last byte.
    pub file_end: u64,
}

/// Run the reference crate on `file`. Tensors are sorted by (offset, name).
pub fn verdict(file: &[u8]) -> Verdict {
    let base = file.as_ptr() as usize;
    let run = || -> Result<Vec<RefTensor>, String> {
        let st = safetensors::SafeTensors::deserialize(file).map_err(|e| e.to_string())?;
        let mut out: Vec<RefTensor> = st
            .iter()
            .map(|(name, view)| {
                let data = view.data();
                let begin = (data.as_ptr() as usize).wrapping_sub(base) as u64;
                RefTensor {
                    name: name.to_owned(),
                    dtype: format!("{:?}", view.dtype()),
                    shape: view.shape().iter().map(|&d| d as u64).collect(),
                    file_begin: begin,
                    file_end: begin + data.len() as u64,
                }
            })
            .collect();
        out.sort_by(|a, b| {
            (a.file_begin, a.file_end, &a.name).cmp(&(b.file_begin, b.file_end, &b.name))
        });
        Ok(out)
    };
    match catch_unwind(AssertUnwindSafe(run)) {
        Ok(Ok(t)) => Verdict::Accept(t),
        Ok(Err(e)) => Verdict::Reject(e),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".to_owned());
            Verdict::Panic(msg)
        }
    }
}
