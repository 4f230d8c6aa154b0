//! Decoding an adapter's answers. See `PROTOCOL.md`.
//!
//! An accepting answer (standard output after exit 0, or a persistent-mode reply with
//! `"status": "accept"`):
//!
//! ```json
//! {"tensors": [{"name": "w", "dtype": "F32", "shape": ["2", "3"],
//!               "data_offsets": ["0", "24"], "sha256": "..."}],
//!  "metadata": {"format": "pt"}}
//! ```
//!
//! `data_offsets`, `sha256`, `values`, `shard`, `metadata` and `warnings` are optional: the
//! runner compares only what an adapter reports. Integers should be decimal strings; JSON
//! integers are accepted too and compared by their decimal spelling (a float such as `1e21`
//! will not match).
//!
//! Protocol v2 adds a reason to a rejection (`{"rule": "LAYOUT-GAP", "message": "..."}`, both
//! optional, on standard output after exit 1 or in the reply), an "unsupported" answer (exit 4),
//! and the persistent mode's one-line replies ([`parse_reply`]).

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
    /// Decoded values (row-major), if reported.
    pub values: Option<Vec<String>>,
    /// The shard file it came from (index mode), if reported.
    pub shard: Option<String>,
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
    /// It reported the verdict only (`"tensors": null`): judged on the verdict alone.
    pub verdict_only: bool,
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

/// A value: a decimal string, `nan`, `inf`, `-inf`, or a JSON number.
fn value(v: &Value, what: &str) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(format!(
            "{what}: expected a number or a string, found {other}"
        )),
    }
}

/// Parse an adapter's standard output.
pub fn parse(stdout: &[u8]) -> Result<Reported, String> {
    parse_value(&json(stdout).map_err(|e| format!("output is not JSON: {e}"))?)
}

/// Decode JSON text an adapter wrote. An escaped lone surrogate (`\ud800`, which
/// JavaScript's `JSON.stringify` writes for a string holding one) becomes U+FFFD: serde_json
/// has no string type for it, and no expected name or value holds one.
pub fn json(bytes: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        format!(
            "not UTF-8 at byte {at}, after {}",
            excerpt(&String::from_utf8_lossy(&bytes[..at]), 60, true)
        )
    })?;
    let text = replace_lone_surrogates(text);
    serde_json::from_str(&text).map_err(|e| {
        let line = text.lines().nth(e.line().saturating_sub(1)).unwrap_or("");
        let lines = text.lines().count();
        let of = if lines > 1 {
            format!(" (of {lines} lines)")
        } else {
            String::new()
        };
        format!("{e}{of}; that line starts {}", excerpt(line, 80, false))
    })
}

/// Text for a message: its first (or, with `tail`, last) `max` characters, escaped and
/// quoted, so that what an adapter printed cannot forge the report.
pub fn excerpt(text: &str, max: usize, tail: bool) -> String {
    let chars: Vec<char> = text.chars().collect();
    let (shown, cut) = if chars.len() <= max {
        (chars.as_slice(), false)
    } else if tail {
        (&chars[chars.len() - max..], true)
    } else {
        (&chars[..max], true)
    };
    let s: String = shown.iter().collect::<String>().escape_debug().collect();
    match (cut, tail) {
        (false, _) => format!("\"{s}\""),
        (true, false) => format!("\"{s}...\""),
        (true, true) => format!("\"...{s}\""),
    }
}

fn surrogate_at(b: &[u8], i: usize) -> Option<u16> {
    let digits = b.get(i + 2..i + 6)?;
    if b.get(i) != Some(&b'\\') || b.get(i + 1) != Some(&b'u') {
        return None;
    }
    let v = u16::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()?;
    (0xD800..=0xDFFF).contains(&v).then_some(v)
}

fn replace_lone_surrogates(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("\\u") {
        return std::borrow::Cow::Borrowed(text);
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut last = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            // An escape: copy it whole unless it is a lone surrogate.
            match surrogate_at(b, i) {
                Some(hi) if (0xD800..0xDC00).contains(&hi) => {
                    if surrogate_at(b, i + 6).is_some_and(|lo| lo >= 0xDC00) {
                        i += 12;
                        continue;
                    }
                }
                Some(_) => {}
                None => {
                    i += 2;
                    continue;
                }
            }
            out.push_str(&text[last..i]);
            out.push_str("\\ufffd");
            i += 6;
            last = i;
            continue;
        }
        i += 1;
    }
    out.push_str(&text[last..]);
    std::borrow::Cow::Owned(out)
}

