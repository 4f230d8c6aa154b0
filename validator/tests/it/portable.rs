//! The portable profile (`stcheck::portable`, SPEC.md "Portable profile"): the reader table
//! loads and is consistent with the corpus, each behaviour has a file on both sides, refusals
//! are notes unless asked for, a refusal or crash that ends a reader's work hides its
//! misreadings, and the strict profile's verdicts do not change.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use stcheck::portable::{
    self, decode_uri_component, shard_name_refusal, Effect, IndexFacts, Options, PortableReport,
    ReaderTable,
};
use stcheck::reference::{verdict, Verdict};
use stcheck::{check_header_bytes as validate_header, validate, Config, Report, Rule, Severity};
use stcheck_testkit::corpus::Manifest;

fn table() -> &'static ReaderTable {
    ReaderTable::builtin().expect("corpus/readers.json loads")
}

/// A file from header text (padded with spaces to a multiple of 8) and data bytes.
fn file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut h = header.as_bytes().to_vec();
    h.resize(h.len().next_multiple_of(8), b' ');
    let mut f = (h.len() as u64).to_le_bytes().to_vec();
    f.extend_from_slice(&h);
    f.extend_from_slice(data);
    f
}

fn ent(name: &str, dtype: &str, shape: &str, begin: u64, end: u64) -> String {
    format!(r#""{name}":{{"dtype":"{dtype}","shape":[{shape}],"data_offsets":[{begin},{end}]}}"#)
}

fn strict(f: &[u8]) -> Report<'_> {
    validate(f, &Config::default()).unwrap_or_else(|e| panic!("strict rejects: {e}"))
}

fn all(f: &[u8]) -> PortableReport {
    portable::check_file(table(), &strict(f), &Options::all(table()))
}

fn only(readers: &[&str], f: &[u8]) -> PortableReport {
    let options = Options::readers(table(), readers).expect("readers");
    portable::check_file(table(), &strict(f), &options)
}

fn rules(r: &PortableReport) -> BTreeSet<&'static str> {
    r.findings().iter().map(|f| f.rule().id()).collect()
}

fn support<'r>(r: &'r PortableReport, reader: &str) -> &'r portable::ReaderSupport {
    r.support()
        .iter()
        .find(|s| s.reader().id() == reader)
        .unwrap_or_else(|| panic!("no support entry for {reader}"))
}

