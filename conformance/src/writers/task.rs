//! Writer tasks: the JSON files of `corpus/writers/<area>/<name>.json` (the format is in
//! `conformance/WRITER-PROTOCOL.md`), their data generators, and their preparation into what
//! an adapter is given ([`super::prepared`]).

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::prepared::{Metadata, PreparedTask, PreparedTensor};
use super::stcheck_api;

/// What a conforming writer must do with a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    /// Write a file with exactly this content.
    Write,
    /// Refuse: write nothing.
    Refuse,
    /// Either (implementation-defined); a file it writes is judged like one it must write.
    Either,
}

impl Expect {
    /// `write`, `refuse`, `either`.
    pub fn name(self) -> &'static str {
        match self {
            Expect::Write => "write",
            Expect::Refuse => "refuse",
            Expect::Either => "either",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DataFile {
    hex: Option<String>,
    random: Option<String>,
    fill: Option<String>,
    length: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TensorFile {
    name: String,
    dtype: String,
    shape: Vec<String>,
    data: DataFile,
    count: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskFile {
    description: String,
    expect: Expect,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    rules: Vec<String>,
    #[serde(default)]
    warnings: Vec<String>,
    #[serde(default)]
    large: bool,
    tensors: Vec<TensorFile>,
    #[serde(default)]
    metadata: Option<Metadata>,
}

/// Where a tensor's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Data {
    /// These bytes.
    Bytes(Vec<u8>),
    /// `length` bytes of the SplitMix64 stream from `seed`.
    Random {
        /// The seed.
        seed: u64,
        /// Bytes.
        length: u64,
    },
    /// `pattern` repeated, cut at `length` bytes.
    Fill {
        /// The pattern (not empty).
        pattern: Vec<u8>,
        /// Bytes.
        length: u64,
    },
}

impl Data {
    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        match self {
            Data::Bytes(b) => b.len() as u64,
            Data::Random { length, .. } | Data::Fill { length, .. } => *length,
        }
    }

    /// Whether it has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The same data for the `i`-th tensor of a group: a random stream's seed plus `i`.
    fn nth(&self, i: u64) -> Data {
        match self {
            Data::Random { seed, length } => Data::Random {
                seed: seed.wrapping_add(i),
                length: *length,
            },
            other => other.clone(),
        }
    }

    /// Write the bytes to `out`, in chunks of at most 1 MiB.
    pub fn emit(&self, out: &mut impl Write) -> std::io::Result<()> {
        const CHUNK: u64 = 1 << 20;
        match self {
            Data::Bytes(b) => out.write_all(b),
            Data::Random { seed, length } => {
                let mut rng = SplitMix64(*seed);
                let mut left = *length;
                let mut buf = Vec::with_capacity(left.min(CHUNK) as usize + 8);
                while left > 0 {
                    let n = left.min(CHUNK) as usize;
                    buf.clear();
                    while buf.len() < n {
                        buf.extend_from_slice(&rng.next().to_le_bytes());
                    }
                    out.write_all(&buf[..n])?;
                    left -= n as u64;
                }
                Ok(())
            }
            Data::Fill { pattern, length } => {
                // Whole patterns, about one chunk (or the whole length) long: each chunk
                // starts at the pattern's first byte.
                let want = (*length).min(CHUNK) as usize;
                let buf = pattern.repeat(want.div_ceil(pattern.len()).max(1));
                let mut left = *length;
                while left > 0 {
                    let n = left.min(buf.len() as u64);
                    out.write_all(&buf[..n as usize])?;
                    left -= n;
                }
                Ok(())
            }
        }
    }

    /// The bytes in memory (for tests and small data).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = self.emit(&mut v);
        v
    }
}

/// SplitMix64 (Steele, Lea and Flood, 2014): the stream of `random` data, eight bytes per
/// step, little-endian.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64-bit value.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// One tensor entry of a task; `count` > 1 stands for a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The name; in a group, `{i}` is replaced by the tensor's index.
    pub name: String,
    /// The dtype's name.
    pub dtype: String,
    /// Dimensions.
    pub shape: Vec<u64>,
    /// The bytes (of the first tensor of a group).
    pub data: Data,
    /// How many tensors the entry stands for (1 unless `count` is given).
    pub count: u64,
}

