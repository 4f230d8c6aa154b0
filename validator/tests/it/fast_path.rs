//! The header parser's fast path against its serde path ("the fast path accepts, the slow path
//! explains"), through the hidden differential hook `stcheck::internal::header_fast_vs_slow`.
//!
//! The hook runs both paths on a header and fails when the fast path accepts something the
//! serde path rejects, or accepts it with any difference (records, dimensions, metadata and its
//! offsets, warnings with their offsets and messages). Besides agreement, these tests check
//! that the fast path really is taken where it should be: on every header the serde path
//! accepts that holds no backslash escape.
//!
//! Inputs: every corpus file; writer output and headers formatted here with whitespace,
//! reordered fields, `__metadata__` anywhere, names that warn, each with and without one
//! random mutation; and hand-written edge cases with the expected outcome.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use stcheck::internal::{self as size, header_fast_vs_slow, FastVsSlow};
use stcheck::write::{header as write_header, TensorSpec};
use stcheck::Dtype;

/// Run the hook and fail the test on a disagreement.
fn check(header: &[u8]) -> FastVsSlow {
    match header_fast_vs_slow(header) {
        Ok(v) => v,
        Err(e) => panic!(
            "fast and serde paths disagree on {:?}: {e}",
            String::from_utf8_lossy(header)
        ),
    }
}

/// The fast path must take every header the serde path accepts unless it holds an escape.
fn assert_covered(header: &[u8], outcome: FastVsSlow) {
    if outcome == FastVsSlow::SlowOnlyAccepted {
        assert!(
            header.contains(&b'\\'),
            "the fast path declines an accepted header without escapes: {:?}",
            String::from_utf8_lossy(header)
        );
    }
}

fn corpus_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("corpus directory") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            corpus_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "safetensors") {
            out.push(path);
        }
    }
}

/// The header bytes of a file, if its length field and bounds allow.
fn header_of(file: &[u8]) -> Option<&[u8]> {
    let n = u64::from_le_bytes(file.get(..8)?.try_into().ok()?);
    let end = usize::try_from(n).ok()?.checked_add(8)?;
    file.get(8..end)
}

