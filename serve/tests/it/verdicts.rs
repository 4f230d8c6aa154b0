//! Every corpus file gets, through clamd and through HTTP, the verdict `stcheck --json` gives
//! the file, and over HTTP the very record `stcheck --json -` writes for its bytes.

use stcheck::ReadMode;
use stcheck_gate::options::RunOptions;
use stcheck_gate::{Gate, Place, Shown, Target, Via};
use stcheck_print::JsonLines;

use crate::support::{self, instream, post};

/// What `stcheck --json FILE` says of `path`: its status and the rule of its error.
fn file_verdict(gate: &Gate, path: &std::path::Path) -> (String, Option<String>) {
    let mut sink = JsonLines::new(Vec::new(), stcheck_print::Options::new(gate.profile()));
    let target = Target::File(path.to_path_buf());
    let done = gate.check(&target, 1, &|_: u64| {}, &mut sink);
    done.written.expect("written");
    let line: serde_json::Value =
        serde_json::from_slice(&sink.into_inner()).expect("one JSON line");
    let data = &line["data"];
    (
        data["status"].as_str().expect("status").to_owned(),
        data["error"]["rule"].as_str().map(str::to_owned),
    )
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
            (status, Some(rule)) if status == "invalid" => {
                counts[1] += 1;
                format!("stream: SAFETENSORS.{rule} FOUND")
            }
            other => panic!("{}: {other:?}", path.display()),
        };
        // Chunks of several sizes: the framing must not matter.
        let chunk = [1 << 16, 7, 1, 4096][i % 4];
        let got = instream(run.clamd(), &bytes, chunk);
        assert_eq!(got, expected_clamd, "clamd: {}", path.display());
        let (status, _) = file_verdict(&http_gate, path);
        let r = post(run.http(), query, &bytes);
        let record = r.json();
        assert_eq!(
            record,
            stdin_record(&http_gate, &bytes),
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
    assert!(counts.iter().all(|&n| n > 100), "{counts:?}");
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
