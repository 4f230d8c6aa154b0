//! Protocol additions of the third edition: a dedicated refusal code (an escaped exception is
//! a CRASH, never a refusal), a verdict-only accept (judged on the verdict alone and counted
//! apart), and every difference of a `WRONG_CONTENT` listed.

use std::path::{Path, PathBuf};
use std::process::Command;

use stcheck_conformance::corpus;

fn stconform(args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_stconform"))
        .arg("--corpus")
        .arg(corpus::default_corpus_dir())
        .args(["--no-known-failures", "--json"])
        .args(args)
        .env("XDG_CACHE_HOME", scratch().join("cache"))
        .output()
        .expect("stconform");
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (
        out.status.code(),
        json,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A shell-script adapter named `name` over the cases `runs`, with `extra` options.
fn shell(
    name: &str,
    runs: &[&str],
    extra: &[&str],
    script: &str,
) -> (Option<i32>, serde_json::Value, String) {
    let mut args = vec!["--adapter", name];
    for r in runs {
        args.extend(["--run", r]);
    }
    args.extend(extra);
    args.extend(["--", "sh", "-c", script, "x"]);
    stconform(&args)
}

fn scratch() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("verdicts")
}

/// (id, outcome, detail) of every case.
fn outcomes(results: &serde_json::Value) -> Vec<(String, String, String)> {
    results["cases"]
        .as_array()
        .map(|cases| {
            cases
                .iter()
                .map(|c| {
                    let s = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
                    (s("id"), s("outcome"), s("detail"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A Python reader whose every refusal is an uncaught exception (exit 1, a traceback).
const RAISES: &str = "import sys; data = open(sys.argv[1], 'rb').read(); \
                      raise ValueError('cannot read %d bytes' % len(data))";

#[test]
fn an_escaped_exception_is_a_crash_with_the_dedicated_refusal_code() {
    let reader = ["--", "python3", "-c", RAISES];
    let run = |extra: &[&str]| {
        let args: Vec<&str> = ["--adapter", "raises", "--run", "invalid/layout/*"]
            .iter()
            .chain(extra)
            .chain(&reader)
            .copied()
            .collect();
        stconform(&args)
    };
    // Protocol v1/v2: exit 1 is a refusal, so the exception passes every refuse case.
    let (_, old, err) = run(&[]);
    let old = outcomes(&old);
    assert!(!old.is_empty(), "{err}");
    assert!(old.iter().all(|(_, o, _)| o == "PASS"), "{old:?}");
    // With the dedicated refusal code, the same reader is a CRASH on every case.
    let (code, new, err) = run(&["--dedicated-refusal", "--max-startup-deaths", "0"]);
    let new = outcomes(&new);
    assert_eq!(new.len(), old.len(), "{err}");
    assert_eq!(code, Some(1), "{err}");
    for (id, outcome, detail) in &new {
        assert_eq!(outcome, "CRASH", "{id}: {detail}");
        assert!(detail.contains("not the refusal code 65"), "{id}: {detail}");
    }
    // A reader that refuses with exit 65 passes them.
    let (code, ok, err) = shell(
        "refuses",
        &["invalid/layout/*"],
        &["--dedicated-refusal"],
        "exit 65",
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(outcomes(&ok).iter().all(|(_, o, _)| o == "PASS"));
}

#[test]
fn a_verdict_only_reader_passes_on_its_verdicts_and_is_counted_apart() {
    // Accepts what is in valid/, refuses the rest; reports no tensors.
    let reader = r#"case "$1" in */valid/*) echo '{"verdict":"accept","tensors":null}'; exit 0;; esac; exit 65"#;
    let (code, results, err) = shell(
        "verdict-only",
        &["valid/dtype/*", "invalid/layout/*"],
        &[],
        reader,
    );
    assert_eq!(code, Some(0), "{err}");
    let all = outcomes(&results);
    let accepted: Vec<_> = all
        .iter()
        .filter(|(id, ..)| id.starts_with("valid/"))
        .collect();
    assert!(accepted.len() > 5, "{all:?}");
    for (id, outcome, detail) in &accepted {
        assert_eq!(outcome, "PASS", "{id}");
        assert!(detail.starts_with("verdict only"), "{id}: {detail}");
    }
    // The summary counts them apart from the passes that were compared.
    assert!(
        err.contains(&format!("PASS (verdict only) {}", accepted.len())),
        "{err}"
    );
    assert!(err.contains("passed on the verdict alone"), "{err}");
}

#[test]
fn wrong_content_lists_every_difference() {
    // Reads every tensor of valid/dtype/f32 with the wrong dtype and shape, and adds one.
    let reader = r#"echo '{"tensors":[{"name":"t","dtype":"I32","shape":["7"]},{"name":"ghost","dtype":"U8","shape":["1"]}]}'"#;
    let (code, results, err) = shell("misreads", &["valid/dtype/f32"], &[], reader);
    assert_eq!(code, Some(1), "{err}");
    let all = outcomes(&results);
    let [(_, outcome, detail)] = all.as_slice() else {
        panic!("{all:?}");
    };
    assert_eq!(outcome, "WRONG_CONTENT");
    let parts: Vec<&str> = detail.split("; ").collect();
    assert!(
        parts.iter().any(|p| p.contains("dtype \"I32\"")),
        "{detail}"
    );
    assert!(parts.iter().any(|p| p.contains("shape [7]")), "{detail}");
    assert!(
        parts
            .iter()
            .any(|p| p.contains("\"ghost\" that the file does not have")),
        "{detail}"
    );
}

#[test]
fn a_writer_that_adds_metadata_keys_gets_its_own_outcome() {
    // Adds "format": "pt" to the task's metadata, then writes honestly.
    let script = format!(
        "python3 -c 'import json, sys; t = json.load(open(sys.argv[1])); \
         t[\"metadata\"] = dict(t.get(\"metadata\") or {{}}, format=\"pt\"); \
         json.dump(t, open(sys.argv[2], \"w\"))' \"$1\" \"$2.task.json\" \
         && exec {} \"$2.task.json\" \"$2\"",
        env!("CARGO_BIN_EXE_writer-stcheck")
    );
    let out = Command::new(env!("CARGO_BIN_EXE_stwrite"))
        .args([
            "--adapter",
            "adds-format",
            "--no-known-failures",
            "--run",
            "dtype/f32",
            "--run",
            "metadata/several-unsorted",
            "--json",
            "--work",
        ])
        .arg(scratch().join("writer-work"))
        .args(["--", "sh", "-c", &script, "x"])
        .env("XDG_CACHE_HOME", scratch().join("cache"))
        .output()
        .expect("stwrite");
    let results: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let tasks = results["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 2, "{results}");
    for t in tasks {
        assert_eq!(t["outcome"], "ADDED_METADATA", "{t}");
        assert!(
            t["detail"]
                .as_str()
                .unwrap_or_default()
                .contains("\"format\""),
            "{t}"
        );
    }
    assert_eq!(out.status.code(), Some(0), "not a failure: {out:?}");
}

#[test]
fn a_reader_naming_an_honest_alternate_rule_passes() {
    // Every rejected case whose first rule has an honest alternate, or whose recipe lists one
    // of the readings below, is answered with that alternate (not the case's first rule).
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(corpus::default_corpus_dir().join("manifest.json"))
            .expect("manifest"),
    )
    .expect("json");
    let mut arms = String::new();
    let mut ids = Vec::new();
    let readings: &[(&str, &str)] = &[
        ("invalid/layout/zero-size-past-end", "DATA-TRUNCATED"),
        ("malformed/utf8/header-utf-16be-bom", "JSON-SYNTAX"),
        ("malformed/utf8/header-utf-32le-bom", "JSON-BOM"),
        ("invalid/layout/zero-size-at-max-u64", "DATA-TRUNCATED"),
        ("invalid/schema/shape-element-string", "SCHEMA-INTEGER"),
        ("invalid/schema/number-fraction", "SCHEMA-SHAPE"),
        (
            "invalid/schema/number-exponent-in-offsets",
            "SCHEMA-OFFSETS",
        ),
        ("invalid/schema/number-2pow64", "SIZE-MISMATCH"),
        ("invalid/schema/number-2pow64-in-offsets", "SIZE-MISMATCH"),
    ];
    for c in manifest["cases"].as_array().expect("cases") {
        let first = c["rules"][0].as_str().unwrap_or_default();
        let id = c["id"].as_str().expect("id");
        let honest = corpus::HONEST_ALTERNATES
            .iter()
            .find(|(rule, ..)| *rule == first)
            .map(|(_, other, _)| other[0])
            .or_else(|| readings.iter().find(|(i, _)| *i == id).map(|(_, r)| *r));
        let Some(rule) = honest.filter(|_| c["verdict"] == "reject") else {
            continue;
        };
        let listed: Vec<&str> = c["acceptable_rules"]
            .as_array()
            .expect("acceptable_rules")
            .iter()
            .filter_map(|r| r.as_str())
            .collect();
        assert!(listed.contains(&rule), "{id}: {listed:?}");
        arms.push_str(&format!(
            "*/{}) echo '{{\"rule\":\"{rule}\"}}'; exit 65;;\n",
            c["path"].as_str().expect("path")
        ));
        ids.push(id.to_owned());
    }
    assert!(ids.len() >= 14 + readings.len(), "{ids:?}");
    let script = format!("case \"$1\" in\n{arms}esac\nexit 3");
    let runs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let (code, results, err) = shell("honest", &runs, &[], &script);
    let all = outcomes(&results);
    assert_eq!(all.len(), ids.len(), "{err}");
    for (id, outcome, detail) in &all {
        assert_eq!(outcome, "PASS", "{id}: {detail}");
    }
    assert_eq!(code, Some(0), "{err}");
}
