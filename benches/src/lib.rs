//! Shared builders for benchmark inputs: safetensors files with many tensors whose headers look
//! like real checkpoints (`model.layers.12.self_attn.q_proj.weight`, mixed dtypes, 2-D shapes),
//! but whose data region stays small.
//!
//! Most tensors are zero-size (`[0, 4096]`), so a header of 100 MB needs only a few MB of data;
//! one tensor in 16 holds a few bytes (`[1, 8k]`), so the offsets grow and the layout check has
//! real work. Every begin offset is a multiple of 8, so the files validate without a warning.
//! Tensors are written in offset order, `__metadata__` first. Everything is deterministic.

use std::io::Write as _;

use stcheck::Dtype;

/// A benchmark input: the header bytes and the whole file around them.
#[derive(Debug, Clone)]
pub struct Input {
    /// The whole file: the 8-byte length, the header, the data region.
    pub file: Vec<u8>,
    /// Number of tensors declared.
    pub tensors: usize,
}

impl Input {
    /// The header bytes (the N bytes after the length field).
    pub fn header(&self) -> &[u8] {
        &self.file[8..8 + self.header_len()]
    }

    /// The header length N.
    pub fn header_len(&self) -> usize {
        let mut le = [0u8; 8];
        le.copy_from_slice(&self.file[..8]);
        usize::try_from(u64::from_le_bytes(le)).unwrap_or(usize::MAX)
    }

    /// Length of the data region.
    pub fn data_len(&self) -> usize {
        self.file.len() - 8 - self.header_len()
    }
}

const DTYPES: [Dtype; 8] = [
    Dtype::BF16,
    Dtype::BF16,
    Dtype::F16,
    Dtype::F32,
    Dtype::BF16,
    Dtype::F8_E4M3,
    Dtype::I64,
    Dtype::U8,
];

const WIDTHS: [u64; 7] = [4096, 11008, 14336, 1024, 128, 32000, 151936];

const ATTN: [&str; 4] = ["q_proj", "k_proj", "v_proj", "o_proj"];
const NORMS: [&str; 2] = ["input_layernorm", "post_attention_layernorm"];
const EXPERT: [&str; 3] = ["gate_proj", "up_proj", "down_proj"];
const EXPERTS: usize = 64;
const PER_LAYER: usize = ATTN.len() + NORMS.len() + EXPERTS * EXPERT.len();

/// The name of tensor `i`: the embedding first, then per layer the attention projections,
/// the norms and the experts' MLPs (a mixture-of-experts model).
fn write_name(out: &mut Vec<u8>, i: usize) {
    if i == 0 {
        out.extend_from_slice(b"model.embed_tokens.weight");
        return;
    }
    let j = i - 1;
    let (layer, slot) = (j / PER_LAYER, j % PER_LAYER);
    let _ = if slot < ATTN.len() {
        write!(out, "model.layers.{layer}.self_attn.{}.weight", ATTN[slot])
    } else if slot < ATTN.len() + NORMS.len() {
        write!(
            out,
            "model.layers.{layer}.{}.weight",
            NORMS[slot - ATTN.len()]
        )
    } else {
        let k = slot - ATTN.len() - NORMS.len();
        write!(
            out,
            "model.layers.{layer}.mlp.experts.{}.{}.weight",
            k / EXPERT.len(),
            EXPERT[k % EXPERT.len()]
        )
    };
}

struct Gen {
    header: Vec<u8>,
    entry: Vec<u8>,
    offset: u64,
    count: usize,
}

