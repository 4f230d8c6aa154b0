//! Conformance adapter for `ferric-load` 0.3.0, a pure-Rust safetensors reader (serde_json and
//! `half`, not the `safetensors` crate) that decodes F32, F16, BF16 and F64 tensors to `f32`:
//! `ferric_load::safetensors(&bytes)` on the whole file read into memory, the call its users
//! make.
//!
//! `adapter-ferric-load FILE` (protocol v2, one case a process). The library returns each
//! tensor's `f32` values and shape, not its dtype or bytes; each tensor is reported with its
//! shape, its values (up to 4,096), the dtype its header entry names (read back from the header
//! the library accepted: the library decoded by it), and, for F32 tensors, the SHA-256 of the
//! values' little-endian bytes (the file's bytes: the decoding is exact). Its `Err(String)` is
//! a refusal (exit 1) except "unsupported safetensors dtype" (exit 4); a panic ends the process
//! (exit 101): a crash.

use std::process::ExitCode;

use serde_json::{json, Value};
use stcheck_adapter_crates::{reader_main, sha256, value, Answer};

fn main() -> ExitCode {
    reader_main("adapter-ferric-load", |path| {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => return Answer::Reject(format!("read: {e}")),
        };
        let tensors = match ferric_load::safetensors(&bytes) {
            Ok(t) => t,
            Err(e) if e.starts_with("unsupported safetensors dtype") => {
                return Answer::Unsupported(e)
            }
            Err(e) => return Answer::Reject(e),
        };
        // The header the library accepted, for the dtype names it decoded by.
        let n = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
        let header: Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap_or(Value::Null);
        let mut out = Vec::new();
        for (name, t) in &tensors {
            let dtype = header[name.as_str()]["dtype"].as_str().unwrap_or("?");
            let mut entry = json!({
                "name": name,
                "dtype": dtype,
                "shape": t.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
            });
            if t.data.len() <= 4096 {
                entry["values"] = t.data.iter().map(|v| value(f64::from(*v))).collect();
            }
            if dtype == "F32" {
                let le: Vec<u8> = t.data.iter().flat_map(|v| v.to_le_bytes()).collect();
                entry["sha256"] = json!(sha256(&le));
            }
            out.push(entry);
        }
        Answer::Accept(json!({ "tensors": out }))
    })
}
