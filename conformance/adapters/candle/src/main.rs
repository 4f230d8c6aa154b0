//! Conformance adapter for candle-core 0.11 (see `conformance/PROTOCOL.md`, protocol v2).
//!
//! `stcheck-adapter-candle FILE` or `stcheck-adapter-candle --persistent`.
//!
//! A file is loaded with `candle_core::safetensors::load(path, &Device::Cpu)`, the call
//! candle's users make. A sharded set (kind `index`) is loaded the way candle's examples do
//! (`hub_load_safetensors`): the index's `weight_map` values, deduplicated, each loaded with
//! `load`, later files replacing earlier tensors of the same name (as
//! `MmapedSafetensors::multi` does). Each tensor is reported with its dtype as candle holds
//! it, its shape, the SHA-256 of its bytes as candle holds them (`to_vec1` of the flattened
//! tensor, little-endian), and its values for the float types candle converts to f64.
//!
//! Refusals (exit 1): the `candle_core::Error` that `load` returns, except
//! `UnsupportedSafeTensorDtype` (exit 4, unsupported). A panic is not caught: it ends the
//! process (exit 101), a crash.

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;

use candle_core::{DType, Device, Tensor};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

enum Answer {
    Accept(Value),
    Reject(String),
    Unsupported(String),
}

fn name_of(d: DType) -> &'static str {
    match d {
        DType::U8 => "U8",
        DType::U32 => "U32",
        DType::I16 => "I16",
        DType::I32 => "I32",
        DType::I64 => "I64",
        DType::BF16 => "BF16",
        DType::F16 => "F16",
        DType::F32 => "F32",
        DType::F64 => "F64",
        DType::F8E4M3 => "F8_E4M3",
        DType::F6E2M3 => "F6_E2M3",
        DType::F6E3M2 => "F6_E3M2",
        DType::F4 => "F4",
        DType::F8E8M0 => "F8_E8M0",
    }
}

/// The tensor's bytes as candle holds them, little-endian; `None` for the types candle keeps
/// as raw bytes without a way to read them back.
fn bytes_of(t: &Tensor) -> candle_core::Result<Option<Vec<u8>>> {
    let t = t.flatten_all()?;
    let le = |v: Vec<Vec<u8>>| Some(v.concat());
    Ok(match t.dtype() {
        DType::U8 => Some(t.to_vec1::<u8>()?),
        DType::U32 => le(t.to_vec1::<u32>()?.iter().map(|x| x.to_le_bytes().to_vec()).collect()),
        DType::I16 => le(t.to_vec1::<i16>()?.iter().map(|x| x.to_le_bytes().to_vec()).collect()),
        DType::I32 => le(t.to_vec1::<i32>()?.iter().map(|x| x.to_le_bytes().to_vec()).collect()),
        DType::I64 => le(t.to_vec1::<i64>()?.iter().map(|x| x.to_le_bytes().to_vec()).collect()),
        DType::F32 => le(t.to_vec1::<f32>()?.iter().map(|x| x.to_le_bytes().to_vec()).collect()),
        DType::F64 => le(t.to_vec1::<f64>()?.iter().map(|x| x.to_le_bytes().to_vec()).collect()),
        DType::F16 | DType::BF16 | DType::F8E4M3 => {
            // Through u8 storage of the same bytes is not offered; compare values instead.
            None
        }
        DType::F6E2M3 | DType::F6E3M2 | DType::F4 | DType::F8E8M0 => None,
    })
}

/// Decoded values for the float types candle converts (at most 4096 elements).
fn values_of(t: &Tensor) -> candle_core::Result<Option<Vec<String>>> {
    if t.elem_count() > 4096
        || !matches!(
            t.dtype(),
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 | DType::F8E4M3
        )
    {
        return Ok(None);
    }
    let v = t.flatten_all()?.to_dtype(DType::F64)?.to_vec1::<f64>()?;
    Ok(Some(
        v.iter()
            .map(|x| {
                if x.is_nan() {
                    "nan".to_owned()
                } else if x.is_infinite() {
                    if *x > 0.0 { "inf" } else { "-inf" }.to_owned()
                } else {
                    format!("{x:e}")
                }
            })
            .collect(),
    ))
}

