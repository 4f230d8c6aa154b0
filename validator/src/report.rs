//! Stage 2 after parsing (layout, data length, warnings) and the report of a valid file.

use std::borrow::Cow;

use crate::dtype::Dtype;
use crate::error::{Error, Finding, Warning};
use crate::header::{MetadataForm, Parsed, Record, HEADER_START};
use crate::limits::Config;
use crate::rules::Rule;

/// The report of a valid file: its tensors in offset order, metadata, warnings and totals.
///
/// Names and metadata borrow from the header bytes where they had no JSON escapes; use
/// [`Report::into_owned`] to keep a report beyond the buffer.
#[derive(Debug, Clone)]
pub struct Report<'a> {
    header_len: u64,
    tensors: Vec<Record<'a>>,
    dims: Vec<u64>,
    metadata_form: MetadataForm,
    metadata: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    warnings: Vec<Warning>,
    data_len: u64,
}

/// One tensor of a [`Report`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    pub(crate) fn from_parsed(
        header_len: u64,
        parsed: Parsed<'a>,
        mut warnings: Vec<Warning>,
    ) -> Result<Self, Error> {
        let Parsed {
            mut tensors,
            dims,
            metadata_form,
            metadata,
            metadata_offsets,
            warnings: parse_warnings,
        } = parsed;
        warnings.extend(parse_warnings);

        // Offset order; ties (zero-size tensors) by end, then by header position, so the order
        // is total and independent of the sort's stability.
        tensors.sort_unstable_by_key(|t| (t.begin, t.end, t.offset));
        let mut expected = 0u64;
        for t in &tensors {
            if t.begin > expected {
                return Err(Finding::new(
                    Rule::LayoutGap,
                    t.offset,
                    format!(
                        "gap: data bytes [{expected}, {}) belong to no tensor (this tensor begins at {})",
                        t.begin, t.begin
                    ),
                )
                .with_tensor(&t.name)
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
                    t.offset,
                    format!(
                        "{what}: data_offsets [{}, {}] begin before {expected}, the end of the bytes already taken",
                        t.begin, t.end
                    ),
                )
                .with_tensor(&t.name)
                .into());
            }
            expected = t.end;
            // A zero-size tensor has no bytes to reinterpret, so its alignment does not matter
            // (MLX writes such tensors at odd offsets).
            if t.begin != t.end && t.begin % t.dtype.alignment() != 0 {
                warnings.push(
                    Finding::new(
                        Rule::LayoutAlign,
                        t.offset,
                        format!(
                            "begin offset {} is not a multiple of the {}-byte element size of {}",
                            t.begin,
                            t.dtype.alignment(),
                            t.dtype
                        ),
                    )
                    .with_tensor(&t.name),
                );
            }
        }

        let mut report = Report {
            header_len,
            tensors,
            dims,
            metadata_form,
            metadata,
            warnings,
            data_len: expected,
        };
        if let Some(w) = report.total_parameters_warning(&metadata_offsets) {
            report.warnings.push(w);
        }
        if metadata_form == MetadataForm::Null {
            report.warnings.push(Finding::new(
                Rule::SchemaMetadataNull,
                HEADER_START,
                "\"__metadata__\" is null (MLX writes this); readers treat it as absent",
            ));
        }
        report.warnings.sort_by_key(Finding::offset);
        Ok(report)
    }

    fn total_parameters_warning(&self, offsets: &[u64]) -> Option<Warning> {
        let i = self
            .metadata
            .iter()
            .position(|(k, _)| k == "total_parameters")?;
        let (_, value) = &self.metadata[i];
        let at = offsets.get(i).copied().unwrap_or(HEADER_START);
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
                    crate::report::clip(value)
                ),
            )),
        }
    }

    /// `DATA-TRAILING` / `DATA-TRUNCATED`: the data region must be exactly as long as the last
    /// tensor's end. `actual` is the number of bytes after the header.
    pub fn check_data_len(&self, actual: u64) -> Result<(), Error> {
        let data_start = self.data_start();
        if actual > self.data_len {
            return Err(Finding::new(
                Rule::DataTrailing,
                data_start.saturating_add(self.data_len),
                format!(
                    "{} bytes after the last tensor's end ({}): the data region must end there",
                    actual - self.data_len,
                    self.data_len
                ),
            )
            .into());
        }
        if actual < self.data_len {
            let cut = self.tensors.iter().find(|t| t.end > actual);
            let f = Finding::new(
                Rule::DataTruncated,
                data_start.saturating_add(actual),
                format!(
                    "data region is {actual} bytes, but the tensors need {}",
                    self.data_len
                ),
            );
            return Err(match cut {
                Some(t) => f.with_tensor(&t.name),
                None => f,
            }
            .into());
        }
        Ok(())
    }

    /// Apply `deny_warnings`: the first warning in file order becomes the error.
    pub fn finish(self, config: &Config) -> Result<Self, Error> {
        if config.deny_warnings {
            if let Some(w) = self.warnings.first() {
                return Err(w.clone().into());
            }
        }
        Ok(self)
    }

    /// Add a warning found after stage 2 (the deep scan), keeping file order.
    pub fn push_warning(&mut self, w: Warning) {
        let at = self.warnings.partition_point(|x| x.offset() <= w.offset());
        self.warnings.insert(at, w);
    }

    /// The header length N.
    pub fn header_len(&self) -> u64 {
        self.header_len
    }

    /// File offset of the data region, 8 + N.
    pub fn data_start(&self) -> u64 {
        HEADER_START + self.header_len
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
        let data_start = self.data_start();
        self.tensors.iter().map(move |t| {
            let s = t.dims_start as usize;
            TensorInfo {
                name: &t.name,
                dtype: t.dtype,
                shape: self.dims.get(s..s + t.dims_len as usize).unwrap_or(&[]),
                begin: t.begin,
                end: t.end,
                file_begin: data_start.saturating_add(t.begin),
                file_end: data_start.saturating_add(t.end),
                elements: t.elements,
                header_offset: t.offset,
            }
        })
    }

    /// The tensor with this name.
    pub fn tensor(&self, name: &str) -> Option<TensorInfo<'_>> {
        self.tensors().find(|t| t.name == name)
    }

    /// What `__metadata__` was: absent, null, or an object.
    pub fn metadata_form(&self) -> MetadataForm {
        self.metadata_form
    }

    /// The `__metadata__` entries, in header order.
    pub fn metadata(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.metadata.iter().map(|(k, v)| (&**k, &**v))
    }

    /// The warnings, in file order.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// Total number of elements over all tensors (saturating).
    pub fn parameters(&self) -> u64 {
        self.tensors
            .iter()
            .fold(0u64, |acc, t| acc.saturating_add(t.elements))
    }

    /// Totals per dtype, in the reference's dtype order, for the dtypes present.
    pub fn totals_by_dtype(&self) -> Vec<DtypeTotal> {
        let mut totals = DtypeTotals::new();
        for t in self.tensors() {
            totals.add(&t);
        }
        totals.finish()
    }

    /// A report that owns its strings.
    pub fn into_owned(self) -> Report<'static> {
        Report {
            header_len: self.header_len,
            tensors: self
                .tensors
                .into_iter()
                .map(|t| Record {
                    name: Cow::Owned(t.name.into_owned()),
                    offset: t.offset,
                    dtype: t.dtype,
                    dims_start: t.dims_start,
                    dims_len: t.dims_len,
                    begin: t.begin,
                    end: t.end,
                    elements: t.elements,
                })
                .collect(),
            dims: self.dims,
            metadata_form: self.metadata_form,
            metadata: self
                .metadata
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k.into_owned()), Cow::Owned(v.into_owned())))
                .collect(),
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

/// A string for messages, cut after 200 characters so a hostile value cannot flood a report.
pub(crate) fn clip(s: &str) -> Cow<'_, str> {
    match s.char_indices().nth(200) {
        Some((i, _)) => Cow::Owned(format!("{}...", &s[..i])),
        None => Cow::Borrowed(s),
    }
}