#[test]
fn corpus_fast_equals_slow() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut files = Vec::new();
    corpus_files(&root, &mut files);
    assert!(files.len() > 50, "corpus has {} files", files.len());
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for path in &files {
        let file = std::fs::read(path).expect("corpus file");
        let Some(header) = header_of(&file) else {
            continue;
        };
        let outcome = match header_fast_vs_slow(header) {
            Ok(v) => v,
            Err(e) => panic!("{}: {e}", path.display()),
        };
        assert_covered(header, outcome);
        *counts.entry(format!("{outcome:?}")).or_default() += 1;
        // The rest of the file as a header too: data bytes make odd JSON tails.
        check(&file[8.min(file.len())..]);
    }
    // The corpus has valid files of the canonical shape and files the serde path rejects.
    assert!(
        counts.get("FastAccepted").copied().unwrap_or(0) >= 10,
        "{counts:?}"
    );
    assert!(
        counts.get("BothRejected").copied().unwrap_or(0) >= 10,
        "{counts:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Hand-written edge cases

const U8_4: &str = r#"{"dtype":"U8","shape":[4],"data_offsets":[0,4]}"#;

fn one(name_json: &str) -> String {
    format!("{{{name_json}:{U8_4}}}")
}

#[test]
fn edge_cases_accepted_by_the_fast_path() {
    let cases: Vec<String> = vec![
        "{}".into(),
        " \n{}\t\r\n ".into(),
        r#"{"__metadata__":{}}"#.into(),
        r#"{"__metadata__":null}"#.into(),
        one(r#""a""#),
        // Whitespace between every token.
        "\t{ \"__metadata__\" :\n{ \"k\" : \"v\" ,\"k2\":\"\" } ,\r\n \"a\" : { \"shape\" : [ 4 ] , \"data_offsets\" : [ 0 , 4 ] , \"dtype\" : \"U8\" } }  \n\t ".into(),
        // __metadata__ null after the tensors, and an object after the tensors.
        format!(r#"{{"a":{U8_4},"__metadata__":null}}"#),
        format!(r#"{{"a":{U8_4},"__metadata__":{{"total_parameters":"4"}}}}"#),
        // Fields in every order.
        r#"{"a":{"data_offsets":[0,4],"shape":[4],"dtype":"U8"}}"#.into(),
        r#"{"a":{"shape":[4],"dtype":"U8","data_offsets":[0,4]}}"#.into(),
        // Numbers: zero, u64::MAX in a zero-size shape, empty shape (a scalar).
        r#"{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}"#.into(),
        r#"{"a":{"dtype":"U8","shape":[0,2305843009213693951],"data_offsets":[0,0]}}"#.into(),
        r#"{"a":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}"#.into(),
        r#"{"a":{"dtype":"F4","shape":[2,1],"data_offsets":[0,1]}}"#.into(),
        // Twenty digits that fit, and u64::MAX.
        r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[10000000000000000000,10000000000000000001]}}"#.into(),
        r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551614,18446744073709551615]}}"#.into(),
        // Offsets that do not tile still parse (the layout check comes later).
        r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551614,18446744073709551615]}}"#.into(),
        // Names: slashes, dots, unicode, and names that warn (empty, path-like, invisible).
        one(r#""model/layers.0/w""#),
        one(r#""a..b""#),
        one(r#""é€😀""#),
        one(r#""""#),
        one(r#""/abs""#),
        one(r#""a/../b""#),
        one(r#""..""#),
        one("\"a\u{200b}b\""),
        one("\"\u{202e}/../x\""),
        one(r#""__metadata""#),
        // Two tensors whose names share a prefix.
        format!(r#"{{"a":{U8_4},"ab":{{"dtype":"U8","shape":[4],"data_offsets":[4,8]}}}}"#),
    ];
    for case in &cases {
        assert_eq!(check(case.as_bytes()), FastVsSlow::FastAccepted, "{case}");
    }
}

#[test]
fn edge_cases_left_to_the_serde_path() {
    // Accepted by the serde path only: escapes.
    let slow_only: Vec<String> = vec![
        one(r#""a\u0062""#),
        one(r#""a\"b""#),
        one(r#""a\\b""#),
        one(r#""a\/b""#),
        r#"{"__metadata__":{"k\n":"v"}}"#.into(),
        r#"{"__metadata__":{"k":"v\t"}}"#.into(),
        r#"{"a":{"dtype":"U\u0038","shape":[4],"data_offsets":[0,4]}}"#.into(),
        r#"{"a":{"dty\u0070e":"U8","shape":[4],"data_offsets":[0,4]}}"#.into(),
        format!(r#"{{"\u005f_metadata__":null,"a":{U8_4}}}"#),
    ];
    for case in &slow_only {
        assert_eq!(
            check(case.as_bytes()),
            FastVsSlow::SlowOnlyAccepted,
            "{case}"
        );
    }

    let shape = |s: &str| format!(r#"{{"a":{{"dtype":"U8","shape":[{s}],"data_offsets":[0,1]}}}}"#);
    let rejected: Vec<String> = vec![
        // Numbers.
        shape("18446744073709551616"),
        shape("99999999999999999999"),
        shape("184467440737095516150"),
        shape("01"),
        shape("00"),
        shape("-1"),
        shape("-0"),
        shape("1.0"),
        shape("1e0"),
        shape("1E0"),
        shape("+1"),
        shape("1,"),
        shape(",1"),
        shape("1 1"),
        shape("\"1\""),
        shape("null"),
        shape("[1]"),
        shape("{}"),
        shape("0x1"),
        r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}"#.into(),
        r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[1]}}"#.into(),
        r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[]}}"#.into(),
        r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,0]}}"#.into(),
        r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,18446744073709551616]}}"#.into(),
        // Duplicates at every level, including one only visible after unescaping.
        format!(r#"{{"a":{U8_4},"a":{U8_4}}}"#),
        format!(r#"{{"a":{U8_4},"\u0061":{U8_4}}}"#),
        format!(r#"{{"a":{U8_4},"b":{U8_4},"a":{U8_4}}}"#),
        r#"{"__metadata__":null,"__metadata__":null}"#.into(),
        r#"{"__metadata__":{},"__metadata__":{}}"#.into(),
        r#"{"__metadata__":{"k":"v","k":"w"}}"#.into(),
        r#"{"__metadata__":{"k":"v","j":"x","k":"w"}}"#.into(),
        r#"{"a":{"dtype":"U8","dtype":"U8","shape":[4],"data_offsets":[0,4]}}"#.into(),
        r#"{"a":{"dtype":"U8","shape":[4],"shape":[4],"data_offsets":[0,4]}}"#.into(),
        r#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4],"data_offsets":[0,4]}}"#.into(),
        // Schema: unknown dtype, wrong types, missing and extra fields, size mismatch.
        r#"{"a":{"dtype":"u8","shape":[4],"data_offsets":[0,4]}}"#.into(),
        r#"{"a":{"dtype":"U8 ","shape":[4],"data_offsets":[0,4]}}"#.into(),
        r#"{"a":{"dtype":{"U8":null},"shape":[4],"data_offsets":[0,4]}}"#.into(),
        r#"{"a":{"dtype":"U8","shape":[4]}}"#.into(),
        r#"{"a":{}}"#.into(),
        r#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4],"x":{"y":[1,{}]}}}"#.into(),
        r#"{"a":["U8",[4],[0,4]]}"#.into(),
        r#"{"a":null}"#.into(),
        r#"{"a":{"dtype":"U8","shape":[5],"data_offsets":[0,4]}}"#.into(),
        r#"{"a":{"dtype":"F4","shape":[1],"data_offsets":[0,1]}}"#.into(),
        // u64::MAX elements of 8 bits overflow, even in a zero-size shape (SIZE-OVERFLOW).
        r#"{"a":{"dtype":"U8","shape":[0,18446744073709551615],"data_offsets":[0,0]}}"#.into(),
        r#"{"a":{"dtype":"U64","shape":[4294967296,4294967296],"data_offsets":[0,0]}}"#.into(),
        r#"{"__metadata__":{"k":1}}"#.into(),
        r#"{"__metadata__":{"k":null}}"#.into(),
        r#"{"__metadata__":[]}"#.into(),
        r#"{"__metadata__":"x"}"#.into(),
        r#"{"__metadata__":nullx}"#.into(),
        r#"{"__metadata__":nul}"#.into(),
        // Names that break a NAME rule: raw and escaped control characters, DEL, C1.
        one("\"a\u{1}b\""),
        one("\"a\nb\""),
        one(r#""a\u0000b""#),
        one("\"a\u{7f}b\""),
        one("\"a\u{85}b\""),
        // Syntax: trailing commas, junk, two objects, NUL padding, comments, missing pieces.
        format!(r#"{{"a":{U8_4},}}"#),
        r#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4],}}"#.into(),
        format!("{}x", one(r#""a""#)),
        format!("{}{{}}", one(r#""a""#)),
        format!("{}\0\0", one(r#""a""#)),
        "{}/**/".into(),
        "{".into(),
        "".into(),
        " ".into(),
        "[]".into(),
        "null".into(),
        r#"{"a""#.into(),
        r#"{"a":"#.into(),
        r#"{"a":{"dtype":"U8""#.into(),
        r#"{"a":{"dtype":"U8","shape":[4"#.into(),
        r#"{"a" {"dtype":"U8","shape":[4],"data_offsets":[0,4]}}"#.into(),
        r#"{'a':1}"#.into(),
        "{\u{a0}}".into(),
        "{\u{b}}".into(),
        "\u{c}{}".into(),
    ];
    for case in &rejected {
        assert_eq!(check(case.as_bytes()), FastVsSlow::BothRejected, "{case:?}");
    }
    // Not text: invalid UTF-8 and a byte-order mark never reach either path.
    assert_eq!(check(b"{\"\xff\":1}"), FastVsSlow::NotText);
    assert_eq!(check("\u{feff}{}".as_bytes()), FastVsSlow::NotText);
}

/// Headers with tens of thousands of tensors (the fast path's large-input duplicate check),
/// with and without one duplicate name, first, last or in the middle.
#[test]
fn many_tensors_and_one_duplicate() {
    let n = 40_000usize;
    let names: Vec<String> = (0..n).map(|i| format!("model.layers.{i}.w")).collect();
    let build = |names: &[String]| {
        let mut h = String::from("{");
        for (i, name) in names.iter().enumerate() {
            if i > 0 {
                h.push(',');
            }
            h.push_str(&format!(
                r#""{name}":{{"dtype":"U8","shape":[1],"data_offsets":[{i},{}]}}"#,
                i + 1
            ));
        }
        h.push('}');
        h
    };
    assert_eq!(check(build(&names).as_bytes()), FastVsSlow::FastAccepted);
    for (from, to) in [(0, n - 1), (n - 1, 0), (17_000, 23_456), (5, 6)] {
        let mut dup = names.clone();
        dup[to] = dup[from].clone();
        assert_eq!(
            check(build(&dup).as_bytes()),
            FastVsSlow::BothRejected,
            "{from} -> {to}"
        );
    }
}

/// Whatever path parses the header, `validate` gives the same warnings: a name that warns and
/// `__metadata__` null both reach the report through the fast path.
#[test]
fn warnings_through_the_fast_path() {
    let text = format!(r#"{{"__metadata__":null,"/a":{U8_4}}}"#);
    assert_eq!(check(text.as_bytes()), FastVsSlow::FastAccepted);
    let mut file = (text.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(text.as_bytes());
    file.extend_from_slice(&[0; 4]);
    let report = stcheck::validate(&file, &stcheck::Config::default()).expect("valid");
    let ids: Vec<(&str, u64)> = report
        .warnings()
        .iter()
        .map(|w| (w.rule().id(), w.offset()))
        .collect();
    let name_at = 8 + text.find("\"/a\"").expect("name") as u64;
    assert!(ids.contains(&("SCHEMA-METADATA-NULL", 8)), "{ids:?}");
    assert!(ids.contains(&("NAME-PATH", name_at)), "{ids:?}");
}

// ---------------------------------------------------------------------------------------------
// Generated headers

/// One generated tensor entry, before formatting.
#[derive(Debug, Clone)]
struct Entry {
    name: String,
    dtype: &'static str,
    shape: Vec<u64>,
    /// Added to the computed byte length (0 keeps the size right).
    skew: u64,
    /// Field order: a permutation of 0 (dtype), 1 (shape), 2 (data_offsets).
    order: [usize; 3],
}

/// Metadata keys and values.
type Pairs = Vec<(String, String)>;

/// How a generated header is laid out.
#[derive(Debug, Clone)]
struct Layout {
    /// Whitespace strings used between tokens, cycled.
    ws: Vec<&'static str>,
    /// `None`: no `__metadata__`; `Some((position, None))`: null; else a map.
    metadata: Option<(usize, Option<Pairs>)>,
    padding: &'static str,
}

const WS: [&str; 6] = ["", "", " ", "\n  ", "\t", "\r\n"];

fn dtype_name() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        40 => (0..Dtype::ALL.len()).prop_map(|i| Dtype::ALL[i].name()),
        1 => prop::sample::select(vec!["X", "u8", "BF16 ", ""]),
    ]
}

/// Names of every kind: plain ASCII, unicode, slashes and dots (path-like ones warn), invisible
/// and control characters, characters JSON escapes, and the empty name.
fn gen_name() -> impl Strategy<Value = String> {
    prop_oneof![
        30 => "[a-z0-9_.]{1,12}",
        15 => "[a-zA-Z0-9_./ é€\u{1F600}\u{200b}\u{202e}]{0,10}",
        2 => "[a.\"\\\\/\u{1}\u{7f}\u{85}\n]{0,4}",
        1 => Just("__metadata__".to_owned()),
    ]
}

fn entry() -> impl Strategy<Value = Entry> {
    let order = prop::sample::select(vec![
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ]);
    (
        gen_name(),
        dtype_name(),
        prop::collection::vec(prop_oneof![50 => 0u64..5, 1 => Just(u64::MAX)], 0..4),
        prop_oneof![40 => Just(0u64), 1 => 1u64..3],
        prop_oneof![4 => Just([0, 1, 2]), 1 => order],
    )
        .prop_map(|(name, dtype, shape, skew, order)| Entry {
            name,
            dtype,
            shape,
            skew,
            order,
        })
}

fn layout() -> impl Strategy<Value = Layout> {
    let pair = ("[a-z_]{0,6}", "[ -~é\"\\\\\n]{0,8}");
    (
        prop::collection::vec(prop::sample::select(WS.to_vec()), 1..6),
        prop::option::of((
            0usize..8,
            prop::option::weighted(0.8, prop::collection::vec(pair, 0..4)),
        )),
        prop::sample::select(vec!["", "   ", "\n", " \t "]),
    )
        .prop_map(|(ws, metadata, padding)| Layout {
            ws,
            metadata,
            padding,
        })
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// Format the entries as a header, tiling the data region in entry order.
fn format_header(entries: &[Entry], layout: &Layout) -> Vec<u8> {
    let mut ws = layout.ws.iter().cycle();
    let mut w = || *ws.next().expect("cycle");
    let mut items: Vec<String> = Vec::new();
    let mut offset = 0u64;
    for e in entries {
        let bits = Dtype::from_name(e.dtype).map_or(8, Dtype::bits);
        let mut shape = e.shape.clone();
        // Sub-byte dtypes need a whole number of bytes, unless this entry is meant to be off.
        if e.skew == 0
            && size::byte_length(Dtype::from_name(e.dtype).unwrap_or(Dtype::U8), &shape).is_err()
        {
            shape.push(4);
        }
        let elements = size::element_count(&shape).unwrap_or(1);
        let len = elements
            .checked_mul(bits)
            .map_or(1, |b| b / 8)
            .saturating_add(e.skew);
        let end = offset.saturating_add(len);
        let shape: Vec<String> = shape.iter().map(u64::to_string).collect();
        let fields = [
            format!("\"dtype\"{}:{}\"{}\"", w(), w(), e.dtype),
            format!(
                "\"shape\"{}:{}[{}]",
                w(),
                w(),
                shape.join(&format!(",{}", w()))
            ),
            format!("\"data_offsets\":[{offset},{}{end}{}]", w(), w()),
        ];
        let body: Vec<&str> = e.order.iter().map(|&i| fields[i].as_str()).collect();
        items.push(format!(
            "{}{}:{}{{{}}}",
            json_string(&e.name),
            w(),
            w(),
            body.join(&format!("{},", w()))
        ));
        offset = end;
    }
    if let Some((at, meta)) = &layout.metadata {
        let value = match meta {
            None => "null".to_owned(),
            Some(pairs) => {
                let kv: Vec<String> = pairs
                    .iter()
                    .map(|(k, v)| format!("{}:{}{}", json_string(k), w(), json_string(v)))
                    .collect();
                format!("{{{}{}}}", w(), kv.join(","))
            }
        };
        items.insert(
            (*at).min(items.len()),
            format!("\"__metadata__\"{}:{value}", w()),
        );
    }
    format!(
        "{}{{{}{}}}{}",
        w(),
        items.join(&format!(",{}", w())),
        w(),
        layout.padding
    )
    .into_bytes()
}

/// One random change to a header: overwrite, insert or delete bytes that matter to JSON.
#[derive(Debug, Clone)]
enum Mutation {
    Poke { at: usize, byte: u8 },
    Insert { at: usize, bytes: Vec<u8> },
    Delete { at: usize, len: usize },
    Duplicate { from: usize, len: usize, at: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let byte = prop_oneof![
        3 => prop::sample::select(b"{}[]\",:\\ 0123456789-+.eE\t\n\r\x00\x01\x7f\xff\xc3\xe2na".to_vec()),
        1 => any::<u8>(),
    ];
    prop_oneof![
        (any::<usize>(), byte.clone()).prop_map(|(at, byte)| Mutation::Poke { at, byte }),
        (any::<usize>(), prop::collection::vec(byte, 1..4))
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (any::<usize>(), 1usize..6).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), 1usize..40, any::<usize>())
            .prop_map(|(from, len, at)| Mutation::Duplicate { from, len, at }),
    ]
}

fn apply(h: &mut Vec<u8>, m: &Mutation) {
    let n = h.len();
    match m {
        Mutation::Poke { at, byte } => {
            if n > 0 {
                h[at % n] = *byte;
            }
        }
        Mutation::Insert { at, bytes } => {
            let at = at % (n + 1);
            h.splice(at..at, bytes.iter().copied());
        }
        Mutation::Delete { at, len } => {
            let at = at % (n + 1);
            let end = (at + len).min(n);
            h.drain(at..end);
        }
        Mutation::Duplicate { from, len, at } => {
            let from = from % (n + 1);
            let piece = h[from..(from + len).min(n)].to_vec();
            let at = at % (n + 1);
            h.splice(at..at, piece);
        }
    }
}

/// Canonical writer output: names and metadata with unicode and characters JSON escapes.
fn writer_header(
    tensors: &BTreeMap<String, (usize, Vec<u64>)>,
    metadata: &BTreeMap<String, String>,
) -> Option<Vec<u8>> {
    let data: Vec<(String, Dtype, Vec<u64>, Vec<u8>)> = tensors
        .iter()
        .map(|(name, (d, shape))| {
            let dtype = Dtype::ALL[*d];
            let mut shape = shape.clone();
            if size::byte_length(dtype, &shape).is_err() {
                shape.push(4);
            }
            let len = size::byte_length(dtype, &shape).unwrap_or(0);
            (
                name.clone(),
                dtype,
                shape,
                vec![0u8; usize::try_from(len).unwrap_or(0)],
            )
        })
        .collect();
    let specs: Vec<TensorSpec<'_>> = data
        .iter()
        .map(|(n, d, s, b)| TensorSpec::new(n, *d, s, b))
        .collect();
    let meta: Vec<(&str, &str)> = metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    // The writer refuses names that would warn or fail; those are covered elsewhere.
    write_header(&specs, &meta).ok().map(|(h, _)| h)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn writer_output_fast_equals_slow(
        tensors in prop::collection::btree_map(
            prop_oneof![
                9 => "[a-zA-Z0-9_./: é€\u{1F600}-]{1,12}",
                1 => "[a-zA-Z0-9_./:\"\\\\ é€\u{1F600}-]{1,12}",
            ],
            (0..Dtype::ALL.len(), prop::collection::vec(0u64..5, 0..4)),
            0..10,
        ),
        metadata in prop::collection::btree_map(
            prop_oneof![9 => "[a-z_é]{0,6}", 1 => "[a-z_é\"\\\\]{0,6}"],
            prop_oneof![9 => "[a-zA-Z0-9 _.,:;!?()é€{}-]{0,10}", 1 => "[ -~é€\n\"\\\\]{0,10}"],
            0..4,
        ),
        mutations in prop::collection::vec(mutation(), 0..3),
    ) {
        let Some(header) = writer_header(&tensors, &metadata) else {
            return Ok(());
        };
        let outcome = check(&header);
        prop_assert_ne!(outcome, FastVsSlow::BothRejected);
        assert_covered(&header, outcome);
        if !header.contains(&b'\\') {
            prop_assert_eq!(outcome, FastVsSlow::FastAccepted);
        }
        let mut mutated = header;
        for m in &mutations {
            apply(&mut mutated, m);
            check(&mutated);
        }
    }

    #[test]
    fn formatted_headers_fast_equals_slow(
        entries in prop::collection::vec(entry(), 0..8),
        layout in layout(),
        mutation in prop::option::of(mutation()),
    ) {
        let header = format_header(&entries, &layout);
        let outcome = check(&header);
        assert_covered(&header, outcome);
        if let Some(m) = &mutation {
            let mut mutated = header;
            apply(&mut mutated, m);
            let outcome = check(&mutated);
            assert_covered(&mutated, outcome);
        }
    }
}
