//! `--format github`: the workflow commands a GitHub Actions runner turns into annotations, one
//! per finding at its file (relative to the workspace, as the runner resolves it), with the
//! byte offset in the message, then the summary line.

use std::path::{Path, PathBuf};

use stcheck_testkit::cli::output;

use crate::stcheck;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .to_path_buf()
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().expect("a parent")).expect("mkdir");
    std::fs::copy(from, to).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
}

#[test]
fn one_annotation_per_finding_at_its_file() {
    let ws = Path::new(env!("CARGO_TARGET_TMPDIR")).join("github-workspace");
    let _ = std::fs::remove_dir_all(&ws);
    let root = repo();
    copy(
        &root.join("examples/duplicate-name.safetensors"),
        &ws.join("weights/a,b:c.safetensors"),
    );
    copy(
        &root.join("examples/model.safetensors"),
        &ws.join("weights/ok.safetensors"),
    );
    let set = root.join("corpus/invalid/index/shard-invalid");
    for name in [
        "model.safetensors.index.json",
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    ] {
        copy(&set.join(name), &ws.join("set").join(name));
    }
    copy(
        &root.join("corpus/valid/layout/misaligned-f32.safetensors"),
        &ws.join("warn.safetensors"),
    );
    let out = output(
        stcheck()
            .current_dir(&ws)
            .args(["--no-progress", "--format", "github", "."]),
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let mut lines: Vec<&str> = out.stdout.lines().collect();
    let summary = lines.pop().expect("a summary line");
    assert!(
        summary.starts_with("summary: 4 files: 2 valid, 2 invalid, 0 could not be checked ("),
        "{summary}"
    );
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "::error file=set/model-00002-of-00002.safetensors,line=1,title=DATA-TRUNCATED::\
             tensor \"b\": data region is 7 bytes, but the tensors need 8 (at offset 0x47)",
            "::error file=set/model.safetensors.index.json,line=1,title=INDEX-SHARD-INVALID::\
             shard \"model-00002-of-00002.safetensors\": tensor \"b\": shard is not a valid \
             safetensors file (at offset 0x59 in the index): DATA-TRUNCATED: tensor \"b\": data \
             region is 7 bytes, but the tensors need 8 (at offset 0x47)",
            "::error file=weights/a%2Cb%3Ac.safetensors,line=1,title=JSON-DUPLICATE-KEY::\
             tensor \"decoder.weight\": duplicate tensor name (at offset 0x4b)",
            "::warning file=warn.safetensors,line=1,title=LAYOUT-ALIGN::tensor \"b\": begin \
             offset 1 is not a multiple of the 4-byte element size of F32 (at offset 0x3d)",
        ]
    );
}

#[test]
fn a_path_not_checked_is_an_error_annotation() {
    let out = output(stcheck().current_dir(repo()).args([
        "--no-progress",
        "--format",
        "github",
        "examples/no-such.safetensors",
    ]));
    assert_eq!(out.code, 2);
    let first = out.stdout.lines().next().expect("a line");
    assert!(
        first.starts_with(
            "::error file=examples/no-such.safetensors,line=1,title=not checked::No such file"
        ),
        "{first}"
    );
}

#[test]
fn the_reference_profile_is_refused() {
    let out = output(stcheck().args([
        "--format",
        "github",
        "--profile",
        "reference",
        "x.safetensors",
    ]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("--format github needs the strict profile"),
        "{}",
        out.stderr
    );
}
