//! Stage 2 after parsing (layout, data length, warnings) and the report of a valid file.

use std::borrow::Cow;

use crate::dtype::Dtype;
use crate::error::{Error, Finding, Warning};
use crate::frame::HEADER_START;
use crate::header::{self, Metadata, MetadataForm, Names, Parsed, Record};
use crate::json::{self, KeyCursor};
use crate::limits::Config;
use crate::rules::Rule;
use crate::warnings::Warnings;

/// The report of a valid file: its tensors in offset order, metadata, warnings and totals.
///
/// It keeps the header text (borrowed from the caller's buffer where it can, owned when the
/// bytes were streamed) and refers to names and metadata by position in it; use
/// [`Report::into_owned`] to keep a report beyond the buffer.
#[derive(Debug, Clone)]
pub struct Report<'a> {
    text: Cow<'a, str>,
    tensors: Vec<Record>,
    dims: Vec<u64>,
    names: Names,
    metadata: Metadata,
    warnings: Warnings,
    data_len: u64,
}

/// One tensor of a [`Report`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TensorInfo<'r> {
    /// The tensor's name, unescaped.
    pub name: &'r str,
    /// Element type.
    pub dtype: Dtype,
    /// Dimensions.
    pub shape: &'r [u64],
    /// `data_offsets[0]`: relative to the data region.
    pub begin: u64,
    /// `data_offsets[1]`: relative to the data region.
    pub end: u64,
    /// Absolute file offset of the first byte (8 + N + begin).
    pub file_begin: u64,
    /// Absolute file offset one past the last byte (8 + N + end).
    pub file_end: u64,
    /// Number of elements (the product of the shape).
    pub elements: u64,
    /// File offset of the tensor's key in the header.
    pub header_offset: u64,
}

impl TensorInfo<'_> {
    /// Byte length, `end - begin`.
    pub fn byte_len(&self) -> u64 {
        self.end - self.begin
    }

    /// The tensor's bytes in `file`, the buffer the report was made from (empty if `file` is
    /// shorter).
    pub fn data<'f>(&self, file: &'f [u8]) -> &'f [u8] {
        let (Ok(b), Ok(e)) = (
            usize::try_from(self.file_begin),
            usize::try_from(self.file_end),
        ) else {
            return &[];
        };
        file.get(b..e).unwrap_or(&[])
    }
}

/// Parameter and byte totals of one dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DtypeTotal {
    /// The dtype.
    pub dtype: Dtype,
    /// How many tensors.
    pub tensors: u64,
    /// Sum of element counts.
    pub parameters: u64,
    /// Sum of byte lengths.
    pub bytes: u64,
}

impl<'a> Report<'a> {
    /// Stage 2 over a parsed header: sort into offset order, check the tiling, collect warnings.
    /// The data-region length is checked separately ([`Report::check_data_len`]), since a
    /// stream only knows it at the end.
    pub(crate) fn from_parsed(text: Cow<'a, str>, parsed: Parsed) -> Result<Self, Error> {
        let Parsed {
            mut tensors,
            dims,
            names,
            metadata,
            mut warnings,
        } = parsed;

        // Offset order; ties (zero-size tensors) by end, then by header position, so the order
        // is total and independent of the sort's stability.
        tensors.sort_unstable_by_key(|t| (t.begin, t.end, t.offset(&names)));
        let mut expected = 0u64;
        for t in &tensors {
            let name = || t.name(&text, &names);
            if t.begin > expected {
                return Err(Finding::new(
                    Rule::LayoutGap,
                    t.offset(&names),
                    format!(
                        "gap: data bytes [{expected}, {}) belong to no tensor (this tensor begins at {})",
                        t.begin, t.begin
                    ),
                )
                .with_tensor(name())
                .into());
            }
            if t.begin < expected {
                let what = if t.begin == t.end {
                    "zero-size tensor lies strictly inside another tensor"
                } else {
                    "tensor overlaps the tensor before it"
                };
                return Err(Finding::new(
                    Rule::LayoutOverlap,
                    t.offset(&names),
                    format!(
                        "{what}: data_offsets [{}, {}] begin before {expected}, the end of the bytes already taken",
                        t.begin, t.end
                    ),
                )
                .with_tensor(name())
                .into());
            }
            expected = t.end;
            // A zero-size tensor has no bytes to reinterpret, so its alignment does not matter
            // (MLX writes such tensors at odd offsets).
            if t.begin != t.end && t.begin % t.dtype.alignment() != 0 {
                warnings.push(
                    Finding::new(
                        Rule::LayoutAlign,
                        t.offset(&names),
                        format!(
                            "begin offset {} is not a multiple of the {}-byte element size of {}",
                            t.begin,
                            t.dtype.alignment(),
                            t.dtype
                        ),
                    )
                    .with_tensor(name()),
                );
            }
        }

        let mut report = Report {
            text,
            tensors,
            dims,
            names,
            metadata,
            warnings,
            data_len: expected,
        };
        if let Some(w) = report.total_parameters_warning() {
            report.warnings.push(w);
        }
        if metadata.form == MetadataForm::Null {
            report.warnings.push(Finding::new(
                Rule::SchemaMetadataNull,
                HEADER_START,
                "\"__metadata__\" is null (MLX writes this); readers treat it as absent",
            ));
        }
        report.warnings.settle();
        Ok(report)
    }

