//! Conformance adapter for `lumen-io` 0.6.1, the safetensors reader of the `lumen` ML framework
//! (its own parser over serde_json and a memory map, not the `safetensors` crate):
//! `lumen_io::safetensors::load_file(FILE)`.
//!
//! `adapter-lumen-io FILE` (protocol v2, one case a process). Each tensor is reported with the
//! dtype it loaded as (lumen holds BOOL, U8, I32, U32, BF16, F32 and F64), its shape, and the
//! SHA-256 of its elements written back little-endian (BOOL as 0 or 1: lumen holds booleans);
//! the metadata is what it parsed. Its `SafeTensorsError` is a refusal (exit 1), except a dtype
//! of the format that lumen lacks (exit 4: its `UnsupportDType`, or serde's "unknown variant"
//! naming one of the format's 22 dtypes); a panic ends the process (exit 101): a crash.

use std::process::ExitCode;

use lumen_core::DynTensor;
use lumen_io::safetensors::{load_file, SafeTensorsError};
use serde_json::json;
use stcheck_adapter_crates::{reader_main, sha256, Answer};

/// The format's 22 dtypes (SPEC.md section 2).
const FORMAT_DTYPES: [&str; 22] = [
    "BOOL",
    "U8",
    "I8",
    "U16",
    "I16",
    "U32",
    "I32",
    "U64",
    "I64",
    "F16",
    "BF16",
    "F32",
    "F64",
    "C64",
    "F8_E4M3",
    "F8_E5M2",
    "F8_E4M3FNUZ",
    "F8_E5M2FNUZ",
    "F8_E8M0",
    "F4",
    "F6_E2M3",
    "F6_E3M2",
];

fn bytes_of(t: &DynTensor) -> lumen_core::Result<(&'static str, Vec<u8>)> {
    Ok(match t {
        DynTensor::Bool(t) => ("BOOL", t.to_vec()?.into_iter().map(u8::from).collect()),
        DynTensor::U8(t) => ("U8", t.to_vec()?),
        DynTensor::I32(t) => (
            "I32",
            t.to_vec()?.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
        DynTensor::U32(t) => (
            "U32",
            t.to_vec()?.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
        DynTensor::Bf16(t) => (
            "BF16",
            t.to_vec()?.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
        DynTensor::F32(t) => (
            "F32",
            t.to_vec()?.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
        DynTensor::F64(t) => (
            "F64",
            t.to_vec()?.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
    })
}

fn main() -> ExitCode {
    reader_main("adapter-lumen-io", |path| {
        let content = match load_file(path) {
            Ok(c) => c,
            Err(e) => {
                let text = e.to_string();
                // A dtype of the format that lumen lacks: `UnsupportDType` for the names its
                // enum lists, serde's "unknown variant `F4`" for the ones it does not.
                let unknown_variant = FORMAT_DTYPES
                    .iter()
                    .any(|d| text.contains(&format!("unknown variant `{d}`")));
                return if matches!(e, SafeTensorsError::UnsupportDType(..))
                    || text.contains("unsupport dtype")
                    || unknown_variant
                {
                    Answer::Unsupported(text)
                } else {
                    Answer::Reject(text)
                };
            }
        };
        let mut tensors = Vec::new();
        for (name, t) in &content.tensors {
            let (dtype, bytes) = match bytes_of(t) {
                Ok(x) => x,
                Err(e) => return Answer::Reject(format!("reading back {name:?}: {e}")),
            };
            tensors.push(json!({
                "name": name,
                "dtype": dtype,
                "shape": t.shape().dims().iter().map(|d| d.to_string()).collect::<Vec<_>>(),
                "sha256": sha256(&bytes),
            }));
        }
        Answer::Accept(json!({ "tensors": tensors, "metadata": content.metadata }))
    })
}
