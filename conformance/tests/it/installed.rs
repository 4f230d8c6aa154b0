//! The runners as a wheel installs them: programs in `PREFIX/bin` beside the bundled corpus
//! in `PREFIX/share`, run from elsewhere with `HOME` elsewhere and no cargo: nothing of the
//! checkout they were built from is used.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use stcheck_conformance::corpus::{self, archive};

/// A prefix with copies of the runners and the packed corpus, a home and a working directory.
fn install(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("installed-{name}"));
    let _ = fs::remove_dir_all(&dir);
    for d in ["prefix/bin", "home", "cwd"] {
        fs::create_dir_all(dir.join(d)).expect("scratch dir");
    }
    for exe in [
        env!("CARGO_BIN_EXE_stconform"),
        env!("CARGO_BIN_EXE_stwrite"),
        env!("CARGO_BIN_EXE_stcorpus"),
    ] {
        let to = dir
            .join("prefix/bin")
            .join(Path::new(exe).file_name().expect("name"));
        fs::copy(exe, to).expect("copy program");
    }
    archive::pack(
        &corpus::default_corpus_dir(),
        &dir.join("prefix/share/stcheck-conformance/stcheck-corpus.tar.gz"),
    )
    .expect("pack");
    dir
}

fn run(dir: &Path, program: &str, args: &[&str]) -> Output {
    Command::new(dir.join("prefix/bin").join(program))
        .args(args)
        .current_dir(dir.join("cwd"))
        .env_clear()
        .env("HOME", dir.join("home"))
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("run the installed program")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn an_installed_runner_lists_its_adapters_and_works_in_the_user_cache() {
    let dir = install("list");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("checkout")
        .to_string_lossy()
        .into_owned();
    for program in ["stconform", "stwrite"] {
        let o = run(&dir, program, &["list"]);
        assert!(o.status.success(), "{program} list: {}", text(&o));
        assert!(text(&o).contains("stcheck"), "{}", text(&o));
    }
    // A built-in script adapter of the checkout is refused with a reason, not started from
    // the build machine's path.
    let o = run(&dir, "stconform", &["--adapter", "python-safe-open"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("runs files of the stcheck checkout"),
        "{}",
        text(&o)
    );
    // The corpus is the bundled one, unpacked into the user cache directory.
    let o = run(&dir, "stconform", &["corpus"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("(bundled, release"), "{out}");
    assert!(!out.contains(&format!("{repo}/corpus ")), "{out}");
    assert!(dir.join("home/.cache/stcheck/corpus").is_dir());
    let mode = fs::metadata(dir.join("home/.cache/stcheck"))
        .expect("cache dir")
        .permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o700
    );
    // The writer runner's work directory is in the cache too.
    let o = run(
        &dir,
        "stwrite",
        &["--adapter", "fails", "--run", "dtype/bool", "--", "false"],
    );
    assert!(o.status.code().is_some(), "{}", text(&o));
    assert!(!text(&o).contains("Permission denied"), "{}", text(&o));
    assert!(dir.join("home/.cache/stcheck/stwrite-work/fails").is_dir());
}

#[test]
fn every_runner_tells_its_version_and_large_cases_need_no_toolchain() {
    let dir = install("version");
    for program in ["stconform", "stwrite", "stcorpus"] {
        let o = run(&dir, program, &["--version"]);
        assert!(o.status.success(), "{program}: {}", text(&o));
        let line = String::from_utf8_lossy(&o.stdout).into_owned();
        assert_eq!(
            line.trim(),
            format!(
                "{program} {} (corpus {}, manifest {})",
                env!("CARGO_PKG_VERSION"),
                corpus::CORPUS_VERSION,
                corpus::MANIFEST_VERSION
            )
        );
    }
    // The large cases from the bundled release's recipes, by the program alone.
    let o = run(&dir, "stcorpus", &["--large", "large"]);
    assert!(o.status.success(), "{}", text(&o));
    let large = dir.join("cwd/large");
    let manifest: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(corpus::default_corpus_dir().join("manifest.json")).expect("read"),
    )
    .expect("manifest");
    let listed = manifest["large"].as_array().expect("large cases");
    assert!(!listed.is_empty());
    for c in listed {
        let path = c["path"].as_str().expect("path");
        assert!(large.join(path).is_file(), "{path} not written");
    }
    // Hundreds of MB: not left behind.
    fs::remove_dir_all(&dir).expect("remove the large cases");
}