/// One tensor after groups are expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor {
    /// The name.
    pub name: String,
    /// The dtype's name.
    pub dtype: String,
    /// Dimensions.
    pub shape: Vec<u64>,
    /// Its bytes.
    pub data: Data,
}

/// The largest task file read (a task is a few KB; a regular file only).
const TASK_FILE_LIMIT: u64 = 1 << 20;

/// A task, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// `area/name`, the path under `corpus/writers/` without `.json`.
    pub id: String,
    /// The file.
    pub path: PathBuf,
    /// One line for humans.
    pub description: String,
    /// What a writer must do.
    pub expect: Expect,
    /// Why (for `refuse` and `either`).
    pub reason: String,
    /// SPEC rule IDs the task is about.
    pub rules: Vec<String>,
    /// The strict warnings a file for this task has by its content alone (a name like
    /// `../x`): not held against the writer's form.
    pub warnings: Vec<String>,
    /// Generated and run only on demand (`stwrite --large`).
    pub large: bool,
    /// The tensors.
    pub entries: Vec<Entry>,
    /// The metadata, if any.
    pub metadata: Option<Metadata>,
}

fn number(s: &str, what: &str) -> Result<u64, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return Err(format!("{what} {s:?} is not a decimal integer"));
    }
    s.parse::<u64>()
        .map_err(|_| format!("{what} {s:?} does not fit 64 bits"))
}

fn hex_bytes(s: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = s.bytes().filter(|b| !matches!(b, b' ' | b'_')).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(format!("hex {s:?} has an odd number of digits"));
    }
    digits
        .chunks(2)
        .map(|p| {
            std::str::from_utf8(p)
                .ok()
                .and_then(|t| u8::from_str_radix(t, 16).ok())
                .ok_or_else(|| format!("hex {s:?} is not hexadecimal"))
        })
        .collect()
}

impl Task {
    /// Parse a task file's text. `id` names it in messages.
    pub fn parse(id: &str, path: &Path, text: &str) -> Result<Task, String> {
        let f: TaskFile = serde_json::from_str(text).map_err(|e| format!("{id}: {e}"))?;
        let err = |m: String| format!("{id}: {m}");
        let mut entries = Vec::new();
        for t in &f.tensors {
            let shape = t
                .shape
                .iter()
                .map(|d| number(d, "dimension"))
                .collect::<Result<Vec<u64>, String>>()
                .map_err(err)?;
            let count = match &t.count {
                Some(c) => number(c, "count").map_err(err)?,
                None => 1,
            };
            if t.count.is_some() && !t.name.contains("{i}") {
                return Err(err(format!("group {:?} needs {{i}} in its name", t.name)));
            }
            let length = match &t.data.length {
                Some(l) => number(l, "length").map_err(err)?,
                None if t.data.hex.is_some() => 0,
                None => stcheck_api::byte_length(&t.dtype, &shape).map_err(|e| {
                    err(format!("tensor {:?}: {e}; give the data's length", t.name))
                })?,
            };
            let data = match (&t.data.hex, &t.data.random, &t.data.fill) {
                (Some(h), None, None) if t.data.length.is_none() => {
                    Data::Bytes(hex_bytes(h).map_err(err)?)
                }
                (None, Some(seed), None) => Data::Random {
                    seed: number(seed, "seed").map_err(err)?,
                    length,
                },
                (None, None, Some(p)) => {
                    let pattern = hex_bytes(p).map_err(err)?;
                    if pattern.is_empty() {
                        return Err(err("an empty fill pattern".to_owned()));
                    }
                    Data::Fill { pattern, length }
                }
                _ => {
                    return Err(err(format!(
                        "tensor {:?}: data needs exactly one of hex, random, fill (and length \
                         only with random or fill)",
                        t.name
                    )))
                }
            };
            entries.push(Entry {
                name: t.name.clone(),
                dtype: t.dtype.clone(),
                shape,
                data,
                count,
            });
        }
        let task = Task {
            id: id.to_owned(),
            path: path.to_path_buf(),
            description: f.description,
            expect: f.expect,
            reason: f.reason,
            rules: f.rules,
            warnings: f.warnings,
            large: f.large,
            entries,
            metadata: f.metadata,
        };
        task.check().map_err(err)?;
        Ok(task)
    }

