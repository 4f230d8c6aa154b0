//! Conformance adapter for candle-core 0.11 (see `conformance/PROTOCOL.md`, protocol v2).
//!
//! `stcheck-adapter-candle FILE` or `stcheck-adapter-candle --persistent`.
//!
//! A file is loaded with `candle_core::safetensors::load(path, &Device::Cpu)`, the call
//! candle's users make. A sharded set (kind `index`) is loaded the way candle's examples do
//! (`hub_load_safetensors`): the index's `weight_map` string values, deduplicated, each loaded
//! with `load`, later files replacing earlier tensors of the same name (as
//! `MmapedSafetensors::multi` does). Each tensor is reported with its dtype as candle holds
//! it, its shape, the SHA-256 of its bytes as candle holds them (its CPU storage,
//! little-endian), and its values for the float types candle converts to f64.
//!
//! Refusals (exit 1): the `candle_core::Error` that `load` returns (and the examples' refusal
//! of an index without a `weight_map` object), except `UnsupportedSafeTensorDtype` (exit 4,
//! unsupported). A panic is not caught: it ends the process (exit 101), a crash; an error
//! reading a loaded tensor back is a crash too (exit 3), not a verdict.
//!
//! Built in the dev profile (overflow checks on), like the other Rust adapters: an arithmetic
//! overflow inside candle is then a panic, as it would be in a debug build of an application.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;

use candle_core::{CpuStorage, DType, Device, Storage, Tensor};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

enum Answer {
    Accept(Value),
    Reject(String),
    Unsupported(String),
    /// Something that is not a verdict (the adapter failed after candle loaded the file).
    Crash(String),
}

fn name_of(d: DType) -> String {
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
        // `DType` is non-exhaustive: a later candle's type shows under its own name.
        other => return format!("{other:?}"),
    }
    .to_owned()
}

/// The tensor's bytes as candle holds them (little-endian), read from its CPU storage; `None`
/// when the tensor is not one contiguous storage of its own (never the case after `load`).
fn bytes_of(t: &Tensor) -> Option<Vec<u8>> {
    fn le<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        v.iter().flat_map(|x| f(*x)).collect()
    }
    let (storage, layout) = t.storage_and_layout();
    let Storage::Cpu(cpu) = &*storage else {
        return None;
    };
    if !layout.is_contiguous() || layout.start_offset() != 0 {
        return None;
    }
    Some(match cpu {
        CpuStorage::U8(v)
        | CpuStorage::F6E2M3(v)
        | CpuStorage::F6E3M2(v)
        | CpuStorage::F4(v)
        | CpuStorage::F8E8M0(v) => v.clone(),
        CpuStorage::U32(v) => le(v, u32::to_le_bytes),
        CpuStorage::I16(v) => le(v, i16::to_le_bytes),
        CpuStorage::I32(v) => le(v, i32::to_le_bytes),
        CpuStorage::I64(v) => le(v, i64::to_le_bytes),
        CpuStorage::F32(v) => le(v, f32::to_le_bytes),
        CpuStorage::F64(v) => le(v, f64::to_le_bytes),
        CpuStorage::BF16(v) => le(v, |x| x.to_bits().to_le_bytes()),
        CpuStorage::F16(v) => le(v, |x| x.to_bits().to_le_bytes()),
        CpuStorage::F8E4M3(v) => le(v, |x| [x.to_bits()]),
    })
}

/// Decoded values for the float types candle converts (at most 4096 elements). The 16- and
/// 8-bit types go through F32, which holds each of their values exactly: candle 0.11's
/// F8_E4M3 -> F64 conversion never returns (`to_f64` calls itself until the stack
/// overflows), and that is a bug of the conversion, not of loading.
fn values_of(t: &Tensor) -> candle_core::Result<Option<Vec<String>>> {
    if t.elem_count() > 4096 {
        return Ok(None);
    }
    let t = t.flatten_all()?;
    let v: Vec<f64> = match t.dtype() {
        DType::F64 => t.to_vec1::<f64>()?,
        DType::F16 | DType::BF16 | DType::F32 | DType::F8E4M3 => {
            let v = t.to_dtype(DType::F32)?.to_vec1::<f32>()?;
            v.into_iter().map(f64::from).collect()
        }
        _ => return Ok(None),
    };
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
        if let Some(b) = bytes_of(t) {
            let hex: String = Sha256::digest(&b)
                .iter()
                .map(|x| format!("{x:02x}"))
                .collect();
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

/// The shard files of a sharded set, as candle's examples (`hub_load_safetensors`) find
/// them: the string values of the index's `weight_map` (others are skipped), each file once.
/// The examples collect them in a `HashSet`, so their order is arbitrary; here it is the
/// order of first mention. An index that is not JSON or has no `weight_map` object is the
/// examples' own refusal.
fn shards_of(index: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read(index).map_err(|e| e.to_string())?;
    let v: Value = serde_json::from_slice(&text).map_err(|e| format!("index: {e}"))?;
    let map = match v.get("weight_map") {
        None => return Err("no weight map in the index".into()),
        Some(Value::Object(map)) => map,
        Some(_) => return Err("weight map in the index is not a map".into()),
    };
    let mut names: Vec<String> = Vec::new();
    for s in map.values().filter_map(Value::as_str) {
        if !names.iter().any(|n| n == s) {
            names.push(s.to_owned());
        }
    }
    Ok(names)
}

fn answer(path: &Path, index: bool) -> Answer {
    let files: Vec<(std::path::PathBuf, Option<String>)> = if index {
        let names = match shards_of(path) {
            Ok(names) => names,
            Err(e) => return Answer::Reject(e),
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        names.into_iter().map(|n| (dir.join(&n), Some(n))).collect()
    } else {
        vec![(path.to_path_buf(), None)]
    };
    // Later files replace earlier tensors of the same name, as `MmapedSafetensors::multi`
    // (what `VarBuilder::from_mmaped_safetensors` uses) routes each name to its last file.
    let mut loaded: BTreeMap<String, (Tensor, Option<String>)> = BTreeMap::new();
    for (file, shard) in files {
        let map = match candle_core::safetensors::load(&file, &Device::Cpu) {
            Ok(m) => m,
            Err(e) => return refusal(e),
        };
        for (name, t) in map {
            loaded.insert(name, (t, shard.clone()));
        }
    }
    let mut tensors = Vec::new();
    for (name, (t, shard)) in &loaded {
        match describe(name, t, shard.as_deref()) {
            Ok(v) => tensors.push(v),
            // candle loaded the file; failing to read a loaded tensor back is no verdict.
            Err(e) => return Answer::Crash(format!("reading back {name:?}: {e}")),
        }
    }
    Answer::Accept(json!({ "tensors": tensors }))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args == ["--persistent"] {
        let mut out = std::io::stdout().lock();
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else {
                return ExitCode::from(2);
            };
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
                Answer::Crash(m) => json!({"id": id, "status": "crash", "message": m}),
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
        Answer::Crash(m) => {
            eprintln!("{m}");
            ExitCode::from(3)
        }
    }
}
