//! The two output forms: human lines and JSON Lines (schema in `docs/json-output.md` and in
//! the rustdoc of the `cli` module).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{json, Value};
use stcheck::deep::DeepReport;
use stcheck::index::{IndexFinding, IndexReport};
use stcheck::reference::{RefTensor, Verdict};
use stcheck::{DtypeTotal, Error, Finding, Report, Severity};

use super::args::{Options, Profile};
use super::check::Checked;

/// How a job ended, for the exit code and the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Valid,
    Invalid,
    IoError,
    Skipped,
}

impl Status {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Valid => "valid",
            Status::Invalid => "invalid",
            Status::IoError => "io_error",
            Status::Skipped => "skipped",
        }
    }
}

/// What a job prints.
#[derive(Debug, Default)]
pub(crate) struct Rendered {
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// A path for output: lossy UTF-8, escaped as tensor names are ([`stcheck::names::escape`]),
/// so a file name cannot forge a line of output or hide text.
pub(crate) fn show(path: &Path) -> String {
    stcheck::names::escape(&path.to_string_lossy()).into_owned()
}

/// `{"type":KIND,"data":DATA}` with `type` first, as a line.
fn envelope(kind: &str, data: Value) -> String {
    format!("{{\"type\":{},\"data\":{data}}}\n", Value::from(kind))
}

fn finding_json(f: &Finding, promoted: bool) -> Value {
    json!({
        "rule": f.rule().id(),
        "kind": f.kind().as_str(),
        "severity": if promoted { "error" } else { f.rule().severity().as_str() },
        "promoted_warning": promoted && f.rule().severity() == Severity::Warning,
        "offset": f.offset(),
        "tensor": f.tensor(),
        "message": f.message(),
    })
}

fn error_json(e: &Error) -> Value {
    finding_json(e.finding(), true)
}

fn totals_json(t: &[DtypeTotal]) -> Value {
    Value::Array(
        t.iter()
            .map(|t| {
                json!({"dtype": t.dtype.name(), "tensors": t.tensors, "parameters": t.parameters, "bytes": t.bytes})
            })
            .collect(),
    )
}

fn totals_human(tensors: usize, parameters: u64, t: &[(String, u64)]) -> String {
    let mut s = format!("{tensors} tensors, {parameters} parameters");
    for (i, (dtype, p)) in t.iter().enumerate() {
        s.push_str(if i == 0 { "; " } else { ", " });
        let _ = write!(s, "{dtype} {p}");
    }
    s
}

fn strict_totals(t: &[DtypeTotal]) -> Vec<(String, u64)> {
    t.iter()
        .map(|t| (t.dtype.name().to_owned(), t.parameters))
        .collect()
}

fn ref_params(t: &RefTensor) -> u64 {
    t.shape.iter().fold(1u64, |a, &d| a.saturating_mul(d))
}

/// Per-dtype parameters of the reference's tensors, in order of first appearance.
fn ref_totals(ts: &[RefTensor]) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for t in ts {
        match out.iter_mut().find(|(d, _)| *d == t.dtype) {
            Some((_, p)) => *p = p.saturating_add(ref_params(t)),
            None => out.push((t.dtype.clone(), ref_params(t))),
        }
    }
    out
}