    /// What a well-formed task must satisfy: every dtype is one of the format's names; a
    /// task a writer must write (or may) has string metadata, and each tensor's data is as
    /// long as its dtype and shape say; `refuse` and `either` tasks give a reason.
    fn check(&self) -> Result<(), String> {
        if self.description.is_empty() {
            return Err("no description".to_owned());
        }
        if self.expect != Expect::Write && self.reason.is_empty() {
            return Err(format!("an {} task needs a reason", self.expect.name()));
        }
        for e in &self.entries {
            if !stcheck_api::is_dtype(&e.dtype) {
                return Err(format!("unknown dtype {:?}", e.dtype));
            }
            if self.expect != Expect::Refuse {
                let want = stcheck_api::byte_length(&e.dtype, &e.shape)
                    .map_err(|m| format!("tensor {:?}: {m}", e.name))?;
                if want != e.data.len() {
                    return Err(format!(
                        "tensor {:?}: {} bytes of data, the shape needs {want}",
                        e.name,
                        e.data.len()
                    ));
                }
            }
        }
        if self.expect != Expect::Refuse {
            if let Some(m) = &self.metadata {
                m.strings()
                    .map_err(|k| format!("metadata {k:?} is not a string"))?;
            }
        }
        Ok(())
    }

    /// Load `<dir>/<id>.json`-style files: every `*.json` below `dir`, sorted by ID.
    pub fn load_dir(dir: &Path) -> Result<Vec<Task>, String> {
        let mut files = Vec::new();
        collect_json(dir, dir, &mut files)?;
        files.sort();
        let mut tasks = Vec::new();
        for (id, path) in files {
            let bytes = crate::corpus::archive::read_capped(&path, TASK_FILE_LIMIT)?;
            let text = String::from_utf8(bytes).map_err(|e| format!("{}: {e}", path.display()))?;
            tasks.push(Task::parse(&id, &path, &text)?);
        }
        if tasks.is_empty() {
            return Err(format!("no task (*.json) under {}", dir.display()));
        }
        Ok(tasks)
    }

    /// The tensors, groups expanded, in the task's order.
    pub fn tensors(&self) -> Vec<Tensor> {
        let mut out = Vec::new();
        for e in &self.entries {
            if e.count == 1 && !e.name.contains("{i}") {
                out.push(Tensor {
                    name: e.name.clone(),
                    dtype: e.dtype.clone(),
                    shape: e.shape.clone(),
                    data: e.data.clone(),
                });
                continue;
            }
            for i in 0..e.count {
                out.push(Tensor {
                    name: e.name.replace("{i}", &i.to_string()),
                    dtype: e.dtype.clone(),
                    shape: e.shape.clone(),
                    data: e.data.nth(i),
                });
            }
        }
        out
    }

    /// The bytes of the task's data file, made again from the task (not read from the file a
    /// writer was handed, which it could have changed).
    pub fn data_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for t in self.tensors() {
            // Writing into a Vec cannot fail.
            let _ = t.data.emit(&mut out);
        }
        out
    }

    /// Total bytes of data.
    pub fn data_len(&self) -> u64 {
        self.entries
            .iter()
            .map(|e| e.data.len().saturating_mul(e.count))
            .fold(0u64, u64::saturating_add)
    }

    /// Write the prepared task (`task.json`) and its data file (`data.bin`) into `dir`
    /// (created if needed).
    pub fn prepare(&self, dir: &Path) -> Result<PreparedTask, String> {
        let io = |e: std::io::Error| format!("{}: {e}", dir.display());
        std::fs::create_dir_all(dir).map_err(io)?;
        let dir = std::fs::canonicalize(dir).map_err(io)?;
        let data_path = dir.join("data.bin");
        let data_file = data_path
            .to_str()
            .ok_or_else(|| format!("{}: not a UTF-8 path", data_path.display()))?
            .to_owned();
        let mut out = BufWriter::new(std::fs::File::create(&data_path).map_err(io)?);
        let mut tensors = Vec::new();
        let mut offset = 0u64;
        for t in self.tensors() {
            t.data.emit(&mut out).map_err(io)?;
            let length = t.data.len();
            tensors.push(PreparedTensor {
                name: t.name,
                dtype: t.dtype,
                shape: t.shape.iter().map(u64::to_string).collect(),
                offset: offset.to_string(),
                length: length.to_string(),
            });
            offset += length;
        }
        out.flush().map_err(io)?;
        let prepared = PreparedTask {
            id: self.id.clone(),
            data_file,
            tensors,
            metadata: self.metadata.clone(),
        };
        let text = serde_json::to_string(&prepared).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("task.json"), text).map_err(io)?;
        Ok(prepared)
    }
}

