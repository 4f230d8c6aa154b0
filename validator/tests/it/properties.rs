//! Property tests of the validator against the canonical writer, the streaming validator and
//! the reference crate.
//!
//! - Every file `write::serialize` produces validates with no warning, reads back the same
//!   tensors (name, dtype, shape, bytes) and metadata, gets the same verdict from the streaming
//!   validator, and is loaded by the reference crate with the same tensors.
//! - No mutation of a valid file (byte flips, truncation, insertion, deletion, length-field
//!   edits) makes the validator panic; every error's offset lies within the file; the
//!   streaming validator gives the same verdict, rule and offset; and whatever strict accepts,
//!   the reference accepts too, with the same tensors.

use std::collections::BTreeMap;

use proptest::prelude::*;
use stcheck::internal::{self as size, self as names};
use stcheck::reference::{verdict, Verdict};
use stcheck::write::{serialize, TensorSpec};
use stcheck::{validate, Config, Dtype, Error, Report};

/// A tensor to write, with owned parts.
#[derive(Debug, Clone)]
struct Tensor {
    dtype: Dtype,
    shape: Vec<u64>,
    data: Vec<u8>,
}

fn dtype() -> impl Strategy<Value = Dtype> {
    (0..Dtype::ALL.len()).prop_map(|i| Dtype::ALL[i])
}

/// A name the writer accepts: printable, with characters JSON must escape, non-ASCII text,
/// slashes and dots, but not path-like.
fn name() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_.\"\\\\ é€\u{1F600}/:-]{1,10}".prop_filter("path-like", |n| !names::is_path_like(n))
}

/// Deterministic bytes from a seed (xorshift), so the data need not be drawn byte by byte.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn tensor() -> impl Strategy<Value = Tensor> {
    (dtype(), prop::collection::vec(0u64..6, 0..4), any::<u64>()).prop_map(
        |(dtype, mut shape, seed)| {
            // Sub-byte dtypes need a whole number of bytes: four more elements of F4 or F6
            // always make one.
            if size::byte_length(dtype, &shape).is_err() {
                shape.push(4);
            }
            let len = size::byte_length(dtype, &shape).expect("small shapes fit") as usize;
            Tensor {
                dtype,
                shape,
                data: bytes(seed, len),
            }
        },
    )
}

fn tensors() -> impl Strategy<Value = BTreeMap<String, Tensor>> {
    prop::collection::btree_map(name(), tensor(), 0..8)
}

fn metadata() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(
        "[a-z_\"\\\\\u{e9}\n\t]{0,8}".prop_filter("reserved", |k| k != "total_parameters"),
        "[ -~\u{e9}\u{20ac}\n\"\\\\]{0,12}",
        0..4,
    )
}

fn write(tensors: &BTreeMap<String, Tensor>, metadata: &BTreeMap<String, String>) -> Vec<u8> {
    let specs: Vec<TensorSpec<'_>> = tensors
        .iter()
        .map(|(n, t)| TensorSpec::new(n, t.dtype, &t.shape, &t.data))
        .collect();
    let meta: Vec<(&str, &str)> = metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    serialize(&specs, &meta).expect("the writer accepts generated input")
}

fn stream(f: &[u8]) -> Result<Report<'static>, Error> {
    match stcheck::check_reader(f, &Config::default()) {
        Ok(c) => c.verdict,
        Err(e) => panic!("I/O error reading a slice: {e}"),
    }
}

/// (name, dtype, shape, file begin, file end) of every tensor.
type Summary = Vec<(String, String, Vec<u64>, u64, u64)>;

/// The tensors of a report, sorted by name.
fn summary(r: &Report<'_>) -> Summary {
    let mut v: Vec<_> = r
        .tensors()
        .map(|t| {
            (
                t.name.to_owned(),
                t.dtype.name().to_owned(),
                t.shape.to_vec(),
                t.file_begin,
                t.file_end,
            )
        })
        .collect();
    v.sort();
    v
}

/// The reference's view, in the same form.
fn reference_summary(f: &[u8]) -> Result<Summary, Verdict> {
    match verdict(f) {
        Verdict::Accept(ts) => {
            let mut v: Vec<_> = ts
                .into_iter()
                .map(|t| (t.name, t.dtype, t.shape, t.file_begin, t.file_end))
                .collect();
            v.sort();
            Ok(v)
        }
        other => Err(other),
    }
}

/// The JSON string starting at file offset `at`, decoded.
fn key_at(f: &[u8], at: u64) -> Option<String> {
    let rest = f.get(usize::try_from(at).ok()?..)?;
    if rest.first() != Some(&b'"') {
        return None;
    }
    serde_json::Deserializer::from_slice(rest)
        .into_iter::<String>()
        .next()?
        .ok()
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip {
        at: usize,
        xor: u8,
    },
    Truncate {
        keep: usize,
    },
    Insert {
        at: usize,
        bytes: Vec<u8>,
    },
    Delete {
        at: usize,
        len: usize,
    },
    SetLength(u64),
    AddLength(i16),
    /// Overwrite with a byte that matters to JSON.
    Poke {
        at: usize,
        byte: u8,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let json_byte = prop::sample::select(b"{}[]\",:\\ 0-1e.\x00\n\xff\xc0\xed".to_vec());
    prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(at, xor)| Mutation::Flip { at, xor }),
        any::<usize>().prop_map(|keep| Mutation::Truncate { keep }),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (any::<usize>(), 1usize..8).prop_map(|(at, len)| Mutation::Delete { at, len }),
        prop_oneof![
            any::<u64>(),
            Just(0u64),
            Just(u64::MAX),
            Just(100_000_000u64),
            Just(100_000_001u64)
        ]
        .prop_map(Mutation::SetLength),
        (-16i16..=16).prop_map(Mutation::AddLength),
        (any::<usize>(), json_byte).prop_map(|(at, byte)| Mutation::Poke { at, byte }),
    ]
}

