//! Builds the inputs of `benches/memory.sh`: near-limit headers that stress the memory a check
//! needs, and a large index. `memgen DIR [HEADER_BYTES]` (default 99,999,992 bytes).
//!
//! - `tensors.safetensors`: the most tensors a header of that length holds (realistic names).
//! - `metadata.safetensors`: one tensor and about ten million short `__metadata__` entries.
//! - `warnings.safetensors`: about 1.8 million tiny F32 tensors, each named like a path
//!   (`NAME-PATH`) and each at an odd offset (`LAYOUT-ALIGN`): two warnings per tensor.
//! - `index/model.safetensors.index.json`: a weight_map of that length (millions of entries),
//!   with two small shards that exist and hold two of its tensors; most entries name a shard
//!   that holds nothing, or one that does not exist.
//! - `nan.safetensors`: about 1.5 million F32 scalars, each a NaN (one `DATA-NONFINITE`
//!   warning and one non-finite count per tensor under `--deep`).
//! - `missing/model.safetensors.index.json`: a weight_map of that length whose every entry
//!   names a shard of its own that does not exist (about 7 million distinct shard names).

use std::fs;
use std::io::Write as _;
use std::path::Path;

use stcheck::write::{serialize, TensorSpec};
use stcheck::Dtype;

/// Base-62 digits of `i`, appended to `out`.
fn key(out: &mut Vec<u8>, mut i: usize) {
    const D: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let start = out.len();
    loop {
        out.push(D[i % 62]);
        i /= 62;
        if i == 0 {
            break;
        }
    }
    out[start..].reverse();
}

fn frame(mut header: Vec<u8>, len: usize, data: &[u8]) -> Vec<u8> {
    header.resize(len.max(header.len()).div_ceil(8) * 8, b' ');
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(&header);
    file.extend_from_slice(data);
    file
}

fn metadata_file(len: usize) -> Vec<u8> {
    let tensor = br#""w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}"#;
    let mut h = b"{\"__metadata__\":{".to_vec();
    let mut i = 0usize;
    while h.len() + 16 + tensor.len() < len {
        if i > 0 {
            h.push(b',');
        }
        h.push(b'"');
        key(&mut h, i);
        h.extend_from_slice(b"\":\"\"");
        i += 1;
    }
    h.extend_from_slice(b"},");
    h.extend_from_slice(tensor);
    h.push(b'}');
    eprintln!("metadata.safetensors: {i} metadata entries");
    frame(h, len, &[1])
}

fn warnings_file(len: usize) -> Vec<u8> {
    let mut h = br#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}"#.to_vec();
    let mut at = 1u64;
    let mut n = 0usize;
    let mut entry = Vec::new();
    loop {
        entry.clear();
        entry.extend_from_slice(b",\"/");
        key(&mut entry, n);
        let _ = write!(
            entry,
            r#"":{{"dtype":"F32","shape":[1],"data_offsets":[{at},{}]}}"#,
            at + 4
        );
        if h.len() + entry.len() + 1 > len {
            break;
        }
        h.extend_from_slice(&entry);
        at += 4;
        n += 1;
    }
    h.push(b'}');
    eprintln!("warnings.safetensors: {n} misaligned, path-like tensors");
    frame(h, len, &vec![0u8; usize::try_from(at).unwrap_or(0)])
}

fn nan_file(len: usize) -> Vec<u8> {
    let mut h = b"{".to_vec();
    let mut at = 0u64;
    let mut n = 0usize;
    let mut entry = Vec::new();
    loop {
        entry.clear();
        if n > 0 {
            entry.push(b',');
        }
        entry.push(b'"');
        key(&mut entry, n);
        let _ = write!(
            entry,
            r#"":{{"dtype":"F32","shape":[],"data_offsets":[{at},{}]}}"#,
            at + 4
        );
        if h.len() + entry.len() + 1 > len {
            break;
        }
        h.extend_from_slice(&entry);
        at += 4;
        n += 1;
    }
    h.push(b'}');
    eprintln!("nan.safetensors: {n} NaN scalars");
    let data: Vec<u8> = (0..n).flat_map(|_| 0x7FC0_0001u32.to_le_bytes()).collect();
    frame(h, len, &data)
}

fn missing_dir(dir: &Path, len: usize) {
    let dir = dir.join("missing");
    fs::create_dir_all(&dir).expect("missing dir");
    let mut h = br#"{"metadata":{"total_size":0},"weight_map":{"#.to_vec();
    let mut i = 0usize;
    while h.len() + 40 < len {
        if i > 0 {
            h.push(b',');
        }
        h.push(b'"');
        key(&mut h, i);
        h.extend_from_slice(b"\":\"");
        key(&mut h, i);
        h.extend_from_slice(b"\"");
        i += 1;
    }
    h.extend_from_slice(b"}}");
    eprintln!("missing: {i} distinct missing shards, {} bytes", h.len());
    fs::write(dir.join("model.safetensors.index.json"), h).expect("write index");
}

fn index_dir(dir: &Path, len: usize) {
    let dir = dir.join("index");
    fs::create_dir_all(&dir).expect("index dir");
    for (name, tensor) in [("s1.safetensors", "t0"), ("s2.safetensors", "t1")] {
        let file =
            serialize(&[TensorSpec::new(tensor, Dtype::F32, &[2], &[0u8; 8])], &[]).expect("shard");
        fs::write(dir.join(name), file).expect("write shard");
    }
    let mut h = br#"{"metadata":{"total_size":16},"weight_map":{"t0":"s1.safetensors","t1":"s2.safetensors""#.to_vec();
    let mut i = 0usize;
    while h.len() + 16 < len {
        h.extend_from_slice(b",\"u");
        key(&mut h, i);
        h.extend_from_slice(if i.is_multiple_of(2) {
            b"\":\"s1.safetensors\""
        } else {
            b"\":\"x\""
        });
        i += 1;
    }
    h.extend_from_slice(b"}}");
    eprintln!("index: {} weight_map entries, {} bytes", i + 2, h.len());
    fs::write(dir.join("model.safetensors.index.json"), h).expect("write index");
}

/// What `memgen --help` prints.
const USAGE: &str = "usage: memgen DIR [HEADER_BYTES]
Writes near-limit inputs for benches/memory.sh into DIR (created if needed): headers of
HEADER_BYTES bytes (default 99999992); about 600 MB in all at the default.
";

fn main() {
    let args = stcheck_benches::positional_args(std::env::args().skip(1), USAGE, 2);
    let Some(dir) = args.first() else {
        eprint!("memgen: no output directory given\n{USAGE}");
        std::process::exit(2);
    };
    let len: usize = match args.get(1).map(|a| a.parse()) {
        None => 99_999_992,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprint!(
                "memgen: HEADER_BYTES is not a number: {:?}\n{USAGE}",
                args[1]
            );
            std::process::exit(2);
        }
    };
    let dir = Path::new(&dir);
    fs::create_dir_all(dir).expect("output dir");
    let t = stcheck_benches::with_header_len(len);
    eprintln!("tensors.safetensors: {} tensors", t.tensors);
    fs::write(dir.join("tensors.safetensors"), &t.file).expect("write");
    fs::write(dir.join("metadata.safetensors"), metadata_file(len)).expect("write");
    fs::write(dir.join("warnings.safetensors"), warnings_file(len)).expect("write");
    index_dir(dir, len);
    fs::write(dir.join("nan.safetensors"), nan_file(len)).expect("write");
    missing_dir(dir, len);
}
