//! The expected content of an accepted file, read from the recipe's own bytes with a plain
//! JSON parse (not with stcheck, whose answer the corpus exists to check).

use std::fmt;

use serde::de::{self, Deserializer as _, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use sha2::{Digest, Sha256};

/// One expected tensor; every integer a decimal string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExpectedTensor {
    /// Name, unescaped.
    pub name: String,
    /// Dtype name.
    pub dtype: String,
    /// Dimensions.
    pub shape: Vec<String>,
    /// `[begin, end]`, relative to the data region.
    pub data_offsets: [String; 2],
    /// SHA-256 of the tensor's bytes, lowercase hex.
    pub sha256: String,
    /// Decoded values, for the decoded-value cases (from the recipe).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<String>>,
    /// Index cases: the shard file it is in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
}

/// Metadata entries in header order, serialized as a JSON object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataMap(pub Vec<(String, String)>);

impl Serialize for MetadataMap {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// Files with more tensors than this list none in the manifest, only their count.
pub const MAX_LISTED: usize = 1000;

/// The expected content of an accepted file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Expected {
    /// Tensors in offset order (ties, i.e. zero-size tensors at one offset, in header order);
    /// empty when there are more than [`MAX_LISTED`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tensors: Vec<ExpectedTensor>,
    /// How many tensors, a decimal string.
    pub tensor_count: String,
    /// `null` when `__metadata__` is absent or null.
    pub metadata: Option<MetadataMap>,
}

/// The root object's entries in header order.
struct Entries(Vec<(String, serde_json::Value)>);

struct EntriesVisitor;

impl<'de> Visitor<'de> for EntriesVisitor {
    type Value = Entries;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
        let mut out = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, serde_json::Value>()? {
            out.push((k, v));
        }
        Ok(Entries(out))
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The expected content of a file a strict reader accepts. Errors if the bytes are not such a
/// file in the simple sense this parse checks (a recipe bug).
pub fn expected(file: &[u8]) -> Result<Expected, String> {
    let field: [u8; 8] = file
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or("shorter than 8 bytes")?;
    let n = usize::try_from(u64::from_le_bytes(field)).map_err(|_| "length field too large")?;
    let end = n.checked_add(8).ok_or("length field too large")?;
    let header = file.get(8..end).ok_or("header past the end")?;
    let text = std::str::from_utf8(header).map_err(|e| format!("header not UTF-8: {e}"))?;
    let mut de = serde_json::Deserializer::from_str(text);
    let Entries(entries) = (&mut de)
        .deserialize_map(EntriesVisitor)
        .map_err(|e| format!("header JSON: {e}"))?;
    de.end().map_err(|e| format!("header JSON: {e}"))?;
    let data = &file[end..];

    let mut metadata = None;
    let mut tensors: Vec<(u64, u64, usize, ExpectedTensor)> = Vec::new();
    for (i, (name, value)) in entries.into_iter().enumerate() {
        if name == "__metadata__" {
            metadata = match value {
                serde_json::Value::Null => None,
                serde_json::Value::Object(_) => {
                    // Re-read in header order (serde_json's Map sorts its keys).
                    Some(metadata_in_order(text)?)
                }
                other => return Err(format!("__metadata__ is {other}")),
            };
            continue;
        }
        let obj = value
            .as_object()
            .ok_or_else(|| format!("entry {name:?} not an object"))?;
        let dtype = obj
            .get("dtype")
            .and_then(|v| v.as_str())
            .ok_or_else(|| format!("entry {name:?}: no dtype"))?
            .to_owned();
        let shape: Vec<String> = obj
            .get("shape")
            .and_then(|v| v.as_array())
            .ok_or_else(|| format!("entry {name:?}: no shape"))?
            .iter()
            .map(|d| d.as_u64().map(|d| d.to_string()))
            .collect::<Option<_>>()
            .ok_or_else(|| format!("entry {name:?}: bad shape"))?;
        let offsets: Vec<u64> = obj
            .get("data_offsets")
            .and_then(|v| v.as_array())
            .ok_or_else(|| format!("entry {name:?}: no data_offsets"))?
            .iter()
            .map(serde_json::Value::as_u64)
            .collect::<Option<_>>()
            .ok_or_else(|| format!("entry {name:?}: bad data_offsets"))?;
        let [begin, end] = offsets[..] else {
            return Err(format!("entry {name:?}: data_offsets not two numbers"));
        };
        let bytes = usize::try_from(begin)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(b, e)| data.get(b..e))
            .ok_or_else(|| format!("entry {name:?}: offsets outside the data"))?;
        tensors.push((
            begin,
            end,
            i,
            ExpectedTensor {
                name,
                dtype,
                shape,
                data_offsets: [begin.to_string(), end.to_string()],
                sha256: sha256_hex(bytes),
                values: None,
                shard: None,
            },
        ));
    }
    tensors.sort_by_key(|(b, e, i, _)| (*b, *e, *i));
    let count = tensors.len();
    Ok(Expected {
        tensors: if count > MAX_LISTED {
            Vec::new()
        } else {
            tensors.into_iter().map(|(_, _, _, t)| t).collect()
        },
        tensor_count: count.to_string(),
        metadata,
    })
}

/// The `__metadata__` object's entries in header order.
fn metadata_in_order(text: &str) -> Result<MetadataMap, String> {
    struct Root;
    impl<'de> Visitor<'de> for Root {
        type Value = Option<Vec<(String, String)>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = None;
            while let Some(k) = map.next_key::<String>()? {
                if k == "__metadata__" {
                    found = Some(map.next_value_seed(MetaSeed)?);
                } else {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
            Ok(found)
        }
    }
    struct MetaSeed;
    impl<'de> de::DeserializeSeed<'de> for MetaSeed {
        type Value = Vec<(String, String)>;
        fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(MetaSeed)
        }
    }
    impl<'de> Visitor<'de> for MetaSeed {
        type Value = Vec<(String, String)>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object of strings")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(kv) = map.next_entry::<String, String>()? {
                out.push(kv);
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let found = (&mut de)
        .deserialize_map(Root)
        .map_err(|e| format!("metadata: {e}"))?;
    found
        .map(MetadataMap)
        .ok_or_else(|| "metadata vanished".to_owned())
}