fn refused_by(r: &PortableReport) -> Vec<&str> {
    r.support()
        .iter()
        .filter(|s| !s.refusals().is_empty())
        .map(|s| s.reader().id())
        .collect()
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

// ---------------------------------------------------------------------------------------------
// The table.

#[test]
fn builtin_table_loads_and_names_the_probed_readers_and_versions() {
    let t = table();
    let ids: Vec<&str> = t.readers().iter().map(|r| r.id()).collect();
    assert_eq!(
        ids,
        [
            "hub-js",
            "mlx",
            "mlx-numpy",
            "python-numpy",
            "rust-safetensors"
        ]
    );
    assert!(t.behaviours().len() >= 15);
    for b in t.behaviours() {
        assert!(b.rule().is_portable(), "{}", b.id());
        assert_eq!(
            b.effect() == Effect::Refuse,
            b.rule() == Rule::PortableRefused
        );
        assert!(!b.observed().is_empty(), "{}", b.id());
    }
    // The versions are the ones the setup scripts install: a new pin re-opens every row.
    let py = fs::read_to_string(root().join("conformance/setup-python.sh")).expect("setup");
    let node = fs::read_to_string(root().join("conformance/setup-node.sh")).expect("setup");
    let pin = |text: &str, var: &str| -> String {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{var}=")))
            .unwrap_or_else(|| panic!("{var} not pinned"));
        line.split('"').nth(1).expect("quoted pin").to_owned()
    };
    let version = |id: &str| t.reader(id).expect(id).version().to_owned();
    assert_eq!(version("mlx"), pin(&py, "MLX_VERSION"));
    assert_eq!(version("mlx-numpy"), pin(&py, "NUMPY_VERSION"));
    assert_eq!(version("python-numpy"), pin(&py, "SAFETENSORS_VERSION"));
    assert_eq!(version("hub-js"), pin(&node, "HUB_VERSION"));
    let cargo = fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    assert!(cargo.contains(&format!(
        "safetensors = \"={}\"",
        version("rust-safetensors")
    )));
}

#[test]
fn table_errors_are_reported_not_panicked() {
    let good = portable::BUILTIN_TABLE;
    let bad = [
        (
            good.replacen("\"version\": \"1\"", "\"version\": \"2\"", 1),
            "version",
        ),
        (
            good.replacen("\"reader\": \"hub-js\"", "\"reader\": \"nope\"", 1),
            "unknown reader",
        ),
        (
            good.replacen(
                "\"version\": \"2.17.5\",\n      \"effect\"",
                "\"version\": \"2.17.4\",\n      \"effect\"",
                1,
            ),
            "re-probe",
        ),
        (
            good.replacen("\"rule\": \"PORTABLE-NAME\"", "\"rule\": \"NAME-PATH\"", 1),
            "PORTABLE-*",
        ),
        (
            good.replacen(
                "\"rule\": \"PORTABLE-NAME\"",
                "\"rule\": \"PORTABLE-REFUSED\"",
                1,
            ),
            "only a refusal",
        ),
        (
            good.replacen("\"kind\": \"rank\"", "\"kind\": \"rang\"", 1),
            "unknown condition",
        ),
        (
            good.replacen("\"min\": \"65\"", "\"min\": \"065\"", 1),
            "decimal",
        ),
        (
            good.replacen("\"min\": \"65\"", "\"min\": 65", 1),
            "invalid type",
        ),
        (
            good.replacen("\"dtypes\": [\"BF16\"]", "\"dtypes\": [\"bf16\"]", 1),
            "unknown dtype",
        ),
        (
            good.replacen("\"scope\": \"file\"", "\"scope\": \"all\"", 1),
            "scope",
        ),
        (
            good.replacen(
                "\"effect\": \"misread\"",
                "\"effect\": \"misread\", \"x\": 1",
                1,
            ),
            "unknown field",
        ),
        (
            good.replacen(
                "\"names\": [\"__proto__\"]}",
                "\"names\": [\"__proto__\"], \"min\": \"1\"}",
                1,
            ),
            "no field min",
        ),
        (
            good.replacen(
                "\"includes\": [\"mlx\"]",
                "\"includes\": [\"mlx-numpy\"]",
                1,
            ),
            "includes",
        ),
    ];
    for (text, why) in bad {
        assert_ne!(text, good, "the mutation for {why:?} did not apply");
        let e = ReaderTable::from_json(&text).expect_err(why);
        assert!(e.to_string().contains(why), "{why:?}: {e}");
    }
    assert!(ReaderTable::from_json("{").is_err());
    assert!(ReaderTable::from_json(good).is_ok());
}

#[test]
fn options_name_readers_of_the_table() {
    let t = table();
    let o = Options::readers(t, &["mlx", "hub-js"]).expect("known");
    assert_eq!(o.chosen(), ["hub-js", "mlx"]); // table order
    assert_eq!(
        Options::readers(t, &["hub-js", "tfjs"]).expect_err("unknown"),
        portable::ReaderError::Unknown("tfjs".into())
    );
    let none: [&str; 0] = [];
    assert_eq!(
        Options::readers(t, &none).expect_err("empty"),
        portable::ReaderError::Empty
    );
    assert_eq!(Options::all(t).chosen().len(), t.readers().len());
}

/// Every case a row cites exists (corpus manifest, large cases, or the probe cases), every
/// committed one matches the row's condition, and every committed near miss does not.
#[test]
fn rows_cite_cases_that_show_them() {
    let manifest = Manifest::load();
    let probes: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(root().join("conformance/probes/cases.json")).expect("cases.json"),
    )
    .expect("cases.json JSON");
    let mut committed = std::collections::BTreeMap::new();
    let mut known = BTreeSet::new();
    for c in &manifest.cases {
        committed.insert(c.id.clone(), c.path.clone());
        known.insert(c.id.clone());
    }
    for c in &manifest.large {
        known.insert(c.id.clone());
    }
    for c in probes["cases"].as_array().expect("cases") {
        known.insert(c["id"].as_str().expect("id").to_owned());
    }
    let mut checked = 0;
    for b in table().behaviours() {
        for (case, should) in b
            .cases()
            .iter()
            .map(|c| (c, true))
            .chain(b.near_misses().iter().map(|c| (c, false)))
        {
            assert!(known.contains(case), "{}: no case {case}", b.id());
            let Some(path) = committed.get(case) else {
                continue;
            };
            let f = fs::read(root().join("corpus").join(path)).expect("case file");
            let report = strict(&f);
            assert_eq!(b.matches_file(&report), should, "{}: {case}", b.id());
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} committed cases checked");
}

// ---------------------------------------------------------------------------------------------
// Each behaviour, on both sides.

#[test]
fn proto_tensor_is_a_misreading_for_the_hub_parser_only() {
    let h = format!(
        "{{{},{}}}",
        ent("__proto__", "F32", "1000", 0, 4000),
        ent("b", "F32", "2", 4000, 4008)
    );
    let f = file(&h, &[0; 4008]);
    let r = all(&f);
    assert_eq!(rules(&r), BTreeSet::from(["PORTABLE-NAME"]));
    let finding = &r.findings()[0];
    assert_eq!(
        (finding.reader(), finding.effect()),
        ("hub-js", Effect::Misread)
    );
    assert_eq!(finding.finding().tensor(), Some("__proto__"));
    assert_eq!(finding.finding().offset(), 9);
    assert!(finding
        .to_string()
        .starts_with("PORTABLE-NAME: tensor \"__proto__\": "));
    assert_eq!(support(&r, "hub-js").misreadings(), ["hub-js-proto-tensor"]);
    // Not for the other readers.
    assert!(only(&["mlx", "python-numpy", "rust-safetensors"], &f).is_portable());
    // The same name written with an escape.
    let h = format!(
        "{{{},{}}}",
        ent("\\u005f_proto__", "U8", "1", 0, 1),
        ent("b", "U8", "1", 1, 2)
    );
    assert_eq!(
        rules(&all(&file(&h, &[1, 2]))),
        BTreeSet::from(["PORTABLE-NAME"])
    );
    // The other members of Object.prototype, and near spellings, are read correctly.
    let names = [
        "constructor",
        "toString",
        "hasOwnProperty",
        "valueOf",
        "isPrototypeOf",
        "propertyIsEnumerable",
        "toLocaleString",
        "__defineGetter__",
        "__lookupSetter__",
        "prototype",
        "__proto__x",
        "__PROTO__",
        "_proto_",
    ];
    let entries: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| ent(n, "U8", "1", i as u64, i as u64 + 1))
        .collect();
    let f = file(&format!("{{{}}}", entries.join(",")), &[0; 13]);
    assert!(all(&f).is_portable());
}

