//! The JSON output schema, as types: the records `stcheck --json` writes (one per line,
//! `{"type": ..., "data": ...}`) and the Python package's `to_dict()` returns. One type per
//! record, so the schema has one source; `docs/json-output.md` describes these types and a test
//! keeps the two in step.
//!
//! Records borrow from the [`Checked`] result they describe and serialize lazily (the tensor
//! list and the metadata are written as they are read from the report), so writing the record
//! of a file with a million tensors needs no memory for the output. Write them with
//! [`write_line`], which also escapes U+0085, U+2028 and U+2029 ([`crate::json_out`]) so that
//! no line splitter can cut a record in two.

use std::io::{self, Write};

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;

use stcheck::deep::DeepReport;
use stcheck::index::IndexReport;
use stcheck::reference::Verdict;
use stcheck::Checked;
use stcheck::ReadMode;
use stcheck::Severity;
use stcheck::{DtypeTotal, Report};
use stcheck::{Error, Finding, ReadError};

use stcheck::Profile;
pub use stcheck_gate::{Cost, Status};

use crate::Options;

/// A finding: `{"rule", "kind", "severity", "promoted_warning", "offset", "offset_in",
/// "tensor", "shard", "message", "cause"}`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FindingRecord<'a> {
    finding: &'a Finding,
    /// Reported as an error (a promoted warning is then marked).
    as_error: bool,
}

impl<'a> FindingRecord<'a> {
    /// A warning.
    pub(crate) fn warning(finding: &'a Finding) -> Self {
        FindingRecord {
            finding,
            as_error: false,
        }
    }
    /// An error.
    pub(crate) fn error(e: &'a Error) -> Self {
        FindingRecord {
            finding: e.finding(),
            as_error: true,
        }
    }
    /// A finding reported as an error.
    pub(crate) fn error_finding(finding: &'a Finding) -> Self {
        FindingRecord {
            finding,
            as_error: true,
        }
    }
}

impl Serialize for FindingRecord<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = self.finding;
        let severity = f.rule().severity();
        let mut m = s.serialize_map(Some(10))?;
        m.serialize_entry("rule", f.rule().id())?;
        m.serialize_entry("kind", f.kind().as_str())?;
        m.serialize_entry(
            "severity",
            if self.as_error {
                "error"
            } else {
                severity.as_str()
            },
        )?;
        m.serialize_entry(
            "promoted_warning",
            &(self.as_error && severity == Severity::Warning),
        )?;
        m.serialize_entry("offset", &f.offset())?;
        m.serialize_entry("offset_in", f.location().as_str())?;
        m.serialize_entry("tensor", &f.tensor())?;
        m.serialize_entry("shard", &f.shard())?;
        m.serialize_entry("message", f.message())?;
        m.serialize_entry("cause", &f.cause().map(FindingRecord::error))?;
        m.end()
    }
}

struct Totals<'a>(&'a [DtypeTotal]);

impl Serialize for Totals<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for t in self.0 {
            seq.serialize_element(&TotalRecord {
                dtype: t.dtype.name(),
                tensors: t.tensors,
                parameters: t.parameters,
                bytes: t.bytes,
            })?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct TotalRecord {
    dtype: &'static str,
    tensors: u64,
    parameters: u64,
    bytes: u64,
}

/// The kept warnings of a report.
struct Warnings<'a>(&'a [Finding]);

impl Serialize for Warnings<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(FindingRecord::warning))
    }
}

/// `{"RULE": count}` of every rule that warned.
struct Counts<'a>(&'a Report<'a>);

impl Serialize for Counts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.warning_counts().map(|(r, n)| (r.id(), n)))
    }
}

/// The tensors of a report, written as they are read.
struct TensorList<'a>(&'a Report<'a>);

impl Serialize for TensorList<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for t in self.0.tensors() {
            seq.serialize_element(&TensorRecord {
                name: t.name,
                dtype: t.dtype.name(),
                shape: t.shape,
                data_offsets: [t.begin, t.end],
                file_offsets: [t.file_begin, t.file_end],
                elements: t.elements,
                header_offset: t.header_offset,
            })?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct TensorRecord<'a> {
    name: &'a str,
    dtype: &'static str,
    shape: &'a [u64],
    data_offsets: [u64; 2],
    file_offsets: [u64; 2],
    elements: u64,
    header_offset: u64,
}

