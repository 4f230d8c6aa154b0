//! What a directory check sees, as the CI recipes use it: checkpoint names in any case, weight
//! files of other formats named (not passed unseen), and `--exclude`.

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_stcheck");

struct Out {
    code: i32,
    stdout: String,
}

fn run(dir: &Path, args: &[&str]) -> Out {
    let out = Command::new(BIN)
        .args(args)
        .arg("--no-progress")
        .current_dir(dir)
        .output()
        .expect("run stcheck");
    Out {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("recipes-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn valid() -> Vec<u8> {
    stcheck::write::serialize(
        &[stcheck::write::TensorSpec::new(
            "w",
            stcheck::Dtype::U8,
            &[2],
            &[1, 2],
        )],
        &[],
    )
    .expect("serialize")
}

#[test]
fn names_in_any_case_and_other_weight_formats_are_seen() {
    let dir = scratch("formats");
    std::fs::write(dir.join("Model.SAFETENSORS"), valid()).expect("write");
    std::fs::write(dir.join("pytorch_model.bin"), b"\x80\x02}q\x00.").expect("write");
    std::fs::create_dir(dir.join("gguf")).expect("mkdir");
    std::fs::write(dir.join("gguf/model.Q4_K.gguf"), b"GGUF\x03\x00\x00\x00").expect("write");
    std::fs::write(dir.join("config.json"), b"{}").expect("write");
    let out = run(&dir, &["."]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.stdout.contains("./Model.SAFETENSORS: ok"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(
            "./pytorch_model.bin: not checked: a weight file in another format: PyTorch pickle (.bin)"
        ),
        "{}",
        out.stdout
    );
    assert!(out
        .stdout
        .contains("./gguf/model.Q4_K.gguf: not checked: a weight file in another format: GGUF"));
    assert!(out
        .stdout
        .contains("--allow-other-formats accepts such files"));
    assert!(!out.stdout.contains("config.json"));
    let json = run(&dir, &["--json", "."]);
    assert!(
        json.stdout.contains(r#""reason":"other_format""#),
        "{}",
        json.stdout
    );
    let out = run(&dir, &["--allow-other-formats", "."]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout.contains("summary: 1 file: 1 valid"),
        "{}",
        out.stdout
    );
}