fn apply(f: &mut Vec<u8>, m: &Mutation) {
    let len = f.len();
    match m {
        Mutation::Flip { at, xor } => {
            if len > 0 {
                f[at % len] ^= xor;
            }
        }
        Mutation::Truncate { keep } => f.truncate(keep % (len + 1)),
        Mutation::Insert { at, bytes } => {
            let at = at % (len + 1);
            f.splice(at..at, bytes.iter().copied());
        }
        Mutation::Delete { at, len: n } => {
            if len > 0 {
                let at = at % len;
                let end = (at + n).min(len);
                f.drain(at..end);
            }
        }
        Mutation::SetLength(n) => {
            if len >= 8 {
                f[..8].copy_from_slice(&n.to_le_bytes());
            }
        }
        Mutation::AddLength(d) => {
            if len >= 8 {
                let mut le = [0u8; 8];
                le.copy_from_slice(&f[..8]);
                let n = u64::from_le_bytes(le).wrapping_add_signed(i64::from(*d));
                f[..8].copy_from_slice(&n.to_le_bytes());
            }
        }
        Mutation::Poke { at, byte } => {
            if len > 0 {
                f[at % len] = *byte;
            }
        }
    }
}

proptest! {
    // 256 cases keep the debug suite fast; PROPTEST_CASES=N runs more.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    #[test]
    fn writer_output_validates_and_reads_back(ts in tensors(), meta in metadata()) {
        let f = write(&ts, &meta);
        let r = validate(&f, &Config::default().deny_warnings(true))
            .unwrap_or_else(|e| panic!("writer output rejected: {e}"));
        prop_assert!(r.warnings().is_empty());
        prop_assert_eq!(r.header_len() % 8, 0);
        prop_assert_eq!(r.file_len(), f.len() as u64);
        prop_assert_eq!(r.len(), ts.len());
        for t in r.tensors() {
            let want = ts.get(t.name).expect("a tensor that was written");
            prop_assert_eq!(t.dtype, want.dtype);
            prop_assert_eq!(t.shape, &want.shape[..]);
            prop_assert_eq!(t.data(&f), &want.data[..]);
            prop_assert_eq!(t.byte_len(), want.data.len() as u64);
            prop_assert_eq!(t.elements, size::element_count(&want.shape).expect("fits"));
            // header_offset is the opening quote of the tensor's key, escaped or not.
            prop_assert_eq!(key_at(&f, t.header_offset), Some(t.name.to_owned()));
        }
        // Offset order.
        let begins: Vec<(u64, u64)> = r.tensors().map(|t| (t.begin, t.end)).collect();
        prop_assert!(begins.windows(2).all(|w| w[0] <= w[1]));
        let got: BTreeMap<String, String> =
            r.metadata().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        prop_assert_eq!(&got, &meta);

        // The streaming validator agrees.
        let s = stream(&f).unwrap_or_else(|e| panic!("stream rejected writer output: {e}"));
        prop_assert_eq!(summary(&s), summary(&r));
        prop_assert!(s.warnings().is_empty());
        let smeta: BTreeMap<String, String> =
            s.metadata().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        prop_assert_eq!(&smeta, &meta);

        // The reference loads it, with the same tensors at the same bytes.
        match reference_summary(&f) {
            Ok(v) => prop_assert_eq!(v, summary(&r)),
            Err(v) => prop_assert!(false, "reference: {:?}", v),
        }
    }

    #[test]
    fn mutations_never_panic_and_agree(
        ts in tensors(),
        meta in metadata(),
        muts in prop::collection::vec(mutation(), 1..4),
    ) {
        let mut f = write(&ts, &meta);
        for m in &muts {
            apply(&mut f, m);
        }
        let len = f.len() as u64;
        let whole = validate(&f, &Config::default());
        let streamed = stream(&f);
        match (&whole, &streamed) {
            (Ok(r), Ok(s)) => {
                prop_assert_eq!(summary(r), summary(s));
                prop_assert_eq!(r.warnings(), s.warnings());
                prop_assert_eq!(r.file_len(), len);
                for w in r.warnings() {
                    prop_assert!(w.offset() <= len, "warning past the end: {}", w);
                }
                for t in r.tensors() {
                    prop_assert_eq!(key_at(&f, t.header_offset), Some(t.name.to_owned()));
                }
                // Whatever strict accepts, the reference loads the same way.
                match reference_summary(&f) {
                    Ok(v) => prop_assert_eq!(v, summary(r)),
                    Err(v) => prop_assert!(false, "strict accepts, reference: {:?}", v),
                }
            }
            (Err(e), Err(s)) => {
                prop_assert!(e.offset() <= len, "error past the end: {}", e);
                prop_assert_eq!((e.rule(), e.offset()), (s.rule(), s.offset()), "{} vs {}", e, s);
                prop_assert_eq!(e.tensor(), s.tensor());
            }
            _ => prop_assert!(false, "buffer {:?} but stream {:?}", whole.as_ref().map(|r| r.len()), streamed.as_ref().map(|r| r.len())),
        }
        // deny_warnings never panics either, and only adds rejections.
        let denied = validate(&f, &Config::default().deny_warnings(true));
        if let Err(e) = &denied {
            prop_assert!(e.offset() <= len);
            if let Ok(r) = &whole {
                prop_assert!(e.is_promoted_warning());
                prop_assert_eq!(Some(e.finding()), r.warnings().first());
            }
        }
    }
}
