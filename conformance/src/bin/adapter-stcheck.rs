//! Conformance adapter for stcheck, protocol v2 (see `conformance/PROTOCOL.md`).
//!
//! ```text
//! adapter-stcheck [--profile strict|reference|portable] [--deep] FILE      one case, one process
//! adapter-stcheck [--profile strict|reference|portable] [--deep] --persistent
//!                                     one JSON request per line on stdin, one reply per line
//! ```
//!
//! - `strict` (default): `stcheck::validate`; reports tensors, offsets, SHA-256 of the bytes,
//!   metadata and the warnings' rule IDs; a rejection names its rule. Header-only, unless
//!   `--deep` adds the deep scan of the data (`Config::deep`). A sharded set (kind
//!   `index`: `STCONFORM_KIND=index`, the request's `kind`, or a path ending in
//!   `.safetensors.index.json`) is checked with `stcheck::index::check_index` over the
//!   index's directory, and its shards' tensors are reported with their shard.
//! - `reference`: stcheck's reference profile (`stcheck::reference::verdict`, the real
//!   `safetensors` 0.8.0 crate); a panic of the reference is passed on as a crash (exit 101,
//!   or `"status": "crash"`). It has no index mode ("unsupported", exit 4).
//!
//! Exit codes (one-shot): 0 accepted (JSON on stdout), 1 rejected (`{"rule", "message"}` on
//! stdout, the message on stderr), 4 unsupported, 2 usage or I/O error, 101 the reference
//! panicked.

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What the adapter answers on one case.
enum Answer {
    Accept(Value),
    Reject {
        rule: Option<String>,
        message: String,
    },
    Unsupported(String),
    /// The reference panicked.
    Crash(String),
    /// The file could not be read: no verdict.
    Io(String),
}

/// Every call into the validator library, in one place (the library's API is being reshaped;
/// re-point these functions, nothing else).
mod lib {
    use std::path::Path;

    use serde_json::{json, Value};
    use stcheck::reference::Verdict;
    use stcheck::{Config, MetadataForm};

    use super::{hex, Answer};

    fn tensors_json(report: &stcheck::Report<'_>, file: &[u8], shard: Option<&str>) -> Vec<Value> {
        report
            .tensors()
            .map(|t| {
                let mut v = json!({
                    "name": t.name,
                    "dtype": t.dtype.name(),
                    "shape": t.shape.iter().map(u64::to_string).collect::<Vec<_>>(),
                    "data_offsets": [t.begin.to_string(), t.end.to_string()],
                    "sha256": hex(t.data(file)),
                });
                if let (Some(s), Some(obj)) = (shard, v.as_object_mut()) {
                    obj.insert("shard".to_owned(), json!(s));
                }
                v
            })
            .collect()
    }

    /// The strict profile on one file; with `portable`, also the portable profile (every
    /// reader of the table): a misreading rejects the file with its PORTABLE rule.
    pub(crate) fn strict(file: &[u8], deep: bool, portable: bool) -> Answer {
        let mut config = Config::default().deep(deep);
        if portable {
            let Ok(table) = stcheck::portable::ReaderTable::builtin() else {
                return Answer::Io("the built-in reader table does not load".into());
            };
            config = config.portable(Some(stcheck::portable::Options::all(table)));
        }
        let reject = |e: stcheck::Error| Answer::Reject {
            rule: Some(e.rule().id().to_owned()),
            message: e.to_string(),
        };
        let checked = stcheck::Checker::check_slice(&config, file);
        if let Some(f) = checked.portable.as_ref().and_then(|p| p.findings().first()) {
            return Answer::Reject {
                rule: Some(f.rule().id().to_owned()),
                message: f.finding().to_string(),
            };
        }
        let report = match checked.verdict {
            Ok(r) => r,
            Err(e) => return reject(e),
        };
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
        Answer::Accept(json!({
            "tensors": tensors_json(&report, file, None),
            "metadata": metadata,
            "warnings": warnings,
        }))
    }