/// Parse an accepting answer already decoded as JSON.
pub fn parse_value(root: &Value) -> Result<Reported, String> {
    let root = root.as_object().ok_or("output is not a JSON object")?;
    let list = match root.get("tensors") {
        None => return Err("output has no \"tensors\" (null: a verdict-only answer)".into()),
        Some(Value::Null) => {
            return Ok(Reported {
                verdict_only: true,
                ..Reported::default()
            })
        }
        Some(Value::Array(list)) => list,
        Some(_) => return Err("\"tensors\" is not an array (or null)".into()),
    };
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
        let values = match obj.get("values") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) => Some(
                a.iter()
                    .map(|x| value(x, &format!("{what}.values")))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            Some(other) => return Err(format!("{what}.values is not an array: {other}")),
        };
        let shard = match obj.get("shard") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => return Err(format!("{what}.shard is not a string: {other}")),
        };
        tensors.push(ReportedTensor {
            name,
            dtype,
            shape,
            data_offsets,
            sha256,
            values,
            shard,
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
        verdict_only: false,
    })
}

/// Why an adapter refused a file, or what it does not support (protocol v2; both optional).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reason {
    /// A rule ID of `SPEC.md`, when the implementation knows which rule the file breaks.
    pub rule: Option<String>,
    /// Free text.
    pub message: Option<String>,
}

impl Reason {
    /// The reason of a one-shot rejection or "unsupported" answer: a JSON object on standard
    /// output if there is one, else none (v1 adapters print nothing there).
    pub fn from_stdout(stdout: &[u8]) -> Reason {
        std::str::from_utf8(stdout)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(t.trim()).ok())
            .map(|v| Reason::from_value(&v))
            .unwrap_or_default()
    }

    /// The `rule` and `message` members of an object (other members are ignored).
    pub fn from_value(v: &Value) -> Reason {
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(clip);
        Reason {
            rule: text("rule").filter(|r| !r.is_empty()),
            message: text("message").filter(|m| !m.is_empty()),
        }
    }
}

/// Clip a reported text to 300 characters, control characters replaced, so that a hostile
/// message cannot flood or forge the report.
pub fn clip(s: &str) -> String {
    s.chars()
        .take(300)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// A persistent-mode reply, decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `"status": "accept"`: the whole reply object (the accepting answer's members).
    Accept(Value),
    /// `"status": "reject"`.
    Reject(Reason),
    /// `"status": "unsupported"`.
    Unsupported(Reason),
    /// `"status": "crash"`: the adapter caught something that is not a verdict.
    Crash(Reason),
}

/// Decode one reply line of the persistent mode for the request `id`.
pub fn parse_reply(line: &[u8], id: &str) -> Result<Reply, String> {
    let v = json(line).map_err(|e| format!("reply is not one line of JSON: {e}"))?;
    let obj = v.as_object().ok_or("reply is not a JSON object")?;
    match obj.get("id") {
        Some(Value::String(got)) if got == id => {}
        Some(other) => return Err(format!("reply is for id {other}, not {id:?}")),
        None => return Err("reply has no \"id\"".to_owned()),
    }
    match obj.get("status").and_then(Value::as_str) {
        Some("accept") => Ok(Reply::Accept(v)),
        Some("reject") => Ok(Reply::Reject(Reason::from_value(&v))),
        Some("unsupported") => Ok(Reply::Unsupported(Reason::from_value(&v))),
        Some("crash") => Ok(Reply::Crash(Reason::from_value(&v))),
        Some(other) => Err(format!(
            "unknown status {other:?} (accept, reject, unsupported or crash)"
        )),
        None => Err("reply has no \"status\" string".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogate_escapes_become_replacement_characters() {
        let v = json(br#"{"a":"x\ud800y","b":"\ud83d\ude00","c":"\\ud800","d":"\udc00"}"#)
            .expect("parses");
        assert_eq!(v["a"], "x\u{FFFD}y");
        assert_eq!(v["b"], "\u{1F600}");
        assert_eq!(v["c"], "\\ud800");
        assert_eq!(v["d"], "\u{FFFD}");
    }
}