/// The `__metadata__` map, written as it is read (`null` when absent or null).
struct MetadataMap<'a>(&'a Report<'a>);

impl Serialize for MetadataMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.metadata_form() != stcheck::MetadataForm::Map {
            return s.serialize_none();
        }
        s.collect_map(self.0.metadata())
    }
}

struct Deep<'a> {
    report: &'a Report<'a>,
    deep: Option<&'a DeepReport>,
    sha256: Option<&'a [u8; 32]>,
}

impl Serialize for Deep<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("bytes_scanned", &self.deep.map(|d| d.bytes_scanned))?;
        m.serialize_entry("sha256", &self.sha256.map(|h| hex(h)))?;
        let list: Vec<NonFinite<'_>> = self
            .deep
            .map(|d| {
                d.non_finite
                    .iter()
                    .map(|t| NonFinite {
                        tensor: self.report.tensor_at(t.index).map_or("", |x| x.name),
                        dtype: t.dtype.name(),
                        nan: t.nan,
                        pos_inf: t.pos_inf,
                        neg_inf: t.neg_inf,
                    })
                    .collect()
            })
            .unwrap_or_default();
        m.serialize_entry("non_finite", &list)?;
        m.serialize_entry(
            "non_finite_tensors",
            &self.deep.map_or(0, |d| d.non_finite_tensors),
        )?;
        m.end()
    }
}

#[derive(Serialize)]
struct NonFinite<'a> {
    tensor: &'a str,
    dtype: &'static str,
    nan: u64,
    pos_inf: u64,
    neg_inf: u64,
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The reference crate's verdict: `{"verdict", "message", "tensors", "parameters",
/// "divergence"}`.
struct ReferenceRecord<'a> {
    verdict: &'a Verdict,
    divergence: Option<&'static str>,
}

impl Serialize for ReferenceRecord<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(5))?;
        match self.verdict {
            Verdict::Accept(ts) => {
                m.serialize_entry("verdict", "accept")?;
                m.serialize_entry("message", &None::<&str>)?;
                m.serialize_entry("tensors", &Some(ts.len()))?;
                m.serialize_entry("parameters", &Some(reference_parameters(ts)))?;
                m.serialize_entry("divergence", &self.divergence)?;
            }
            Verdict::Reject(msg) | Verdict::Panic(msg) => {
                let v = if matches!(self.verdict, Verdict::Reject(_)) {
                    "reject"
                } else {
                    "panic"
                };
                m.serialize_entry("verdict", v)?;
                m.serialize_entry("message", msg)?;
                m.serialize_entry("tensors", &None::<u64>)?;
                m.serialize_entry("parameters", &None::<u64>)?;
                m.serialize_entry("divergence", &None::<&str>)?;
            }
        }
        m.end()
    }
}

/// Total elements of the reference's tensors (saturating).
pub(crate) fn reference_parameters(ts: &[stcheck::reference::RefTensor]) -> u64 {
    ts.iter().fold(0u64, |a, t| {
        a.saturating_add(t.shape.iter().fold(1u64, |p, &d| p.saturating_mul(d)))
    })
}

/// Per-dtype parameters of the reference's tensors, in order of first appearance.
pub(crate) fn reference_totals(ts: &[stcheck::reference::RefTensor]) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for t in ts {
        let p = t.shape.iter().fold(1u64, |p, &d| p.saturating_mul(d));
        match out.iter_mut().find(|(d, _)| *d == t.dtype) {
            Some((_, n)) => *n = n.saturating_add(p),
            None => out.push((t.dtype.clone(), p)),
        }
    }
    out
}

/// Why the strict profile and the reference disagree on a file the reference loads.
pub(crate) fn divergence(checked: &Checked<'_>) -> Option<&'static str> {
    checked.reference_divergence()
}

/// A record's row: what the Python package's scan to Parquet keeps of each record beside its
/// line (`stcheck.dask.COLUMNS`, `docs/python.md`), for a query over millions of records
/// without parsing them. Each record type gives its row from the very fields it writes
/// (`FileRecord::row`, `IndexTail::row`, ...), so a column holds what the record says.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Row {
    /// The record's `type`: `"file"`, `"index"` or `"not_checked"`.
    pub kind: &'static str,
    /// Its `path`.
    pub path: String,
    /// Its `status` (`"valid"`, `"invalid"`, `"io_error"`), `"not_checked"` for a path not
    /// checked.
    pub status: &'static str,
    /// The rule of its error (a file's `error`, a set's first of `errors`).
    pub rule: Option<&'static str>,
    /// That error's byte offset.
    pub offset: Option<u64>,
    /// That error's tensor.
    pub tensor: Option<String>,
    /// That error's message; for a path that could not be read or was not checked, why.
    pub message: Option<String>,
    /// The policy reason of a path not checked (`reason`).
    pub reason: Option<&'static str>,
    /// A file's `size`.
    pub size: Option<u64>,
    /// Its `tensors`.
    pub tensors: Option<u64>,
    /// Its `parameters`.
    pub parameters: Option<u64>,
    /// A file's SHA-256 (`deep.sha256`), when it was computed.
    pub sha256: Option<String>,
}