#[test]
fn special_names_are_what_the_table_says() {
    assert_eq!(table().special_names(), BTreeSet::from(["__proto__"]));
    let (rule, message) = portable::special_name_warning("__proto__").expect("special");
    assert_eq!(rule, Rule::NameSpecial);
    assert_eq!(rule.severity(), Severity::Warning);
    assert!(message.contains("hub-js 2.17.5"), "{message}");
    for name in ["constructor", "toString", "__proto__ ", "", "__metadata__"] {
        assert!(portable::special_name(name).is_none(), "{name:?}");
    }
}

#[test]
fn dimensions_beyond_32_bits_are_misread_by_mlx_in_zero_size_tensors() {
    for (dim, hub_refuses) in [
        ("2147483648", false),
        ("4294967296", false),
        ("4294967297", true),
        ("9007199254740993", true),
    ] {
        let f = file(
            &format!("{{{}}}", ent("a", "U8", &format!("{dim},0"), 0, 0)),
            &[],
        );
        let r = all(&f);
        assert_eq!(rules(&r), BTreeSet::from(["PORTABLE-DIMENSION"]), "{dim}");
        assert_eq!(r.findings()[0].reader(), "mlx");
        assert_eq!(
            support(&r, "mlx-numpy").misreadings(),
            ["mlx-dimension-int32-zero-size"],
            "mlx-numpy reads through mlx"
        );
        assert_eq!(
            !support(&r, "hub-js").refusals().is_empty(),
            hub_refuses,
            "{dim}"
        );
        assert!(only(&["hub-js", "python-numpy"], &f).is_portable());
    }
    // The second dimension too.
    let f = file(
        &format!("{{{}}}", ent("a", "U8", "0,4294967297", 0, 0)),
        &[],
    );
    assert_eq!(rules(&all(&f)), BTreeSet::from(["PORTABLE-DIMENSION"]));
    // Near miss: 2^31 - 1.
    let f = file(
        &format!("{{{}}}", ent("a", "U8", "2147483647,0", 0, 0)),
        &[],
    );
    assert!(all(&f).is_portable());
    assert_eq!(all(&f).support_line(), "loads in: hub-js 2.17.5, mlx 0.32.4, mlx-numpy 2.4.6, python-numpy 0.8.0, rust-safetensors 0.8.0");
    // A tensor with elements and a dimension of 2^31 (2 GiB, checked from the header alone):
    // MLX refuses it, which is a note, not a finding.
    let h = format!("{{{}}}", ent("a", "U8", "2147483648", 0, 2147483648));
    let mut bytes = h.into_bytes();
    bytes.resize(bytes.len().next_multiple_of(8), b' ');
    let report = validate_header(&bytes, &Config::default()).expect("header");
    let r = portable::check_file(table(), &report, &Options::all(table()));
    assert!(r.is_portable());
    assert_eq!(refused_by(&r), ["mlx", "mlx-numpy"]);
}

