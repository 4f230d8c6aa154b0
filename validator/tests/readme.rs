//! The README's quick-start command is run here, and its output must be what the README shows.

use std::path::Path;
use std::process::Command;

#[test]
fn readme_quick_start_output_matches() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let shown = readme
        .split("```text\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("README has a ```text block with the example output");
    let out = Command::new(env!("CARGO_BIN_EXE_stcheck"))
        .current_dir(&root)
        .args([
            "examples/model.safetensors",
            "examples/duplicate-name.safetensors",
        ])
        .output()
        .expect("run stcheck");
    assert_eq!(String::from_utf8_lossy(&out.stdout), shown);
    assert_eq!(out.status.code(), Some(1), "one example is invalid");
}