impl Row {
    fn new(kind: &'static str, path: &str, status: &'static str) -> Self {
        Row {
            kind,
            path: path.to_owned(),
            status,
            rule: None,
            offset: None,
            tensor: None,
            message: None,
            reason: None,
            size: None,
            tensors: None,
            parameters: None,
            sha256: None,
        }
    }

    fn with_error(mut self, error: Option<ErrorField<'_>>) -> Self {
        match error {
            Some(ErrorField::Finding(f)) => {
                let f = f.finding;
                self.rule = Some(f.rule().id());
                self.offset = Some(f.offset());
                self.tensor = f.tensor().map(str::to_owned);
                self.message = Some(f.message().to_owned());
            }
            Some(ErrorField::Reference(message)) => self.message = Some(message.to_owned()),
            None => {}
        }
        self
    }
}

/// The record of one checked file (`"type": "file"`), or of one shard inside an index record
/// (then with `name`).
#[derive(Debug, Clone, Copy)]
pub struct FileRecord<'a> {
    path: &'a str,
    name: Option<&'a str>,
    checked: &'a Checked<'a>,
    options: Options,
    /// `mode`: how the bytes were obtained (`None` for bytes handed over in memory).
    mode: Option<&'static str>,
    status: Status,
    remote: Option<RemoteInfo<'a>>,
}

#[derive(Debug, Clone, Copy)]
struct RemoteInfo<'a> {
    resolved: &'a str,
    /// `{"requests", "bytes", "redirects", "retries"}`: what it cost (bytes of response
    /// bodies).
    cost: Cost,
    hub: Option<HubRecord<'a>>,
}

impl<'a> RemoteInfo<'a> {
    /// Fetched from `resolved` at `cost`, the hub's word not (yet) known.
    fn new(resolved: &'a str, cost: Cost) -> Option<Self> {
        Some(RemoteInfo {
            resolved,
            cost,
            hub: None,
        })
    }

    /// `remote` with what the hub said, if it was fetched at all.
    fn with_hub(mut remote: Option<Self>, hub: HubRecord<'a>) -> Option<Self> {
        if let Some(r) = &mut remote {
            r.hub = Some(hub);
        }
        remote
    }
}

/// What a server said about a file it served, for a record: the commit a hub served it from,
/// its entity tag, and the SHA-256 the hub publishes for it, where it said them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) struct HubRecord<'a> {
    /// `commit`: the repository commit (`X-Repo-Commit`).
    pub(crate) commit: Option<&'a str>,
    /// `etag`: the entity tag, quotes removed.
    pub(crate) etag: Option<&'a str>,
    /// `lfs_sha256`: the SHA-256 the hub publishes (LFS files).
    pub lfs_sha256: Option<&'a str>,
    /// `git_blob_id`: an `X-Linked-Etag` that is a git blob id (not compared).
    pub(crate) git_blob_id: Option<&'a str>,
}

impl<'a> HubRecord<'a> {
    /// What a server said: commit, entity tag, published SHA-256.
    pub(crate) fn new(
        commit: Option<&'a str>,
        etag: Option<&'a str>,
        lfs_sha256: Option<&'a str>,
    ) -> Self {
        HubRecord {
            commit,
            etag,
            lfs_sha256,
            git_blob_id: None,
        }
    }
}

impl<'a> From<&'a stcheck_gate::HubInfo> for HubRecord<'a> {
    fn from(h: &'a stcheck_gate::HubInfo) -> Self {
        HubRecord {
            git_blob_id: h.git_blob_id.as_deref(),
            ..HubRecord::new(
                h.commit.as_deref(),
                h.etag.as_deref(),
                h.lfs_sha256.as_deref(),
            )
        }
    }
}

