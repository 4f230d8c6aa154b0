//! The canonical writer: the reference's tensor order (dtype descending, then name), compact
//! JSON, `__metadata__` first with its keys sorted, and 0x20 padding to a multiple of 8.
//!
//! It refuses any input whose file would not validate without a warning, so everything it
//! writes is a strictly valid, warning-free file. Tests, the corpus generator and the fuzz
//! targets build files with it.

use std::fmt;
use std::io::{self, Write};

use crate::dtype::Dtype;
use crate::limits::DEFAULT_MAX_HEADER_SIZE;
use crate::names;
use crate::rules::Rule;
use crate::size;

/// One tensor to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TensorSpec<'a> {
    /// The name.
    pub name: &'a str,
    /// Element type.
    pub dtype: Dtype,
    /// Dimensions.
    pub shape: &'a [u64],
    /// The raw bytes, exactly as long as the shape and dtype say.
    pub data: &'a [u8],
}

impl<'a> TensorSpec<'a> {
    /// A tensor to write.
    pub fn new(name: &'a str, dtype: Dtype, shape: &'a [u64], data: &'a [u8]) -> Self {
        TensorSpec {
            name,
            dtype,
            shape,
            data,
        }
    }
}

/// Why the writer refused its input.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteError {
    /// The name would break or warn on a `NAME-*` rule, or is `__metadata__`.
    Name {
        /// The name.
        name: String,
        /// The rule.
        rule: Option<Rule>,
    },
    /// Two tensors share a name.
    DuplicateName(String),
    /// Two metadata entries share a key.
    DuplicateMetadataKey(String),
    /// The shape and dtype give no whole byte length (`SIZE-OVERFLOW`, `SIZE-BITS`).
    Size {
        /// The tensor.
        name: String,
        /// The rule.
        rule: Rule,
    },
    /// The data is not as long as the shape and dtype say.
    DataLength {
        /// The tensor.
        name: String,
        /// Bytes the shape needs.
        expected: u64,
        /// Bytes given.
        actual: u64,
    },
    /// A `total_parameters` metadata value that is not the element count.
    TotalParameters,
    /// The header would exceed the default limit.
    HeaderTooLarge(u64),
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Name { name, rule } => match rule {
                Some(r) => write!(f, "tensor name {name:?} breaks {r}"),
                None => write!(f, "tensor name {name:?} is reserved"),
            },
            WriteError::DuplicateName(n) => write!(f, "duplicate tensor name {n:?}"),
            WriteError::DuplicateMetadataKey(k) => write!(f, "duplicate metadata key {k:?}"),
            WriteError::Size { name, rule } => write!(f, "tensor {name:?} breaks {rule}"),
            WriteError::DataLength {
                name,
                expected,
                actual,
            } => write!(
                f,
                "tensor {name:?} needs {expected} bytes of data, {actual} given"
            ),
            WriteError::TotalParameters => {
                f.write_str("metadata total_parameters differs from the element count")
            }
            WriteError::HeaderTooLarge(n) => write!(f, "header of {n} bytes exceeds the limit"),
        }
    }
}

impl std::error::Error for WriteError {}