#[test]
fn ranks_above_64() {
    let rank = |n: usize| {
        let shape = vec!["1"; n].join(",");
        file(&format!("{{{}}}", ent("a", "U8", &shape, 0, 1)), &[42])
    };
    let r = all(&rank(64));
    assert!(r.is_portable() && refused_by(&r).is_empty());
    for n in [65, 128] {
        let r = all(&rank(n));
        assert_eq!(rules(&r), BTreeSet::from(["PORTABLE-RANK"]), "{n}");
        assert_eq!(r.findings()[0].effect(), Effect::Misread);
        assert_eq!(r.findings()[0].reader(), "mlx-numpy");
        assert_eq!(refused_by(&r), ["python-numpy"]);
        assert!(only(&["mlx", "hub-js"], &rank(n)).is_portable());
    }
    for n in [129, 1000] {
        let r = all(&rank(n));
        assert_eq!(rules(&r), BTreeSet::from(["PORTABLE-RANK"]));
        assert_eq!(r.findings()[0].effect(), Effect::Crash);
        assert!(r.findings()[0].to_string().contains("crashes on it"));
    }
}

#[test]
fn dtypes_mlx_loads_as_u8_versus_dtypes_readers_refuse() {
    for d in ["F8_E4M3", "F8_E8M0"] {
        let f = file(&format!("{{{}}}", ent("t", d, "2", 0, 2)), &[1, 2]);
        let r = all(&f);
        assert_eq!(rules(&r), BTreeSet::from(["PORTABLE-DTYPE"]), "{d}");
        assert_eq!(refused_by(&r), ["python-numpy"], "{d}");
        assert!(only(&["hub-js", "python-numpy"], &f).is_portable());
    }
    let f = file(&format!("{{{}}}", ent("w", "F64", "1", 0, 8)), &[0; 8]);
    let r = all(&f);
    assert!(r.is_portable());
    assert_eq!(refused_by(&r), ["mlx", "mlx-numpy"]);
    assert_eq!(
        r.support_line(),
        "loads in: hub-js 2.17.5, python-numpy 0.8.0, rust-safetensors 0.8.0; \
         refused by: mlx 0.32.4 (dtype F64: tensor \"w\"), mlx-numpy 2.4.6 (dtype F64: tensor \"w\")"
    );
    let f = file(&format!("{{{}}}", ent("w", "BF16", "1", 0, 2)), &[0; 2]);
    assert_eq!(refused_by(&all(&f)), ["mlx-numpy", "python-numpy"]);
    let f = file(&format!("{{{}}}", ent("w", "U8", "1", 0, 1)), &[0]);
    assert!(refused_by(&all(&f)).is_empty());
}

