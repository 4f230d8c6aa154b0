//! Every call the writer suite makes into the stcheck library, in one place: the strict
//! check of a written file, dtype sizes, and the canonical writer. The rest of the suite sees
//! only the plain types below, so a change of the library's API is absorbed here.

use stcheck::{Config, Dtype, MetadataForm};

/// One tensor of a checked file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileTensor {
    /// The name, unescaped.
    pub name: String,
    /// The dtype's name.
    pub dtype: String,
    /// Dimensions.
    pub shape: Vec<u64>,
    /// `[begin, end)` of its bytes in the file.
    pub file_range: (u64, u64),
}

/// `__metadata__` as the file has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileMetadata {
    /// No `__metadata__` key.
    Absent,
    /// `"__metadata__": null`.
    Null,
    /// An object of strings, in header order.
    Map(Vec<(String, String)>),
}

/// A file that passed the strict check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// Its tensors, in offset order.
    pub tensors: Vec<FileTensor>,
    /// Its metadata.
    pub metadata: FileMetadata,
    /// The rule IDs of its warnings, in file order.
    pub warnings: Vec<String>,
}

/// Check a whole file under stcheck's strict profile (header checks, default limits). An
/// error is the finding's text: rule ID, message and offset.
pub fn check_strict(file: &[u8]) -> Result<Checked, String> {
    let report = stcheck::validate(file, &Config::default()).map_err(|e| e.to_string())?;
    let tensors = report
        .tensors()
        .map(|t| FileTensor {
            name: t.name.to_owned(),
            dtype: t.dtype.name().to_owned(),
            shape: t.shape.to_vec(),
            file_range: (t.file_begin, t.file_end),
        })
        .collect();
    let metadata = match report.metadata_form() {
        MetadataForm::Absent => FileMetadata::Absent,
        MetadataForm::Null => FileMetadata::Null,
        MetadataForm::Map => FileMetadata::Map(
            report
                .metadata()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        ),
    };
    let warnings = report
        .warnings()
        .iter()
        .map(|w| w.rule().id().to_owned())
        .collect();
    Ok(Checked {
        tensors,
        metadata,
        warnings,
    })
}

/// Whether `name` is one of the format's dtype names.
pub fn is_dtype(name: &str) -> bool {
    Dtype::from_name(name).is_some()
}

/// Every dtype name, in the reference's order.
pub fn dtype_names() -> Vec<&'static str> {
    Dtype::ALL.iter().map(|d| d.name()).collect()
}

/// The byte length of a tensor of this dtype and shape, or why it has none (an unknown dtype,
/// an overflow, a bit count that is not whole bytes).
pub fn byte_length(dtype: &str, shape: &[u64]) -> Result<u64, String> {
    let d = Dtype::from_name(dtype).ok_or_else(|| format!("unknown dtype {dtype:?}"))?;
    stcheck::internal::byte_length(d, shape).map_err(|(rule, msg)| format!("{rule}: {msg}"))
}

/// One tensor for [`write_canonical`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteTensor<'a> {
    /// The name.
    pub name: &'a str,
    /// The dtype's name.
    pub dtype: &'a str,
    /// Dimensions.
    pub shape: &'a [u64],
    /// Its bytes.
    pub data: &'a [u8],
}

/// Why [`write_canonical`] wrote nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteRefusal {
    /// The API cannot take this input at all (a dtype it has no value for).
    Unsupported(String),
    /// The writer refused it.
    Refused(String),
}

/// stcheck's canonical writer (`stcheck::write::serialize`).
pub fn write_canonical(
    tensors: &[WriteTensor<'_>],
    metadata: &[(&str, &str)],
) -> Result<Vec<u8>, WriteRefusal> {
    let specs = tensors
        .iter()
        .map(|t| {
            let dtype = Dtype::from_name(t.dtype).ok_or_else(|| {
                WriteRefusal::Unsupported(format!("stcheck has no dtype {:?}", t.dtype))
            })?;
            Ok(stcheck::write::TensorSpec::new(
                t.name, dtype, t.shape, t.data,
            ))
        })
        .collect::<Result<Vec<_>, WriteRefusal>>()?;
    stcheck::write::serialize(&specs, metadata).map_err(|e| WriteRefusal::Refused(e.to_string()))
}