/// Serialize to a byte vector.
pub fn serialize(
    tensors: &[TensorSpec<'_>],
    metadata: &[(&str, &str)],
) -> Result<Vec<u8>, WriteError> {
    let (header, order) = header(tensors, metadata)?;
    let data_len: usize = order.iter().map(|&i| tensors[i].data.len()).sum();
    let mut out = Vec::with_capacity(8 + header.len() + data_len);
    out.extend_from_slice(&(header.len() as u64).to_le_bytes());
    out.extend_from_slice(&header);
    for i in order {
        out.extend_from_slice(tensors[i].data);
    }
    Ok(out)
}

/// Serialize to a writer.
pub fn serialize_to<W: Write>(
    mut w: W,
    tensors: &[TensorSpec<'_>],
    metadata: &[(&str, &str)],
) -> io::Result<()> {
    let (header, order) =
        header(tensors, metadata).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    w.write_all(&(header.len() as u64).to_le_bytes())?;
    w.write_all(&header)?;
    for i in order {
        w.write_all(tensors[i].data)?;
    }
    Ok(())
}

/// The padded header bytes and the order in which the tensors' data follow it.
pub fn header(
    tensors: &[TensorSpec<'_>],
    metadata: &[(&str, &str)],
) -> Result<(Vec<u8>, Vec<usize>), WriteError> {
    let mut params = 0u64;
    for t in tensors {
        if t.name == "__metadata__" {
            return Err(WriteError::Name {
                name: t.name.to_owned(),
                rule: None,
            });
        }
        let rule = names::check_error(t.name)
            .map(|(r, _)| r)
            .or_else(|| names::check_warnings(t.name).first().map(|(r, _)| *r));
        if let Some(rule) = rule {
            return Err(WriteError::Name {
                name: t.name.to_owned(),
                rule: Some(rule),
            });
        }
        let expected =
            size::byte_length(t.dtype, t.shape).map_err(|(rule, _)| WriteError::Size {
                name: t.name.to_owned(),
                rule,
            })?;
        if expected != t.data.len() as u64 {
            return Err(WriteError::DataLength {
                name: t.name.to_owned(),
                expected,
                actual: t.data.len() as u64,
            });
        }
        params = params.saturating_add(size::element_count(t.shape).unwrap_or(0));
    }

    let mut order: Vec<usize> = (0..tensors.len()).collect();
    order.sort_by(|&a, &b| {
        tensors[b]
            .dtype
            .cmp(&tensors[a].dtype)
            .then(tensors[a].name.cmp(tensors[b].name))
    });
    // By name alone: in the writing order, two tensors of one name and different dtypes are
    // not neighbours.
    let mut names: Vec<&str> = tensors.iter().map(|t| t.name).collect();
    names.sort_unstable();
    if let Some(pair) = names.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(WriteError::DuplicateName(pair[0].to_owned()));
    }
    let mut meta: Vec<(&str, &str)> = metadata.to_vec();
    meta.sort_unstable();
    for pair in meta.windows(2) {
        if pair[0].0 == pair[1].0 {
            return Err(WriteError::DuplicateMetadataKey(pair[0].0.to_owned()));
        }
    }
    if let Some((_, v)) = meta.iter().find(|(k, _)| *k == "total_parameters") {
        if *v != params.to_string() {
            return Err(WriteError::TotalParameters);
        }
    }

    let mut json = String::with_capacity(64 + tensors.len() * 96);
    json.push('{');
    let mut first = true;
    if !meta.is_empty() {
        json.push_str("\"__metadata__\":{");
        for (i, (k, v)) in meta.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            push_json_string(&mut json, k);
            json.push(':');
            push_json_string(&mut json, v);
        }
        json.push('}');
        first = false;
    }
    let mut offset = 0u64;
    for &i in &order {
        let t = &tensors[i];
        if !first {
            json.push(',');
        }
        first = false;
        push_json_string(&mut json, t.name);
        json.push_str(":{\"dtype\":\"");
        json.push_str(t.dtype.name());
        json.push_str("\",\"shape\":[");
        for (j, d) in t.shape.iter().enumerate() {
            if j > 0 {
                json.push(',');
            }
            json.push_str(&d.to_string());
        }
        let end = offset + t.data.len() as u64;
        json.push_str(&format!("],\"data_offsets\":[{offset},{end}]}}"));
        offset = end;
    }
    json.push('}');
    let mut bytes = json.into_bytes();
    let padded = bytes.len().next_multiple_of(8);
    bytes.resize(padded, b' ');
    if bytes.len() as u64 > DEFAULT_MAX_HEADER_SIZE {
        return Err(WriteError::HeaderTooLarge(bytes.len() as u64));
    }
    Ok((bytes, order))
}

/// Append `s` as a JSON string literal: `"` and `\` escaped, control characters as `\uXXXX`
/// (or the short escapes serde_json uses), everything else raw UTF-8.
fn push_json_string(out: &mut String, s: &str) {
    // serde_json's string serializer is the well-tested escaper; a &str always serializes.
    match serde_json::to_string(s) {
        Ok(quoted) => out.push_str(&quoted),
        Err(_) => out.push_str("\"\""),
    }
}