    fn total_parameters_warning(&self) -> Option<Warning> {
        let key = self.metadata.total_parameters? as usize;
        let v = KeyCursor::value_start(&self.text, key)?;
        let value = json::string_at(&self.text, v)?;
        let at = HEADER_START + v as u64;
        let computed = self.parameters();
        // Canonical decimal only (no sign, no leading zero), as the writer writes it.
        let canonical = value.len() == 1 || !value.starts_with('0');
        let declared =
            if value.bytes().all(|b| b.is_ascii_digit()) && !value.is_empty() && canonical {
                value.parse::<u64>().ok()
            } else {
                None
            };
        match declared {
            Some(d) if d == computed => None,
            Some(d) => Some(Finding::new(
                Rule::SizeTotalParameters,
                at,
                format!("__metadata__ total_parameters is {d}, but the tensors hold {computed} elements"),
            )),
            None => Some(Finding::new(
                Rule::SizeTotalParameters,
                at,
                format!(
                    "__metadata__ total_parameters {:?} is not a decimal integer (the tensors hold {computed} elements)",
                    crate::clip::clip(&value)
                ),
            )),
        }
    }

    /// `DATA-TRAILING` / `DATA-TRUNCATED`: the data region must be exactly as long as the last
    /// tensor's end. `actual` is the number of bytes after the header.
    pub(crate) fn check_data_len(&self, actual: u64) -> Result<(), Error> {
        let data_start = self.data_start();
        if actual > self.data_len {
            return Err(self.trailing_error());
        }
        if actual < self.data_len {
            let cut = self.tensors().find(|t| t.end > actual);
            let f = Finding::new(
                Rule::DataTruncated,
                data_start.saturating_add(actual),
                format!(
                    "data region is {actual} bytes, but the tensors need {}",
                    self.data_len
                ),
            );
            return Err(match cut {
                Some(t) => f.with_tensor(t.name),
                None => f,
            }
            .into());
        }
        Ok(())
    }

    /// `DATA-TRAILING`: bytes after the data region, at the first of them. The message is
    /// the same whether the file's length is known or a stream was stopped at that byte.
    pub(crate) fn trailing_error(&self) -> Error {
        Finding::new(
            Rule::DataTrailing,
            self.file_len(),
            format!(
                "bytes follow the last tensor's end ({}): the data region must end there",
                self.data_len
            ),
        )
        .into()
    }

    /// Apply [`Config::denies`]: the first denied warning in file order becomes the error.
    pub(crate) fn deny(&self, config: &Config) -> Result<(), Error> {
        match self
            .warnings
            .as_slice()
            .iter()
            .find(|w| config.denies(w.rule()))
        {
            Some(w) => Err(w.clone().into()),
            None => Ok(()),
        }
    }

    /// Add a warning found after stage 2 (the deep scan), keeping file order.
    pub(crate) fn push_warning(&mut self, w: Warning) {
        self.warnings.push(w);
    }

    /// Count `n` more warnings of `rule` that are not kept (past the cap).
    pub(crate) fn count_warnings(&mut self, rule: Rule, n: u64) {
        self.warnings.count(rule, n);
    }

    pub(crate) fn settle_warnings(&mut self) {
        self.warnings.settle();
    }

    /// The header text (the N bytes after the length field).
    pub fn header_text(&self) -> &str {
        &self.text
    }

    /// The header length N.
    pub fn header_len(&self) -> u64 {
        self.text.len() as u64
    }

    /// File offset of the data region, 8 + N.
    pub fn data_start(&self) -> u64 {
        HEADER_START + self.header_len()
    }

    /// Length of the data region, in bytes (the last tensor's end).
    pub fn data_len(&self) -> u64 {
        self.data_len
    }