impl RemoteInfo<'_> {
    /// `url`, `cost`, and what the hub said: `commit`, `etag`, `lfs_sha256` where it said it.
    fn write<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        m.serialize_entry("url", self.resolved)?;
        m.serialize_entry("cost", &self.cost)?;
        if let Some(h) = &self.hub {
            if let Some(c) = h.commit {
                m.serialize_entry("commit", c)?;
            }
            if let Some(e) = h.etag {
                m.serialize_entry("etag", e)?;
            }
            if let Some(x) = h.lfs_sha256 {
                m.serialize_entry("lfs_sha256", x)?;
            }
            if let Some(x) = h.git_blob_id {
                m.serialize_entry("git_blob_id", x)?;
            }
        }
        Ok(())
    }
}

impl<'a> FileRecord<'a> {
    /// The record of `checked`, shown as `path`, with the status the gate gave it: bytes handed
    /// over in memory (no `mode`) unless [`FileRecord::read_as`] or [`FileRecord::by_url`].
    pub fn new(path: &'a str, checked: &'a Checked<'a>, options: Options, status: Status) -> Self {
        FileRecord {
            path,
            name: None,
            checked,
            options,
            mode: None,
            status,
            remote: None,
        }
    }

    /// Read from the file system (or standard input) as `mode` says.
    pub fn read_as(mut self, mode: ReadMode) -> Self {
        self.mode = Some(mode.as_str());
        self
    }

    /// Fetched from an HTTP(S) server (`mode` `"remote"`).
    pub fn by_url(mut self) -> Self {
        self.mode = Some("remote");
        self
    }

    /// The record of a file fetched from `resolved` (the URL requested) at `cost`.
    pub fn with_remote(mut self, resolved: &'a str, cost: Cost) -> Self {
        self.remote = RemoteInfo::new(resolved, cost);
        self
    }

    /// What the server said about the file (after [`FileRecord::with_remote`]).
    pub(crate) fn with_hub(mut self, hub: HubRecord<'a>) -> Self {
        self.remote = RemoteInfo::with_hub(self.remote, hub);
        self
    }

    /// The record of a shard named `name` by its index, shown as `path`, with its status.
    pub(crate) fn shard(
        name: &'a str,
        path: &'a str,
        checked: &'a Checked<'a>,
        options: Options,
        status: Status,
    ) -> Self {
        FileRecord {
            name: Some(name),
            ..FileRecord::new(path, checked, options, status)
        }
    }

    /// The status the gate gave it.
    pub fn status(&self) -> Status {
        self.status
    }
}

/// What decides a file record's verdict fields: the reference crate's verdict (`--profile
/// reference`, when it was computed), or the strict verdict, a report or an error.
#[derive(Debug, Clone, Copy)]
enum Shape<'c, 'a> {
    Reference(&'c Verdict),
    Valid(&'c Report<'a>),
    Invalid(&'c Error),
}

/// A record's `error`: a finding, or the reference crate's refusal (a message without a rule).
#[derive(Debug, Clone, Copy)]
enum ErrorField<'a> {
    Finding(FindingRecord<'a>),
    Reference(&'a str),
}

impl Serialize for ErrorField<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ErrorField::Finding(f) => f.serialize(s),
            ErrorField::Reference(message) => ReferenceError { message }.serialize(s),
        }
    }
}

impl<'a> FileRecord<'a> {
    fn shape(&self) -> Shape<'a, 'a> {
        let c = self.checked;
        match (&c.reference, &c.verdict) {
            (Some(v), _) if self.options.profile == Profile::Reference => Shape::Reference(v),
            (_, Ok(r)) => Shape::Valid(r),
            (_, Err(e)) => Shape::Invalid(e),
        }
    }

