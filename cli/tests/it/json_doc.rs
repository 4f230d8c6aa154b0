//! `docs/json-output.md` and the records the tool writes cannot drift apart: every key written
//! in a range of runs (valid, invalid, unreadable, not checked, verbose, deep, reference,
//! sharded, remote) is documented, and every documented key is written by one of them.
#![cfg(feature = "remote")]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use stcheck::write::{serialize, TensorSpec};
use stcheck::Dtype;
use stcheck_testkit::http;

use crate::BIN;

/// The keys each section of the document lists: backticked names in the first column of its
/// tables, and for the summary and not-checked records the `{"a", "b"}` list of its prose.
fn documented() -> BTreeMap<&'static str, BTreeSet<String>> {
    let text =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/json-output.md"))
            .expect("docs/json-output.md");
    let mut out: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut section = "";
    for line in text.lines() {
        if line.starts_with("## `\"file\"`") {
            section = "file";
        } else if line.starts_with("### A finding") {
            section = "finding";
        } else if line.starts_with("## `\"index\"`") {
            section = "index";
        } else if line.starts_with("## `\"not_checked\"`") {
            section = "not_checked";
        } else if line.starts_with("## `\"summary\"`") {
            section = "summary";
        } else if line.starts_with("## ") {
            section = "";
        }
        if section.is_empty() {
            continue;
        }
        let keys = out.entry(section).or_default();
        if let Some(first) = line.strip_prefix("| `") {
            let cell = first.split(" |").next().unwrap_or("");
            for k in format!("`{cell}").split(',') {
                let k = k.trim().trim_matches('`');
                if !k.is_empty() && !k.contains(' ') && section != "not_checked" {
                    keys.insert(k.to_owned());
                }
            }
        }
        if (section == "summary" || section == "not_checked") && line.starts_with("`{\"") {
            let list = line
                .trim_start_matches("`{")
                .split("}`")
                .next()
                .unwrap_or("");
            for k in list.split(',') {
                keys.insert(k.trim().trim_matches('"').to_owned());
            }
        }
    }
    out
}

fn run(dir: &Path, args: &[&str]) -> Vec<Value> {
    let out = Command::new(BIN)
        .arg("--json")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run stcheck");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

fn keys_of(v: &Value) -> impl Iterator<Item = String> + '_ {
    v.as_object().into_iter().flat_map(|m| m.keys().cloned())
}

