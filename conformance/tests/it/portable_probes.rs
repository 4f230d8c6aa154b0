//! The reader table (`corpus/readers.json`) against what the readers were seen to do.
//!
//! `conformance/probes/run.sh` runs every reader of the table on every file strict accepts
//! (and on the sharded sets of `conformance/probes/cases.json`) and records, per reader and
//! case, whether it read the file as it is, misread it, refused it or crashed. This test, run
//! by that script (`cargo test -p stcheck-conformance --test portable_probes -- --ignored`),
//! checks that the portable profile's prediction for each reader and case is what the reader
//! did: no behaviour the table claims that was not observed, none observed that the table
//! lacks, every portable rejection backed by an observed misreading, and every row's cases
//! and near misses observed as the row says.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use stcheck::index::{check_index, MemorySource};
use stcheck::portable::{self, Effect, IndexFacts, Options, PortableReport, ReaderTable};
use stcheck::{Config, Dtype};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

fn json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn num(v: &Value) -> u64 {
    s(v).parse()
        .unwrap_or_else(|_| panic!("not a decimal string: {v}"))
}

/// One sharded set of `cases.json`: shards in index order, each with its tensors.
type Set = Vec<(String, Vec<(String, Dtype, Vec<u64>)>)>;

/// The set a `cases.json` case describes (the same rule as `probe_hub.mjs`).
fn set_of(c: &Value) -> Set {
    if let Some(shards) = c["shards"].as_array() {
        return shards
            .iter()
            .map(|sh| {
                let tensors = sh["tensors"]
                    .as_array()
                    .expect("tensors")
                    .iter()
                    .map(|t| (s(t).to_owned(), Dtype::F32, vec![10]))
                    .collect();
                (s(&sh["name"]).to_owned(), tensors)
            })
            .collect();
    }
    let g = &c["generate"];
    let (shards, count, width) = (
        num(&g["shards"]),
        num(&g["tensors"]),
        num(&g["name_length"]),
    );
    let mut out: Set = (1..=shards)
        .map(|j| {
            (
                format!("model-{j:05}-of-{shards:05}.safetensors"),
                Vec::new(),
            )
        })
        .collect();
    for i in 0..count {
        let mut name = format!("t{i}");
        while (name.len() as u64) < width {
            name.push('x');
        }
        out[(i % shards) as usize]
            .1
            .push((name, Dtype::U8, vec![0]));
    }
    out
}

/// The predicted effects of each reader on one subject.
type Prediction = BTreeMap<String, BTreeSet<Effect>>;

fn predict(table: &ReaderTable, reports: &[&PortableReport]) -> Prediction {
    let mut out = Prediction::new();
    for r in table.readers() {
        out.entry(r.id().to_owned()).or_default();
    }
    for report in reports {
        for sup in report.support() {
            let set = out.entry(sup.reader().id().to_owned()).or_default();
            for id in sup.misreadings() {
                let b = table
                    .behaviours()
                    .iter()
                    .find(|b| b.id() == id)
                    .expect("row");
                set.insert(b.effect());
            }
            if !sup.refusals().is_empty() {
                set.insert(Effect::Refuse);
            }
        }
    }
    out
}

/// Predictions for a sharded set, after checking it is strictly valid.
/// A shard file holding `tensors` with the bytes `data`, written here rather than by
/// `stcheck::write`, which refuses names that raise a strict warning (`__proto__` among them)
/// and so cannot write the sets whose point is such a name.
fn shard_file(tensors: &[(String, Dtype, Vec<u64>)], data: &[Vec<u8>]) -> Vec<u8> {
    let mut header = String::from("{");
    let mut offset = 0usize;
    for (i, ((name, dtype, shape), bytes)) in tensors.iter().zip(data).enumerate() {
        if i > 0 {
            header.push(',');
        }
        header.push_str(&format!(
            "{}:{{\"dtype\":\"{}\",\"shape\":{:?},\"data_offsets\":[{},{}]}}",
            serde_json::to_string(name).expect("name"),
            dtype.name(),
            shape,
            offset,
            offset + bytes.len()
        ));
        offset += bytes.len();
    }
    header.push('}');
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    for bytes in data {
        file.extend_from_slice(bytes);
    }
    file
}

