//! Conformance adapter for stcheck (see `conformance/PROTOCOL.md`).
//!
//! `adapter-stcheck [--profile strict|reference] [--deep] FILE`
//!
//! - `strict` (default): `stcheck::validate`; reports tensors, offsets, SHA-256 of the bytes,
//!   metadata and the warnings' rule IDs. Header-only, unless `--deep` adds the deep scan of
//!   the data (`Config::deep`: BOOL bytes, non-finite values, polyglots).
//! - `reference`: stcheck's reference profile (`stcheck::reference::verdict`, the real
//!   `safetensors` 0.8.0 crate); a panic of the reference is passed on as a crash (exit 101).
//!
//! Exit codes: 0 accepted (JSON on stdout), 1 rejected (reason on stderr), 2 usage or I/O
//! error, 101 the reference panicked.

use std::process::ExitCode;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use stcheck::reference::Verdict;
use stcheck::{Config, MetadataForm};

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn strict(file: &[u8], deep: bool) -> Result<Value, String> {
    let config = Config::default().deep(deep);
    let report = stcheck::Checker::check_slice(&config, file)
        .verdict
        .map_err(|e| e.to_string())?;
    let tensors: Vec<Value> = report
        .tensors()
        .map(|t| {
            json!({
                "name": t.name,
                "dtype": t.dtype.name(),
                "shape": t.shape.iter().map(u64::to_string).collect::<Vec<_>>(),
                "data_offsets": [t.begin.to_string(), t.end.to_string()],
                "sha256": hex(t.data(file)),
            })
        })
        .collect();
    let metadata = match report.metadata_form() {
        MetadataForm::Map => Value::Object(
            report
                .metadata()
                .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
                .collect(),
        ),
        _ => Value::Null,
    };
    let warnings: Vec<&str> = report.warnings().iter().map(|w| w.rule().id()).collect();
    Ok(json!({ "tensors": tensors, "metadata": metadata, "warnings": warnings }))
}

/// `Ok(Ok(json))` accepted, `Ok(Err(reason))` rejected, `Err(msg)` the reference panicked.
fn reference(file: &[u8]) -> Result<Result<Value, String>, String> {
    match stcheck::reference::verdict(file) {
        Verdict::Accept(list) => {
            // An accepted file has a valid length field, so the data region starts at 8 + N.
            let n = file
                .get(..8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(u64::from_le_bytes)
                .unwrap_or(0);
            let data_start = n.saturating_add(8);
            let tensors: Vec<Value> = list
                .iter()
                .map(|t| {
                    let bytes = usize::try_from(t.file_begin)
                        .ok()
                        .zip(usize::try_from(t.file_end).ok())
                        .and_then(|(b, e)| file.get(b..e))
                        .unwrap_or(&[]);
                    json!({
                        "name": t.name,
                        "dtype": t.dtype,
                        "shape": t.shape.iter().map(u64::to_string).collect::<Vec<_>>(),
                        "data_offsets": [
                            t.file_begin.saturating_sub(data_start).to_string(),
                            t.file_end.saturating_sub(data_start).to_string()
                        ],
                        "sha256": hex(bytes),
                    })
                })
                .collect();
            Ok(Ok(json!({ "tensors": tensors })))
        }
        Verdict::Reject(reason) => Ok(Err(reason)),
        Verdict::Panic(msg) => Err(msg),
    }
}

fn main() -> ExitCode {
    let usage = || {
        eprintln!("usage: adapter-stcheck [--profile strict|reference] [--deep] FILE");
        ExitCode::from(2)
    };
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.pop() else {
        return usage();
    };
    let mut profile = "strict".to_owned();
    let mut deep = false;
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--profile" => match it.next() {
                Some(p) => profile = p,
                None => return usage(),
            },
            "--deep" => deep = true,
            _ => return usage(),
        }
    }
    let path = &path;
    let file = match std::fs::read(path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("adapter-stcheck: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let answer = match profile.as_str() {
        "strict" => Ok(strict(&file, deep)),
        "reference" => reference(&file),
        other => {
            eprintln!("adapter-stcheck: unknown profile {other:?}");
            return ExitCode::from(2);
        }
    };
    match answer {
        Ok(Ok(json)) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Ok(Err(reason)) => {
            eprintln!("{reason}");
            ExitCode::from(1)
        }
        Err(panic) => {
            eprintln!("adapter-stcheck: the reference panicked: {panic}");
            ExitCode::from(101)
        }
    }
}