    /// The strict profile on a sharded set: `check_index` over the index's directory; when the
    /// set is valid, every named shard's tensors.
    pub(crate) fn strict_index(path: &Path) -> Answer {
        let config = Config::default();
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => return Answer::Io(format!("{}: {e}", path.display())),
        };
        let source = stcheck_gate::shards::FsSource::for_index(path);
        let report = match stcheck::index::check_index(&bytes, &source, &config) {
            Ok(r) => r,
            Err(e) => return Answer::Io(e.to_string()),
        };
        if let Some(f) = report.errors().first() {
            return Answer::Reject {
                rule: Some(f.rule().id().to_owned()),
                message: f.to_string(),
            };
        }
        // Valid: the index is strict JSON with a weight_map of strings.
        let index: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let mut shards: Vec<&str> = Vec::new();
        if let Some(map) = index.get("weight_map").and_then(Value::as_object) {
            for name in map.values().filter_map(Value::as_str) {
                if !shards.contains(&name) {
                    shards.push(name);
                }
            }
        }
        let mut tensors = Vec::new();
        for name in shards {
            let file = match std::fs::read(source.dir().join(name)) {
                Ok(f) => f,
                Err(e) => return Answer::Io(format!("{name}: {e}")),
            };
            match stcheck::validate(&file, &config) {
                Ok(r) => tensors.extend(tensors_json(&r, &file, Some(name))),
                Err(e) => return Answer::Io(format!("{name} changed while read: {e}")),
            }
        }
        let warnings: Vec<&str> = report.warnings().iter().map(|w| w.rule().id()).collect();
        Answer::Accept(json!({ "tensors": tensors, "warnings": warnings }))
    }

    /// The reference profile on one file.
    pub(crate) fn reference(file: &[u8]) -> Answer {
        match stcheck::reference::verdict(file) {
            Verdict::Accept(list) => {
                // An accepted file has a valid length field: the data region starts at 8 + N.
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
                Answer::Accept(json!({ "tensors": tensors }))
            }
            // The reference's errors name no SPEC rule.
            Verdict::Reject(reason) => Answer::Reject {
                rule: None,
                message: reason,
            },
            Verdict::Panic(msg) => Answer::Crash(msg),
        }
    }
}

struct Options {
    reference: bool,
    portable: bool,
    deep: bool,
}

fn answer(opts: &Options, path: &Path, index: bool) -> Answer {
    let index = index || path.to_string_lossy().ends_with(".safetensors.index.json");
    match (opts.reference, index) {
        (true, true) => Answer::Unsupported("the reference profile has no index mode".into()),
        (false, true) => lib::strict_index(path),
        (reference, false) => match std::fs::read(path) {
            Err(e) => Answer::Io(format!("{}: {e}", path.display())),
            Ok(file) if reference => lib::reference(&file),
            Ok(file) => lib::strict(&file, opts.deep, opts.portable),
        },
    }
}

fn one_shot(opts: &Options, path: &Path) -> ExitCode {
    let index = std::env::var("STCONFORM_KIND").is_ok_and(|k| k == "index");
    match answer(opts, path, index) {
        Answer::Accept(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Answer::Reject { rule, message } => {
            println!("{}", json!({ "rule": rule, "message": message }));
            eprintln!("{message}");
            ExitCode::from(1)
        }
        Answer::Unsupported(message) => {
            println!("{}", json!({ "message": message }));
            eprintln!("{message}");
            ExitCode::from(4)
        }
        Answer::Crash(panic) => {
            eprintln!("adapter-stcheck: the reference panicked: {panic}");
            ExitCode::from(101)
        }
        Answer::Io(e) => {
            eprintln!("adapter-stcheck: {e}");
            ExitCode::from(2)
        }
    }
}

fn persistent(opts: &Options) -> ExitCode {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else {
            return ExitCode::from(2);
        };
        let request: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let path = request.get("path").and_then(Value::as_str).unwrap_or("");
        let index = request.get("kind").and_then(Value::as_str) == Some("index");
        let reply = match answer(opts, Path::new(path), index) {
            Answer::Accept(mut v) => {
                if let Some(obj) = v.as_object_mut() {
                    obj.insert("id".into(), id);
                    obj.insert("status".into(), json!("accept"));
                }
                v
            }
            Answer::Reject { rule, message } => {
                json!({"id": id, "status": "reject", "rule": rule, "message": message})
            }
            Answer::Unsupported(message) => {
                json!({"id": id, "status": "unsupported", "message": message})
            }
            Answer::Crash(message) => {
                json!({"id": id, "status": "crash", "message": format!("the reference panicked: {message}")})
            }
            Answer::Io(e) => {
                // Not a verdict: end the process, as a one-shot adapter would exit 2.
                eprintln!("adapter-stcheck: {e}");
                return ExitCode::from(2);
            }
        };
        if writeln!(out, "{reply}").and_then(|()| out.flush()).is_err() {
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let usage = || {
        eprintln!(
            "usage: adapter-stcheck [--profile strict|reference|portable] [--deep] (FILE | --persistent)"
        );
        ExitCode::from(2)
    };
    let mut opts = Options {
        reference: false,
        portable: false,
        deep: false,
    };
    let mut serve = false;
    let mut file = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--profile" => match it.next().as_deref() {
                Some("strict") => opts.reference = false,
                Some("reference") => opts.reference = true,
                Some("portable") => opts.portable = true,
                _ => return usage(),
            },
            "--deep" => opts.deep = true,
            "--persistent" => serve = true,
            _ if a.starts_with("--") || file.is_some() => return usage(),
            _ => file = Some(a),
        }
    }
    match (serve, file) {
        (true, None) => persistent(&opts),
        (false, Some(f)) => one_shot(&opts, Path::new(&f)),
        _ => usage(),
    }
}