fn describe(name: &str, t: &Tensor, shard: Option<&str>) -> candle_core::Result<Value> {
    let mut v = json!({
        "name": name,
        "dtype": name_of(t.dtype()),
        "shape": t.dims().iter().map(usize::to_string).collect::<Vec<_>>(),
    });
    if let Some(obj) = v.as_object_mut() {
        if let Some(b) = bytes_of(t)? {
            let hex: String = Sha256::digest(&b).iter().map(|x| format!("{x:02x}")).collect();
            obj.insert("sha256".into(), json!(hex));
        }
        if let Some(vals) = values_of(t)? {
            obj.insert("values".into(), json!(vals));
        }
        if let Some(s) = shard {
            obj.insert("shard".into(), json!(s));
        }
    }
    Ok(v)
}

fn refusal(e: candle_core::Error) -> Answer {
    let text = e.to_string();
    match e {
        candle_core::Error::UnsupportedSafeTensorDtype(_) => Answer::Unsupported(text),
        _ => Answer::Reject(text),
    }
}

fn answer(path: &Path, index: bool) -> Answer {
    let files: Vec<(std::path::PathBuf, Option<String>)> = if index {
        let text = match std::fs::read(path) {
            Ok(t) => t,
            Err(e) => return Answer::Reject(e.to_string()),
        };
        let v: Value = match serde_json::from_slice(&text) {
            Ok(v) => v,
            Err(e) => return Answer::Reject(format!("index: {e}")),
        };
        let Some(map) = v.get("weight_map").and_then(Value::as_object) else {
            return Answer::Reject("index: no weight_map".into());
        };
        let mut names: Vec<String> = Vec::new();
        for s in map.values() {
            let Some(s) = s.as_str() else {
                return Answer::Reject("index: a weight_map value is not a string".into());
            };
            if !names.iter().any(|n| n == s) {
                names.push(s.to_owned());
            }
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        names.into_iter().map(|n| (dir.join(&n), Some(n))).collect()
    } else {
        vec![(path.to_path_buf(), None)]
    };
    let mut loaded: Vec<(String, Tensor, Option<String>)> = Vec::new();
    for (file, shard) in files {
        let map = match candle_core::safetensors::load(&file, &Device::Cpu) {
            Ok(m) => m,
            Err(e) => return refusal(e),
        };
        let mut names: Vec<_> = map.into_iter().collect();
        names.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, t) in names {
            loaded.retain(|(n, _, _)| n != &name);
            loaded.push((name, t, shard.clone()));
        }
    }
    let mut tensors = Vec::new();
    for (name, t, shard) in &loaded {
        match describe(name, t, shard.as_deref()) {
            Ok(v) => tensors.push(v),
            Err(e) => return refusal(e),
        }
    }
    Answer::Accept(json!({ "tensors": tensors }))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args == ["--persistent"] {
        let mut out = std::io::stdout().lock();
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { return ExitCode::from(2) };
            let req: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            let id = req.get("id").cloned().unwrap_or(Value::Null);
            let path = req.get("path").and_then(Value::as_str).unwrap_or("");
            let index = req.get("kind").and_then(Value::as_str) == Some("index");
            let reply = match answer(Path::new(path), index) {
                Answer::Accept(mut v) => {
                    if let Some(o) = v.as_object_mut() {
                        o.insert("id".into(), id);
                        o.insert("status".into(), json!("accept"));
                    }
                    v
                }
                Answer::Reject(m) => json!({"id": id, "status": "reject", "message": m}),
                Answer::Unsupported(m) => json!({"id": id, "status": "unsupported", "message": m}),
            };
            if writeln!(out, "{reply}").and_then(|()| out.flush()).is_err() {
                return ExitCode::from(2);
            }
        }
        return ExitCode::SUCCESS;
    }
    let [path] = args.as_slice() else {
        eprintln!("usage: stcheck-adapter-candle FILE | --persistent");
        return ExitCode::from(2);
    };
    let index = std::env::var("STCONFORM_KIND").is_ok_and(|k| k == "index");
    match answer(Path::new(path), index) {
        Answer::Accept(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Answer::Reject(m) => {
            println!("{}", json!({ "message": m }));
            eprintln!("{m}");
            ExitCode::from(1)
        }
        Answer::Unsupported(m) => {
            println!("{}", json!({ "message": m }));
            eprintln!("{m}");
            ExitCode::from(4)
        }
    }
}