fn collect_json(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if kind.is_dir() {
            collect_json(root, &path, out)?;
        } else if kind.is_file() && path.extension().is_some_and(|x| x == "json") {
            let rel = path
                .strip_prefix(root)
                .map_err(|e| e.to_string())?
                .with_extension("");
            let id = rel
                .to_str()
                .ok_or_else(|| format!("{}: not a UTF-8 path", path.display()))?
                .replace('\\', "/");
            out.push((id, path));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_published_stream() {
        // The first outputs for seed 0, as published with the algorithm.
        let mut r = SplitMix64(0);
        assert_eq!(r.next(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn generators_give_the_stated_lengths_and_bytes() {
        let r = Data::Random {
            seed: 0,
            length: 11,
        }
        .to_vec();
        assert_eq!(r.len(), 11);
        assert_eq!(&r[..8], &0xE220_A839_7B1D_CDAFu64.to_le_bytes());
        let f = Data::Fill {
            pattern: vec![1, 0, 0],
            length: 7,
        }
        .to_vec();
        assert_eq!(f, [1, 0, 0, 1, 0, 0, 1]);
        // Longer than one chunk: the pattern keeps its phase across chunks.
        let big = Data::Fill {
            pattern: vec![1, 2, 3],
            length: (1 << 20) + 5,
        }
        .to_vec();
        assert_eq!(big.len(), (1 << 20) + 5);
        assert!(big.chunks(3).all(|c| c == &[1, 2, 3][..c.len()]));
    }

    #[test]
    fn a_group_expands_with_names_and_seeds() {
        let t = Task::parse(
            "g",
            Path::new("g.json"),
            r#"{"description":"d","expect":"write","tensors":[
               {"name":"l.{i}","dtype":"U8","shape":["2"],"data":{"random":"5"},"count":"3"}]}"#,
        )
        .expect("valid task");
        let ts = t.tensors();
        assert_eq!(
            ts.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(),
            ["l.0", "l.1", "l.2"]
        );
        assert_eq!(ts[2].data, Data::Random { seed: 7, length: 2 });
        assert_eq!(t.data_len(), 6);
    }

    #[test]
    fn malformed_tasks_are_refused() {
        let bad = [
            // wrong length for a task that must be written
            r#"{"description":"d","expect":"write","tensors":[{"name":"a","dtype":"F32","shape":["2"],"data":{"hex":"00"}}]}"#,
            // unknown dtype
            r#"{"description":"d","expect":"refuse","reason":"r","tensors":[{"name":"a","dtype":"F128","shape":[],"data":{"hex":""}}]}"#,
            // non-string metadata in a write task
            r#"{"description":"d","expect":"write","tensors":[],"metadata":{"a":1}}"#,
            // refuse without a reason
            r#"{"description":"d","expect":"refuse","tensors":[]}"#,
            // two data sources
            r#"{"description":"d","expect":"write","tensors":[{"name":"a","dtype":"U8","shape":["1"],"data":{"hex":"00","random":"1"}}]}"#,
            // duplicate metadata key
            r#"{"description":"d","expect":"write","tensors":[],"metadata":{"a":"1","a":"2"}}"#,
            // a number that is not a decimal string
            r#"{"description":"d","expect":"write","tensors":[{"name":"a","dtype":"U8","shape":["01"],"data":{"hex":"00"}}]}"#,
            // an unknown field
            r#"{"description":"d","expect":"write","tensors":[],"extra":1}"#,
        ];
        for text in bad {
            assert!(
                Task::parse("t", Path::new("t.json"), text).is_err(),
                "accepted: {text}"
            );
        }
    }
}