#[test]
fn a_file_refusal_hides_the_misreadings_of_the_same_reader() {
    // MLX refuses the whole file for the F4 tensor before it would return the F8_E8M0 one as
    // U8 (observed on valid/writer/stcheck-all-dtypes).
    let h = format!(
        "{{{},{}}}",
        ent("a", "F4", "2", 0, 1),
        ent("b", "F8_E8M0", "1", 1, 2)
    );
    let f = file(&h, &[0, 0]);
    let r = all(&f);
    assert!(r.is_portable(), "{:?}", r.findings());
    assert_eq!(refused_by(&r), ["mlx", "mlx-numpy", "python-numpy"]);
    assert!(support(&r, "mlx").misreadings().is_empty());
    // A tensor-scope refusal does not: NumPy refuses one tensor, MLX still misreads another.
    let h = format!(
        "{{{},{}}}",
        ent("a", "BF16", "1", 0, 2),
        ent("b", "F8_E4M3", "1", 2, 3)
    );
    assert_eq!(
        rules(&all(&file(&h, &[0; 3]))),
        BTreeSet::from(["PORTABLE-DTYPE"])
    );
    // A crash of mlx-numpy does not happen when MLX refuses the file first.
    let shape = vec!["1"; 200].join(",");
    let h = format!(
        "{{{},{}}}",
        ent("a", "U8", &shape, 0, 1),
        ent("b", "F64", "1", 1, 9)
    );
    let r = all(&file(&h, &[0; 9]));
    assert!(r.is_portable(), "{:?}", r.findings());
}

#[test]
fn refusals_become_findings_only_when_asked() {
    let f = file(&format!("{{{}}}", ent("w", "F64", "1", 0, 8)), &[0; 8]);
    let mut options = Options::readers(table(), &["mlx"]).expect("mlx");
    assert!(portable::check_file(table(), &strict(&f), &options).is_portable());
    options.refusals_are_errors = true;
    let r = portable::check_file(table(), &strict(&f), &options);
    assert_eq!(rules(&r), BTreeSet::from(["PORTABLE-REFUSED"]));
    assert_eq!(r.findings()[0].effect(), Effect::Refuse);
}

#[test]
fn many_tensors_crash_the_hub_parser() {
    let header = |n: usize| {
        let entries: Vec<String> = (0..n)
            .map(|i| ent(&format!("t{i}"), "U8", "0", 0, 0))
            .collect();
        file(&format!("{{{}}}", entries.join(",")), &[])
    };
    let r = all(&header(123_502));
    assert_eq!(rules(&r), BTreeSet::from(["PORTABLE-TENSOR-COUNT"]));
    assert_eq!(r.findings()[0].effect(), Effect::Crash);
    assert!(all(&header(123_501)).is_portable());
}

#[test]
fn findings_are_capped_per_behaviour_and_counted() {
    let entries: Vec<String> = (0..30u64)
        .map(|i| ent(&format!("t{i:02}"), "F8_E4M3", "1", i, i + 1))
        .collect();
    let f = file(&format!("{{{}}}", entries.join(",")), &[0; 30]);
    let r = only(&["mlx"], &f);
    assert_eq!(r.findings().len(), portable::MAX_FINDINGS_PER_BEHAVIOUR);
    assert_eq!(r.omitted(), 30 - portable::MAX_FINDINGS_PER_BEHAVIOUR);
    assert!(!r.is_portable());
    let r = only(&["python-numpy"], &f);
    assert!(r.support()[0].refusals()[0].reason.ends_with("and 29 more"));
}

#[test]
fn header_length_conditions() {
    // 25,000,001 bytes of header: the Hub's parser refuses (a note); 25,000,000 it reads.
    let padded = |n: usize| {
        let mut h = b"{}".to_vec();
        h.resize(n, b' ');
        h
    };
    for (n, refused) in [(25_000_000, false), (25_000_001, true)] {
        let h = padded(n);
        let report = validate_header(&h, &Config::default()).expect("header");
        let r = portable::check_file(table(), &report, &Options::all(table()));
        assert!(r.is_portable());
        assert_eq!(refused_by(&r) == ["hub-js"], refused, "{n}");
    }
}

// ---------------------------------------------------------------------------------------------
// Sharded sets.

fn facts(entries: &[(&str, &str)]) -> IndexFacts {
    let mut f = IndexFacts::new();
    for (i, (t, s)) in entries.iter().enumerate() {
        f.push(*t, *s, 100 + i as u64);
    }
    f
}