    /// The record's `error`: the strict error, the reference's refusal when the reference
    /// decides, or (under the portable profile) the first portable finding of a file strict
    /// accepts.
    fn error(&self) -> Option<ErrorField<'a>> {
        match self.shape() {
            Shape::Reference(Verdict::Accept(_)) => None,
            Shape::Reference(Verdict::Reject(msg) | Verdict::Panic(msg)) => {
                Some(ErrorField::Reference(msg))
            }
            Shape::Valid(_) => self
                .checked
                .portable
                .as_ref()
                .filter(|_| self.options.profile == Profile::Portable)
                .and_then(|p| p.findings().first())
                .map(|f| ErrorField::Finding(FindingRecord::error_finding(f.finding()))),
            Shape::Invalid(e) => Some(ErrorField::Finding(FindingRecord::error(e))),
        }
    }

    /// The record's `tensors` and `parameters`, where it has them (a file that was read).
    fn counts(&self) -> Option<(u64, u64)> {
        match self.shape() {
            Shape::Reference(Verdict::Accept(ts)) => {
                Some((ts.len() as u64, reference_parameters(ts)))
            }
            Shape::Valid(r) => Some((r.len() as u64, r.parameters())),
            Shape::Reference(_) | Shape::Invalid(_) => None,
        }
    }

    /// The record's row ([`Row`]), from the fields the record writes.
    pub fn row(&self) -> Row {
        let c = self.checked;
        let (tensors, parameters) = self.counts().unzip();
        // The record's `deep.sha256`: written for a file the strict check accepts.
        let sha256 = match self.shape() {
            Shape::Valid(_) => c.sha256.as_ref().map(|h| hex(h)),
            Shape::Reference(_) | Shape::Invalid(_) => None,
        };
        Row {
            size: c.file_len,
            tensors,
            parameters,
            sha256,
            ..Row::new("file", self.path, self.status().as_str())
        }
        .with_error(self.error())
    }
}

impl Serialize for FileRecord<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let c = self.checked;
        let o = self.options;
        let mut m = s.serialize_map(None)?;
        if let Some(name) = self.name {
            m.serialize_entry("name", name)?;
        }
        m.serialize_entry("path", self.path)?;
        m.serialize_entry("status", self.status.as_str())?;
        m.serialize_entry("profile", &o.profile)?;
        m.serialize_entry("mode", &self.mode)?;
        if let Some(r) = self.remote {
            r.write(&mut m)?;
        }
        // Every id published for the file and compared with its SHA-256 (the hub's, the
        // user's), by source.
        if !c.published_sha256.is_empty() {
            let ids: Vec<serde_json::Value> = c
                .published_sha256
                .iter()
                .map(|(source, id)| serde_json::json!({"source": source, "sha256": id}))
                .collect();
            m.serialize_entry("published_sha256", &ids)?;
        }
        m.serialize_entry("size", &c.file_len)?;
        let counts = self.counts();
        let shape = self.shape();
        if let Some((tensors, parameters)) = counts {
            m.serialize_entry("tensors", &tensors)?;
            m.serialize_entry("parameters", &parameters)?;
        }
        match shape {
            Shape::Reference(v) => {
                if let Verdict::Accept(ts) = v {
                    m.serialize_entry("header_len", &c.header_len)?;
                    let by: Vec<ReferenceTotal> = reference_totals(ts)
                        .into_iter()
                        .map(|(dtype, parameters)| ReferenceTotal { dtype, parameters })
                        .collect();
                    m.serialize_entry("by_dtype", &by)?;
                }
                m.serialize_entry("error", &self.error())?;
                if let (Verdict::Accept(ts), true) = (v, o.verbose) {
                    let list: Vec<ReferenceTensor<'_>> = ts
                        .iter()
                        .map(|t| ReferenceTensor {
                            name: &t.name,
                            dtype: &t.dtype,
                            shape: &t.shape,
                            file_offsets: [t.file_begin, t.file_end],
                        })
                        .collect();
                    m.serialize_entry("tensor_list", &list)?;
                }
                m.serialize_entry("warnings", &[(); 0])?;
                m.serialize_entry(
                    "reference",
                    &ReferenceRecord {
                        verdict: v,
                        divergence: None,
                    },
                )?;
                m.serialize_entry(
                    "strict",
                    &StrictRecord {
                        status: if c.verdict.is_ok() {
                            Status::Valid.as_str()
                        } else {
                            Status::Invalid.as_str()
                        },
                        error: c.verdict.as_ref().err().map(FindingRecord::error),
                    },
                )?;
            }
            Shape::Valid(r) => {
                m.serialize_entry("header_len", &r.header_len())?;
                m.serialize_entry("by_dtype", &Totals(&r.totals_by_dtype()))?;
                m.serialize_entry("metadata_form", r.metadata_form().as_str())?;
                // Under the portable profile, a file strict accepts but a reader misreads has
                // the first portable finding as its error.
                m.serialize_entry("error", &self.error())?;
                m.serialize_entry("warnings", &Warnings(r.warnings()))?;
                m.serialize_entry("warning_counts", &Counts(r))?;
                m.serialize_entry("omitted_warnings", &r.omitted_warnings())?;
                if o.verbose {
                    m.serialize_entry("metadata", &MetadataMap(r))?;
                    m.serialize_entry("tensor_list", &TensorList(r))?;
                }
                if let Some(p) = &c.portable {
                    m.serialize_entry("portable", &PortableRecord(p))?;
                }
                if c.deep.is_some() || c.sha256.is_some() {
                    m.serialize_entry(
                        "deep",
                        &Deep {
                            report: r,
                            deep: c.deep.as_ref(),
                            sha256: c.sha256.as_ref(),
                        },
                    )?;
                }
            }
            Shape::Invalid(_) => {
                m.serialize_entry("header_len", &c.header_len)?;
                m.serialize_entry("error", &self.error())?;
                m.serialize_entry("warnings", &[(); 0])?;
            }
        }
        if let (Some(v), false) = (&c.reference, matches!(shape, Shape::Reference(_))) {
            m.serialize_entry(
                "reference",
                &ReferenceRecord {
                    verdict: v,
                    divergence: divergence(c),
                },
            )?;
        }
        m.end()
    }
}

