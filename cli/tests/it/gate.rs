//! The gate fails closed (issue 9, the path side): links, names that are not UTF-8, special
//! files and empty runs. Every case is built at run time (links, FIFOs and such names cannot
//! live in git). Each run of the binary is bounded: a run that does not finish within
//! `HANG_LIMIT` is killed and the test fails, so a hang is a failure, never a stuck test.
//! The limit is only a hang guard, far above any real run; nothing here measures time.
//!
//! `STCHECK_GATE_BIN=/path/to/stcheck` runs these tests against another binary (to show that
//! each fails on a build without the fail-closed policy), and `STCHECK_GATE_HANG_SECS` lowers
//! the hang guard for such a run.
#![cfg(unix)]

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use stcheck::write::{serialize, TensorSpec};
use stcheck::Dtype;

fn bin() -> PathBuf {
    std::env::var_os("STCHECK_GATE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_stcheck")))
}

fn hang_limit() -> Duration {
    let secs = std::env::var("STCHECK_GATE_HANG_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    Duration::from_secs(secs)
}

/// A fresh, empty directory for one test.
fn tempdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("gate-{name}"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

#[derive(Debug)]
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn reader(mut r: impl Read + Send + 'static) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut v = Vec::new();
        let _ = r.read_to_end(&mut v);
        v
    })
}

