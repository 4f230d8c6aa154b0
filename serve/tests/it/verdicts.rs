//! Every corpus file gets, through clamd and through HTTP, the verdict `stcheck --json` gives
//! the file, and over HTTP the very record `stcheck --json -` writes for its bytes, which is
//! the file's record but for where it was read (`path`, `mode`) and, when the verdict came
//! before the end, the file's `size`.

use stcheck::ReadMode;
use stcheck_gate::options::RunOptions;
use stcheck_gate::{Gate, Place, Shown, Target, Via};
use stcheck_print::JsonLines;

use crate::support::{self, instream, post};

/// What `stcheck --json FILE` writes for `path`.
fn file_record(gate: &Gate, path: &std::path::Path) -> serde_json::Value {
    let mut sink = JsonLines::new(Vec::new(), stcheck_print::Options::new(gate.profile()));
    let target = Target::File(path.to_path_buf());
    let done = gate.check(&target, 1, &|_: u64| {}, &mut sink);
    done.written.expect("written");
    serde_json::from_slice(&sink.into_inner()).expect("one JSON line")
}

/// What `stcheck --json FILE` says of `path`: its status and the rule of its error.
fn file_verdict(gate: &Gate, path: &std::path::Path) -> (String, Option<String>) {
    let line = file_record(gate, path);
    let data = &line["data"];
    (
        data["status"].as_str().expect("status").to_owned(),
        data["error"]["rule"].as_str().map(str::to_owned),
    )
}

/// `record` with the tensor that the reference crate's message `invalid offset for tensor
/// NAME` names left out: the crate checks a header's tensors in its hash map's order, so of
/// two tensors at fault it names either, from one run to the next (corpus
/// `invalid/attack/aliased-tensors`).
fn settled(record: &serde_json::Value) -> serde_json::Value {
    let mut r = record.clone();
    for part in ["reference", "error"] {
        let message = r
            .get_mut("data")
            .and_then(|d| d.get_mut(part))
            .and_then(|p| p.get_mut("message"));
        if let Some(m) = message.filter(|m| {
            m.as_str()
                .is_some_and(|m| m.starts_with("invalid offset for tensor `"))
        }) {
            *m = "invalid offset for tensor `?`".into();
        }
    }
    r
}

/// A record without where it was read (`path`, `mode`) and its `size`, which a stream whose
/// verdict came before its end does not know.
fn apart_from_the_source(record: &serde_json::Value) -> serde_json::Value {
    let mut r = record.clone();
    if let Some(data) = r["data"].as_object_mut() {
        for key in ["path", "mode", "size"] {
            data.remove(key);
        }
    }
    r
}

/// What `stcheck --json -` writes for `bytes`, shown as the service shows a stream.
fn stdin_record(gate: &Gate, bytes: &[u8]) -> serde_json::Value {
    let mut sink = JsonLines::new(Vec::new(), stcheck_print::Options::new(gate.profile()));
    let at = Shown {
        text: "stream",
        place: Place::Stdin,
    };
    match stcheck::check_reader_with(bytes, gate.config(), &|_: u64| {}) {
        Ok(mut c) => {
            gate.checked(&at, &mut c, &Via::Local(ReadMode::Stream), &mut sink);
        }
        Err(e) => {
            stcheck_gate::not_checked(&at, &e, &mut sink);
        }
    }
    serde_json::from_slice(&sink.into_inner()).expect("one JSON line")
}

/// Every corpus file through clamd (checked with the service's options) and HTTP (with the
/// query's on top: `request`).
fn check_corpus(service: RunOptions, query: &str, request: RunOptions) {
    let files = support::corpus_files();
    assert!(files.len() > 300, "the corpus: {} files", files.len());
    let clamd_gate = Gate::new(service.clone()).expect("options");
    let http_gate = Gate::new(request).expect("options");
    let run = support::start_with(|s| s.options = service);
    let mut counts = [0u64; 4];
    for (i, path) in files.iter().enumerate() {
        let bytes = std::fs::read(path).expect("read");
        let expected_clamd = match file_verdict(&clamd_gate, path) {
            (status, _) if status == "valid" => {
                counts[0] += 1;
                "stream: OK".to_owned()
            }
            (status, rule) if status == "invalid" => {
                counts[1] += 1;
                // A file the reference crate rejects (the reference profile) has no rule.
                let rule = rule.as_deref().unwrap_or("REFERENCE-REJECT");
                format!("stream: SAFETENSORS.{rule} FOUND")
            }
            other => panic!("{}: {other:?}", path.display()),
        };
        // Chunks of several sizes: the framing must not matter.
        let chunk = [1 << 16, 7, 1, 4096][i % 4];
        let got = instream(run.clamd(), &bytes, chunk);
        assert_eq!(got, expected_clamd, "clamd: {}", path.display());
        let file = file_record(&http_gate, path);
        let status = file["data"]["status"].as_str().expect("status").to_owned();
        let r = post(run.http(), query, &bytes);
        let record = r.json();
        assert_eq!(
            settled(&record),
            settled(&stdin_record(&http_gate, &bytes)),
            "http: {}",
            path.display()
        );
        assert_eq!(
            settled(&apart_from_the_source(&record)),
            settled(&apart_from_the_source(&file)),
            "http: {}",
            path.display()
        );
        assert_eq!(
            record["data"]["status"],
            status.as_str(),
            "{}",
            path.display()
        );
        let code = if status == "valid" {
            counts[2] += 1;
            200
        } else {
            counts[3] += 1;
            422
        };
        assert_eq!(r.status, code, "{}", path.display());
    }
    assert!(counts.iter().all(|&n| n > 50), "{counts:?}");
    assert_eq!(
        run.server.verdicts(),
        (counts[0] + counts[2], counts[1] + counts[3], 0)
    );
}

#[test]
fn corpus_verdicts_as_the_command_line_gives_them() {
    check_corpus(RunOptions::default(), "", RunOptions::default());
}

#[test]
fn corpus_verdicts_with_the_querys_options() {
    let mut service = RunOptions::default();
    service.deny.push("LAYOUT-ALIGN".into());
    let mut request = service.clone();
    request.deep = true;
    request.sha256 = true;
    request.deny_nonfinite = true;
    check_corpus(service, "deep&sha256&deny_nonfinite=true", request);
}

#[test]
fn corpus_verdicts_under_the_reference_profile() {
    let mut service = RunOptions::default();
    service.profile = stcheck::Profile::Reference;
    check_corpus(service.clone(), "", service);
}

#[test]
fn corpus_verdicts_beside_the_reference_crates() {
    let mut request = RunOptions::default();
    request.compare_reference = true;
    check_corpus(RunOptions::default(), "compare-reference", request);
}
