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

/// The most JSON members (`name: value` pairs, at every level, counted by their colons) a
/// header may hold for the reference crate to be run on it: 262,144, about 65,000 tensors or
/// 262,144 metadata entries. The crate builds maps of its own from the header (about 1 KiB
/// per tensor and 160 bytes per metadata entry on this version), so a near-limit header of
/// 852,438 tensors makes it allocate 870 MB and one of 10 M metadata entries 1.6 GB, past the
/// memory bound of SPEC §3 (2 x the header + 64 MiB); with at most this many members its maps
/// stay within 64 MiB. Above it, the reference verdict is not computed and a check that asks
/// for it is not checked (`too_large`), before the crate allocates anything.
pub const MAX_MEMBERS: u64 = 262_144;

/// `Err` with the reason when `header` (the N header bytes) holds more members than
/// [`MAX_MEMBERS`]: counted by the colons outside strings, in one pass that allocates nothing.
pub(crate) fn admit(header: &[u8]) -> Result<(), String> {
    admit_parts(&[header])
}

/// [`admit`] for a header given in parts that follow one another.
fn admit_parts(parts: &[&[u8]]) -> Result<(), String> {
    let mut members = 0u64;
    let mut in_string = false;
    let mut escaped = false;
    for &b in parts.iter().flat_map(|p| p.iter()) {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        } else if b == b':' {
            members += 1;
        }
    }
    if members > MAX_MEMBERS {
        return Err(format!(
            "the reference verdict is not computed for a header of more than {MAX_MEMBERS} JSON \
             members (this one has {members}): the reference crate's own maps would take about \
             {} MiB, past the memory bound",
            members.saturating_mul(256) >> 20
        ));
    }
    Ok(())
}

/// The header of `file` (the N bytes after the length field), when the length field fits.
fn header_of(file: &[u8]) -> &[u8] {
    let n = file
        .get(..8)
        .and_then(|f| <[u8; 8]>::try_from(f).ok())
        .map(u64::from_le_bytes)
        .and_then(|n| usize::try_from(n).ok());
    match n {
        Some(n) if n as u64 <= MAX_HEADER => file.get(8..8usize.saturating_add(n)).unwrap_or(&[]),
        _ => &[],
    }
}

/// The reference crate's verdict on a whole file in memory, if its header is within
/// [`MAX_MEMBERS`] (else the reason it is not computed).
pub(crate) fn admitted_verdict(file: &[u8]) -> Result<Verdict, String> {
    admit(header_of(file))?;
    Ok(verdict(file))
}

/// Where the reference crate's data region ends, by its own reading of `header` (the N header
/// bytes), if it reads the header and the header is within [`MAX_MEMBERS`].
pub(crate) fn data_end(header: &[u8]) -> Option<u64> {
    admit(header).ok()?;
    let text = std::str::from_utf8(header).ok()?;
    let metadata = serde_json::from_str::<safetensors::tensor::Metadata>(text).ok()?;
    Some(metadata.data_len() as u64)
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
/// `Ok(None)` when the verdict cannot be had this way: `head` does not hold the header the
/// crate would read (`8 + n` bytes for a header length `n` it does not reject from the length
/// field alone), or the sparse file could not be made or mapped; `Err` with the reason when
/// the header holds more than [`MAX_MEMBERS`] members.
pub(crate) fn verdict_of_head(head: &[&[u8]], len: u64) -> Result<Option<Verdict>, String> {
    let have: u64 = head.iter().map(|part| part.len() as u64).sum();
    if have > len {
        return Ok(None);
    }
    // The header: the parts after the first 8 bytes (the checker hands the length field and
    // the header as two parts; a stream, as one).
    let mut skip = 8usize;
    let mut header: Vec<&[u8]> = Vec::with_capacity(head.len());
    for part in head {
        header.push(part.get(skip.min(part.len())..).unwrap_or(&[]));
        skip = skip.saturating_sub(part.len());
    }
    admit_parts(&header)?;
    Ok(run_on_head(head, len))
}

fn run_on_head(head: &[&[u8]], len: u64) -> Option<Verdict> {
    let have: u64 = head.iter().map(|part| part.len() as u64).sum();
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
    let mut file = crate::mmap::temp_file().ok()?;
    for part in head {
        std::io::Write::write_all(&mut file, part).ok()?;
    }
    file.set_len(len).ok()?;
    let map = crate::mmap::map(&file).ok()?;
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
