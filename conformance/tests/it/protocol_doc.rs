//! PROTOCOL.md's example adapter is the shipped file, and it works.

use std::path::Path;

#[test]
fn the_example_adapter_in_protocol_md_is_the_shipped_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(dir.join("PROTOCOL.md")).expect("PROTOCOL.md");
    let example =
        std::fs::read_to_string(dir.join("adapters/python/example_adapter.py")).expect("example");
    assert!(doc.contains(&format!("```python\n{example}```\n")));
    assert!(
        example.lines().count() <= 30,
        "the example should stay short"
    );
    assert!(doc.contains("(version 2)"));
}

/// Runs the example on a file written by stcheck's writer, where the conformance venv exists
/// (`conformance/setup-python.sh`); `run-all.sh` creates it before the tests run.
#[test]
fn the_example_adapter_accepts_a_valid_file_and_rejects_a_truncated_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = root.join("target/conformance-venv/bin/python");
    if !python.is_file() {
        eprintln!(
            "skipped: no {} (run conformance/setup-python.sh)",
            python.display()
        );
        return;
    }
    let file = stcheck::write::serialize(
        &[stcheck::write::TensorSpec::new(
            "w",
            stcheck::Dtype::U8,
            &[3],
            &[1, 2, 3],
        )],
        &[],
    )
    .expect("valid");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("protocol-example");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("ok.safetensors"), &file).expect("write");
    std::fs::write(dir.join("cut.safetensors"), &file[..file.len() - 1]).expect("write");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("adapters/python/example_adapter.py");
    let run = |name: &str| {
        std::process::Command::new(&python)
            .arg(&example)
            .arg(dir.join(name))
            .output()
            .expect("run python")
    };
    let ok = run("ok.safetensors");
    assert_eq!(ok.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&ok.stdout).expect("json");
    assert_eq!(v["tensors"][0]["shape"], serde_json::json!(["3"]));
    assert_eq!(
        v["tensors"][0]["sha256"],
        "039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81"
    );
    assert_eq!(run("cut.safetensors").status.code(), Some(1));

    // The persistent mode: one process, one reply line per request, in order.
    use std::io::Write as _;
    let mut child = std::process::Command::new(&python)
        .arg(&example)
        .arg("--persistent")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run python");
    {
        let mut stdin = child.stdin.take().expect("stdin");
        for (id, name) in [("ok", "ok.safetensors"), ("cut", "cut.safetensors")] {
            let req = serde_json::json!({"id": id, "path": dir.join(name), "kind": "file"});
            writeln!(stdin, "{req}").expect("write");
        }
    }
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0));
    let replies: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON reply per line"))
        .collect();
    assert_eq!(replies.len(), 2);
    assert_eq!(replies[0]["id"], "ok");
    assert_eq!(replies[0]["status"], "accept");
    assert_eq!(replies[0]["tensors"][0]["shape"], serde_json::json!(["3"]));
    assert_eq!(replies[1]["id"], "cut");
    assert_eq!(replies[1]["status"], "reject");
}
