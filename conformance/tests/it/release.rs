//! Corpus releases: the archive is the same bytes twice, describes itself, refuses edits, and
//! the runner runs from it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use stcheck_conformance::corpus::{self, archive};
use stcheck_testkit::corpus::Manifest;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("release-{name}"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

#[test]
fn the_archive_is_reproducible_and_describes_the_corpus() {
    let dir = scratch("pack");
    let src = corpus::default_corpus_dir();
    let a = archive::pack(&src, &dir.join("a.tar.gz")).expect("pack");
    let b = archive::pack(&src, &dir.join("b.tar.gz")).expect("pack");
    assert_eq!(a, b);
    assert_eq!(
        fs::read(dir.join("a.tar.gz")).expect("a"),
        fs::read(dir.join("b.tar.gz")).expect("b"),
        "the same bytes twice"
    );
    let m = Manifest::from_path(&src.join("manifest.json"));
    assert_eq!(a.corpus_version, corpus::CORPUS_VERSION);
    assert_eq!(a.manifest_version, corpus::MANIFEST_VERSION);
    assert_eq!(a.cases, m.cases.len());
    assert!(a.writer_tasks > 50, "{a:?}");

    // Unpacked, it checks out; edited, it does not.
    let (root, r) = archive::unpack(&dir.join("a.tar.gz"), &dir.join("cache")).expect("unpack");
    assert_eq!(r, a);
    assert!(root.ends_with(format!("stcheck-corpus-{}", a.corpus_version)));
    let case = root.join("invalid/layout/gap-between.safetensors");
    let mut bytes = fs::read(&case).expect("case");
    bytes.push(0);
    fs::write(&case, bytes).expect("edit");
    let err = archive::verify(&root).expect_err("an edited release");
    assert!(err.contains("damaged or edited"), "{err}");
    // The cached copy is damaged: unpacking again replaces it.
    let (_, again) = archive::unpack(&dir.join("a.tar.gz"), &dir.join("cache")).expect("again");
    assert_eq!(again, a);
}

#[test]
fn the_changelog_has_an_entry_for_the_corpus_version() {
    let text = fs::read_to_string(corpus::default_corpus_dir().join("CHANGELOG.md"))
        .expect("corpus/CHANGELOG.md");
    let first = text
        .lines()
        .find_map(|l| l.strip_prefix("## "))
        .expect("a version heading");
    assert_eq!(
        first,
        corpus::CORPUS_VERSION,
        "the newest entry comes first"
    );
}

#[test]
fn the_runners_run_from_an_archive_given_by_option_or_environment() {
    let dir = scratch("run");
    let file = dir.join("corpus.tar.gz");
    archive::pack(&corpus::default_corpus_dir(), &file).expect("pack");
    let run = |args: &[&str], env: Option<&Path>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_stconform"));
        c.args(args)
            .current_dir(&dir)
            .env("XDG_CACHE_HOME", dir.join("cache"));
        if let Some(p) = env {
            c.env("STCONFORM_CORPUS", p);
        }
        let out = c.output().expect("stconform");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let adapter = [
        "--adapter",
        "rejects-all",
        "--run",
        "invalid/layout/*",
        "--",
        "sh",
        "-c",
        "exit 1",
        "x",
    ];
    let with_option: Vec<&str> = ["--corpus", file.to_str().expect("utf-8")]
        .into_iter()
        .chain(adapter)
        .collect();
    let (code, out, err) = run(&with_option, None);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains(&format!("corpus {}", corpus::CORPUS_VERSION)),
        "{out}"
    );
    assert!(out.contains("PASS (no reason given)"), "{out}");
    let (code, out, err) = run(&adapter, Some(&file));
    assert_eq!(code, Some(0), "{out}{err}");
    // Not a corpus: a clear error.
    let (code, _, err) = run(&adapter, Some(&dir.join("cache")));
    assert_eq!(code, Some(2));
    assert!(
        err.contains("not a corpus") && err.contains("STCONFORM_CORPUS"),
        "{err}"
    );
    // The writer runner reads the same release's tasks.
    let out = Command::new(env!("CARGO_BIN_EXE_stwrite"))
        .args([
            "--corpus",
            file.to_str().expect("utf-8"),
            "prepare",
            "dtype/bool",
        ])
        .arg(dir.join("task"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .output()
        .expect("stwrite");
    assert!(out.status.success(), "{out:?}");
    assert!(dir.join("task/task.json").is_file());
}
