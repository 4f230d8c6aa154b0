//! The README's quick-start command is run here, and its output must be what the README shows.

use std::path::Path;
use std::process::Command;

#[test]
fn readme_quick_start_output_matches() {
    let root = root();
    let shown = readme_block("```text\n");
    let out = Command::new(env!("CARGO_BIN_EXE_stcheck"))
        .current_dir(&root)
        .args([
            "examples/model.safetensors",
            "examples/duplicate-name.safetensors",
        ])
        .output()
        .expect("run stcheck");
    // The summary's elapsed time is the one thing that differs from run to run.
    assert_eq!(
        without_elapsed(&String::from_utf8_lossy(&out.stdout)),
        without_elapsed(&shown)
    );
    assert_eq!(out.status.code(), Some(1), "one example is invalid");
}

/// The text with the summary line's `(0.01 s)` replaced.
fn without_elapsed(text: &str) -> String {
    text.lines()
        .map(|l| match l.rfind(" (") {
            Some(i) if l.starts_with("summary: ") && l.ends_with(" s)") => {
                format!("{} (ELAPSED s)\n", &l[..i])
            }
            _ => format!("{l}\n"),
        })
        .collect()
}

/// The example of "What it prints", built and run: the two bundled examples, a corpus file with
/// a warning, and a FIFO.
#[cfg(unix)]
#[test]
fn readme_output_example_matches() {
    let root = root();
    let shown = readme_block("```text\n$ stcheck models\n");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("readme-example");
    let _ = std::fs::remove_dir_all(&dir);
    let models = dir.join("models");
    std::fs::create_dir_all(&models).expect("mkdir");
    for (from, to) in [
        ("examples/model.safetensors", "model.safetensors"),
        (
            "examples/duplicate-name.safetensors",
            "duplicate-name.safetensors",
        ),
        (
            "corpus/valid/layout/misaligned-f32.safetensors",
            "aligned.safetensors",
        ),
    ] {
        std::fs::copy(root.join(from), models.join(to)).expect("copy");
    }
    let fifo = Command::new("mkfifo")
        .arg(models.join("pipe.safetensors"))
        .status()
        .expect("mkfifo");
    assert!(fifo.success());
    let out = Command::new(env!("CARGO_BIN_EXE_stcheck"))
        .current_dir(&dir)
        .arg("models")
        .output()
        .expect("run stcheck");
    assert_eq!(
        without_elapsed(&String::from_utf8_lossy(&out.stdout)),
        without_elapsed(&shown)
    );
    assert_eq!(out.status.code(), Some(2));
}

/// The repository root.
fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The text of README.md's first block that starts with `opening`, up to its closing fence.
fn readme_block(opening: &str) -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    readme
        .split(opening)
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap_or_else(|| panic!("README has no block starting {opening:?}"))
        .to_owned()
}