/// The portable profile's answer: `{"portable", "findings", "omitted_findings", "support",
/// "readers": [{"reader", "version", "loads", "refusals": [{"behaviour", "reason"}],
/// "misreadings"}]}`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PortableRecord<'a>(pub(crate) &'a stcheck::portable::PortableReport);

impl Serialize for PortableRecord<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.0;
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_entry("portable", &p.is_portable())?;
        let findings: Vec<PortableFindingRecord<'_>> =
            p.findings().iter().map(PortableFindingRecord).collect();
        m.serialize_entry("findings", &findings)?;
        m.serialize_entry("omitted_findings", &p.omitted())?;
        m.serialize_entry("support", &p.support_line())?;
        let readers: Vec<ReaderRecord<'_>> = p
            .support()
            .iter()
            .map(|r| ReaderRecord {
                reader: r.reader().id(),
                version: r.reader().version(),
                loads: r.loads(),
                refusals: r
                    .refusals()
                    .iter()
                    .map(|x| RefusalRecord {
                        behaviour: &x.behaviour,
                        reason: &x.reason,
                    })
                    .collect(),
                misreadings: r.misreadings(),
            })
            .collect();
        m.serialize_entry("readers", &readers)?;
        m.end()
    }
}

/// A portable finding: a finding (as an error) with the reader, version and behaviour.
struct PortableFindingRecord<'a>(&'a stcheck::portable::PortableFinding);

impl Serialize for PortableFindingRecord<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = self.0;
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_entry("finding", &FindingRecord::error_finding(f.finding()))?;
        m.serialize_entry("shard", &f.shard())?;
        m.serialize_entry("reader", f.reader())?;
        m.serialize_entry("version", f.version())?;
        m.serialize_entry("behaviour", f.behaviour())?;
        m.end()
    }
}

#[derive(Serialize)]
struct ReaderRecord<'a> {
    reader: &'a str,
    version: &'a str,
    loads: bool,
    refusals: Vec<RefusalRecord<'a>>,
    misreadings: &'a [String],
}

#[derive(Serialize)]
struct RefusalRecord<'a> {
    behaviour: &'a str,
    reason: &'a str,
}

#[derive(Serialize)]
struct ReferenceTotal {
    dtype: String,
    parameters: u64,
}

#[derive(Serialize)]
struct ReferenceTensor<'a> {
    name: &'a str,
    dtype: &'a str,
    shape: &'a [u64],
    file_offsets: [u64; 2],
}

/// The reference's refusal as a finding without a rule.
struct ReferenceError<'a> {
    message: &'a str,
}

impl Serialize for ReferenceError<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(10))?;
        m.serialize_entry("rule", &None::<()>)?;
        m.serialize_entry("kind", &None::<()>)?;
        m.serialize_entry("severity", "error")?;
        m.serialize_entry("promoted_warning", &false)?;
        m.serialize_entry("offset", &None::<()>)?;
        m.serialize_entry("offset_in", &None::<()>)?;
        m.serialize_entry("tensor", &None::<()>)?;
        m.serialize_entry("shard", &None::<()>)?;
        m.serialize_entry("message", self.message)?;
        m.serialize_entry("cause", &None::<()>)?;
        m.end()
    }
}

