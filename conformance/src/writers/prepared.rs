//! The prepared task: what a writer adapter is given (`WRITER-PROTOCOL.md`).
//!
//! The runner turns a task of `corpus/writers/` into a flat list of tensors whose bytes lie in
//! one data file, so an adapter needs no generator:
//!
//! ```json
//! {"id": "dtype/f32",
//!  "data_file": "/abs/path/data.bin",
//!  "tensors": [{"name": "w", "dtype": "F32", "shape": ["2", "3"],
//!               "offset": "0", "length": "24"}],
//!  "metadata": {"format": "pt"}}
//! ```
//!
//! `metadata` is left out when the task has none; its values are passed on as the task gives
//! them (a task a writer must refuse may have a number there). Every integer is a decimal
//! string. The Rust adapters read it with [`PreparedTask::load`].

use std::fmt;
use std::path::Path;

use serde::de::{Error as _, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A metadata object in the order it was written, duplicate keys refused.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Metadata(pub Vec<(String, Value)>);

impl Metadata {
    /// The entries as strings, or the first key whose value is not a string.
    pub fn strings(&self) -> Result<Vec<(&str, &str)>, &str> {
        self.0
            .iter()
            .map(|(k, v)| v.as_str().map(|s| (k.as_str(), s)).ok_or(k.as_str()))
            .collect()
    }
}

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Metadata, D::Error> {
        struct Ordered;
        impl<'de> Visitor<'de> for Ordered {
            type Value = Metadata;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a metadata object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Metadata, A::Error> {
                let mut entries: Vec<(String, Value)> = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Value>()? {
                    if entries.iter().any(|(x, _)| *x == k) {
                        return Err(A::Error::custom(format!("duplicate metadata key {k:?}")));
                    }
                    entries.push((k, v));
                }
                Ok(Metadata(entries))
            }
        }
        d.deserialize_map(Ordered)
    }
}

impl Serialize for Metadata {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// One tensor of a prepared task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreparedTensor {
    /// The name.
    pub name: String,
    /// The dtype's name as in a header (`"F32"`).
    pub dtype: String,
    /// Dimensions, decimal strings.
    pub shape: Vec<String>,
    /// Where its bytes begin in the data file, a decimal string.
    pub offset: String,
    /// How many bytes it has there, a decimal string.
    pub length: String,
}

/// A prepared task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreparedTask {
    /// The task's ID (for messages).
    pub id: String,
    /// The file that holds every tensor's bytes.
    pub data_file: String,
    /// The tensors, in the task's order.
    pub tensors: Vec<PreparedTensor>,
    /// The metadata, if the task has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// One tensor with its numbers parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor<'a> {
    /// The name.
    pub name: &'a str,
    /// The dtype's name.
    pub dtype: &'a str,
    /// Dimensions.
    pub shape: Vec<u64>,
    /// Its bytes.
    pub data: &'a [u8],
}

impl Tensor<'_> {
    /// The shape as `usize` dimensions (what Rust writers take), or `None` when a dimension
    /// does not fit (on a 32-bit target).
    pub fn shape_usize(&self) -> Option<Vec<usize>> {
        self.shape
            .iter()
            .map(|&d| usize::try_from(d).ok())
            .collect()
    }
}

fn number(s: &str, what: &str) -> Result<u64, String> {
    s.parse::<u64>()
        .map_err(|_| format!("{what} {s:?} is not a decimal integer"))
}

impl PreparedTask {
    /// Read a prepared task file.
    pub fn load(path: &Path) -> Result<PreparedTask, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Read the data file.
    pub fn read_data(&self) -> Result<Vec<u8>, String> {
        std::fs::read(&self.data_file).map_err(|e| format!("{}: {e}", self.data_file))
    }

    /// The tensors with their numbers parsed and their bytes sliced from `data` (the data
    /// file's content).
    pub fn tensors<'a>(&'a self, data: &'a [u8]) -> Result<Vec<Tensor<'a>>, String> {
        self.tensors
            .iter()
            .map(|t| {
                let shape = t
                    .shape
                    .iter()
                    .map(|d| number(d, "dimension"))
                    .collect::<Result<Vec<u64>, String>>()?;
                let begin = number(&t.offset, "offset")?;
                let len = number(&t.length, "length")?;
                let bytes = usize::try_from(begin)
                    .ok()
                    .zip(begin.checked_add(len).and_then(|e| usize::try_from(e).ok()))
                    .and_then(|(b, e)| data.get(b..e))
                    .ok_or_else(|| format!("tensor {:?}: bytes past the data file", t.name))?;
                Ok(Tensor {
                    name: &t.name,
                    dtype: &t.dtype,
                    shape,
                    data: bytes,
                })
            })
            .collect()
    }
}