/// Wait for `child`, killing it (by its own id) if it outlives the hang guard.
fn wait_bounded(child: &mut Child) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("wait for stcheck") {
            return Some(s);
        }
        if start.elapsed() > hang_limit() {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// Run stcheck in `dir`; fails the test if it hangs.
fn run<S: AsRef<OsStr>>(dir: &Path, args: &[S]) -> Out {
    let mut child = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn stcheck");
    let out = reader(child.stdout.take().expect("stdout"));
    let err = reader(child.stderr.take().expect("stderr"));
    let status = wait_bounded(&mut child);
    let stdout = String::from_utf8(out.join().expect("stdout reader")).expect("UTF-8 stdout");
    let stderr = String::from_utf8(err.join().expect("stderr reader")).expect("UTF-8 stderr");
    let shown: Vec<_> = args.iter().map(|a| a.as_ref().to_owned()).collect();
    let Some(status) = status else {
        panic!(
            "stcheck {shown:?} did not finish within {:?}: it hangs\nstdout so far:\n{stdout}",
            hang_limit()
        );
    };
    // The text output ends with a summary line (tests/it/cli.rs checks it); the verdicts here
    // are the lines above it.
    let stdout = match stdout.trim_end_matches('\n').rsplit_once('\n') {
        Some((body, last)) if last.starts_with("summary: ") => format!("{body}\n"),
        None if stdout.starts_with("summary: ") => String::new(),
        _ => stdout,
    };
    Out {
        code: status.code().expect("exited normally, not by a signal"),
        stdout,
        stderr,
    }
}

#[track_caller]
fn assert_starts(out: &Out, prefix: impl AsRef<str>) {
    let prefix = prefix.as_ref();
    assert!(
        out.stdout.starts_with(prefix),
        "stdout does not start with {prefix:?}:\n{}",
        out.stdout
    );
}

#[track_caller]
fn assert_contains(out: &Out, needle: impl AsRef<str>) {
    let needle = needle.as_ref();
    assert!(
        out.stdout.contains(needle),
        "stdout does not contain {needle:?}:\n{}",
        out.stdout
    );
}

fn json_lines(s: &str) -> Vec<Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

fn valid_file() -> Vec<u8> {
    serialize(&[TensorSpec::new("w", Dtype::F32, &[2], &[0u8; 8])], &[]).expect("serialize")
}

/// A file that stcheck rejects: `FRAME-SHORT`.
const REJECTED: &[u8] = &[1, 2, 3];

fn shard(name: &str) -> Vec<u8> {
    serialize(&[TensorSpec::new(name, Dtype::F32, &[1], &[0u8; 4])], &[]).expect("serialize")
}

/// An index naming `a` in `m-1.safetensors` and `b` in `m-2.safetensors` (4 bytes each).
const INDEX: &str =
    r#"{"metadata":{"total_size":8},"weight_map":{"a":"m-1.safetensors","b":"m-2.safetensors"}}"#;

fn write_set(dir: &Path) {
    fs::create_dir_all(dir).expect("mkdir");
    fs::write(dir.join("m-1.safetensors"), shard("a")).expect("write");
    fs::write(dir.join("m-2.safetensors"), shard("b")).expect("write");
    fs::write(dir.join("m.safetensors.index.json"), INDEX).expect("write");
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo")
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

/// The read modes and data options: a special file must be refused in every one.
const MODES: &[&[&str]] = &[
    &[],
    &["--no-mmap"],
    &["--stream"],
    &["--deep"],
    &["--compare-reference"],
    &["--json"],
];

fn with_mode<'a>(mode: &[&'a str], rest: &[&'a str]) -> Vec<&'a str> {
    mode.iter().chain(rest).copied().collect()
}

const FIFO_MESSAGE: &str =
    "not checked: not a regular file but a FIFO (named pipe); only regular files are read";

fn assert_not_checked_line(out: &Out, path: &str, message: &str, json: bool) {
    if json {
        let found = json_lines(&out.stdout).into_iter().any(|v| {
            v["type"] == "not_checked"
                && v["data"]["path"] == path
                && format!(
                    "not checked: {}",
                    v["data"]["message"].as_str().unwrap_or("")
                )
                .starts_with(message)
        });
        assert!(found, "no not_checked record for {path}:\n{}", out.stdout);
    } else {
        let line = format!("{path}: {message}");
        assert!(
            out.stdout.lines().any(|l| l.starts_with(&line)),
            "no line starting with {line:?}:\n{}",
            out.stdout
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Links in a walk.

#[test]
fn walk_link_to_a_rejected_file_leaving_the_root_fails_and_names_the_option() {
    let dir = tempdir("link-file");
    fs::create_dir_all(dir.join("repo")).expect("mkdir");
    fs::write(dir.join("bad.safetensors"), REJECTED).expect("write");
    symlink("../bad.safetensors", dir.join("repo/model.safetensors")).expect("symlink");
    let out = run(&dir, &["repo"]);
    assert_eq!(out.code, 2, "{out:?}");
    let target = fs::canonicalize(dir.join("bad.safetensors")).expect("realpath");
    assert_eq!(
        out.stdout,
        format!(
            "repo/model.safetensors: not checked: a symbolic link to {}, outside repo: not \
             followed (--follow-links follows links to regular files outside it)\n",
            target.display()
        )
    );
    // The report is complete on stdout.
    assert_eq!(out.stderr, "");
    // With the option, the link is followed and the file rejected.
    let out = run(&dir, &["--follow-links", "repo"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_starts(&out, "repo/model.safetensors: error FRAME-SHORT");
}

#[test]
fn walk_link_inside_the_root_is_followed_and_its_target_checked() {
    let dir = tempdir("link-inside");
    fs::create_dir_all(dir.join("repo/blobs")).expect("mkdir");
    fs::write(dir.join("repo/blobs/0123abcd"), REJECTED).expect("write");
    symlink("blobs/0123abcd", dir.join("repo/model.safetensors")).expect("symlink");
    let out = run(&dir, &["repo"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_starts(&out, "repo/model.safetensors: error FRAME-SHORT");
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
}

#[test]
fn walk_link_to_a_rejected_index_fails() {
    let dir = tempdir("link-index");
    fs::create_dir_all(dir.join("repo")).expect("mkdir");
    // The index names a shard that does not exist.
    fs::write(
        dir.join("bad.safetensors.index.json"),
        r#"{"weight_map":{"w":"gone.safetensors"}}"#,
    )
    .expect("write");
    symlink(
        "../bad.safetensors.index.json",
        dir.join("repo/model.safetensors.index.json"),
    )
    .expect("symlink");
    let out = run(&dir, &["--json", "repo"]);
    assert_eq!(out.code, 2, "{out:?}");
    let lines = json_lines(&out.stdout);
    assert_eq!(lines[0]["type"], "not_checked");
    assert_eq!(
        lines[0]["data"]["path"],
        "repo/model.safetensors.index.json"
    );
    assert_eq!(lines[0]["data"]["reason"], "link_leaves_root");
    assert!(
        lines[0]["data"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("--follow-links")),
        "{}",
        out.stdout
    );
    assert_eq!(lines[1]["type"], "summary");
    assert_eq!(lines[1]["data"]["not_checked"], 1);
    assert_eq!(lines[1]["data"]["exit_code"], 2);
    let out = run(&dir, &["--follow-links", "repo"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_starts(&out, "repo/model.safetensors.index.json: error INDEX-SHARD-MISSING: shard \"gone.safetensors\": no such file");
}

// ---------------------------------------------------------------------------------------------
// 2. Names that are not UTF-8.

#[test]
fn non_utf8_name_is_checked_and_shown_escaped() {
    let dir = tempdir("non-utf8");
    fs::create_dir_all(dir.join("repo")).expect("mkdir");
    let name = OsStr::from_bytes(b"m\xff\xfe.safetensors");
    fs::write(dir.join("repo").join(name), REJECTED).expect("write");
    let out = run(&dir, &["repo"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_starts(&out, "repo/m\\xff\\xfe.safetensors: error FRAME-SHORT");
    let out = run(&dir, &["--json", "repo"]);
    let lines = json_lines(&out.stdout);
    assert_eq!(lines[0]["data"]["path"], "repo/m\\xff\\xfe.safetensors");
    assert_eq!(lines[0]["data"]["error"]["rule"], "FRAME-SHORT");
    // A valid one is valid, not dropped.
    fs::write(dir.join("repo").join(name), valid_file()).expect("write");
    let out = run(&dir, &["repo"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_starts(&out, "repo/m\\xff\\xfe.safetensors: ok");
}

#[test]
fn non_utf8_name_counts_as_an_unlisted_shard() {
    let dir = tempdir("non-utf8-unlisted");
    write_set(&dir.join("set"));
    fs::write(
        dir.join("set")
            .join(OsStr::from_bytes(b"x\xff.safetensors")),
        shard("z"),
    )
    .expect("write");
    let out = run(&dir, &["--deny-warnings", "set/m.safetensors.index.json"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stdout,
        "set/m.safetensors.index.json: error INDEX-SHARD-UNLISTED: shard \"x\\\\xff.safetensors\": \
         a .safetensors file in the index's directory that the index does not name (at offset \
         0x0 in the index)\n  \
         shard set/m-1.safetensors: ok (1 tensor, 1 parameter; F32 1)\n  \
         shard set/m-2.safetensors: ok (1 tensor, 1 parameter; F32 1)\n"
    );
    let out = run(&dir, &["--json", "set/m.safetensors.index.json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let v = &json_lines(&out.stdout)[0];
    assert_eq!(v["data"]["warnings"][0]["rule"], "INDEX-SHARD-UNLISTED");
    assert_eq!(v["data"]["warnings"][0]["shard"], "x\\xff.safetensors");
}

#[test]
fn non_utf8_name_that_cannot_be_opened_fails() {
    let dir = tempdir("non-utf8-fifo");
    fs::create_dir_all(dir.join("repo")).expect("mkdir");
    mkfifo(
        &dir.join("repo")
            .join(OsStr::from_bytes(b"p\xfe.safetensors")),
    );
    symlink(
        "/nonexistent/target",
        dir.join("repo")
            .join(OsStr::from_bytes(b"q\xfd.safetensors")),
    )
    .expect("symlink");
    let out = run(&dir, &["repo"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stdout,
        format!(
            "repo/p\\xfe.safetensors: {FIFO_MESSAGE}\n\
             repo/q\\xfd.safetensors: not checked: a symbolic link to /nonexistent/target, \
             which does not exist\n"
        )
    );
}

// ---------------------------------------------------------------------------------------------
// 3. Checking nothing is not success.

const EMPTY_MESSAGE: &str = "not checked: no *.safetensors or *.safetensors.index.json file \
     found (--allow-empty accepts a directory with nothing to check)";

#[test]
fn empty_directory_fails_unless_allowed() {
    let dir = tempdir("empty");
    fs::create_dir_all(dir.join("repo/sub")).expect("mkdir");
    let out = run(&dir, &["repo"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stdout, format!("repo: {EMPTY_MESSAGE}\n"));
    let out = run(&dir, &["--json", "repo"]);
    let lines = json_lines(&out.stdout);
    assert_eq!(lines[0]["type"], "not_checked");
    assert_eq!(lines[0]["data"]["reason"], "empty");
    assert_eq!(lines[1]["data"]["not_checked"], 1);
    let out = run(&dir, &["--allow-empty", "repo"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "");
}

/// Issue 35: a walk names a file of another format by its bytes, not by its name alone: 4 KiB
/// of random bytes named `.bin` is not called a pickle, and a pickle of every protocol, torch's
/// ZIP, GGUF and ONNX are each called what they are.
#[test]
fn other_formats_are_named_by_their_bytes() {
    let dir = tempdir("formats-by-bytes");
    let mut random = Vec::with_capacity(4096);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while random.len() < 4096 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        random.extend_from_slice(&x.to_le_bytes());
    }
    let files: Vec<(&str, Vec<u8>, &str)> = vec![
        ("random.bin", random, "a .bin file whose first bytes match no format stcheck knows (by its name a PyTorch pickle (.bin))"),
        ("p2.bin", b"\x80\x02}q\x00.".to_vec(), "a .bin file whose bytes are a Python pickle (protocol 2;"),
        ("p3.pt", b"\x80\x03}q\x00.".to_vec(), "a .pt file whose bytes are a Python pickle (protocol 3;"),
        ("p4.pkl", b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00}\x94.".to_vec(), "a .pkl file whose bytes are a Python pickle (protocol 4;"),
        ("p5.ckpt", b"\x80\x05\x95\x05\x00\x00\x00\x00\x00\x00\x00}\x94.".to_vec(), "a .ckpt file whose bytes are a Python pickle (protocol 5;"),
        ("torch.pth", b"PK\x03\x04\x00\x00\x08\x08".to_vec(), "a .pth file whose bytes are a ZIP archive (the format of torch.save"),
        ("m.gguf", b"GGUF\x03\x00\x00\x00".to_vec(), "a .gguf file whose bytes are a GGUF model file"),
        ("m.onnx", b"\x08\x07\x12\x07pytorch\x1a\x032.1".to_vec(), "a .onnx file whose bytes are an ONNX model (protobuf)"),
        ("k.h5", b"\x89HDF\r\n\x1a\n\x00\x00".to_vec(), "a .h5 file whose bytes are an HDF5 file"),
    ];
    for (name, bytes, _) in &files {
        fs::write(dir.join(name), bytes).expect("write");
    }
    let out = run(&dir, &["."]);
    assert_eq!(out.code, 2, "{out:?}");
    for (name, _, said) in &files {
        let line = out
            .stdout
            .lines()
            .find(|l| {
                l.starts_with(&format!(
                    "./{name}: not checked: another format than safetensors: "
                ))
            })
            .unwrap_or_else(|| panic!("no line for {name}: {}", out.stdout));
        assert!(line.contains(said), "{name}: {line}");
    }
    // Named directly, the random file is checked as safetensors, as before.
    let out = run(&dir, &["random.bin"]);
    assert_eq!(out.code, 1, "{out:?}");
}

#[test]
fn directory_with_only_pytorch_model_bin_fails() {
    let dir = tempdir("only-bin");
    fs::create_dir_all(dir.join("repo")).expect("mkdir");
    fs::write(dir.join("repo/pytorch_model.bin"), b"PK\x03\x04").expect("write");
    fs::write(dir.join("repo/config.json"), b"{}").expect("write");
    // Another directory with a valid file does not make this one non-empty.
    fs::create_dir_all(dir.join("other")).expect("mkdir");
    fs::write(dir.join("other/m.safetensors"), valid_file()).expect("write");
    // The pickle is named (issue 22: it used to pass unseen when next to weights).
    let out = run(&dir, &["other", "repo"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_starts(&out, "other/m.safetensors: ok");
    assert!(
        out.stdout.contains(
            "repo/pytorch_model.bin: not checked: another format than safetensors: a .bin file whose bytes are a ZIP archive (the format of torch.save"
        ),
        "{}",
        out.stdout
    );
    // Accepted by name, it leaves the directory with nothing to check: still a failure.
    let out = run(&dir, &["--allow-other-formats", "other", "repo"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stdout.ends_with(&format!("repo: {EMPTY_MESSAGE}\n")),
        "{}",
        out.stdout
    );
}

#[test]
fn tree_of_only_unfollowed_links_fails() {
    let dir = tempdir("only-links");
    fs::create_dir_all(dir.join("repo/sub")).expect("mkdir");
    fs::create_dir_all(dir.join("elsewhere")).expect("mkdir");
    fs::write(dir.join("elsewhere/x.safetensors"), valid_file()).expect("write");
    symlink("../elsewhere/x.safetensors", dir.join("repo/a.safetensors")).expect("symlink");
    symlink("../../elsewhere", dir.join("repo/sub/dir")).expect("symlink");
    let out = run(&dir, &["repo"]);
    assert_eq!(out.code, 2, "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    assert!(
        lines[0].starts_with("repo/a.safetensors: not checked: a symbolic link to "),
        "{}",
        out.stdout
    );
    assert!(
        lines[1].starts_with("repo/sub/dir: not checked: a symbolic link to the directory "),
        "{}",
        out.stdout
    );
    assert!(
        lines[1].contains(", outside repo: not walked"),
        "{}",
        out.stdout
    );
}

// ---------------------------------------------------------------------------------------------
// 4. Special files never block.

#[test]
fn fifo_named_directly_is_refused_in_every_mode() {
    let dir = tempdir("fifo-direct");
    mkfifo(&dir.join("p.safetensors"));
    mkfifo(&dir.join("p.safetensors.index.json"));
    for mode in MODES {
        let json = mode.contains(&"--json");
        for name in ["p.safetensors", "p.safetensors.index.json"] {
            let out = run(&dir, &with_mode(mode, &[name]));
            assert_eq!(out.code, 2, "{mode:?} {name}: {out:?}");
            assert_not_checked_line(&out, name, FIFO_MESSAGE, json);
        }
    }
}

#[test]
fn fifo_met_in_a_walk_is_refused_in_every_mode() {
    let dir = tempdir("fifo-walk");
    fs::create_dir_all(dir.join("repo")).expect("mkdir");
    fs::write(dir.join("repo/a.safetensors"), valid_file()).expect("write");
    mkfifo(&dir.join("repo/b.safetensors"));
    for mode in MODES {
        let json = mode.contains(&"--json");
        let out = run(&dir, &with_mode(mode, &["repo"]));
        assert_eq!(out.code, 2, "{mode:?}: {out:?}");
        assert_not_checked_line(&out, "repo/b.safetensors", FIFO_MESSAGE, json);
        if !json {
            assert!(
                out.stdout.starts_with("repo/a.safetensors: ok"),
                "{mode:?}: {}",
                out.stdout
            );
        }
    }
}

#[test]
fn fifo_named_as_a_shard_is_refused_in_every_mode() {
    let dir = tempdir("fifo-shard");
    write_set(&dir.join("set"));
    fs::remove_file(dir.join("set/m-2.safetensors")).expect("rm");
    mkfifo(&dir.join("set/m-2.safetensors"));
    let message = "set/m.safetensors.index.json: error INDEX-SHARD-MISSING: shard \
                   \"m-2.safetensors\": not a regular file but a FIFO (named pipe); only \
                   regular files are read";
    for mode in MODES {
        let out = run(&dir, &with_mode(mode, &["set/m.safetensors.index.json"]));
        assert_eq!(out.code, 1, "{mode:?}: {out:?}");
        if mode.contains(&"--json") {
            let v = &json_lines(&out.stdout)[0];
            assert_eq!(v["data"]["errors"][0]["rule"], "INDEX-SHARD-MISSING");
            assert_eq!(v["data"]["shards"][1]["status"], "missing");
        } else {
            assert!(out.stdout.starts_with(message), "{mode:?}: {}", out.stdout);
        }
    }
    // The same FIFO reached through a link inside the directory.
    fs::rename(dir.join("set/m-2.safetensors"), dir.join("set/pipe")).expect("mv");
    symlink("pipe", dir.join("set/m-2.safetensors")).expect("symlink");
    let out = run(&dir, &["set/m.safetensors.index.json"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_starts(&out, message);
    // And in a walk: the index's verdict, and the FIFO itself as not checked.
    let out = run(&dir, &["set"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_not_checked_line(&out, "set/m-2.safetensors", FIFO_MESSAGE, false);
    assert_contains(&out, message);
}

#[test]
fn sockets_and_devices_are_refused_even_through_followed_links() {
    let dir = tempdir("special");
    fs::create_dir_all(dir.join("repo")).expect("mkdir");
    let _listener =
        std::os::unix::net::UnixListener::bind(dir.join("repo/s.safetensors")).expect("bind");
    symlink("/dev/zero", dir.join("repo/z.safetensors")).expect("symlink");
    let out = run(&dir, &["--follow-links", "repo"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stdout,
        "repo/s.safetensors: not checked: not a regular file but a socket; only regular files \
         are read\n\
         repo/z.safetensors: not checked: not a regular file but a character device; only \
         regular files are read\n"
    );
}

#[test]
fn lines_printed_before_a_stall_survive_a_kill() {
    let dir = tempdir("flush");
    fs::write(dir.join("a.safetensors"), valid_file()).expect("write");
    // Standard input that never ends: the run stalls on it after checking a.safetensors.
    let mut child = Command::new(bin())
        .args(["-j", "1", "a.safetensors", "-"])
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn stcheck");
    let stdin = child.stdin.take();
    let mut stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    let t = thread::spawn(move || {
        let mut buf = [0u8; 256];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let expected = b"a.safetensors: ok (1 tensor, 2 parameters; F32 2)\n";
    let mut seen = Vec::new();
    let deadline = Instant::now() + hang_limit();
    while seen.len() < expected.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(chunk) => seen.extend(chunk),
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    drop(stdin);
    let _ = t.join();
    assert_eq!(
        String::from_utf8_lossy(&seen),
        String::from_utf8_lossy(expected),
        "the line of the file checked before the stall was not written out"
    );
}

/// Standard input that never ends after a valid file: every mode answers at once, the strict
/// modes with DATA-TRAILING and the reference verdict with the crate's length error, instead of
/// reading (or copying to a temporary file) without end. The writer stops at the first broken
/// pipe, or after 1 GiB (then stcheck read far more than it needed, and the test fails).
#[test]
fn endless_standard_input_ends_in_every_mode() {
    const CAP: u64 = 1 << 30;
    let dir = tempdir("endless-stdin");
    for mode in [
        &[][..],
        &["--deep", "--sha256"][..],
        &["--no-mmap"][..],
        &["--compare-reference"][..],
        &["--profile", "reference"][..],
        &["--json", "--compare-reference"][..],
    ] {
        let mut child = Command::new(bin())
            .args(mode)
            .arg("-")
            .current_dir(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn stcheck");
        let mut stdin = child.stdin.take().expect("stdin");
        let writer = thread::spawn(move || {
            let mut sent = 0u64;
            if stdin.write_all(&valid_file()).is_err() {
                return sent;
            }
            let zeros = vec![0u8; 1 << 16];
            while sent < CAP {
                if stdin.write_all(&zeros).is_err() {
                    break;
                }
                sent += zeros.len() as u64;
            }
            sent
        });
        let out = reader(child.stdout.take().expect("stdout"));
        let err = reader(child.stderr.take().expect("stderr"));
        let status = wait_bounded(&mut child);
        let sent = writer.join().expect("writer");
        let stdout = String::from_utf8(out.join().expect("stdout")).expect("UTF-8");
        let stderr = String::from_utf8(err.join().expect("stderr")).expect("UTF-8");
        let status = status.unwrap_or_else(|| panic!("{mode:?}: stcheck - hangs on endless input"));
        assert!(
            sent < CAP,
            "{mode:?}: stcheck read {sent} bytes of zeros and went on"
        );
        assert_eq!(status.code(), Some(1), "{mode:?}: {stdout}{stderr}");
        if mode.contains(&"reference") {
            assert!(stdout.contains("incomplete metadata"), "{mode:?}: {stdout}");
        } else {
            assert!(stdout.contains("DATA-TRAILING"), "{mode:?}: {stdout}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 7. --follow-links stays confined; loops end.

#[test]
fn follow_links_to_the_root_directory_stays_confined() {
    let dir = tempdir("follow-root");
    fs::create_dir_all(dir.join("repo")).expect("mkdir");
    fs::write(dir.join("repo/m.safetensors"), valid_file()).expect("write");
    symlink("/", dir.join("repo/root")).expect("symlink");
    let out = run(&dir, &["--follow-links", "repo"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stdout,
        "repo/m.safetensors: ok (1 tensor, 2 parameters; F32 2)\n\
         repo/root: not checked: a symbolic link to the directory /, outside repo: not walked \
         (directories are walked only below the paths named on the command line; name it \
         there, and --follow-links accepts links into it)\n"
    );
}

#[test]
fn follow_links_to_a_parent_directory_stays_confined() {
    let dir = tempdir("follow-parent");
    fs::create_dir_all(dir.join("repo/sub")).expect("mkdir");
    fs::write(dir.join("repo/sub/m.safetensors"), valid_file()).expect("write");
    fs::write(dir.join("outside.safetensors"), REJECTED).expect("write");
    // Inside the root: the parent is walked once, under its own path.
    symlink("..", dir.join("repo/sub/up")).expect("symlink");
    let out = run(&dir, &["--follow-links", "repo"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "repo/sub/m.safetensors: ok (1 tensor, 2 parameters; F32 2)\n"
    );
    // Leaving the root: never walked, reported.
    symlink("..", dir.join("repo/up")).expect("symlink");
    let out = run(&dir, &["--follow-links", "repo"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_contains(
        &out,
        "repo/up: not checked: a symbolic link to the directory ",
    );
    assert!(
        !out.stdout.contains("outside.safetensors"),
        "{}",
        out.stdout
    );
    // A link into another directory named on the command line is walked there.
    let out = run(&dir, &["--follow-links", "repo", "."]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(!out.stdout.contains("repo/up"), "{}", out.stdout);
    assert_contains(&out, "./outside.safetensors: error FRAME-SHORT");
}

#[test]
fn link_loops_end_and_fail() {
    let dir = tempdir("loops");
    fs::create_dir_all(dir.join("repo")).expect("mkdir");
    symlink("b.safetensors", dir.join("repo/a.safetensors")).expect("symlink");
    symlink("a.safetensors", dir.join("repo/b.safetensors")).expect("symlink");
    // A directory link to itself, and one cycle through two directories.
    symlink(".", dir.join("repo/self")).expect("symlink");
    fs::create_dir_all(dir.join("repo/x/y")).expect("mkdir");
    symlink("../../x", dir.join("repo/x/y/back")).expect("symlink");
    fs::write(dir.join("repo/x/y/m.safetensors"), valid_file()).expect("write");
    for args in [&["repo"][..], &["--follow-links", "repo"][..]] {
        let out = run(&dir, args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert_eq!(
            out.stdout,
            "repo/a.safetensors: not checked: a symbolic link that loops (ELOOP)\n\
             repo/b.safetensors: not checked: a symbolic link that loops (ELOOP)\n\
             repo/x/y/m.safetensors: ok (1 tensor, 2 parameters; F32 2)\n",
            "{args:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The Hugging Face cache: snapshots link into ../../blobs/.

/// `hub/models--org--name/{blobs,refs,snapshots/REV}` with a sharded checkpoint whose every
/// file in the snapshot links to its blob. Returns the blob of shard 2.
fn write_hf_cache(hub: &Path) -> PathBuf {
    let repo = hub.join("models--org--name");
    let snap = repo.join("snapshots/0123456789abcdef");
    fs::create_dir_all(repo.join("blobs")).expect("mkdir");
    fs::create_dir_all(repo.join("refs")).expect("mkdir");
    fs::create_dir_all(&snap).expect("mkdir");
    fs::write(repo.join("refs/main"), "0123456789abcdef").expect("write");
    let files: [(&str, Vec<u8>); 4] = [
        ("config.json", b"{}".to_vec()),
        ("m-1.safetensors", shard("a")),
        ("m-2.safetensors", shard("b")),
        ("m.safetensors.index.json", INDEX.as_bytes().to_vec()),
    ];
    let mut blob2 = PathBuf::new();
    for (i, (name, bytes)) in files.iter().enumerate() {
        let blob = format!("{i:040x}");
        fs::write(repo.join("blobs").join(&blob), bytes).expect("write");
        symlink(format!("../../blobs/{blob}"), snap.join(name)).expect("symlink");
        if *name == "m-2.safetensors" {
            blob2 = repo.join("blobs").join(&blob);
        }
    }
    blob2
}

const SNAP: &str = "hub/models--org--name/snapshots/0123456789abcdef";

#[test]
fn hf_cache_snapshot_needs_follow_links_and_the_cache_directory_does_not() {
    let dir = tempdir("hf-cache");
    let blob2 = write_hf_cache(&dir.join("hub"));
    // The snapshot alone: every link leaves it; each is reported with the option.
    let out = run(&dir, &[SNAP]);
    assert_eq!(out.code, 2, "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", out.stdout);
    for (line, name) in lines.iter().zip([
        "m-1.safetensors",
        "m-2.safetensors",
        "m.safetensors.index.json",
    ]) {
        assert!(
            line.starts_with(&format!("{SNAP}/{name}: not checked: a symbolic link to ")),
            "{line}"
        );
        assert!(line.contains("--follow-links"), "{line}");
    }
    // With --follow-links: checked, and the set is valid.
    let out = run(&dir, &["--follow-links", SNAP]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        format!(
            "{SNAP}/m.safetensors.index.json: ok (index of 2 shards; 2 tensors, 2 parameters; F32 2)\n  \
             shard {SNAP}/m-1.safetensors: ok (1 tensor, 1 parameter; F32 1)\n  \
             shard {SNAP}/m-2.safetensors: ok (1 tensor, 1 parameter; F32 1)\n"
        )
    );
    // The model's cache directory named: every link stays inside it; no option needed.
    let out = run(&dir, &["hub/models--org--name"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout.lines().count(), 3, "{}", out.stdout);
    // The index named directly: its shards' links leave its directory.
    let index = format!("{SNAP}/m.safetensors.index.json");
    let out = run(&dir, &[index.as_str()]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_starts(
        &out,
        format!("{index}: error INDEX-SHARD-LINK: shard \"m-1.safetensors\": a symbolic link to "),
    );
    assert_contains(&out, "not followed (--follow-links follows links");
    let out = run(&dir, &["--follow-links", index.as_str()]);
    assert_eq!(out.code, 0, "{out:?}");
    // A bad blob is found in every way of naming the cache.
    fs::write(&blob2, REJECTED).expect("write");
    for args in [
        &["--follow-links", SNAP][..],
        &["hub/models--org--name"][..],
        &["hub"][..],
    ] {
        let out = run(&dir, args);
        assert_eq!(out.code, 1, "{args:?}: {out:?}");
        assert!(
            out.stdout
                .contains(&format!("{SNAP}/m-2.safetensors: error FRAME-SHORT")),
            "{args:?}: {}",
            out.stdout
        );
        assert!(
            out.stdout.contains("error INDEX-SHARD-INVALID"),
            "{args:?}: {}",
            out.stdout
        );
    }
}

/// Keeps `OsString` in use for paths built from raw bytes on every Unix.
#[test]
fn paths_named_with_non_utf8_bytes_are_checked() {
    let dir = tempdir("non-utf8-named");
    let name = OsString::from(OsStr::from_bytes(b"n\x80.safetensors"));
    fs::write(dir.join(&name), valid_file()).expect("write");
    let out = run(&dir, &[name.as_os_str()]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "n\\x80.safetensors: ok (1 tensor, 2 parameters; F32 2)\n"
    );
}

// ---------------------------------------------------------------------------------------------
// The library pieces the command line is built on (`stcheck_gate::fs`).

#[test]
fn library_walker_gives_identities_and_typed_reasons() {
    use stcheck_gate::fs::{open_regular, FileKind, LinkPolicy, NotChecked, WalkEntry, Walker};

    let dir = tempdir("library");
    let repo = dir.join("repo");
    fs::create_dir_all(&repo).expect("mkdir");
    fs::write(repo.join("a.safetensors"), valid_file()).expect("write");
    symlink("a.safetensors", repo.join("b.safetensors")).expect("symlink");
    mkfifo(&repo.join("c.safetensors"));
    let entries = Walker::new(LinkPolicy::confined()).walk(&repo);
    assert_eq!(entries.len(), 3, "{entries:?}");
    // The walk names paths; the identity is the opened file's. The file and the link to it
    // are one file: it can be read once.
    let ids: Vec<_> = entries[..2]
        .iter()
        .map(|e| match e {
            WalkEntry::Checkpoint { path, .. } => open_regular(path)
                .expect("open")
                .id()
                .expect("an identity on Unix"),
            other => panic!("not a checkpoint: {other:?}"),
        })
        .collect();
    assert_eq!(ids[0], ids[1]);
    match &entries[2] {
        WalkEntry::NotChecked { path, reason } => {
            assert_eq!(path, &repo.join("c.safetensors"));
            assert!(
                matches!(reason, NotChecked::NotRegular(FileKind::Fifo)),
                "{reason:?}"
            );
            assert_eq!(reason.code(), "not_regular_file");
        }
        other => panic!("the FIFO was not reported: {other:?}"),
    }
    // Opening: a regular file gives its length; a FIFO is refused without blocking.
    let f = open_regular(&repo.join("b.safetensors")).expect("open");
    assert_eq!(f.len(), valid_file().len() as u64);
    let e = open_regular(&repo.join("c.safetensors")).expect_err("a FIFO");
    assert!(matches!(e, NotChecked::NotRegular(FileKind::Fifo)), "{e:?}");
}

/// A path next to an option that checks nothing (`--explain`, `--help`, `--version`) is a usage
/// error (exit 2), never exit 0 with the path unchecked (issue 19).
#[test]
fn a_path_next_to_explain_is_a_usage_error() {
    let dir = tempdir("explain-path");
    fs::write(dir.join("bad.safetensors"), REJECTED).expect("write");
    for args in [
        &["bad.safetensors", "--explain", "LAYOUT-GAP"][..],
        &["--explain", "LAYOUT-GAP", "bad.safetensors"],
        &["bad.safetensors", "--help"],
        &["bad.safetensors", "--version"],
    ] {
        let out = run(&dir, args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(
            out.stderr.contains("would not be checked"),
            "{args:?}: {out:?}"
        );
    }
    assert_eq!(run(&dir, &["--explain", "LAYOUT-GAP"]).code, 0);
}