fn set(index: &IndexFacts) -> PortableReport {
    portable::check_set(table(), index, &[], &Options::all(table()))
}

#[test]
fn proto_in_weight_map() {
    let r = set(&facts(&[("a", "s1"), ("__proto__", "s1")]));
    assert_eq!(rules(&r), BTreeSet::from(["PORTABLE-INDEX-NAME"]));
    assert_eq!(r.findings()[0].finding().offset(), 101);
    for name in ["constructor", "toString", "hasOwnProperty", "valueOf"] {
        assert!(set(&facts(&[(name, "s1")])).is_portable(), "{name}");
    }
    // A shard named __proto__ is fetched and read.
    assert!(set(&facts(&[("a", "__proto__"), ("b", "constructor")])).is_portable());
}

#[test]
fn weight_map_size_limits() {
    let big = |n: usize, width: usize| {
        let names: Vec<String> = (0..n)
            .map(|i| format!("{:x<width$}", format!("t{i}")))
            .collect();
        let mut f = IndexFacts::new();
        for (i, n) in names.iter().enumerate() {
            f.push(n.clone(), if i % 2 == 0 { "s1" } else { "s2" }, 0);
        }
        f
    };
    assert!(set(&big(200_000, 1)).is_portable());
    assert_eq!(
        rules(&set(&big(200_001, 1))),
        BTreeSet::from(["PORTABLE-INDEX-SIZE"])
    );
    // UTF-16 code units: 12 entries of a 1,999,998-unit key and a 2-unit shard name make
    // 24,000,000; one more unit is over. A character outside the BMP counts 2.
    let mut f = IndexFacts::new();
    for i in 0..12 {
        let mut key = format!("k{i}");
        key.push_str(&"x".repeat(1_999_998 - key.len()));
        f.push(key, "s1", 0);
    }
    assert_eq!(f.utf16_length(), 24_000_000);
    assert!(set(&f).is_portable());
    f.push("\u{1F600}", "s1", 0);
    assert_eq!(f.utf16_length(), 24_000_004);
    assert_eq!(rules(&set(&f)), BTreeSet::from(["PORTABLE-INDEX-SIZE"]));
}

#[test]
fn shard_count_and_names_are_refusals() {
    let many = |n: usize| {
        let mut f = IndexFacts::new();
        for i in 0..n {
            f.push(format!("t{i}"), format!("model-{i:05}.safetensors"), 0);
        }
        f
    };
    assert!(refused_by(&set(&many(10_000))).is_empty());
    let r = set(&many(10_001));
    assert!(r.is_portable());
    assert_eq!(refused_by(&r), ["hub-js"]);
    // A refusal of the index hides the misreadings of the same reader.
    let mut f = many(10_001);
    f.push("__proto__", "model-00000.safetensors", 0);
    let r = set(&f);
    assert!(r.is_portable(), "{:?}", r.findings());
    let r = set(&facts(&[("a", "%2e%2e")]));
    assert!(r.is_portable());
    assert!(r.support_line().contains("refused by: hub-js 2.17.5 (shard name \"%2e%2e\" (dot segment after percent-decoding))"), "{}", r.support_line());
}

