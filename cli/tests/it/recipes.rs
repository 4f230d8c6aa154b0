//! What a directory check sees, as the CI recipes use it: checkpoint names in any case, weight
//! files of other formats named (not passed unseen), and `--exclude`.

use std::path::{Path, PathBuf};
use std::process::Command;

use stcheck_testkit::cli::{output, Out};

use crate::BIN;

fn run(dir: &Path, args: &[&str]) -> Out {
    run_args(dir, &[&["--no-progress"], args].concat())
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
            "./pytorch_model.bin: not checked: another format than safetensors: a .bin file whose bytes are a Python pickle (protocol 2; loading one can run code)"
        ),
        "{}",
        out.stdout
    );
    assert!(out
        .stdout
        .contains("./gguf/model.Q4_K.gguf: not checked: another format than safetensors: a .gguf file whose bytes are a GGUF model file"));
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

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("repository root")
}

/// The README's GitHub Actions workflow: the path of stcheck's checkout and the command of the
/// step `id: stcheck`.
fn readme_workflow() -> (String, String) {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let start = readme
        .find("```yaml\nname: stcheck\n")
        .expect("the README's GitHub Actions workflow");
    let block = &readme[start..];
    let block = &block[..block[3..].find("```").expect("closing fence") + 3];
    let lines: Vec<&str> = block.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("repository: OWNER/stcheck"))
        .expect("the checkout of stcheck");
    let path = lines[at..]
        .iter()
        .find_map(|l| l.trim().strip_prefix("path: "))
        .expect("its path")
        .trim()
        .to_owned();
    let step = lines
        .iter()
        .position(|l| l.trim() == "id: stcheck")
        .expect("the stcheck step");
    let run = lines[step..]
        .iter()
        .find_map(|l| l.trim().strip_prefix("run: "))
        .expect("its run")
        .trim()
        .to_owned();
    (path, run)
}

/// Copy the files git tracks in this repository to `to` (as `actions/checkout` would).
fn checkout_to(to: &Path) {
    let root = repo_root();
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(&root)
        .output()
        .expect("git ls-files");
    assert!(out.status.success(), "git ls-files");
    for name in out.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let rel = Path::new(std::str::from_utf8(name).expect("a UTF-8 path"));
        let (src, dst) = (root.join(rel), to.join(rel));
        std::fs::create_dir_all(dst.parent().expect("parent")).expect("mkdir");
        let meta = std::fs::symlink_metadata(&src).expect("stat");
        if meta.file_type().is_symlink() {
            #[cfg(unix)]
            std::os::unix::fs::symlink(std::fs::read_link(&src).expect("readlink"), &dst)
                .expect("symlink");
        } else if meta.is_file() {
            std::fs::copy(&src, &dst).expect("copy");
        }
    }
}

/// The README's workflow, step by step in a workspace laid out as the runner lays it out:
/// the weights' repository at the root (`actions/checkout`), stcheck checked out where the
/// recipe puts it, then the step's own command. Only the weights are reported. (With the
/// workflow of f4c80cc, without `--exclude`, stcheck's own corpus was reported: 259 results.)
#[test]
fn the_readme_github_actions_workflow_reports_only_the_weights() {
    let (checkout, command) = readme_workflow();
    let ws = scratch("github-workspace");
    std::fs::write(ws.join("model.safetensors"), valid()).expect("write");
    std::fs::create_dir(ws.join("sharded")).expect("mkdir");
    let set = repo_root().join("corpus/valid/index/two-shards");
    for e in std::fs::read_dir(&set).expect("two-shards").flatten() {
        std::fs::copy(e.path(), ws.join("sharded").join(e.file_name())).expect("copy");
    }
    std::fs::copy(
        repo_root().join("examples/duplicate-name.safetensors"),
        ws.join("broken.safetensors"),
    )
    .expect("copy");
    checkout_to(&ws.join(&checkout));
    assert!(ws.join(&checkout).join("corpus/manifest.json").is_file());

    let (cmd, redirect) = command.split_once('>').expect("the step writes a file");
    let args: Vec<&str> = cmd.split_whitespace().collect();
    assert_eq!(args[0], "stcheck");
    let out = Command::new(BIN)
        .args(&args[1..])
        .current_dir(&ws)
        .output()
        .expect("run the step");
    std::fs::write(ws.join(redirect.trim()), &out.stdout).expect("write the SARIF");
    // The broken weight fails the job (after the upload); nothing else is reported.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sarif: serde_json::Value = serde_json::from_slice(&out.stdout).expect("SARIF");
    let run = &sarif["runs"][0];
    let results = run["results"].as_array().expect("results");
    assert_eq!(results.len(), 1, "{results:#?}");
    let text = serde_json::to_string(&sarif).expect("json");
    assert!(text.contains("broken.safetensors"));
    assert!(
        !text.contains(&checkout),
        "the checkout of stcheck was scanned"
    );

    // The same arguments in JSON: exactly the weights, the set with its shards.
    let mut json_args: Vec<&str> = args[1..].to_vec();
    let f = json_args
        .iter()
        .position(|a| *a == "sarif")
        .expect("--format sarif");
    json_args[f] = "json";
    let out = run_args(&ws, &json_args);
    let mut paths: Vec<String> = out
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] != "summary")
        .map(|v| v["data"]["path"].as_str().unwrap_or("").to_owned())
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "./broken.safetensors",
            "./model.safetensors",
            "./sharded/model.safetensors.index.json"
        ]
    );
}