#[derive(Default)]
struct Seen(BTreeMap<&'static str, BTreeSet<String>>);

impl Seen {
    fn finding(&mut self, f: &Value) {
        if f.is_object() && f.get("rule").is_some_and(|r| !r.is_null()) {
            self.0.entry("finding").or_default().extend(keys_of(f));
            if let Some(c) = f.get("cause") {
                self.finding(c);
            }
        }
    }

    fn file(&mut self, d: &Value) {
        self.0.entry("file").or_default().extend(keys_of(d));
        if let Some(e) = d.get("error") {
            self.finding(e);
        }
        for w in d["warnings"].as_array().into_iter().flatten() {
            self.finding(w);
        }
    }

    fn record(&mut self, line: &Value) {
        let d = &line["data"];
        match line["type"].as_str() {
            Some("file") => self.file(d),
            Some("index") => {
                let keys: Vec<String> = keys_of(d).collect();
                self.0.entry("index").or_default().extend(keys);
                for s in d["shards"].as_array().into_iter().flatten() {
                    if s["status"] == "missing" {
                        self.finding(&s["error"]);
                    } else {
                        self.file(s);
                    }
                }
                for f in d["errors"].as_array().into_iter().flatten() {
                    self.finding(f);
                }
            }
            Some("not_checked") => self.0.entry("not_checked").or_default().extend(keys_of(d)),
            Some("summary") => self.0.entry("summary").or_default().extend(keys_of(d)),
            other => panic!("unknown record type {other:?}"),
        }
    }
}

#[test]
fn every_key_written_is_documented_and_every_documented_key_is_written() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("json-doc");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("set")).expect("dir");
    let valid = serialize(
        &[TensorSpec::new(
            "w",
            Dtype::F32,
            &[2],
            &[0, 0, 0xc0, 0x7f, 0, 0, 0, 0],
        )],
        &[("format", "pt")],
    )
    .expect("valid");
    fs::write(dir.join("valid.safetensors"), &valid).expect("write");
    let mut dup = valid.clone();
    dup.push(0);
    fs::write(dir.join("trailing.safetensors"), dup).expect("write");
    let one = |name: &str| {
        serialize(&[TensorSpec::new(name, Dtype::U8, &[1], &[1])], &[]).expect("shard")
    };
    fs::write(dir.join("set/a.safetensors"), one("a")).expect("write");
    fs::write(dir.join("set/bad.safetensors"), [1u8, 2, 3]).expect("write");
    fs::write(
        dir.join("set/m.safetensors.index.json"),
        r#"{"metadata":{"total_size":1},"weight_map":{"a":"a.safetensors","b":"bad.safetensors","c":"gone.safetensors"}}"#,
    )
    .expect("write");
    let fifo = dir.join("fifo.safetensors");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    assert!(made, "mkfifo");

    let served = valid.clone();
    let shard = one("a");
    let index = br#"{"weight_map":{"a":"a.safetensors"}}"#.to_vec();
    // What the hub says about a file: its commit and LFS SHA-256 (`commit`, `etag`,
    // `lfs_sha256`).
    let hub = |r: http::Reply| {
        r.header("X-Repo-Commit", "0123456789abcdef0123456789abcdef01234567")
            .header("X-Linked-Etag", format!("\"{}\"", "ab".repeat(32)))
    };
    let server = http::Server::start(move |req| match req.path() {
        "/set/m.safetensors.index.json" => hub(http::serve_file(req, &index, true)),
        "/set/a.safetensors" => http::serve_file(req, &shard, true),
        // A file the server does not have: `read_error: "http_status"` with `http_status`.
        "/gone.safetensors" => http::Reply::new(404),
        // A file not in LFS: its X-Linked-Etag is a git blob id (`git_blob_id`).
        "/blob.safetensors" => http::serve_file(req, &served, true)
            .header("X-Linked-Etag", format!("\"{}\"", "b1".repeat(20))),
        _ => hub(http::serve_file(req, &served, true)),
    });
    let url = server.url("/valid.safetensors");
    let index_url = server.url("/set/m.safetensors.index.json");
    let gone_url = server.url("/gone.safetensors");
    let blob_url = server.url("/blob.safetensors");

    let mut seen = Seen::default();
    let runs: &[&[&str]] = &[
        &[
            "-v",
            "--sha256",
            "valid.safetensors",
            "trailing.safetensors",
            "missing.safetensors",
        ],
        &[
            "--compare-reference",
            "valid.safetensors",
            "trailing.safetensors",
        ],
        &[
            "--profile",
            "reference",
            "-v",
            "valid.safetensors",
            "trailing.safetensors",
        ],
        &["set/m.safetensors.index.json", "fifo.safetensors"],
        &[
            "--profile",
            "portable",
            "valid.safetensors",
            "set/m.safetensors.index.json",
        ],
        &[
            url.as_str(),
            index_url.as_str(),
            gone_url.as_str(),
            blob_url.as_str(),
        ],
        // The ids published for the file, compared with its SHA-256 (`published_sha256`).
        &["--sha256", url.as_str()],
    ];
    for args in runs {
        for line in run(&dir, args) {
            seen.record(&line);
        }
    }
    let docs = documented();
    for (section, keys) in &seen.0 {
        let doc = docs.get(section).cloned().unwrap_or_default();
        let undocumented: Vec<&String> = keys.difference(&doc).collect();
        assert!(
            undocumented.is_empty(),
            "{section}: keys written but not in docs/json-output.md: {undocumented:?}"
        );
    }
    for (section, keys) in &docs {
        let written = seen.0.get(section).cloned().unwrap_or_default();
        let unwritten: Vec<&String> = keys.difference(&written).collect();
        assert!(
            unwritten.is_empty(),
            "{section}: keys in docs/json-output.md that no run wrote: {unwritten:?}"
        );
    }
}