/// The names of conformance/probes/cases.json and more, as Node 20's `decodeURIComponent` and
/// the Hub parser's checks treat them (the index cases are probed by probe_hub.mjs).
#[test]
fn percent_decoding_follows_javascript() {
    let cases: [(&str, Option<&str>); 18] = [
        ("model-00001-of-00002.safetensors", None),
        ("a%41.safetensors", None),
        ("a%2Fb.safetensors", None),
        ("caf%C3%A9.safetensors", None),
        ("a%2541.safetensors", None), // a%41, then aA
        ("%2e%2e", Some("dot segment")),
        ("%252e%252e", Some("dot segment")),
        ("%2e%2e%2fx.safetensors", Some("dot segment")),
        ("x%zz.safetensors", Some("malformed percent-encoding")),
        ("100%.safetensors", Some("malformed percent-encoding")),
        ("a%25.safetensors", Some("malformed percent-encoding")),
        ("%ED%A0%80.safetensors", Some("malformed percent-encoding")),
        ("%C0%AF.safetensors", Some("malformed percent-encoding")),
        ("%C3.safetensors", Some("malformed percent-encoding")),
        ("a%3Ab.safetensors", Some("scheme-like first path segment")),
        ("%2Fetc.safetensors", Some("absolute path")),
        ("a%5Cb.safetensors", Some("backslash")),
        ("a%00b.safetensors", Some("control character")),
    ];
    for (name, want) in cases {
        assert_eq!(shard_name_refusal(name, 5), want, "{name}");
    }
    assert_eq!(
        decode_uri_component("%F0%9F%98%80").as_deref(),
        Some("\u{1F600}")
    );
    assert_eq!(decode_uri_component("%f4%90%80%80"), None); // above U+10FFFF
    assert_eq!(decode_uri_component("%e2%82"), None); // cut short
    assert_eq!(decode_uri_component("%e2%82a"), None);
    assert_eq!(decode_uri_component("%"), None);
    assert_eq!(decode_uri_component("é%20x").as_deref(), Some("é x"));
    // Five rounds, as the reader: a name still escaped after five decodings is taken as is.
    let deep = format!("%{}2e%{}2e", "25".repeat(5), "25".repeat(5));
    assert_eq!(shard_name_refusal(&deep, 5), None);
    assert_eq!(shard_name_refusal(&deep, 6), Some("dot segment"));
}

#[test]
fn a_shard_misreading_is_reported_with_its_shard() {
    let h = format!(
        "{{{},{}}}",
        ent("__proto__", "U8", "1", 0, 1),
        ent("a", "U8", "1", 1, 2)
    );
    let shard = file(&h, &[1, 2]);
    let report = strict(&shard);
    let index = facts(&[("__proto__", "s1.safetensors"), ("a", "s1.safetensors")]);
    let r = portable::check_set(
        table(),
        &index,
        &[("s1.safetensors", &report)],
        &Options::all(table()),
    );
    let got: Vec<(&str, Option<&str>)> = r
        .findings()
        .iter()
        .map(|f| (f.rule().id(), f.shard()))
        .collect();
    assert_eq!(
        got,
        [
            ("PORTABLE-NAME", Some("s1.safetensors")),
            ("PORTABLE-INDEX-NAME", None)
        ]
    );
    assert!(r.findings()[0]
        .to_string()
        .starts_with("PORTABLE-NAME: shard \"s1.safetensors\": tensor \"__proto__\""));
}

// ---------------------------------------------------------------------------------------------
// The strict profile and the Rust crate.

/// Every committed case: (id, bytes).
fn corpus_files() -> Vec<(String, Vec<u8>)> {
    let manifest = Manifest::load();
    manifest
        .cases
        .iter()
        .map(|c| (c.id.clone(), c.bytes()))
        .collect()
}

/// The strict profile never reports a portable rule.
#[test]
fn strict_never_reports_portable_rules() {
    for (id, f) in corpus_files() {
        match validate(&f, &Config::default()) {
            Ok(r) => assert!(r.warnings().iter().all(|w| !w.rule().is_portable()), "{id}"),
            Err(e) => assert!(!e.rule().is_portable(), "{id}"),
        }
    }
}

/// The Rust crate, run here: it reads every file of the corpus that strict accepts with the
/// names, dtypes and shapes strict reports, so the table has no row for it.
#[test]
fn rust_crate_reads_every_accepted_case_as_strict_does() {
    let mut checked = 0;
    for (id, f) in corpus_files() {
        let Ok(report) = validate(&f, &Config::default()) else {
            continue;
        };
        let Verdict::Accept(tensors) = verdict(&f) else {
            panic!("{id}: the crate does not load it");
        };
        let mut ours: Vec<(String, String, Vec<u64>)> = report
            .tensors()
            .map(|t| {
                (
                    t.name.to_owned(),
                    t.dtype.name().to_owned(),
                    t.shape.to_vec(),
                )
            })
            .collect();
        let mut theirs: Vec<(String, String, Vec<u64>)> = tensors
            .into_iter()
            .map(|t| (t.name, t.dtype, t.shape))
            .collect();
        ours.sort();
        theirs.sort();
        assert_eq!(ours, theirs, "{id}");
        checked += 1;
    }
    assert!(checked >= 120, "only {checked}");
}