#[derive(Serialize)]
struct StrictRecord<'a> {
    status: &'static str,
    error: Option<FindingRecord<'a>>,
}

/// The record of a path that could not be checked: `{"path", "status": "io_error",
/// "io_error": message, "read_error": code}`, and `"http_status"` when a server's answer is why
/// ([`ReadError::code`], [`ReadError::http_status`]).
#[derive(Debug, Serialize)]
pub struct UnreadableRecord<'a> {
    path: &'a str,
    status: &'static str,
    io_error: String,
    read_error: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    http_status: Option<u16>,
}

impl<'a> UnreadableRecord<'a> {
    /// The record of `error` about `path`.
    pub fn new(path: &'a str, error: &ReadError) -> Self {
        UnreadableRecord {
            path,
            status: Status::IoError.as_str(),
            io_error: error.to_string(),
            read_error: error.code(),
            http_status: error.http_status(),
        }
    }

    /// The record's row: its message is the `io_error`.
    pub fn row(&self) -> Row {
        Row {
            message: Some(self.io_error.clone()),
            ..Row::new("file", self.path, self.status)
        }
    }
}

/// A path not checked by the file-system policy (`"type": "not_checked"`): `{"path",
/// "reason", "message"}`, where `reason` is [`ReadError::code`].
#[derive(Debug, Serialize)]
pub(crate) struct NotCheckedRecord<'a> {
    path: &'a str,
    reason: &'static str,
    message: &'a str,
}

impl<'a> NotCheckedRecord<'a> {
    /// The record of `why` about `path`.
    pub(crate) fn new(path: &'a str, why: &'a ReadError) -> Self {
        NotCheckedRecord {
            path,
            reason: why.code(),
            message: why.message(),
        }
    }

    /// The record's row: status `"not_checked"`, with the reason and the message.
    pub(crate) fn row(&self) -> Row {
        Row {
            reason: Some(self.reason),
            message: Some(self.message.to_owned()),
            ..Row::new("not_checked", self.path, "not_checked")
        }
    }
}

/// A shard the index names that could not be checked, inside an index record's `shards`:
/// `{"name", "path", "status": "missing", "error"}`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MissingShardRecord<'a> {
    name: &'a str,
    path: &'a str,
    error: &'a Finding,
}

impl<'a> MissingShardRecord<'a> {
    /// The record of the shard `name` (shown as `path`), not checked because of `error`.
    pub(crate) fn new(name: &'a str, path: &'a str, error: &'a Finding) -> Self {
        MissingShardRecord { name, path, error }
    }
}

impl Serialize for MissingShardRecord<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("name", self.name)?;
        m.serialize_entry("path", self.path)?;
        m.serialize_entry("status", "missing")?;
        m.serialize_entry("error", &FindingRecord::error_finding(self.error))?;
        m.end()
    }
}

/// The fields of an index record after its `shards` (`"type": "index"`): the set's verdict.
/// The CLI writes `path` and the shards' records first, as they are checked.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IndexTail<'a> {
    report: &'a IndexReport,
    remote: Option<RemoteInfo<'a>>,
    status: Status,
}

impl<'a> IndexTail<'a> {
    /// The tail of `report`'s record, with the status the gate gave the set.
    pub(crate) fn new(report: &'a IndexReport, status: Status) -> Self {
        IndexTail {
            report,
            remote: None,
            status,
        }
    }

    /// The tail of an index fetched from `resolved`, with what the index and its shards cost.
    pub(crate) fn with_remote(mut self, resolved: &'a str, cost: Cost) -> Self {
        self.remote = RemoteInfo::new(resolved, cost);
        self
    }

    /// What the server said about the index (after [`IndexTail::with_remote`]).
    pub(crate) fn with_hub(mut self, hub: HubRecord<'a>) -> Self {
        self.remote = RemoteInfo::with_hub(self.remote, hub);
        self
    }

    /// `valid` or `invalid`, as the gate decided.
    pub(crate) fn status(&self) -> Status {
        self.status
    }

