//! Conformance adapter for the reference implementation, the `safetensors` 0.8.0 crate, used
//! directly (see `conformance/PROTOCOL.md`).
//!
//! `adapter-reference-crate FILE`: reads the file and calls `SafeTensors::deserialize`.
//! Nothing catches a panic of the crate: it ends the process (exit 101), which the runner
//! reports as a crash, as it would be for any program using the crate.
//!
//! Exit codes: 0 accepted (JSON on stdout), 1 rejected (the crate's error on stderr), 2 I/O
//! error, 101 the crate panicked.

use std::process::ExitCode;

use safetensors::SafeTensors;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path] = args.as_slice() else {
        eprintln!("usage: adapter-reference-crate FILE");
        return ExitCode::from(2);
    };
    let file = match std::fs::read(path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("adapter-reference-crate: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let st = match SafeTensors::deserialize(&file) {
        Ok(st) => st,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    // `deserialize` succeeded, so `read_metadata` (its first half) does too; it is the crate's
    // only way to the offsets and the `__metadata__` map.
    let meta = match SafeTensors::read_metadata(&file) {
        Ok((_, m)) => m,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    let tensors: Vec<Value> = st
        .iter()
        .map(|(name, view)| {
            let offsets = meta
                .info(name)
                .map(|i| vec![i.data_offsets.0.to_string(), i.data_offsets.1.to_string()]);
            let mut t = json!({
                "name": name,
                "dtype": format!("{:?}", view.dtype()),
                "shape": view.shape().iter().map(usize::to_string).collect::<Vec<_>>(),
                "sha256": hex(view.data()),
            });
            if let (Some(o), Some(obj)) = (offsets, t.as_object_mut()) {
                obj.insert("data_offsets".to_owned(), json!(o));
            }
            t
        })
        .collect();
    let metadata = match meta.metadata() {
        Some(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        ),
        None => Value::Null,
    };
    println!("{}", json!({ "tensors": tensors, "metadata": metadata }));
    ExitCode::SUCCESS
}