fn predict_set(table: &ReaderTable, c: &Value) -> (Prediction, BTreeSet<String>) {
    let options = Options::all(table);
    let set = set_of(c);
    let mut source = MemorySource::new();
    let mut facts = IndexFacts::new();
    let mut weight_map = serde_json::Map::new();
    let mut shard_files = Vec::new();
    let mut total = 0u64;
    for (shard, tensors) in &set {
        let data: Vec<Vec<u8>> = tensors
            .iter()
            .map(|(_, d, shape)| vec![0u8; (shape.iter().product::<u64>() * d.bits() / 8) as usize])
            .collect();
        let bytes = shard_file(tensors, &data);
        for ((n, _, _), b) in tensors.iter().zip(&data) {
            facts.push(n.clone(), shard.clone(), 0);
            weight_map.insert(n.clone(), Value::String(shard.clone()));
            total += b.len() as u64;
        }
        source.insert(shard.clone(), bytes.clone());
        shard_files.push((shard.clone(), bytes));
    }
    let index = serde_json::json!({"metadata": {"total_size": total}, "weight_map": weight_map});
    // The strict check of the set. stcheck::index::check_index looks each weight_map entry up
    // in its shard's report with a linear search (quadratic in tensors per shard: hours in a
    // debug build for the 100,000-tensor shards here), so the large generated sets are taken
    // as valid by construction: the same generator's small sets are checked.
    if facts.entries().len() <= 20_000 {
        let index_bytes = serde_json::to_vec(&index).expect("index");
        let strict = check_index(&index_bytes, &source, &Config::default()).expect("index check");
        assert!(
            strict.is_valid(),
            "{}: the set is not strictly valid: {:?}",
            s(&c["id"]),
            strict.errors()
        );
    }
    let reports: Vec<stcheck::Report<'_>> = shard_files
        .iter()
        .map(|(_, b)| stcheck::validate(b, &Config::default()).expect("shard is valid"))
        .collect();
    let shards: Vec<(&str, &stcheck::Report<'_>)> = shard_files
        .iter()
        .zip(&reports)
        .map(|((n, _), r)| (n.as_str(), r))
        .collect();
    let result = portable::check_set(table, &facts, &shards, &options);
    (predict(table, &[&result]), rejected_by(&result))
}

/// The rules the portable profile rejects by.
fn rejected_by(r: &PortableReport) -> BTreeSet<String> {
    r.findings()
        .iter()
        .map(|f| f.rule().id().to_owned())
        .collect()
}

fn predict_report(
    table: &ReaderTable,
    report: &stcheck::Report<'_>,
) -> (Prediction, BTreeSet<String>) {
    let r = portable::check_file(table, report, &Options::all(table));
    (predict(table, &[&r]), rejected_by(&r))
}

fn predict_file(table: &ReaderTable, bytes: &[u8]) -> (Prediction, BTreeSet<String>) {
    predict_report(
        table,
        &stcheck::validate(bytes, &Config::default()).expect("strict accepts it"),
    )
}

fn predict_header(
    table: &ReaderTable,
    header: &str,
    data_len: u64,
) -> (Prediction, BTreeSet<String>) {
    let mut h = header.as_bytes().to_vec();
    h.resize(h.len().next_multiple_of(8), b' ');
    let report = stcheck::check_header_bytes(&h, &Config::default()).expect("strict accepts it");
    assert_eq!(report.data_len(), data_len, "data length");
    predict_report(table, &report)
}

fn effect_name(o: &str) -> Option<Effect> {
    match o {
        "misread" => Some(Effect::Misread),
        "crash" => Some(Effect::Crash),
        "refuse" => Some(Effect::Refuse),
        _ => None,
    }
}

#[test]
#[ignore = "needs conformance/probes/run.sh's observations"]
fn the_table_predicts_what_the_readers_did() {
    let table = ReaderTable::builtin().expect("table");
    let observed_dir = std::env::var_os("STCHECK_PROBES")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/probes/observed"));
    let large_dir = std::env::var_os("STCHECK_LARGE_DIR").map(PathBuf::from);

    // Observations, per reader.
    let mut observed: BTreeMap<String, BTreeMap<String, (String, String)>> = BTreeMap::new();
    for r in table.readers() {
        let path = observed_dir.join(format!("{}.json", r.id()));
        if !path.exists() {
            continue; // rust-safetensors: tests/portable.rs runs the crate itself
        }
        let v = json(&path);
        assert_eq!(
            s(&v["version"]),
            r.version(),
            "{}: probed version differs from the table's",
            r.id()
        );
        let results = v["results"].as_object().expect("results");
        let per = observed.entry(r.id().to_owned()).or_default();
        for (id, o) in results {
            per.insert(
                id.clone(),
                (s(&o["outcome"]).to_owned(), s(&o["detail"]).to_owned()),
            );
        }
    }
    assert!(
        ["hub-js", "mlx", "mlx-numpy", "python-numpy"]
            .iter()
            .all(|r| observed.contains_key(*r)),
        "observations missing in {}: run conformance/probes/run.sh",
        observed_dir.display()
    );

    // Predictions for every probed subject, and the portable verdict each subject carries.
    let mut predicted: BTreeMap<String, Prediction> = BTreeMap::new();
    let mut portable_reject: BTreeMap<String, bool> = BTreeMap::new();
    let corpus = root().join("corpus");
    let manifest = json(&corpus.join("manifest.json"));
    let probed: BTreeSet<&String> = observed.values().flat_map(|m| m.keys()).collect();
    let mut subjects = Vec::new();
    for (list, dir) in [
        ("cases", Some(corpus.clone())),
        ("large", large_dir.clone()),
    ] {
        for c in manifest[list].as_array().expect("cases") {
            let id = s(&c["id"]).to_owned();
            let Some(dir) = &dir else { continue };
            if c.get("expected").is_none() || !probed.contains(&id) {
                continue;
            }
            let bytes = fs::read(dir.join(s(&c["path"]))).expect("case file");
            subjects.push((id, c.clone(), predict_file(table, &bytes)));
        }
    }
    for c in json(&root().join("conformance/probes/cases.json"))["cases"]
        .as_array()
        .expect("cases")
    {
        let id = s(&c["id"]).to_owned();
        if !probed.contains(&id) {
            continue;
        }
        let prediction = match c.get("file") {
            Some(f) if f.get("zero_size_tensors").is_some() => {
                let entries: Vec<String> = (0..num(&f["zero_size_tensors"]))
                    .map(|i| format!(r#""t{i}":{{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}"#))
                    .collect();
                predict_header(table, &format!("{{{}}}", entries.join(",")), 0)
            }
            Some(f) => predict_header(table, s(&f["header"]), num(&f["data_length"])),
            None => predict_set(table, c),
        };
        subjects.push((id, c.clone(), prediction));
    }
    for (id, c, (p, rejected)) in subjects {
        let marked = c.get("portable").and_then(Value::as_str) == Some("reject");
        assert_eq!(
            marked,
            !rejected.is_empty(),
            "{id}: the case says portable {marked}, stcheck rejects by {rejected:?}"
        );
        portable_reject.insert(id.clone(), marked);
        predicted.insert(id, p);
    }

    let mut failures = Vec::new();
    let mut checked = 0;
    for (reader, results) in &observed {
        for (id, (outcome, detail)) in results {
            let Some(p) = predicted.get(id).and_then(|p| p.get(reader)) else {
                failures.push(format!("{reader} {id}: observed, but no prediction"));
                continue;
            };
            checked += 1;
            let ok = match (outcome.as_str(), effect_name(outcome)) {
                ("reads", _) => p.is_empty(),
                (_, Some(e)) => p.contains(&e),
                _ => false,
            };
            if !ok {
                failures.push(format!(
                    "{reader} {id}: observed {outcome} ({detail}); the table predicts {p:?}"
                ));
            }
        }
    }
    // Every portable rejection is backed by an observed misreading or crash.
    for (id, &marked) in &portable_reject {
        let backed = observed.values().any(|m| {
            m.get(id)
                .is_some_and(|(o, _)| matches!(o.as_str(), "misread" | "crash"))
        });
        if marked && !backed {
            failures.push(format!(
                "{id}: the portable profile rejects it, no reader was seen misreading it"
            ));
        }
        if !marked && backed {
            failures.push(format!(
                "{id}: a reader misread it, the portable profile accepts it"
            ));
        }
    }
    // Every row's cases show its effect, its near misses do not.
    for b in table.behaviours() {
        let Some(results) = observed.get(b.reader()) else {
            continue;
        };
        for case in b.cases() {
            match results.get(case) {
                Some((o, _)) if effect_name(o) == Some(b.effect()) => {}
                Some((o, d)) => {
                    failures.push(format!("{}: case {case}: observed {o} ({d})", b.id()))
                }
                None if large_dir.is_none() => {}
                None => failures.push(format!("{}: case {case} was not probed", b.id())),
            }
        }
        for case in b.near_misses() {
            match results.get(case) {
                Some((o, d)) if effect_name(o) == Some(b.effect()) => {
                    failures.push(format!("{}: near miss {case}: observed {o} ({d})", b.id()))
                }
                Some(_) => {}
                None if large_dir.is_none() => {}
                None => failures.push(format!("{}: near miss {case} was not probed", b.id())),
            }
        }
    }
    eprintln!(
        "portable_probes: {checked} observations of {} readers checked against {} rows",
        observed.len(),
        table.behaviours().len()
    );
    assert!(checked > 400, "only {checked} observations");
    assert!(
        failures.is_empty(),
        "{} mismatch(es) between the table and the readers:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
