//! Judging a written file: it must pass stcheck's strict profile, hold exactly the task's
//! tensors (name, dtype, shape, bytes) and metadata; its warnings beyond those the task's
//! content causes mark it as not canonical.

use std::collections::BTreeMap;

use super::prepared::{PreparedTask, Tensor};
use super::stcheck_api::{self, FileMetadata};

/// The verdict on one written file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileVerdict {
    /// stcheck's strict profile rejects it: the finding.
    Invalid(String),
    /// Valid, but not what the task asked for: what differs.
    WrongContent(String),
    /// Valid, the task's tensors and metadata exactly, and these metadata keys besides.
    AddedMetadata {
        /// The keys the writer added, sorted.
        keys: Vec<String>,
        /// As in `Ok`.
        form: Vec<String>,
    },
    /// Valid with exactly the task's content. `form` lists the rule IDs of the warnings the
    /// task's content does not explain (empty: canonical).
    Ok {
        /// Writer-made warnings (rule IDs, each once, in file order).
        form: Vec<String>,
    },
}

/// At most this many differences are spelled out; the rest are counted.
const SHOWN: usize = 3;

fn shape_text(shape: &[u64]) -> String {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!("[{}]", dims.join(", "))
}

/// Judge `file` against the prepared task (its tensors sliced from `data`) and the warnings
/// the task's content explains.
pub fn judge_file(
    file: &[u8],
    task: &PreparedTask,
    data: &[u8],
    task_warnings: &[String],
) -> FileVerdict {
    let checked = match stcheck_api::check_strict(file) {
        Ok(c) => c,
        Err(e) => return FileVerdict::Invalid(e),
    };
    let want = match task.tensors(data) {
        Ok(t) => t,
        Err(e) => return FileVerdict::WrongContent(format!("task: {e}")),
    };
    let mut diffs: Vec<String> = Vec::new();
    let got: BTreeMap<&str, &stcheck_api::FileTensor> = checked
        .tensors
        .iter()
        .map(|t| (t.name.as_str(), t))
        .collect();
    let wanted: BTreeMap<&str, &Tensor<'_>> = want.iter().map(|t| (t.name, t)).collect();
    for w in &want {
        let Some(g) = got.get(w.name) else {
            diffs.push(format!("tensor {:?} is missing", w.name));
            continue;
        };
        if g.dtype != w.dtype {
            diffs.push(format!(
                "tensor {:?} has dtype {}, not {}",
                w.name, g.dtype, w.dtype
            ));
        }
        if g.shape != w.shape {
            diffs.push(format!(
                "tensor {:?} has shape {}, not {}",
                w.name,
                shape_text(&g.shape),
                shape_text(&w.shape)
            ));
        }
        let bytes = usize::try_from(g.file_range.0)
            .ok()
            .zip(usize::try_from(g.file_range.1).ok())
            .and_then(|(b, e)| file.get(b..e))
            .unwrap_or(&[]);
        if bytes != w.data {
            let at = bytes
                .iter()
                .zip(w.data)
                .position(|(a, b)| a != b)
                .unwrap_or(bytes.len().min(w.data.len()));
            diffs.push(format!(
                "tensor {:?}: {} bytes, {} expected, first difference at byte {at}",
                w.name,
                bytes.len(),
                w.data.len()
            ));
        }
    }
    for g in &checked.tensors {
        if !wanted.contains_key(g.name.as_str()) {
            diffs.push(format!("unexpected tensor {:?}", g.name));
        }
    }
    let mut added = Vec::new();
    match metadata_difference(task, &checked.metadata) {
        None => {}
        Some(MetadataDifference::Added(keys)) => added = keys,
        Some(MetadataDifference::Other(d)) => diffs.push(d),
    }
    if !diffs.is_empty() {
        let n = diffs.len();
        let mut text = diffs.into_iter().take(SHOWN).collect::<Vec<_>>().join("; ");
        if n > SHOWN {
            text.push_str(&format!(" (and {} more differences)", n - SHOWN));
        }
        return FileVerdict::WrongContent(text);
    }
    let mut form: Vec<String> = Vec::new();
    for w in checked.warnings {
        if !task_warnings.contains(&w) && !form.contains(&w) {
            form.push(w);
        }
    }
    if added.is_empty() {
        FileVerdict::Ok { form }
    } else {
        FileVerdict::AddedMetadata { keys: added, form }
    }
}

/// How a file's metadata differs from the task's.
enum MetadataDifference {
    /// Every key of the task with its value, and these keys besides.
    Added(Vec<String>),
    /// A key missing or changed (or the task's metadata is not strings).
    Other(String),
}

/// `None` when the file's metadata is the task's: no metadata or an empty map in the task
/// matches an absent, null or empty `__metadata__`; otherwise the same key-value pairs, in
/// any order.
fn metadata_difference(task: &PreparedTask, got: &FileMetadata) -> Option<MetadataDifference> {
    let want: BTreeMap<&str, &str> = match &task.metadata {
        None => BTreeMap::new(),
        Some(m) => match m.strings() {
            Ok(v) => v.into_iter().collect(),
            Err(k) => {
                return Some(MetadataDifference::Other(format!(
                    "task metadata {k:?} is not a string"
                )))
            }
        },
    };
    let have: BTreeMap<&str, &str> = match got {
        FileMetadata::Absent | FileMetadata::Null => BTreeMap::new(),
        FileMetadata::Map(v) => v.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect(),
    };
    if want == have {
        return None;
    }
    let missing: Vec<&&str> = want
        .iter()
        .filter(|(k, v)| have.get(*k) != Some(v))
        .map(|(k, _)| k)
        .collect();
    let extra: Vec<&&str> = have.keys().filter(|k| !want.contains_key(*k)).collect();
    if missing.is_empty() {
        return Some(MetadataDifference::Added(
            extra.iter().map(|k| (**k).to_owned()).collect(),
        ));
    }
    Some(MetadataDifference::Other(format!(
        "metadata differs: {} key(s) missing or changed {:?}, {} unexpected {:?}",
        missing.len(),
        missing.iter().take(SHOWN).collect::<Vec<_>>(),
        extra.len(),
        extra.iter().take(SHOWN).collect::<Vec<_>>()
    )))
}