fn run_args(dir: &Path, args: &[&str]) -> Out {
    output(crate::stcheck().args(args).current_dir(dir))
}

#[test]
fn exclude_leaves_out_what_matches() {
    let dir = scratch("exclude");
    for d in ["a/.cache", "vendor/models", "keep"] {
        std::fs::create_dir_all(dir.join(d)).expect("mkdir");
    }
    let mut bad = valid();
    bad.push(0); // DATA-TRAILING
    std::fs::write(dir.join("a/.cache/x.safetensors"), &bad).expect("write");
    std::fs::write(dir.join("vendor/models/y.safetensors"), &bad).expect("write");
    std::fs::write(dir.join("keep/z.safetensors"), valid()).expect("write");
    std::fs::write(dir.join("keep/tmp.safetensors"), &bad).expect("write");
    let out = run(&dir, &["."]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let out = run(
        &dir,
        &[
            "--exclude",
            ".cache/",
            "--exclude",
            "vendor/models",
            "--exclude",
            "keep/t*.safetensors",
            ".",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        out.stdout.lines().next(),
        Some("./keep/z.safetensors: ok (1 tensor, 2 parameters; U8 2)")
    );
    // Everything excluded is an empty directory, a failure unless allowed.
    let out = run(&dir, &["--exclude", "*.safetensors", "."]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    // A pattern that cannot be used is a usage error before anything is checked.
    let out = run(&dir, &["--exclude", "!keep", "."]);
    assert_eq!(out.code, 2);
    assert_eq!(out.stdout, "");
}

/// The pre-commit hooks pass only the staged files, with `--with-sets`: a commit of one shard
/// checks the set of its directory, and a commit of the index its shards.
#[test]
fn with_sets_a_staged_shard_or_index_checks_its_set() {
    let dir = scratch("with-sets");
    std::fs::create_dir(dir.join("set")).expect("mkdir");
    let set = repo_root().join("corpus/valid/index/two-shards");
    for e in std::fs::read_dir(&set).expect("two-shards").flatten() {
        std::fs::copy(e.path(), dir.join("set").join(e.file_name())).expect("copy");
    }
    let shard = "set/model-00002-of-00002.safetensors";
    let index = "set/model.safetensors.index.json";
    let out = run(&dir, &["--quiet", "--with-sets", "--", shard]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout.contains("summary: 1 file: 1 valid"),
        "{}",
        out.stdout
    );
    // The shard is replaced by a valid file of other tensors: valid alone, the set breaks.
    std::fs::write(dir.join(shard), valid()).expect("write");
    let alone = run(&dir, &["--quiet", "--", shard]);
    assert_eq!(alone.code, 0, "without --with-sets: {}", alone.stdout);
    for staged in [shard, index] {
        let out = run(&dir, &["--quiet", "--with-sets", "--", staged]);
        assert_eq!(out.code, 1, "{staged}: {}", out.stdout);
        assert!(
            out.stdout
                .starts_with("set/model.safetensors.index.json: error INDEX-"),
            "{staged}: {}",
            out.stdout
        );
    }
}
