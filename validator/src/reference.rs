//! The reference profile: the verdict of the real `safetensors` 0.8.0 crate on the same bytes.
//!
//! Nothing here reimplements the reference's behaviour; it calls the crate: on the whole
//! buffer of a mapped file, or, for a source that reads only the header of a file of known
//! length (a URL, a file read without mapping), on a sparse temporary file of that length that
//! holds the length field and the header (the crate reads nothing else). Its known
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

/// The reference header length limit (`MAX_HEADER_SIZE` in safetensors 0.8.0's
/// `tensor.rs`): above it the crate rejects a file from its length field alone.
pub(crate) const MAX_HEADER: u64 = 100_000_000;

/// The reference crate's verdict on a file of `len` bytes of which only the first bytes,
/// `head` (the length field and the header, in parts that follow one another), are at hand: a remote file, or one read in
/// ranges. The crate reads nothing past the header (it checks the header and compares the
/// length; tensors are only sliced), so it is run on a sparse temporary file of `len` bytes
/// holding `head` and mapped: the same verdict as on the whole file, without its data.
///
/// `None` when the verdict cannot be had this way: `head` does not hold the header the crate
/// would read (`8 + n` bytes for a header length `n` it does not reject from the length
/// field alone), or the sparse file could not be made or mapped.
pub(crate) fn verdict_of_head(head: &[&[u8]], len: u64) -> Option<Verdict> {
    let have: u64 = head.iter().map(|part| part.len() as u64).sum();
    if have > len {
        return None;
    }
    let field: Vec<u8> = head
        .iter()
        .flat_map(|part| part.iter())
        .take(8)
        .copied()
        .collect();
    if let Ok(field) = <[u8; 8]>::try_from(field.as_slice()) {
        let n = u64::from_le_bytes(field);
        let needs_header = n <= MAX_HEADER && n.checked_add(8).is_some_and(|end| end <= len);
        if needs_header && have < 8 + n {
            return None;
        }
    } else if have < len.min(8) {
        return None;
    }
    let mut file = crate::source::temp_file().ok()?;
    for part in head {
        std::io::Write::write_all(&mut file, part).ok()?;
    }
    file.set_len(len).ok()?;
    let map = crate::source::map(&file).ok()?;
    (map.len() as u64 == len).then(|| verdict(&map))
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