    /// The row of the set's record, shown as `path`: its first error is the row's.
    pub(crate) fn row(&self, path: &str) -> Row {
        let r = self.report;
        Row {
            tensors: Some(r.tensors() as u64),
            parameters: Some(r.parameters()),
            ..Row::new("index", path, self.status().as_str())
        }
        .with_error(
            r.errors()
                .first()
                .map(|f| ErrorField::Finding(FindingRecord::error_finding(f))),
        )
    }
}

impl Serialize for IndexTail<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.report;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("status", self.status.as_str())?;
        m.serialize_entry("tensors", &r.tensors())?;
        m.serialize_entry("parameters", &r.parameters())?;
        m.serialize_entry("by_dtype", &Totals(r.totals_by_dtype()))?;
        m.serialize_entry("total_size", &r.total_size())?;
        m.serialize_entry("computed_size", &r.computed_size())?;
        m.serialize_entry(
            "errors",
            &r.errors()
                .iter()
                .map(FindingRecord::error_finding)
                .collect::<Vec<_>>(),
        )?;
        m.serialize_entry(
            "warnings",
            &r.warnings()
                .iter()
                .map(FindingRecord::warning)
                .collect::<Vec<_>>(),
        )?;
        m.serialize_entry("omitted_errors", &r.omitted())?;
        if let Some(p) = r.portable() {
            m.serialize_entry("portable", &PortableRecord(p))?;
        }
        if let Some(remote) = self.remote {
            remote.write(&mut m)?;
        }
        m.end()
    }
}

/// The fields of an index record after its `shards` when the set could not be read:
/// `{"status": "io_error", "io_error": message, "read_error": code}`, and `"http_status"` as
/// in [`UnreadableRecord`].
#[derive(Debug, Serialize)]
pub(crate) struct IndexFailure {
    status: &'static str,
    io_error: String,
    read_error: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    http_status: Option<u16>,
}

impl IndexFailure {
    /// The tail of a set that `error` kept from being read.
    pub(crate) fn new(error: &ReadError) -> Self {
        IndexFailure {
            status: Status::IoError.as_str(),
            io_error: error.to_string(),
            read_error: error.code(),
            http_status: error.http_status(),
        }
    }

    /// The row of the set's record, shown as `path`: its message is the `io_error`.
    pub(crate) fn row(&self, path: &str) -> Row {
        Row {
            message: Some(self.io_error.clone()),
            ..Row::new("index", path, self.status)
        }
    }
}

/// The run's last record (`"type": "summary"`).
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[non_exhaustive]
pub struct Summary {
    /// Files checked or attempted (shards reached through an index not counted).
    pub files: u64,
    /// Sharded sets checked or attempted.
    pub indexes: u64,
    /// Valid files and sets.
    pub valid: u64,
    /// Invalid files and sets.
    pub invalid: u64,
    /// Paths whose reading failed (never valid).
    pub io_errors: u64,
    /// Paths not checked by the file-system policy: special files, links not followed, loops,
    /// directories with nothing to check (never valid; they fail the run).
    pub not_checked: u64,
    /// The exit code of the run.
    pub exit_code: u8,
}

/// Serialize `value` as one line of line-safe JSON ([`crate::json_out`]), without the newline.
pub fn write_json<W: Write + ?Sized, T: Serialize + ?Sized>(
    w: &mut W,
    value: &T,
) -> io::Result<()> {
    crate::json_out::to_writer(&mut *w, value).map_err(io::Error::other)
}

/// Write the fields of `value`, a JSON object, without its braces: for a record whose head is
/// streamed before (a sharded set's path and shards) and whose tail closes it. The one place a
/// record is put together from parts.
pub(crate) fn write_fields<W: Write + ?Sized, T: Serialize + ?Sized>(
    w: &mut W,
    value: &T,
) -> io::Result<()> {
    let mut buf = Vec::new();
    write_json(&mut buf, value)?;
    match buf.strip_prefix(b"{").and_then(|b| b.strip_suffix(b"}")) {
        Some(inner) => w.write_all(inner),
        None => Err(io::Error::other("a record's tail is not a JSON object")),
    }
}

/// Write `{"type":KIND,"data":DATA}` and a newline.
pub fn write_line<W: Write + ?Sized, T: Serialize + ?Sized>(
    w: &mut W,
    kind: &str,
    data: &T,
) -> io::Result<()> {
    w.write_all(b"{\"type\":")?;
    write_json(w, kind)?;
    w.write_all(b",\"data\":")?;
    write_json(w, data)?;
    w.write_all(b"}\n")
}