fn ref_total_params(ts: &[RefTensor]) -> u64 {
    ts.iter().fold(0u64, |a, t| a.saturating_add(ref_params(t)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The file's status under the chosen profile.
pub(crate) fn file_status(c: &Checked, o: &Options) -> Status {
    let ok = match (o.profile, &c.reference) {
        (Profile::Reference, Some(v)) => v.accepts(),
        _ => c.verdict.is_ok(),
    };
    if ok {
        Status::Valid
    } else {
        Status::Invalid
    }
}

/// Why the strict profile and the reference disagree on a file the reference loads.
fn divergence(c: &Checked) -> Option<&'static str> {
    match (&c.verdict, &c.reference) {
        (Err(e), Some(Verdict::Accept(_))) => e.rule().reference_divergence(),
        _ => None,
    }
}

pub(crate) fn file(path: &str, c: &Checked, o: &Options) -> Rendered {
    let status = file_status(c, o);
    let mut r = Rendered::default();
    if o.json {
        r.stdout = envelope("file", file_json(path, c, o, status));
        return r;
    }
    let out = &mut r.stdout;
    match (o.profile, &c.reference) {
        (Profile::Reference, Some(Verdict::Accept(ts))) => {
            let _ = writeln!(
                out,
                "{path}: ok (reference profile; {})",
                totals_human(ts.len(), ref_total_params(ts), &ref_totals(ts))
            );
        }
        (Profile::Reference, Some(Verdict::Reject(m))) => {
            let _ = writeln!(out, "{path}: error reference rejects: {}", m.escape_debug());
        }
        (Profile::Reference, Some(Verdict::Panic(m))) => {
            let _ = writeln!(out, "{path}: error reference panics: {}", m.escape_debug());
        }
        _ => match &c.verdict {
            Ok(rep) => {
                let _ = writeln!(
                    out,
                    "{path}: ok ({})",
                    totals_human(
                        rep.len(),
                        rep.parameters(),
                        &strict_totals(&rep.totals_by_dtype())
                    )
                );
            }
            Err(e) => {
                let _ = writeln!(out, "{path}: error {e}");
            }
        },
    }
    if let Ok(rep) = &c.verdict {
        if o.profile == Profile::Strict || o.compare_reference {
            for w in rep.warnings() {
                let _ = writeln!(out, "  warning {w}");
            }
        }
        if let Some(d) = &c.deep {
            deep_human(out, d);
        }
        if o.verbose && o.profile == Profile::Strict {
            tensors_human(out, rep);
        }
    }
    if o.compare_reference {
        match o.profile {
            Profile::Strict => match &c.reference {
                Some(Verdict::Accept(ts)) => {
                    let _ = write!(out, "  reference: accepts ({} tensors)", ts.len());
                    if let Some(d) = divergence(c) {
                        let _ = write!(out, "; {d}");
                    }
                    out.push('\n');
                }
                Some(Verdict::Reject(m)) => {
                    let _ = writeln!(out, "  reference: rejects: {}", m.escape_debug());
                }
                Some(Verdict::Panic(m)) => {
                    let _ = writeln!(out, "  reference: panics: {}", m.escape_debug());
                }
                None => {}
            },
            Profile::Reference => match &c.verdict {
                Ok(_) => out.push_str("  strict: ok\n"),
                Err(e) => {
                    let _ = writeln!(out, "  strict: error {e}");
                }
            },
        }
    }
    if o.verbose && o.profile == Profile::Reference {
        if let Some(Verdict::Accept(ts)) = &c.reference {
            for t in ts {
                let _ = writeln!(
                    out,
                    "  tensor \"{}\" {} {:?} bytes [{:#x}, {:#x})",
                    t.name.escape_debug(),
                    t.dtype,
                    t.shape,
                    t.file_begin,
                    t.file_end
                );
            }
        }
    }
    r
}

fn tensors_human(out: &mut String, rep: &Report<'_>) {
    for t in rep.tensors() {
        let _ = writeln!(
            out,
            "  tensor \"{}\" {} {} data_offsets [{}, {}] (file bytes [{:#x}, {:#x}))",
            t.name.escape_debug(),
            t.dtype,
            stcheck::size::fmt_shape(t.shape),
            t.begin,
            t.end,
            t.file_begin,
            t.file_end
        );
    }
}

fn deep_human(out: &mut String, d: &DeepReport) {
    let _ = write!(out, "  deep: {} data bytes scanned", d.bytes_scanned);
    let nonfinite: Vec<_> = d.tensors.iter().filter(|t| t.non_finite() > 0).collect();
    if nonfinite.is_empty() {
        out.push_str(", no NaN or infinity");
    }
    out.push('\n');
    for t in nonfinite {
        let _ = writeln!(
            out,
            "  non-finite: tensor \"{}\" {}: {} NaN, {} +Inf, {} -Inf",
            t.name.escape_debug(),
            t.dtype,
            t.nan,
            t.pos_inf,
            t.neg_inf
        );
    }
    if let Some(h) = &d.sha256 {
        let _ = writeln!(out, "  sha256 {}", hex(h));
    }
}

fn verdict_json(v: &Verdict, divergence: Option<&str>) -> Value {
    match v {
        Verdict::Accept(ts) => json!({
            "verdict": "accept", "message": null, "tensors": ts.len(),
            "parameters": ref_total_params(ts), "divergence": divergence,
        }),
        Verdict::Reject(m) => json!({
            "verdict": "reject", "message": m, "tensors": null, "parameters": null, "divergence": null,
        }),
        Verdict::Panic(m) => json!({
            "verdict": "panic", "message": m, "tensors": null, "parameters": null, "divergence": null,
        }),
    }
}

fn file_json(path: &str, c: &Checked, o: &Options, status: Status) -> Value {
    let mut d = json!({
        "path": path,
        "status": status.as_str(),
        "profile": o.profile.as_str(),
        "mode": c.mode.as_str(),
        "size": c.size,
    });
    let Some(m) = d.as_object_mut() else {
        return d;
    };
    match (o.profile, &c.reference) {
        (Profile::Reference, Some(v)) => {
            if let Verdict::Accept(ts) = v {
                m.insert("tensors".into(), json!(ts.len()));
                m.insert("parameters".into(), json!(ref_total_params(ts)));
                let by: Vec<Value> = ref_totals(ts)
                    .into_iter()
                    .map(|(dt, p)| json!({"dtype": dt, "parameters": p}))
                    .collect();
                m.insert("by_dtype".into(), Value::Array(by));
                m.insert("error".into(), Value::Null);
                if o.verbose {
                    let list: Vec<Value> = ts
                        .iter()
                        .map(|t| json!({"name": t.name, "dtype": t.dtype, "shape": t.shape, "file_offsets": [t.file_begin, t.file_end]}))
                        .collect();
                    m.insert("tensor_list".into(), Value::Array(list));
                }
            } else {
                let msg = match v {
                    Verdict::Reject(s) | Verdict::Panic(s) => s.as_str(),
                    Verdict::Accept(_) => "",
                };
                m.insert(
                    "error".into(),
                    json!({"rule": null, "kind": null, "severity": "error", "promoted_warning": false,
                           "offset": null, "tensor": null, "message": msg}),
                );
            }
            m.insert("reference".into(), verdict_json(v, None));
            m.insert(
                "strict".into(),
                match &c.verdict {
                    Ok(_) => json!({"status": "valid", "error": null}),
                    Err(e) => json!({"status": "invalid", "error": error_json(e)}),
                },
            );
        }
        _ => {
            match &c.verdict {
                Ok(rep) => {
                    m.insert("tensors".into(), json!(rep.len()));
                    m.insert("parameters".into(), json!(rep.parameters()));
                    m.insert("header_len".into(), json!(rep.header_len()));
                    m.insert("by_dtype".into(), totals_json(&rep.totals_by_dtype()));
                    m.insert("error".into(), Value::Null);
                    m.insert(
                        "warnings".into(),
                        rep.warnings()
                            .iter()
                            .map(|w| finding_json(w, false))
                            .collect(),
                    );
                    if o.verbose {
                        let list: Vec<Value> = rep
                            .tensors()
                            .map(|t| {
                                json!({
                                    "name": t.name, "dtype": t.dtype.name(), "shape": t.shape,
                                    "data_offsets": [t.begin, t.end],
                                    "file_offsets": [t.file_begin, t.file_end],
                                    "elements": t.elements, "header_offset": t.header_offset,
                                })
                            })
                            .collect();
                        m.insert("tensor_list".into(), Value::Array(list));
                    }
                    if let Some(dr) = &c.deep {
                        let nf: Vec<Value> = dr
                            .tensors
                            .iter()
                            .filter(|t| t.non_finite() > 0)
                            .map(|t| json!({"tensor": t.name, "dtype": t.dtype.name(), "nan": t.nan, "pos_inf": t.pos_inf, "neg_inf": t.neg_inf}))
                            .collect();
                        m.insert(
                            "deep".into(),
                            json!({
                                "bytes_scanned": dr.bytes_scanned,
                                "sha256": dr.sha256.map(|h| hex(&h)),
                                "non_finite": nf,
                            }),
                        );
                    }
                }
                Err(e) => {
                    m.insert("error".into(), error_json(e));
                    m.insert("warnings".into(), json!([]));
                }
            }
            if let Some(v) = &c.reference {
                m.insert("reference".into(), verdict_json(v, divergence(c)));
            }
        }
    }
    d
}

pub(crate) fn io_error(path: &str, message: &str, o: &Options, what: &str) -> Rendered {
    let mut r = Rendered::default();
    if o.json {
        r.stdout = envelope(
            what,
            json!({"path": path, "status": Status::IoError.as_str(), "io_error": message}),
        );
    }
    r.stderr = format!("stcheck: {path}: {message}\n");
    r
}

pub(crate) fn skipped_link(path: &str, o: &Options) -> Rendered {
    let mut r = Rendered::default();
    let reason = "symbolic link, not followed (use --follow-links)";
    if o.json {
        r.stdout = envelope("skipped", json!({"path": path, "reason": reason}));
    } else {
        r.stdout = format!("{path}: skipped ({reason})\n");
    }
    r
}

fn index_finding_json(f: &IndexFinding, as_error: bool) -> Value {
    let mut v = finding_json(f.finding(), as_error);
    if let Some(m) = v.as_object_mut() {
        m.insert("shard".into(), json!(f.shard_name()));
        m.insert("offset_in".into(), json!(f.location().as_str()));
        m.insert("cause".into(), f.cause().map_or(Value::Null, error_json));
    }
    v
}

pub(crate) fn index_status(rep: &IndexReport) -> Status {
    if rep.is_valid() {
        Status::Valid
    } else {
        Status::Invalid
    }
}

pub(crate) fn index(path: &str, rep: &IndexReport, o: &Options) -> Rendered {
    let status = index_status(rep);
    let mut r = Rendered::default();
    if o.json {
        let shards: Vec<Value> = rep
            .shards()
            .iter()
            .map(|s| {
                json!({
                    "name": s.name, "status": s.status.as_str(), "tensors": s.tensors,
                    "parameters": s.parameters,
                    "warnings": s.warnings.iter().map(|w| finding_json(w, false)).collect::<Vec<_>>(),
                })
            })
            .collect();
        r.stdout = envelope(
            "index",
            json!({
                "path": path,
                "status": status.as_str(),
                "shards": shards,
                "tensors": rep.tensors(),
                "parameters": rep.parameters(),
                "by_dtype": totals_json(rep.totals_by_dtype()),
                "total_size": rep.total_size(),
                "computed_size": rep.computed_size(),
                "errors": rep.errors().iter().map(|f| index_finding_json(f, true)).collect::<Vec<_>>(),
                "warnings": rep.warnings().iter().map(|f| index_finding_json(f, false)).collect::<Vec<_>>(),
                "omitted_errors": rep.omitted(),
            }),
        );
        return r;
    }
    let out = &mut r.stdout;
    let mut errors = rep.errors().iter();
    match errors.next() {
        None => {
            let _ = writeln!(
                out,
                "{path}: ok (index of {} shards; {})",
                rep.shards().len(),
                totals_human(
                    rep.tensors(),
                    rep.parameters(),
                    &strict_totals(rep.totals_by_dtype())
                )
            );
        }
        Some(first) => {
            let _ = writeln!(out, "{path}: error {first}");
        }
    }
    for e in errors {
        let _ = writeln!(out, "  error {e}");
    }
    if rep.omitted() > 0 {
        let _ = writeln!(out, "  ... and {} more errors", rep.omitted());
    }
    for w in rep.warnings() {
        let _ = writeln!(out, "  warning {w}");
    }
    for s in rep.shards() {
        for w in &s.warnings {
            let _ = writeln!(out, "  warning shard \"{}\": {w}", s.name.escape_debug());
        }
    }
    r
}

/// Counts for the summary and the exit code.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Tally {
    pub(crate) files: u64,
    pub(crate) indexes: u64,
    pub(crate) valid: u64,
    pub(crate) invalid: u64,
    pub(crate) io_errors: u64,
    pub(crate) skipped: u64,
}

impl Tally {
    pub(crate) fn exit_code(&self) -> u8 {
        if self.io_errors > 0 {
            2
        } else if self.invalid > 0 {
            1
        } else {
            0
        }
    }
}

/// The JSON summary line (the human form has none: one line per file).
pub(crate) fn summary(t: &Tally) -> String {
    envelope(
        "summary",
        json!({
            "files": t.files, "indexes": t.indexes, "valid": t.valid, "invalid": t.invalid,
            "io_errors": t.io_errors, "skipped": t.skipped, "exit_code": t.exit_code(),
        }),
    )
}