impl Gen {
    fn new(capacity: usize) -> Self {
        let mut header = Vec::with_capacity(capacity);
        header.extend_from_slice(br#"{"__metadata__":{"format":"pt"}"#);
        Gen {
            header,
            entry: Vec::with_capacity(256),
            offset: 0,
            count: 0,
        }
    }

    /// Format entry number `count` into `self.entry` (with its leading comma); returns its
    /// byte length.
    fn next_entry(&mut self) -> u64 {
        let i = self.count;
        let dtype = DTYPES[i % DTYPES.len()];
        let (shape, bytes) = if i.is_multiple_of(16) {
            let cols = 8 * (1 + (i / 16) % 8) as u64;
            ([1, cols], cols * dtype.bits() / 8)
        } else {
            ([0, WIDTHS[i % WIDTHS.len()]], 0)
        };
        self.entry.clear();
        self.entry.extend_from_slice(b",\"");
        write_name(&mut self.entry, i);
        let _ = write!(
            self.entry,
            r#"":{{"dtype":"{}","shape":[{},{}],"data_offsets":[{},{}]}}"#,
            dtype.name(),
            shape[0],
            shape[1],
            self.offset,
            self.offset + bytes
        );
        bytes
    }

    fn commit(&mut self, bytes: u64) {
        self.header.extend_from_slice(&self.entry);
        self.offset += bytes;
        self.count += 1;
    }

    /// Close the object, pad with spaces to `pad_to` bytes (or a multiple of 8), and frame it.
    fn finish(mut self, pad_to: Option<usize>) -> Input {
        self.header.push(b'}');
        let target = pad_to.unwrap_or(self.header.len().div_ceil(8) * 8);
        self.header.resize(target.max(self.header.len()), b' ');
        let data_len = usize::try_from(self.offset).unwrap_or(usize::MAX);
        let mut file = Vec::with_capacity(8 + self.header.len() + data_len);
        file.extend_from_slice(&(self.header.len() as u64).to_le_bytes());
        file.extend_from_slice(&self.header);
        file.resize(file.len() + data_len, 0);
        Input {
            file,
            tensors: self.count,
        }
    }
}

/// A file with `n` tensors.
pub fn with_tensors(n: usize) -> Input {
    let mut g = Gen::new(n.saturating_mul(120) + 64);
    for _ in 0..n {
        let bytes = g.next_entry();
        g.commit(bytes);
    }
    g.finish(None)
}

/// A file whose header is exactly `header_len` bytes: as many tensors as fit, then spaces.
pub fn with_header_len(header_len: usize) -> Input {
    let mut g = Gen::new(header_len);
    loop {
        let bytes = g.next_entry();
        // Room for this entry and the closing brace.
        if g.header.len() + g.entry.len() + 1 > header_len {
            break;
        }
        g.commit(bytes);
    }
    g.finish(Some(header_len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &Input) {
        let config = stcheck::Config::default();
        let report = stcheck::validate(&input.file, &config).expect("valid for stcheck");
        assert_eq!(report.len(), input.tensors);
        assert!(report.warnings().is_empty(), "{:?}", report.warnings());
        assert_eq!(report.data_len() as usize, input.data_len());
        let (n, metadata) =
            safetensors::SafeTensors::read_metadata(&input.file).expect("valid for the reference");
        assert_eq!(n, input.header_len());
        assert_eq!(metadata.tensors().len(), input.tensors);
        let _: serde::de::IgnoredAny =
            serde_json::from_slice(input.header()).expect("well-formed JSON");
    }

    #[test]
    fn inputs_validate_on_both_sides() {
        for n in [1, 2, 17, 1000] {
            check(&with_tensors(n));
        }
        let near = with_header_len(100_000);
        assert_eq!(near.header_len(), 100_000);
        assert!(near.tensors > 700, "{}", near.tensors);
        check(&near);
    }

    #[test]
    fn names_look_like_a_checkpoint() {
        let input = with_tensors(PER_LAYER + 3);
        let report = stcheck::validate(&input.file, &stcheck::Config::default()).expect("valid");
        let names: Vec<&str> = report.tensors().map(|t| t.name).collect();
        assert_eq!(names[0], "model.embed_tokens.weight");
        assert_eq!(names[1], "model.layers.0.self_attn.q_proj.weight");
        assert_eq!(names[5], "model.layers.0.input_layernorm.weight");
        assert_eq!(names[7], "model.layers.0.mlp.experts.0.gate_proj.weight");
        assert_eq!(
            names[PER_LAYER],
            "model.layers.0.mlp.experts.63.down_proj.weight"
        );
        assert_eq!(
            names[PER_LAYER + 1],
            "model.layers.1.self_attn.q_proj.weight"
        );
    }
}

/// The floor of any check that reads a file instead of mapping it: `pread` of the whole file
/// in 256 KiB blocks (the read mode's block) on `threads` threads, each into a buffer of its
/// own, with nothing done with the bytes but one of each block kept (so the reads are not left
/// out). What it costs over a sum of the mapped file's words is the copy out of the page cache,
/// which no read-mode scan can avoid. `scan/pread-only-2threads` and `scan_floor` time it.
pub fn pread_threads(file: &std::fs::File, len: u64, threads: u64) -> u64 {
    let share = len.div_ceil(threads);
    std::thread::scope(|s| {
        let parts: Vec<_> = (0..threads)
            .map(|k| {
                s.spawn(move || {
                    let mut buf = vec![0u8; 256 * 1024];
                    let (mut pos, end) = (k * share, ((k + 1) * share).min(len));
                    let mut last = 0u8;
                    while pos < end {
                        let want =
                            usize::try_from(end - pos).map_or(buf.len(), |r| r.min(buf.len()));
                        let n = read_at(file, &mut buf[..want], pos);
                        if n == 0 {
                            break;
                        }
                        last ^= buf[n - 1];
                        pos += n as u64;
                    }
                    u64::from(last)
                })
            })
            .collect();
        parts
            .into_iter()
            .map(|p| p.join().expect("reading thread"))
            .fold(0u64, |a, b| a ^ b)
    })
}

#[cfg(unix)]
fn read_at(file: &std::fs::File, buf: &mut [u8], at: u64) -> usize {
    std::os::unix::fs::FileExt::read_at(file, buf, at).expect("pread the bench file")
}

#[cfg(not(unix))]
fn read_at(file: &std::fs::File, buf: &mut [u8], at: u64) -> usize {
    std::os::windows::fs::FileExt::seek_read(file, buf, at).expect("read the bench file")
}

/// The positional arguments of a helper binary of `benches/`, after its options: `-h` or
/// `--help` prints `usage` and exits 0; `--` ends the options (what follows is positional even
/// if it starts with `-`); any other argument that starts with `-` (but `-` alone), or more
/// than `max` positional arguments, prints `usage` on standard error and exits 2. So `memgen
/// --help` shows how to use it instead of writing its inputs into a directory named `--help`.
pub fn positional_args(
    args: impl IntoIterator<Item = String>,
    usage: &str,
    max: usize,
) -> Vec<String> {
    match parse_positional(args, max) {
        Ok(Some(p)) => p,
        Ok(None) => {
            print!("{usage}");
            std::process::exit(0);
        }
        Err(why) => {
            eprint!("{why}\n{usage}");
            std::process::exit(2);
        }
    }
}

/// [`positional_args`] without the exit: `Ok(None)` for a request for help.
pub fn parse_positional(
    args: impl IntoIterator<Item = String>,
    max: usize,
) -> Result<Option<Vec<String>>, String> {
    let mut out = Vec::new();
    let mut options = true;
    for a in args {
        if options && a == "--" {
            options = false;
        } else if options && (a == "-h" || a == "--help") {
            return Ok(None);
        } else if options && a.starts_with('-') && a != "-" {
            return Err(format!("unknown option {a:?}"));
        } else {
            out.push(a);
        }
    }
    if out.len() > max {
        return Err(format!("at most {max} arguments, {} given", out.len()));
    }
    Ok(Some(out))
}

#[cfg(test)]
mod args_tests {
    use super::parse_positional;

    fn parse(args: &[&str], max: usize) -> Result<Option<Vec<String>>, String> {
        parse_positional(args.iter().map(|a| (*a).to_owned()), max)
    }

    #[test]
    fn help_and_unknown_options_are_not_taken_for_paths() {
        assert_eq!(parse(&["--help"], 2), Ok(None));
        assert_eq!(parse(&["out", "-h"], 2), Ok(None));
        let e = parse(&["--hepl"], 2).expect_err("an unknown option");
        assert!(e.contains("--hepl"), "{e}");
        assert!(parse(&["-x", "out"], 2).is_err());
        assert!(parse(&["a", "b", "c"], 2).is_err());
    }

    #[test]
    fn positionals_pass_and_double_dash_ends_the_options() {
        let some = |v: &[&str]| Ok(Some(v.iter().map(|a| (*a).to_owned()).collect()));
        assert_eq!(parse(&["out", "1000"], 2), some(&["out", "1000"]));
        assert_eq!(parse(&["--", "--help"], 2), some(&["--help"]));
        assert_eq!(parse(&["-"], 1), some(&["-"]));
        assert_eq!(parse(&[], 2), some(&[]));
    }
}
