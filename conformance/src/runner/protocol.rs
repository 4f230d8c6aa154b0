//! Decoding an adapter's answer (its standard output after exit 0). See `PROTOCOL.md`.
//!
//! ```json
//! {"tensors": [{"name": "w", "dtype": "F32", "shape": ["2", "3"],
//!               "data_offsets": ["0", "24"], "sha256": "..."}],
//!  "metadata": {"format": "pt"}}
//! ```
//!
//! `data_offsets`, `sha256`, `metadata` and `warnings` are optional: the runner compares only
//! what an adapter reports. Integers should be decimal strings; JSON integers are accepted
//! too and compared by their decimal spelling (a float such as `1e21` will not match).

use std::collections::BTreeMap;

use serde_json::Value;

/// One tensor as an implementation read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportedTensor {
    /// Name.
    pub name: String,
    /// Dtype name (the header's spelling, e.g. `"BF16"`).
    pub dtype: String,
    /// Dimensions, as decimal strings.
    pub shape: Vec<String>,
    /// `[begin, end]`, if reported.
    pub data_offsets: Option<Vec<String>>,
    /// SHA-256 of the bytes it read, lower-case hex, if reported.
    pub sha256: Option<String>,
}

/// The whole answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reported {
    /// The tensors, in the adapter's order.
    pub tensors: Vec<ReportedTensor>,
    /// `Some` when the adapter reported `metadata` (`null` is reported as an empty map).
    pub metadata: Option<BTreeMap<String, String>>,
    /// `Some` when the adapter reported `warnings` (rule IDs).
    pub warnings: Option<Vec<String>>,
}

/// The decimal spelling of an integer written as a string or a JSON number.
fn integer(v: &Value, what: &str) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(format!("{what}: expected a decimal string, found {other}")),
    }
}

fn integers(v: &Value, what: &str) -> Result<Vec<String>, String> {
    v.as_array()
        .ok_or_else(|| format!("{what}: expected an array"))?
        .iter()
        .map(|x| integer(x, what))
        .collect()
}

fn string(obj: &serde_json::Map<String, Value>, key: &str, what: &str) -> Result<String, String> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!("{what}: \"{key}\" is not a string: {other}")),
        None => Err(format!("{what}: missing \"{key}\"")),
    }
}

/// Parse an adapter's standard output.
pub fn parse(stdout: &[u8]) -> Result<Reported, String> {
    let text = std::str::from_utf8(stdout).map_err(|e| format!("output is not UTF-8: {e}"))?;
    let root: Value = serde_json::from_str(text).map_err(|e| format!("output is not JSON: {e}"))?;
    let root = root.as_object().ok_or("output is not a JSON object")?;
    let list = root
        .get("tensors")
        .ok_or("output has no \"tensors\"")?
        .as_array()
        .ok_or("\"tensors\" is not an array")?;
    let mut tensors = Vec::with_capacity(list.len());
    for (i, t) in list.iter().enumerate() {
        let what = format!("tensors[{i}]");
        let obj = t
            .as_object()
            .ok_or_else(|| format!("{what} is not an object"))?;
        let name = string(obj, "name", &what)?;
        let dtype = string(obj, "dtype", &what)?;
        let shape = integers(
            obj.get("shape")
                .ok_or_else(|| format!("{what}: missing \"shape\""))?,
            &format!("{what}.shape"),
        )?;
        let data_offsets = match obj.get("data_offsets") {
            None | Some(Value::Null) => None,
            Some(v) => Some(integers(v, &format!("{what}.data_offsets"))?),
        };
        let sha256 = match obj.get("sha256") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.to_ascii_lowercase()),
            Some(other) => return Err(format!("{what}.sha256 is not a string: {other}")),
        };
        tensors.push(ReportedTensor {
            name,
            dtype,
            shape,
            data_offsets,
            sha256,
        });
    }
    let metadata = match root.get("metadata") {
        None => None,
        Some(Value::Null) => Some(BTreeMap::new()),
        Some(Value::Object(m)) => {
            let mut out = BTreeMap::new();
            for (k, v) in m {
                let v = v
                    .as_str()
                    .ok_or_else(|| format!("metadata value of {k:?} is not a string"))?;
                out.insert(k.clone(), v.to_owned());
            }
            Some(out)
        }
        Some(other) => return Err(format!("\"metadata\" is not an object or null: {other}")),
    };
    let warnings = match root.get("warnings") {
        None => None,
        Some(Value::Array(a)) => Some(
            a.iter()
                .map(|w| {
                    w.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("warning {w} is not a string"))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(other) => return Err(format!("\"warnings\" is not an array: {other}")),
    };
    Ok(Reported {
        tensors,
        metadata,
        warnings,
    })
}