    /// Total file length of a valid file: 8 + N + data length.
    pub fn file_len(&self) -> u64 {
        self.data_start().saturating_add(self.data_len)
    }

    /// Number of tensors.
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// Whether the file has no tensors.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// The tensors, in offset order.
    pub fn tensors(&self) -> impl ExactSizeIterator<Item = TensorInfo<'_>> + '_ {
        self.tensors.iter().map(move |t| self.info(t))
    }

    /// The tensor at this position in offset order.
    pub fn tensor_at(&self, i: usize) -> Option<TensorInfo<'_>> {
        self.tensors.get(i).map(|t| self.info(t))
    }

    fn info(&self, t: &Record) -> TensorInfo<'_> {
        let data_start = self.data_start();
        TensorInfo {
            name: t.name(&self.text, &self.names),
            dtype: t.dtype,
            shape: t.shape(&self.dims),
            begin: t.begin,
            end: t.end,
            file_begin: data_start.saturating_add(t.begin),
            file_end: data_start.saturating_add(t.end),
            elements: t.elements(&self.dims),
            header_offset: t.offset(&self.names),
        }
    }

    /// The tensor with this name.
    pub fn tensor(&self, name: &str) -> Option<TensorInfo<'_>> {
        self.tensors().find(|t| t.name == name)
    }

    /// What `__metadata__` was: absent, null, or an object.
    pub fn metadata_form(&self) -> MetadataForm {
        self.metadata.form
    }

    /// The number of `__metadata__` entries.
    pub fn metadata_len(&self) -> u64 {
        self.metadata.len
    }

    /// The `__metadata__` entries, decoded, in header order. They are read again from the
    /// header text on each call, so a report of ten million entries costs no memory for them.
    pub fn metadata(&self) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> + '_ {
        header::metadata_entries(&self.text, self.metadata.open)
    }

    /// The kept warnings, in file order: at most [`Config::max_warnings_per_rule`] of each
    /// rule (see [`Report::warning_counts`] for all).
    pub fn warnings(&self) -> &[Warning] {
        self.warnings.as_slice()
    }

    /// Every rule that warned with its exact count (kept or not), in order of first
    /// appearance.
    pub fn warning_counts(&self) -> impl Iterator<Item = (Rule, u64)> + '_ {
        self.warnings.counts()
    }

    /// Warnings found but not kept (beyond the per-rule cap).
    pub fn omitted_warnings(&self) -> u64 {
        self.warnings.total() - self.warnings.as_slice().len() as u64
    }

    /// Total number of elements over all tensors (saturating).
    pub fn parameters(&self) -> u64 {
        self.tensors
            .iter()
            .fold(0u64, |acc, t| acc.saturating_add(t.elements(&self.dims)))
    }

    /// Totals per dtype, in the reference's dtype order, for the dtypes present.
    pub fn totals_by_dtype(&self) -> Vec<DtypeTotal> {
        let mut totals = DtypeTotals::new();
        for t in self.tensors() {
            totals.add(&t);
        }
        totals.finish()
    }

    /// A report that owns its header text.
    pub fn into_owned(self) -> Report<'static> {
        Report {
            text: Cow::Owned(self.text.into_owned()),
            tensors: self.tensors,
            dims: self.dims,
            names: self.names,
            metadata: self.metadata,
            warnings: self.warnings,
            data_len: self.data_len,
        }
    }
}

/// Accumulates [`DtypeTotal`]s over tensors, of one file or of a sharded set.
#[derive(Debug)]
pub(crate) struct DtypeTotals(Vec<DtypeTotal>);

impl DtypeTotals {
    pub(crate) fn new() -> Self {
        DtypeTotals(
            Dtype::ALL
                .iter()
                .map(|&dtype| DtypeTotal {
                    dtype,
                    tensors: 0,
                    parameters: 0,
                    bytes: 0,
                })
                .collect(),
        )
    }

    pub(crate) fn add(&mut self, t: &TensorInfo<'_>) {
        if let Some(slot) = self.0.get_mut(t.dtype as usize) {
            slot.tensors += 1;
            slot.parameters = slot.parameters.saturating_add(t.elements);
            slot.bytes = slot.bytes.saturating_add(t.byte_len());
        }
    }

    /// The totals of the dtypes present, in the reference's dtype order.
    pub(crate) fn finish(mut self) -> Vec<DtypeTotal> {
        self.0.retain(|t| t.tensors > 0);
        self.0
    }
}
