//! The `stcheck` command line over real files in a temporary directory: verdicts, exit codes,
//! the JSON Lines form, sharded checkpoints, standard input and unreadable paths.
//!
//! Golden outputs live in `tests/golden/`; rerun with `STCHECK_BLESS=1` to rewrite them after
//! a deliberate change of the output.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use stcheck::index::{check_index, MemorySource};
use stcheck::write::{serialize, TensorSpec};
use stcheck::{Config, Dtype};

use crate::BIN;

/// A fresh, empty directory for one test.
fn tempdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

struct Out {
    code: i32,
    /// Standard output without the text summary line (see `summary`).
    stdout: String,
    stderr: String,
    /// The text output's last line, `summary: ...`, checked against the exit code.
    summary: Option<String>,
}

/// Split the text summary off `stdout` (its last line) and check it against the exit code:
/// 2 when something could not be checked, else 1 when something is invalid, else 0.
fn take_summary(stdout: String, code: i32) -> (String, Option<String>) {
    let body_end = stdout
        .trim_end_matches('\n')
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let Some(last) = stdout[body_end..].strip_prefix("summary: ") else {
        return (stdout, None);
    };
    let counts = summary_counts(last);
    let expected = if counts[3] > 0 {
        2
    } else if counts[2] > 0 {
        1
    } else {
        0
    };
    assert_eq!(code, expected, "exit code and summary disagree: {last}");
    assert_eq!(counts[0], counts[1] + counts[2] + counts[3], "{last}");
    let summary = stdout[body_end..].trim_end().to_owned();
    (stdout[..body_end].to_owned(), Some(summary))
}

/// The numbers of a summary line: files, valid, invalid, could not be checked.
fn summary_counts(line: &str) -> [u64; 4] {
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit() && c != '.')
        .filter(|w| !w.is_empty() && !w.contains('.'))
        .map(|w| w.parse().expect("a count"))
        .collect();
    assert_eq!(numbers.len(), 4, "summary line {line:?}");
    [numbers[0], numbers[1], numbers[2], numbers[3]]
}

/// `(1.23 s)` at the end of a summary line as `(ELAPSED s)`, for golden files.
fn stable(stdout: &str) -> String {
    stdout
        .lines()
        .map(|l| match (l.starts_with("summary: "), l.rfind(" (")) {
            (true, Some(i)) if l.ends_with(" s)") => format!("{} (ELAPSED s)\n", &l[..i]),
            _ => format!("{l}\n"),
        })
        .collect()
}

fn run_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Out {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn stcheck");
    if let Some(bytes) = stdin {
        let mut w = child.stdin.take().expect("stdin");
        // The tool may reject early and close its end; that is not a test failure.
        let _ = w.write_all(bytes);
    }
    let out = child.wait_with_output().expect("wait for stcheck");
    let code = out.status.code().expect("exited normally, not by a signal");
    let (stdout, summary) =
        take_summary(String::from_utf8(out.stdout).expect("UTF-8 stdout"), code);
    Out {
        code,
        stdout,
        stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
        summary,
    }
}

fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("STCHECK_BLESS").is_some() {
        fs::write(&path, actual).expect("bless golden file");
        return;
    }
    let expected = fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with STCHECK_BLESS=1 to create it)",
            path.display()
        )
    });
    assert_eq!(
        actual,
        expected,
        "output differs from {}; rerun with STCHECK_BLESS=1 if the change is intended",
        path.display()
    );
}

/// A header written by hand, padded with spaces to a multiple of 8 when `pad`.
fn raw(header: &str, data: &[u8], pad: bool) -> Vec<u8> {
    let mut h = header.as_bytes().to_vec();
    while pad && !h.len().is_multiple_of(8) {
        h.push(b' ');
    }
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&h);
    out.extend_from_slice(data);
    out
}

fn valid_file() -> Vec<u8> {
    serialize(
        &[
            TensorSpec::new("a.weight", Dtype::F16, &[2, 2], &[0u8; 8]),
            TensorSpec::new("b.bias", Dtype::BF16, &[3], &[0u8; 6]),
        ],
        &[],
    )
    .expect("serialize")
}

fn shard(tensors: &[(&str, usize)]) -> Vec<u8> {
    let data: Vec<Vec<u8>> = tensors.iter().map(|&(_, n)| vec![1u8; 4 * n]).collect();
    let shapes: Vec<[u64; 1]> = tensors.iter().map(|&(_, n)| [n as u64]).collect();
    let specs: Vec<TensorSpec<'_>> = tensors
        .iter()
        .zip(&shapes)
        .zip(&data)
        .map(|((&(name, _), shape), d)| TensorSpec::new(name, Dtype::F32, shape, d))
        .collect();
    serialize(&specs, &[]).expect("serialize shard")
}

/// The files of a small sharded checkpoint: two shards, three F32 tensors (a: 2, b: 3,
/// c: 4 elements = 36 bytes).
fn write_good_set(dir: &Path) {
    fs::write(dir.join("m-1.safetensors"), shard(&[("a", 2), ("b", 3)])).expect("write");
    fs::write(dir.join("m-2.safetensors"), shard(&[("c", 4)])).expect("write");
    fs::write(
        dir.join("m.safetensors.index.json"),
        r#"{"metadata":{"total_size":36},"weight_map":{"a":"m-1.safetensors","b":"m-1.safetensors","c":"m-2.safetensors"}}"#,
    )
    .expect("write");
}

fn json_lines(s: &str) -> Vec<Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

#[test]
fn valid_file_is_ok_with_per_dtype_counts() {
    let dir = tempdir("valid");
    fs::write(dir.join("v.safetensors"), valid_file()).expect("write");
    let out = run_in(&dir, &["v.safetensors"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "v.safetensors: ok (2 tensors, 7 parameters; F16 4, BF16 3)\n"
    );
    assert_eq!(out.stderr, "");
}

/// One file per kind of fault, in one directory: golden human and JSON output, exit code 1.
fn write_mixed_dir(dir: &Path) {
    fs::create_dir_all(dir.join("sub")).expect("mkdir");
    fs::write(dir.join("valid.safetensors"), valid_file()).expect("write");
    // Malformed: too short, bad JSON, duplicate key.
    fs::write(dir.join("short.safetensors"), [1u8, 0, 0]).expect("write");
    fs::write(dir.join("syntax.safetensors"), raw("{\"a\":", &[], true)).expect("write");
    fs::write(
        dir.join("dup.safetensors"),
        raw(
            r#"{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#,
            &[7],
            true,
        ),
    )
    .expect("write");
    // Invalid: a gap, trailing data, unknown dtype.
    fs::write(
        dir.join("sub/gap.safetensors"),
        raw(
            r#"{"w":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}"#,
            &[0; 4],
            true,
        ),
    )
    .expect("write");
    fs::write(
        dir.join("sub/trailing.safetensors"),
        raw(
            r#"{"w":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#,
            &[0; 5],
            true,
        ),
    )
    .expect("write");
    fs::write(
        dir.join("sub/dtype.safetensors"),
        raw(
            r#"{"w":{"dtype":"F17","shape":[2],"data_offsets":[0,2]}}"#,
            &[0; 2],
            true,
        ),
    )
    .expect("write");
    // Valid with a warning: the header length is not a multiple of 8.
    let mut warn = raw(
        r#"{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#,
        &[],
        false,
    );
    if (warn.len() - 8).is_multiple_of(8) {
        warn = raw(
            r#"{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]} }"#,
            &[],
            false,
        );
    }
    warn.push(9);
    fs::write(dir.join("warn.safetensors"), warn).expect("write");
    // Not matched by the walk.
    fs::write(dir.join("notes.txt"), "hello").expect("write");
}

#[test]
fn directory_of_each_fault_human_golden() {
    let dir = tempdir("mixed-human");
    write_mixed_dir(&dir.join("models"));
    let out = run_in(&dir, &["--jobs", "3", "models"], None);
    assert_eq!(out.code, 1);
    assert_eq!(out.stderr, "");
    golden("mixed.txt", &out.stdout);
    // Every file gets exactly one verdict line, in sorted path order.
    let verdicts: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("models/"))
        .map(|l| l.split(": ").next().unwrap_or(""))
        .collect();
    let mut sorted = verdicts.clone();
    sorted.sort();
    assert_eq!(verdicts, sorted);
    assert_eq!(verdicts.len(), 8);
}

#[test]
fn directory_of_each_fault_json_golden_and_parsed() {
    let dir = tempdir("mixed-json");
    write_mixed_dir(&dir.join("models"));
    let out = run_in(&dir, &["--json", "-j", "2", "models"], None);
    assert_eq!(out.code, 1);
    golden("mixed.jsonl", &out.stdout);
    let lines = json_lines(&out.stdout);
    let by_path = |p: &str| -> &Value {
        lines
            .iter()
            .find(|v| v["data"]["path"] == p)
            .unwrap_or_else(|| panic!("no line for {p}"))
    };
    let expect = [
        ("models/short.safetensors", "FRAME-SHORT", "malformed"),
        ("models/syntax.safetensors", "JSON-SYNTAX", "malformed"),
        ("models/dup.safetensors", "JSON-DUPLICATE-KEY", "malformed"),
        ("models/sub/gap.safetensors", "LAYOUT-GAP", "invalid"),
        (
            "models/sub/trailing.safetensors",
            "DATA-TRAILING",
            "invalid",
        ),
        ("models/sub/dtype.safetensors", "DTYPE-UNKNOWN", "invalid"),
    ];
    for (path, rule, kind) in expect {
        let v = by_path(path);
        assert_eq!(v["type"], "file");
        assert_eq!(v["data"]["status"], "invalid", "{path}");
        assert_eq!(v["data"]["error"]["rule"], rule, "{path}");
        assert_eq!(v["data"]["error"]["kind"], kind, "{path}");
        assert!(v["data"]["error"]["offset"].is_u64(), "{path}");
    }
    assert_eq!(
        by_path("models/sub/trailing.safetensors")["data"]["error"]["offset"],
        8 + 56 + 2
    );
    let valid = by_path("models/valid.safetensors");
    assert_eq!(valid["data"]["status"], "valid");
    assert_eq!(valid["data"]["parameters"], 7);
    assert_eq!(valid["data"]["by_dtype"][0]["dtype"], "F16");
    assert_eq!(valid["data"]["by_dtype"][0]["parameters"], 4);
    let warn = by_path("models/warn.safetensors");
    assert_eq!(warn["data"]["status"], "valid");
    assert_eq!(warn["data"]["warnings"][0]["rule"], "FRAME-ALIGN");
    let summary = lines.last().expect("summary");
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["data"]["files"], 8);
    assert_eq!(summary["data"]["valid"], 2);
    assert_eq!(summary["data"]["invalid"], 6);
    assert_eq!(summary["data"]["exit_code"], 1);
}

#[test]
fn read_modes_agree() {
    let dir = tempdir("modes");
    write_mixed_dir(&dir.join("models"));
    let verdicts = |mode: &[&str]| -> Vec<(Value, Value, Value)> {
        let mut args = vec!["--json", "models"];
        args.extend_from_slice(mode);
        json_lines(&run_in(&dir, &args, None).stdout)
            .into_iter()
            .map(|v| {
                (
                    v["data"]["path"].clone(),
                    v["data"]["status"].clone(),
                    v["data"]["error"].clone(),
                )
            })
            .collect()
    };
    let mmap = verdicts(&[]);
    assert_eq!(mmap, verdicts(&["--no-mmap"]));
    assert_eq!(mmap, verdicts(&["--stream"]));
}

#[test]
fn deny_warnings_and_max_header_size() {
    let dir = tempdir("flags");
    write_mixed_dir(&dir);
    let out = run_in(&dir, &["warn.safetensors"], None);
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.contains("\n  warning FRAME-ALIGN: "),
        "{}",
        out.stdout
    );
    let out = run_in(&dir, &["--deny-warnings", "warn.safetensors"], None);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout
            .starts_with("warn.safetensors: error FRAME-ALIGN: "),
        "{}",
        out.stdout
    );
    let out = run_in(
        &dir,
        &["--max-header-size", "16", "valid.safetensors"],
        None,
    );
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.contains("error FRAME-HEADER-LIMIT: "),
        "{}",
        out.stdout
    );
}

#[test]
fn verbose_lists_tensors() {
    let dir = tempdir("verbose");
    fs::write(dir.join("v.safetensors"), valid_file()).expect("write");
    let out = run_in(&dir, &["-v", "v.safetensors"], None);
    assert_eq!(out.code, 0);
    golden("verbose.txt", &out.stdout);
    assert_eq!(out.stdout.matches("\n  tensor \"").count(), 2);
}

#[test]
fn compare_reference_reports_divergence() {
    let dir = tempdir("reference");
    write_mixed_dir(&dir);
    let out = run_in(
        &dir,
        &[
            "--compare-reference",
            "dup.safetensors",
            "sub/gap.safetensors",
        ],
        None,
    );
    assert_eq!(out.code, 1);
    golden("compare-reference.txt", &out.stdout);
    let out = run_in(
        &dir,
        &["--json", "--compare-reference", "dup.safetensors"],
        None,
    );
    let v = &json_lines(&out.stdout)[0];
    assert_eq!(v["data"]["error"]["rule"], "JSON-DUPLICATE-KEY");
    assert_eq!(v["data"]["reference"]["verdict"], "accept");
    assert_eq!(
        v["data"]["reference"]["divergence"],
        stcheck::Rule::JsonDuplicateKey
            .reference_divergence()
            .expect("documented divergence")
    );
    // The reference profile takes the reference's verdict: the duplicate-key file passes.
    let out = run_in(&dir, &["--profile", "reference", "dup.safetensors"], None);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(out
        .stdout
        .starts_with("dup.safetensors: ok (reference profile; 1 tensor"));
    let out = run_in(
        &dir,
        &["--profile", "reference", "sub/gap.safetensors"],
        None,
    );
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out
        .stdout
        .starts_with("sub/gap.safetensors: error reference rejects: "));
}

#[test]
fn stdin_streams() {
    let dir = tempdir("stdin");
    let out = run_in(&dir, &["-"], Some(&valid_file()));
    assert_eq!(out.code, 0);
    assert_eq!(
        out.stdout,
        "<stdin>: ok (2 tensors, 7 parameters; F16 4, BF16 3)\n"
    );
    let mut truncated = valid_file();
    truncated.pop();
    let out = run_in(&dir, &["--json", "-"], Some(&truncated));
    assert_eq!(out.code, 1);
    let v = &json_lines(&out.stdout)[0];
    assert_eq!(v["data"]["mode"], "stream");
    assert_eq!(v["data"]["error"]["rule"], "DATA-TRUNCATED");
    // A header whose length field is hostile is rejected without reading the data.
    let out = run_in(&dir, &["-"], Some(&u64::MAX.to_le_bytes()));
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains("FRAME-HEADER-LIMIT"), "{}", out.stdout);
}

#[test]
fn unreadable_paths_are_io_errors_not_verdicts() {
    let dir = tempdir("io");
    fs::write(dir.join("v.safetensors"), valid_file()).expect("write");
    let out = run_in(&dir, &["missing.safetensors", "v.safetensors"], None);
    assert_eq!(out.code, 2);
    // On stdout, so that stdout alone is the whole report; repeated on stderr.
    assert_eq!(
        out.stdout,
        "missing.safetensors: not checked: No such file or directory (os error 2)\n\
         v.safetensors: ok (2 tensors, 7 parameters; F16 4, BF16 3)\n"
    );
    assert_eq!(
        out.stderr,
        "stcheck: missing.safetensors: No such file or directory (os error 2)\n"
    );
    assert_eq!(
        summary_counts(out.summary.as_deref().unwrap_or("")),
        [2, 1, 0, 1]
    );
    // A device is not a regular file: not checked, never opened.
    let out = run_in(&dir, &["--json", "/dev/null"], None);
    assert_eq!(out.code, 2);
    let lines = json_lines(&out.stdout);
    assert_eq!(lines[0]["type"], "not_checked");
    assert_eq!(lines[0]["data"]["reason"], "not_regular_file");
    assert_eq!(
        lines[0]["data"]["message"],
        "not a regular file but a character device; only regular files are read"
    );
    assert_eq!(lines[1]["data"]["not_checked"], 1);
    // An I/O error wins over an invalid file.
    fs::write(dir.join("bad.safetensors"), [0u8; 3]).expect("write");
    let out = run_in(&dir, &["bad.safetensors", "nope"], None);
    assert_eq!(out.code, 2);
}

#[test]
fn usage_errors_exit_2_and_help_documents_exit_codes() {
    let dir = tempdir("usage");
    let out = run_in(&dir, &[], None);
    assert_eq!(out.code, 2);
    assert!(out.stderr.starts_with("stcheck: "), "{}", out.stderr);
    let out = run_in(&dir, &["--frobnicate", "x"], None);
    assert_eq!(out.code, 2);
    let out = run_in(&dir, &["--help"], None);
    assert_eq!(out.code, 0);
    for needle in [
        "Exit codes:",
        "  0  every file is valid",
        "  1  ",
        "  2  usage error",
    ] {
        assert!(out.stdout.contains(needle), "help lacks {needle:?}");
    }
}

#[cfg(unix)]
#[test]
fn symlinks_leaving_the_root_not_checked_unless_asked() {
    let dir = tempdir("links");
    fs::create_dir_all(dir.join("d")).expect("mkdir");
    fs::write(dir.join("real.safetensors"), valid_file()).expect("write");
    std::os::unix::fs::symlink("../real.safetensors", dir.join("d/link.safetensors"))
        .expect("symlink");
    let out = run_in(&dir, &["d"], None);
    assert_eq!(out.code, 2);
    assert!(
        out.stdout
            .starts_with("d/link.safetensors: not checked: a symbolic link to "),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .ends_with(", outside d: not followed (--follow-links follows links to regular files outside it)\n"),
        "{}",
        out.stdout
    );
    let out = run_in(&dir, &["--follow-links", "d"], None);
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.starts_with("d/link.safetensors: ok (2 tensors"),
        "{}",
        out.stdout
    );
    // Named on the command line, a link is followed.
    let out = run_in(&dir, &["d/link.safetensors"], None);
    assert!(
        out.stdout.starts_with("d/link.safetensors: ok"),
        "{}",
        out.stdout
    );
    // A link that stays inside the directory named is followed.
    let out = run_in(&dir, &["."], None);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout.starts_with("./d/link.safetensors: ok"),
        "{}",
        out.stdout
    );
}

#[cfg(unix)]
#[test]
fn broken_pipe_ends_quietly() {
    let dir = tempdir("pipe");
    for i in 0..2000 {
        fs::write(dir.join(format!("f{i:04}.safetensors")), valid_file()).expect("write");
    }
    let mut child = Command::new(BIN)
        .args(["-j", "1", "."])
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.code().is_some(), "killed by a signal");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

/// Output stays in input order whatever the number of workers, also with more workers than
/// cores, and with more files than the jobs' finished output may hold (64 per worker: a worker
/// that far ahead waits for space), in every format.
#[test]
fn more_workers_than_cores_keep_the_input_order() {
    let dir = tempdir("order");
    for i in 0..600 {
        let bytes = if i % 7 == 3 {
            raw("{\"a\":", &[], true)
        } else {
            valid_file()
        };
        fs::write(dir.join(format!("f{i:04}.safetensors")), bytes).expect("write");
    }
    let one = run_in(&dir, &["--json", "-j", "1", "."], None);
    assert_eq!(one.code, 1, "{}", one.stderr);
    let lines = json_lines(&one.stdout);
    assert_eq!(lines.len(), 601, "600 records and the summary");
    for jobs in ["2", "8", "32"] {
        let many = run_in(&dir, &["--json", "-j", jobs, "."], None);
        assert_eq!(many.code, 1, "-j {jobs}: {}", many.stderr);
        assert_eq!(many.stdout, one.stdout, "-j {jobs}");
    }
    let formats = [
        &["--format", "text"][..],
        &["--format", "sarif"],
        &["--format", "github"],
        &["-q"],
    ];
    for format in formats {
        let with = |jobs: &'static str| {
            let mut a = format.to_vec();
            a.extend(["-j", jobs, "."]);
            run_in(&dir, &a, None)
        };
        let one = with("1");
        assert_eq!(one.code, 1, "{format:?}: {}", one.stderr);
        assert!(one.stdout.contains("f0003.safetensors"), "{format:?}");
        for jobs in ["2", "8"] {
            let many = with(jobs);
            assert_eq!(many.code, 1, "{format:?} -j {jobs}: {}", many.stderr);
            // (`stdout` is without the text summary, which gives the time taken.)
            assert_eq!(many.stdout, one.stdout, "{format:?} -j {jobs}");
            assert_eq!(many.summary.is_some(), one.summary.is_some(), "{format:?}");
        }
    }
}

// ---- Sharded checkpoints ----

fn index_out(dir: &Path, args: &[&str]) -> (Out, Value) {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    a.push("m.safetensors.index.json");
    let out = run_in(dir, &a, None);
    let v = json_lines(&out.stdout)
        .into_iter()
        .find(|v| v["type"] == "index")
        .expect("an index line");
    (out, v)
}

fn error_rules(v: &Value) -> Vec<String> {
    v["data"]["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["rule"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn sharded_good_set() {
    let dir = tempdir("shard-good");
    write_good_set(&dir);
    let out = run_in(&dir, &["m.safetensors.index.json"], None);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        out.stdout,
        "m.safetensors.index.json: ok (index of 2 shards; 3 tensors, 9 parameters; F32 9)\n  \
         shard m-1.safetensors: ok (2 tensors, 5 parameters; F32 5)\n  \
         shard m-2.safetensors: ok (1 tensor, 4 parameters; F32 4)\n"
    );
    let (_, v) = index_out(&dir, &[]);
    assert_eq!(v["data"]["status"], "valid");
    assert_eq!(v["data"]["total_size"], 36);
    assert_eq!(v["data"]["computed_size"], 36);
    // The whole directory: the index as a set, each shard checked once, inside it.
    let out = run_in(&dir, &["."], None);
    assert_eq!(out.code, 0);
    golden("sharded-dir.txt", &out.stdout);
}

/// Each broken variant of the set, with the rule it must raise, the shard and tensor named.
#[test]
fn sharded_broken_in_every_way() {
    type Breaker = fn(&Path);
    /// Name, how to break the good set, the rule, the shard and the tensor it must name.
    type Case = (
        &'static str,
        Breaker,
        &'static str,
        Option<&'static str>,
        Option<&'static str>,
    );
    let cases: &[Case] = &[
        (
            "dup-key",
            |d| {
                fs::write(
                    d.join("m.safetensors.index.json"),
                    r#"{"weight_map":{"a":"m-1.safetensors","a":"m-1.safetensors"}}"#,
                )
                .expect("w")
            },
            "INDEX-JSON",
            None,
            None,
        ),
        (
            "syntax",
            |d| fs::write(d.join("m.safetensors.index.json"), "{\"weight_map\":").expect("w"),
            "INDEX-JSON",
            None,
            None,
        ),
        (
            "not-string",
            |d| {
                fs::write(
                    d.join("m.safetensors.index.json"),
                    r#"{"weight_map":{"a":1}}"#,
                )
                .expect("w")
            },
            "INDEX-SCHEMA",
            None,
            Some("a"),
        ),
        (
            "no-weight-map",
            |d| fs::write(d.join("m.safetensors.index.json"), r#"{"metadata":{}}"#).expect("w"),
            "INDEX-SCHEMA",
            None,
            None,
        ),
        (
            "parent-dir",
            |d| {
                fs::write(d.join("m.safetensors.index.json"), r#"{"weight_map":{"a":"../m-1.safetensors","b":"m-1.safetensors","c":"m-2.safetensors"}}"#).expect("w")
            },
            "INDEX-SHARD-NAME",
            Some("../m-1.safetensors"),
            None,
        ),
        (
            "absolute",
            |d| {
                fs::write(d.join("m.safetensors.index.json"), r#"{"weight_map":{"a":"/etc/passwd","b":"m-1.safetensors","c":"m-2.safetensors"}}"#).expect("w")
            },
            "INDEX-SHARD-NAME",
            Some("/etc/passwd"),
            None,
        ),
        (
            "missing",
            |d| fs::remove_file(d.join("m-2.safetensors")).expect("rm"),
            "INDEX-SHARD-MISSING",
            Some("m-2.safetensors"),
            None,
        ),
        (
            "invalid-shard",
            |d| {
                fs::write(
                    d.join("m-2.safetensors"),
                    raw(
                        r#"{"c":{"dtype":"F32","shape":[4],"data_offsets":[0,15]}}"#,
                        &[0; 15],
                        true,
                    ),
                )
                .expect("w")
            },
            "INDEX-SHARD-INVALID",
            Some("m-2.safetensors"),
            Some("c"),
        ),
        (
            "tensor-missing",
            |d| {
                fs::write(d.join("m.safetensors.index.json"), r#"{"weight_map":{"a":"m-1.safetensors","b":"m-1.safetensors","c":"m-2.safetensors","z":"m-2.safetensors"}}"#).expect("w")
            },
            "INDEX-TENSOR-MISSING",
            Some("m-2.safetensors"),
            Some("z"),
        ),
        (
            "tensor-unlisted",
            |d| {
                fs::write(
                    d.join("m.safetensors.index.json"),
                    r#"{"weight_map":{"a":"m-1.safetensors","c":"m-2.safetensors"}}"#,
                )
                .expect("w")
            },
            "INDEX-TENSOR-UNLISTED",
            Some("m-1.safetensors"),
            Some("b"),
        ),
        (
            "tensor-duplicate",
            |d| fs::write(d.join("m-2.safetensors"), shard(&[("b", 3), ("c", 4)])).expect("w"),
            "INDEX-TENSOR-DUPLICATE",
            Some("m-2.safetensors"),
            Some("b"),
        ),
        (
            "total-size",
            |d| {
                fs::write(d.join("m.safetensors.index.json"), r#"{"metadata":{"total_size":35},"weight_map":{"a":"m-1.safetensors","b":"m-1.safetensors","c":"m-2.safetensors"}}"#).expect("w")
            },
            "INDEX-TOTAL-SIZE",
            None,
            None,
        ),
        (
            "total-size-type",
            |d| {
                fs::write(d.join("m.safetensors.index.json"), r#"{"metadata":{"total_size":"36"},"weight_map":{"a":"m-1.safetensors","b":"m-1.safetensors","c":"m-2.safetensors"}}"#).expect("w")
            },
            "INDEX-TOTAL-SIZE",
            None,
            None,
        ),
    ];
    for &(name, breaker, rule, shard, tensor) in cases {
        let dir = tempdir(&format!("shard-{name}"));
        write_good_set(&dir);
        breaker(&dir);
        let (out, v) = index_out(&dir, &[]);
        assert_eq!(out.code, 1, "{name}: {}", out.stdout);
        assert_eq!(v["data"]["status"], "invalid", "{name}");
        let rules = error_rules(&v);
        assert!(rules.contains(&rule.to_owned()), "{name}: {rules:?}");
        let e = v["data"]["errors"]
            .as_array()
            .and_then(|a| a.iter().find(|e| e["rule"] == rule))
            .expect("the error");
        assert_eq!(e["shard"].as_str(), shard, "{name}: {e}");
        assert_eq!(e["tensor"].as_str(), tensor, "{name}: {e}");
        assert!(e["offset"].is_u64(), "{name}");
        // Human form: the index path, then the rule.
        let human = run_in(&dir, &["m.safetensors.index.json"], None);
        assert!(
            human
                .stdout
                .starts_with("m.safetensors.index.json: error INDEX-"),
            "{name}: {}",
            human.stdout
        );
        assert!(human.stdout.contains(rule), "{name}: {}", human.stdout);
    }
}

#[test]
fn sharded_invalid_shard_carries_its_own_error() {
    let dir = tempdir("shard-cause");
    write_good_set(&dir);
    fs::write(dir.join("m-2.safetensors"), [0u8; 4]).expect("w");
    let (_, v) = index_out(&dir, &[]);
    let e = &v["data"]["errors"][0];
    assert_eq!(e["rule"], "INDEX-SHARD-INVALID");
    assert_eq!(e["cause"]["rule"], "FRAME-SHORT");
    assert_eq!(v["data"]["shards"][1]["status"], "invalid");
}

#[test]
fn sharded_unlisted_shard_is_a_warning() {
    let dir = tempdir("shard-unlisted");
    write_good_set(&dir);
    fs::write(dir.join("stray.safetensors"), valid_file()).expect("w");
    let (out, v) = index_out(&dir, &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(v["data"]["warnings"][0]["rule"], "INDEX-SHARD-UNLISTED");
    assert_eq!(v["data"]["warnings"][0]["shard"], "stray.safetensors");
    let (out, v) = index_out(&dir, &["--deny-warnings"]);
    assert_eq!(out.code, 1);
    assert_eq!(error_rules(&v), vec!["INDEX-SHARD-UNLISTED".to_owned()]);
}

#[cfg(unix)]
#[test]
fn sharded_link_leaving_the_directory() {
    let dir = tempdir("shard-link");
    fs::create_dir_all(dir.join("set")).expect("mkdir");
    write_good_set(&dir.join("set"));
    fs::rename(
        dir.join("set/m-2.safetensors"),
        dir.join("outside.safetensors"),
    )
    .expect("mv");
    std::os::unix::fs::symlink("../outside.safetensors", dir.join("set/m-2.safetensors"))
        .expect("symlink");
    let (out, v) = index_out(&dir.join("set"), &[]);
    assert_eq!(out.code, 1);
    assert_eq!(error_rules(&v), vec!["INDEX-SHARD-LINK".to_owned()]);
    let (out, _) = index_out(&dir.join("set"), &["--follow-links"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    // A link that stays inside the directory is fine.
    fs::rename(dir.join("outside.safetensors"), dir.join("set/real-2.bin")).expect("mv");
    fs::remove_file(dir.join("set/m-2.safetensors")).expect("rm");
    std::os::unix::fs::symlink("real-2.bin", dir.join("set/m-2.safetensors")).expect("symlink");
    let (out, _) = index_out(&dir.join("set"), &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
}

#[test]
fn sharded_human_golden_for_several_faults() {
    let dir = tempdir("shard-golden");
    write_good_set(&dir);
    fs::write(
        dir.join("m.safetensors.index.json"),
        r#"{"metadata":{"total_size":1},"weight_map":{"a":"m-1.safetensors","c":"m-1.safetensors","x":"gone.safetensors"}}"#,
    )
    .expect("w");
    let out = run_in(&dir, &["m.safetensors.index.json"], None);
    assert_eq!(out.code, 1);
    golden("sharded-errors.txt", &out.stdout);
    let out = run_in(&dir, &["--json", "m.safetensors.index.json"], None);
    golden("sharded-errors.jsonl", &out.stdout);
}

// ---- The index checker as a library ----

#[test]
fn index_library_in_memory() {
    let mut src = MemorySource::new();
    src.insert("s.safetensors", shard(&[("a", 1)]));
    let ok = check_index(
        br#"{"weight_map":{"a":"s.safetensors"}}"#,
        &src,
        &Config::default(),
    )
    .expect("no I/O");
    assert!(ok.is_valid(), "{:?}", ok.errors());
    let bad = check_index(
        br#"{"weight_map":{"a":"t.safetensors"}}"#,
        &src,
        &Config::default(),
    )
    .expect("no I/O");
    let rules: Vec<_> = bad.errors().iter().map(|e| e.rule().id()).collect();
    assert_eq!(rules, ["INDEX-SHARD-MISSING"]);
    assert_eq!(bad.warnings()[0].rule().id(), "INDEX-SHARD-UNLISTED");
}

proptest::proptest! {
    #[test]
    fn index_checker_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
        let mut src = MemorySource::new();
        src.insert("s.safetensors", bytes.clone());
        let _ = check_index(&bytes, &src, &Config::default());
    }

    #[test]
    fn index_checker_never_panics_on_near_valid(
        cut in 0usize..120,
        byte in proptest::num::u8::ANY,
        at in 0usize..120,
    ) {
        let mut index = br#"{"metadata":{"total_size":4},"weight_map":{"a":"s.safetensors","\u0062":"s.safetensors"}}"#.to_vec();
        if let Some(b) = index.get_mut(at) {
            *b = byte;
        }
        index.truncate(cut.max(1));
        let mut src = MemorySource::new();
        src.insert("s.safetensors", shard(&[("a", 1)]));
        let _ = check_index(&index, &src, &Config::default());
    }
}

// ---- Deep scan flags ----

#[test]
fn deep_scan_counts_nonfinite_and_hashes() {
    use sha2::Digest;
    let dir = tempdir("deep");
    let mut data = Vec::new();
    for x in [1.0f32, f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        data.extend_from_slice(&x.to_le_bytes());
    }
    let file = serialize(&[TensorSpec::new("x", Dtype::F32, &[4], &data)], &[]).expect("serialize");
    fs::write(dir.join("nf.safetensors"), &file).expect("write");
    let out = run_in(&dir, &["--json", "--sha256", "nf.safetensors"], None);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let v = &json_lines(&out.stdout)[0];
    let nf = &v["data"]["deep"]["non_finite"][0];
    assert_eq!(
        (
            nf["nan"].as_u64(),
            nf["pos_inf"].as_u64(),
            nf["neg_inf"].as_u64()
        ),
        (Some(1), Some(1), Some(1))
    );
    let hex: String = sha2::Sha256::digest(&file)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(v["data"]["deep"]["sha256"], hex.as_str());
    // The same through standard input and with --no-mmap.
    for args in [
        &["--json", "--sha256", "-"][..],
        &["--json", "--sha256", "--no-mmap", "nf.safetensors"][..],
    ] {
        let out = run_in(&dir, args, Some(&file));
        let w = &json_lines(&out.stdout)[0];
        assert_eq!(w["data"]["deep"], v["data"]["deep"], "{args:?}");
    }
    let out = run_in(&dir, &["--deny-nonfinite", "nf.safetensors"], None);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout.contains("error DATA-NONFINITE"),
        "{}",
        out.stdout
    );
}

/// The portable profile from the command line: a file strict accepts that a reader of the
/// table misreads is rejected with its PORTABLE rule and the reader named; a clean refusal is
/// a support note unless `--refusals-are-errors`; `--portable-to` narrows the promise.
#[test]
fn portable_profile_rejects_misreadings_and_reports_refusals() {
    let dir = tempdir("portable");
    let proto =
        serialize(&[TensorSpec::new("w", Dtype::F32, &[1], &[0; 4])], &[]).expect("serialize");
    // The writer refuses __proto__ (NAME-SPECIAL), so write that header by hand.
    let header = r#"{"__proto__":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#;
    fs::write(dir.join("proto.safetensors"), raw(header, &[0; 4], true)).expect("write");
    fs::write(dir.join("plain.safetensors"), &proto).expect("write");
    let f64_file =
        serialize(&[TensorSpec::new("t", Dtype::F64, &[1], &[0; 8])], &[]).expect("serialize");
    fs::write(dir.join("f64.safetensors"), f64_file).expect("write");

    // Strict accepts all three (NAME-SPECIAL is a warning).
    let out = run_in(
        &dir,
        &["proto.safetensors", "plain.safetensors", "f64.safetensors"],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout.contains("warning NAME-SPECIAL"),
        "{}",
        out.stdout
    );

    let out = run_in(&dir, &["--profile", "portable", "proto.safetensors"], None);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout
            .starts_with("proto.safetensors: error PORTABLE-NAME: tensor \"__proto__\""),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("misread by: hub-js"), "{}", out.stdout);

    // MLX refuses F64: a note, not a rejection, unless asked.
    let out = run_in(&dir, &["--profile", "portable", "f64.safetensors"], None);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(out.stdout.contains("refused by: mlx"), "{}", out.stdout);
    let out = run_in(
        &dir,
        &[
            "--profile",
            "portable",
            "--refusals-are-errors",
            "f64.safetensors",
        ],
        None,
    );
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("PORTABLE-REFUSED"), "{}", out.stdout);

    // Only the readers named: the Rust crate reads __proto__ like any name.
    let out = run_in(
        &dir,
        &["--portable-to", "rust-safetensors", "proto.safetensors"],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let out = run_in(
        &dir,
        &["--portable-to", "no-such-reader", "proto.safetensors"],
        None,
    );
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("hub-js"), "{}", out.stderr);

    let out = run_in(
        &dir,
        &["--json", "--profile", "portable", "proto.safetensors"],
        None,
    );
    let v = &json_lines(&out.stdout)[0]["data"];
    assert_eq!(v["status"], "invalid");
    assert_eq!(v["error"]["rule"], "PORTABLE-NAME");
    assert_eq!(v["portable"]["portable"], false);
    assert_eq!(v["portable"]["findings"][0]["reader"], "hub-js");
}

// ---- What a person and a CI job see (issue 15): summary, quiet, grep, SARIF, explain ----

/// The mixed directory, a path that does not exist and a device, in one text run.
#[cfg(unix)]
#[test]
fn summary_line_golden() {
    let dir = tempdir("summary");
    write_mixed_dir(&dir.join("models"));
    let out = run_in(&dir, &["models", "missing.safetensors", "/dev/null"], None);
    assert_eq!(out.code, 2);
    let summary = out.summary.clone().expect("a summary line");
    assert_eq!(summary_counts(&summary), [10, 2, 6, 2]);
    golden(
        "summary.txt",
        &stable(&format!("{}{summary}\n", out.stdout)),
    );
    // Every run in text form ends with one, even a run of nothing but valid files.
    let out = run_in(&dir, &["models/valid.safetensors"], None);
    assert_eq!(
        out.summary.as_deref().map(summary_counts),
        Some([1, 1, 0, 0])
    );
    assert!(out
        .summary
        .is_some_and(|s| s.starts_with("summary: 1 file: ")));
}

#[cfg(unix)]
#[test]
fn quiet_prints_only_failures_golden() {
    let dir = tempdir("quiet");
    write_mixed_dir(&dir.join("models"));
    for set in ["good-set", "bad-set"] {
        fs::create_dir_all(dir.join(set)).expect("mkdir");
        write_good_set(&dir.join(set));
    }
    fs::write(dir.join("bad-set/m-2.safetensors"), [0u8; 4]).expect("write");
    let out = run_in(
        &dir,
        &["-q", "models", "good-set", "bad-set", "missing.safetensors"],
        None,
    );
    assert_eq!(out.code, 2);
    let all = format!(
        "{}{}\n",
        out.stdout,
        out.summary.clone().unwrap_or_default()
    );
    golden("quiet.txt", &stable(&all));
    // Nothing valid is listed: no valid file, no valid set, no valid shard of an invalid set;
    // every failure is.
    assert!(!out.stdout.contains(": ok"), "{}", out.stdout);
    assert_eq!(out.stdout.matches(": error ").count(), 8, "{}", out.stdout);
    assert!(out
        .stdout
        .contains("shard bad-set/m-2.safetensors: error FRAME-SHORT"));
    assert!(out.stdout.contains("missing.safetensors: not checked: "));
    assert_eq!(
        summary_counts(&out.summary.unwrap_or_default()),
        [11, 3, 7, 1]
    );
    // All valid: only the summary.
    let out = run_in(
        &dir,
        &["--quiet", "good-set", "models/valid.safetensors"],
        None,
    );
    assert_eq!((out.code, out.stdout.as_str()), (0, ""));
    assert_eq!(
        out.summary.as_deref().map(summary_counts),
        Some([2, 2, 0, 0])
    );
}

/// `grep -v ': ok'` keeps exactly the failures, the warnings and the summary, also with the
/// deep scan and the hash (which stay on the `ok` line).
#[test]
fn failures_only_filter_survives_deep_and_sha256() {
    let dir = tempdir("grep");
    write_mixed_dir(&dir.join("models"));
    let out = run_in(&dir, &["--deep", "--sha256", "models"], None);
    assert_eq!(out.code, 1);
    let valid = out
        .stdout
        .lines()
        .find(|l| l.starts_with("models/valid.safetensors: ok ("))
        .expect("the valid file's line");
    assert!(
        valid.contains("; deep: 14 data bytes scanned, no NaN or infinity; sha256 "),
        "{valid}"
    );
    let kept: Vec<&str> = out.stdout.lines().filter(|l| !l.contains(": ok")).collect();
    assert_eq!(kept.len(), 7, "{kept:#?}");
    for line in kept {
        assert!(
            line.contains(": error ") || line.starts_with("  warning "),
            "a line that is neither a failure nor a warning survives the filter: {line}"
        );
    }
}

#[test]
fn deny_and_allow_one_warning() {
    let dir = tempdir("deny-allow");
    write_mixed_dir(&dir);
    // warn.safetensors has one warning, FRAME-ALIGN.
    let out = run_in(&dir, &["--deny", "FRAME-ALIGN", "warn.safetensors"], None);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out
        .stdout
        .starts_with("warn.safetensors: error FRAME-ALIGN: "));
    // Denying another warning leaves this one a warning.
    let out = run_in(&dir, &["--deny", "LAYOUT-ALIGN", "warn.safetensors"], None);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(out.stdout.contains("\n  warning FRAME-ALIGN: "));
    // Allowed: not reported, also not by --deny-warnings; JSON counts agree.
    let out = run_in(&dir, &["--allow", "frame-align", "warn.safetensors"], None);
    assert_eq!(out.code, 0);
    assert!(!out.stdout.contains("warning"), "{}", out.stdout);
    let out = run_in(
        &dir,
        &[
            "--json",
            "--allow",
            "FRAME-ALIGN",
            "--deny-warnings",
            "warn.safetensors",
        ],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let v = &json_lines(&out.stdout)[0];
    assert_eq!(v["data"]["warnings"], Value::Array(Vec::new()));
    assert_eq!(v["data"]["warning_counts"], serde_json::json!({}));
    // Errors cannot be allowed; unknown rules are usage errors naming the near ones.
    let out = run_in(&dir, &["--allow", "LAYOUT-GAP", "warn.safetensors"], None);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("LAYOUT-GAP is an error, and errors cannot be allowed"),
        "{}",
        out.stderr
    );
    let out = run_in(&dir, &["--deny", "FRAME-ALLIGN", "warn.safetensors"], None);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "stcheck: --deny: no rule \"FRAME-ALLIGN\"; did you mean FRAME-ALIGN?\n"
    );
    assert_eq!(out.stdout, "");
}

/// The text of `### ID` in SPEC.md, read here on its own: the heading to the next heading.
fn spec_section(spec: &str, id: &str) -> String {
    let start = spec
        .find(&format!("\n### {id}\n"))
        .unwrap_or_else(|| panic!("SPEC.md has no section {id}"))
        + 1;
    let rest = &spec[start..];
    let end = rest[1..].find("\n#").map_or(rest.len(), |i| i + 2);
    rest[..end].trim_end().to_owned()
}

#[test]
fn explain_prints_spec_text_for_every_rule_golden() {
    let dir = tempdir("explain");
    let spec = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../SPEC.md"))
        .expect("SPEC.md");
    let mut all = String::new();
    for rule in stcheck::Rule::ALL {
        let out = run_in(&dir, &["--explain", rule.id()], None);
        assert_eq!(out.code, 0, "{rule}: {}", out.stderr);
        assert_eq!(
            out.stdout,
            format!("{}\n", spec_section(&spec, rule.id())),
            "--explain {rule} is not SPEC.md's text (rebuild after editing SPEC.md)"
        );
        assert!(out.stdout.contains("- Rationale: "), "{rule}");
        all.push_str(&format!("$ stcheck --explain {rule}\n{}\n", out.stdout));
    }
    golden("explain.txt", &all);
    // Any case; an unknown rule is a usage error that names the near ones.
    let lower = run_in(&dir, &["--explain", "data-bool"], None);
    assert_eq!(
        lower.stdout,
        run_in(&dir, &["--explain", "DATA-BOOL"], None).stdout
    );
    let out = run_in(&dir, &["--explain", "LAYOUT-GAPS"], None);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "stcheck: --explain: no rule \"LAYOUT-GAPS\"; did you mean LAYOUT-GAP?\n"
    );
    let out = run_in(&dir, &["--explain", "NAME-"], None);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.starts_with(
            "stcheck: --explain: no rule \"NAME-\"; did you mean one of NAME-CONTROL, NAME-EMPTY, "
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn help_documents_output_formats_progress_and_controls() {
    let out = run_in(&tempdir("help"), &["--help"], None);
    for needle in [
        "--format text|json|sarif",
        "-q, --quiet",
        "--progress",
        "--no-progress",
        "--explain RULE",
        "--deny RULE",
        "--allow RULE",
        "summary: 3 files: 1 valid, 1 invalid, 1 could not be checked",
        "grep -v ': ok'",
    ] {
        assert!(out.stdout.contains(needle), "help lacks {needle:?}");
    }
}

/// The SARIF 2.1.0 schema committed under docs/ (see docs/sarif.md for where it came from).
fn sarif_validator() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/sarif-schema-2.1.0.json");
    let text = fs::read_to_string(path).expect("the schema");
    // A known erratum of the published file: the two `language` patterns,
    // `^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$`, have a stray `]`, which the validator's check
    // of the schema itself refuses. stcheck writes no `language`; the pattern is replaced, in
    // memory only, by the one the SARIF SDK's own copy has, and everything else is checked as
    // published.
    const BROKEN: &str = r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$""#;
    assert_eq!(
        text.matches(BROKEN).count(),
        2,
        "the schema changed: review this patch"
    );
    let text = text.replace(BROKEN, r#""^[a-zA-Z]{2}(-[a-zA-Z]{2})?$""#);
    let schema: Value = serde_json::from_str(&text).expect("JSON");
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the schema compiles")
}

#[track_caller]
fn assert_schema_valid(log: &Value) {
    let errors: Vec<String> = sarif_validator()
        .iter_errors(log)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "not valid SARIF 2.1.0:\n{}",
        errors.join("\n")
    );
}

/// A tree with one of everything: the mixed directory, a sharded set with an invalid and a
/// missing shard and an unlisted tensor, a name that is not UTF-8 and a dangling link.
#[cfg(unix)]
fn write_sarif_tree(dir: &Path) {
    use std::os::unix::ffi::OsStrExt;
    write_mixed_dir(&dir.join("models"));
    let set = dir.join("set");
    fs::create_dir_all(&set).expect("mkdir");
    write_good_set(&set);
    fs::write(set.join("m-2.safetensors"), [0u8; 4]).expect("write");
    fs::write(
        set.join("m.safetensors.index.json"),
        r#"{"weight_map":{"a":"m-1.safetensors","c":"m-2.safetensors","x":"gone.safetensors"}}"#,
    )
    .expect("write");
    let odd = std::ffi::OsStr::from_bytes(b"odd \xfd.safetensors");
    fs::write(dir.join("models").join(odd), [1u8, 2, 3]).expect("write");
    std::os::unix::fs::symlink(
        "/nonexistent/stcheck-target",
        dir.join("models/dangling.safetensors"),
    )
    .expect("symlink");
}

/// (rule, level, offset) of every finding of a `--json` run: one SARIF result each.
fn findings_of_json(lines: &[Value]) -> Vec<(String, String, u64)> {
    let mut out = Vec::new();
    let file = |d: &Value, out: &mut Vec<(String, String, u64)>| {
        let f = |x: &Value, level: &str| {
            (
                x["rule"].as_str().unwrap_or("").to_owned(),
                level.to_owned(),
                x["offset"].as_u64().unwrap_or(u64::MAX),
            )
        };
        if d["error"].is_object() {
            out.push(f(&d["error"], "error"));
        }
        for w in d["warnings"].as_array().into_iter().flatten() {
            out.push(f(w, "warning"));
        }
        for e in d["errors"].as_array().into_iter().flatten() {
            out.push(f(e, "error"));
        }
    };
    for v in lines {
        match v["type"].as_str() {
            Some("file") => file(&v["data"], &mut out),
            Some("index") => {
                file(&v["data"], &mut out);
                for s in v["data"]["shards"].as_array().into_iter().flatten() {
                    if s["status"] != "missing" {
                        file(s, &mut out);
                    }
                }
            }
            _ => {}
        }
    }
    out.sort();
    out
}

#[cfg(unix)]
#[test]
fn sarif_golden_schema_valid_one_result_per_finding() {
    let dir = tempdir("sarif");
    write_sarif_tree(&dir);
    let args = ["models", "set", "missing.safetensors", "/dev/null"];
    let out = run_in(&dir, &[&["--format", "sarif"][..], &args].concat(), None);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let log: Value = serde_json::from_str(&out.stdout).expect("one JSON document");
    assert_schema_valid(&log);
    let run = &log["runs"][0];

    // One result per finding, the same as the JSON Lines output's.
    let json = run_in(&dir, &[&["--json"][..], &args].concat(), None);
    let mut results: Vec<(String, String, u64)> = run["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            (
                r["ruleId"].as_str().unwrap_or("").to_owned(),
                r["level"].as_str().unwrap_or("").to_owned(),
                r["locations"][0]["physicalLocation"]["region"]["byteOffset"]
                    .as_u64()
                    .unwrap_or(u64::MAX),
            )
        })
        .collect();
    results.sort();
    assert_eq!(results, findings_of_json(&json_lines(&json.stdout)));

    // Rule IDs index the driver's rules, which are every rule of SPEC.md in order.
    let rules = run["tool"]["driver"]["rules"].as_array().expect("rules");
    let ids: Vec<&str> = rules.iter().filter_map(|r| r["id"].as_str()).collect();
    let all: Vec<&str> = stcheck::Rule::ALL.iter().map(|r| r.id()).collect();
    assert_eq!(ids, [&all[..], &["FORMAT-OTHER"]].concat());
    for r in run["results"].as_array().into_iter().flatten() {
        let i = r["ruleIndex"].as_u64().expect("ruleIndex") as usize;
        assert_eq!(rules[i]["id"], r["ruleId"]);
    }
    let gap = &rules[all.iter().position(|&r| r == "LAYOUT-GAP").unwrap_or(0)];
    assert_eq!(gap["defaultConfiguration"]["level"], "error");
    assert!(gap["fullDescription"]["text"]
        .as_str()
        .is_some_and(|t| t.starts_with("Sorted by (begin, end), the tensors MUST tile")));
    let align = &rules[all.iter().position(|&r| r == "LAYOUT-ALIGN").unwrap_or(0)];
    assert_eq!(align["defaultConfiguration"]["level"], "warning");

    // Locations: relative to %SRCROOT%, bytes that are not UTF-8 percent-encoded; a shard's
    // own error is a related location of INDEX-SHARD-INVALID.
    let uris: Vec<&str> = run["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].as_str())
        .collect();
    assert!(uris.contains(&"models/odd%20%FD.safetensors"), "{uris:?}");
    assert!(uris.contains(&"set/m-2.safetensors"), "{uris:?}");
    let invalid_shard = run["results"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["ruleId"] == "INDEX-SHARD-INVALID")
        .expect("INDEX-SHARD-INVALID");
    assert_eq!(
        invalid_shard["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "set/m.safetensors.index.json"
    );
    let related = &invalid_shard["relatedLocations"][0]["physicalLocation"];
    assert_eq!(related["artifactLocation"]["uri"], "set/m-2.safetensors");
    assert_eq!(related["region"]["byteOffset"], 0);

    // What could not be checked: notifications, and the run did not succeed.
    let inv = &run["invocations"][0];
    assert_eq!(inv["executionSuccessful"], false);
    assert_eq!(inv["exitCode"], 2);
    let reasons: Vec<&str> = inv["toolExecutionNotifications"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["descriptor"]["id"].as_str())
        .collect();
    assert_eq!(
        reasons,
        vec!["dangling_link", "not_found", "not_regular_file"]
    );

    // The golden log, with the working directory, the repository's address and the rules'
    // SPEC.md text left out.
    let driver = &run["tool"]["driver"];
    // No repository is named yet (no public home): then the log leaves the address out.
    assert_eq!(
        driver["informationUri"].as_str().unwrap_or_default(),
        env!("CARGO_PKG_REPOSITORY")
    );
    assert_eq!(driver["version"], env!("CARGO_PKG_VERSION"));
    let mut stable = log.clone();
    stable["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] = "file:///WORKDIR/".into();
    stable["runs"][0]["tool"]["driver"]["rules"] = ids.into();
    stable["runs"][0]["tool"]["driver"]["informationUri"] = "REPOSITORY".into();
    golden(
        "sarif.json",
        &format!("{}\n", serde_json::to_string_pretty(&stable).expect("JSON")),
    );
}

/// A pickle weight file found by a walk is an alert on the file (a `FORMAT-OTHER` result of
/// level `error`, with its rule in the driver), as well as a path not checked; the text and JSON
/// outputs and the exit code are those of a path not checked; `--allow-other-formats` accepts
/// it unseen.
#[test]
fn sarif_other_format_is_a_result_on_the_file() {
    let dir = tempdir("sarif-other");
    let models = dir.join("models");
    fs::create_dir_all(&models).expect("mkdir");
    fs::write(models.join("valid.safetensors"), valid_file()).expect("write");
    // A protocol-2 pickle: PROTO 2, EMPTY_DICT, STOP.
    fs::write(models.join("pytorch_model.bin"), [0x80u8, 2, b'}', b'.']).expect("write");

    let out = run_in(&dir, &["--format", "sarif", "models"], None);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let log: Value = serde_json::from_str(&out.stdout).expect("one JSON document");
    assert_schema_valid(&log);
    let run = &log["runs"][0];
    let results = run["results"].as_array().expect("results");
    assert_eq!(results.len(), 1, "{results:?}");
    let r = &results[0];
    assert_eq!(r["ruleId"], "FORMAT-OTHER");
    assert_eq!(r["level"], "error");
    let at = &r["locations"][0]["physicalLocation"];
    assert_eq!(at["artifactLocation"]["uri"], "models/pytorch_model.bin");
    assert_eq!(at["artifactLocation"]["uriBaseId"], "%SRCROOT%");
    assert_eq!(at["region"]["byteOffset"], 0);
    assert!(
        r["message"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("pytorch_model.bin: not checked: ")),
        "{r}"
    );
    let rules = run["tool"]["driver"]["rules"].as_array().expect("rules");
    let rule = &rules[r["ruleIndex"].as_u64().expect("ruleIndex") as usize];
    assert_eq!(rule["id"], "FORMAT-OTHER");
    assert_eq!(rule["defaultConfiguration"]["level"], "error");
    assert!(
        rule["help"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("run arbitrary code")),
        "{rule}"
    );
    // Still a path not checked, and the run did not succeed.
    let inv = &run["invocations"][0];
    assert_eq!(inv["exitCode"], 2);
    assert_eq!(inv["executionSuccessful"], false);
    assert_eq!(
        inv["toolExecutionNotifications"][0]["descriptor"]["id"],
        "other_format"
    );

    // The other formats say what they said before, with the same exit code.
    let text = run_in(&dir, &["models"], None);
    assert_eq!(text.code, 2, "{}", text.stderr);
    assert!(!text.stdout.contains("FORMAT-OTHER"), "{}", text.stdout);
    let json = run_in(&dir, &["--json", "models"], None);
    assert_eq!(json.code, 2, "{}", json.stderr);
    assert!(!json.stdout.contains("FORMAT-OTHER"), "{}", json.stdout);

    // Allowed: no result, no notification.
    let out = run_in(
        &dir,
        &["--format", "sarif", "--allow-other-formats", "models"],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let log: Value = serde_json::from_str(&out.stdout).expect("one JSON document");
    assert_schema_valid(&log);
    assert_eq!(log["runs"][0]["results"], serde_json::json!([]));
    assert!(log["runs"][0]["invocations"][0]["toolExecutionNotifications"].is_null());
}

#[test]
fn sarif_of_valid_files_and_stdin() {
    let dir = tempdir("sarif-valid");
    write_mixed_dir(&dir);
    let out = run_in(&dir, &["--format", "sarif", "valid.safetensors"], None);
    assert_eq!(out.code, 0);
    let log: Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_schema_valid(&log);
    assert_eq!(log["runs"][0]["results"], Value::Array(Vec::new()));
    assert_eq!(
        log["runs"][0]["invocations"][0]["executionSuccessful"],
        true
    );
    // Standard input has no file to point at: its results have no location.
    let out = run_in(&dir, &["--format=sarif", "-"], Some(&[1, 2, 3]));
    assert_eq!(out.code, 1);
    let log: Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_schema_valid(&log);
    assert_eq!(log["runs"][0]["results"][0]["ruleId"], "FRAME-SHORT");
    assert_eq!(
        log["runs"][0]["results"][0]["locations"],
        Value::Array(Vec::new())
    );
    // The schema check itself rejects what is not SARIF: an unknown level, a location that is
    // not a URI reference.
    let mut broken = log.clone();
    broken["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(!sarif_validator().is_valid(&broken));
    let mut broken = log.clone();
    broken["runs"][0]["results"][0]["locations"] =
        serde_json::json!([{"physicalLocation": {"artifactLocation": {"uri": "a b"}}}]);
    assert!(!sarif_validator().is_valid(&broken));
    broken["runs"][0]["results"][0]["locations"] =
        serde_json::json!([{"physicalLocation": {"artifactLocation": {"uri": "a%20b"}}}]);
    assert!(sarif_validator().is_valid(&broken));
}

/// `--expect-sha256` on the local routes: a file and standard input compared with the hash the
/// user gives (one more published id, named in the message and `published_sha256`); a
/// directory, a set or two files are a usage error.
#[test]
fn expect_sha256_compares_a_local_file_and_standard_input() {
    use sha2::Digest;
    let dir = tempdir("expect-sha256");
    let file = valid_file();
    fs::write(dir.join("a.safetensors"), &file).expect("write");
    fs::write(dir.join("b.safetensors"), &file).expect("write");
    let real: String = sha2::Sha256::digest(&file)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let other = "0".repeat(64);
    for stdin in [None, Some(file.as_slice())] {
        let target = if stdin.is_some() {
            "-"
        } else {
            "a.safetensors"
        };
        let ok = run_in(
            &dir,
            &["--expect-sha256", &real.to_uppercase(), target],
            stdin,
        );
        assert_eq!(ok.code, 0, "{target}: {}{}", ok.stdout, ok.stderr);
        let bad = run_in(&dir, &["--json", "--expect-sha256", &other, target], stdin);
        assert_eq!(bad.code, 1, "{target}: {}", bad.stdout);
        let record = &json_lines(&bad.stdout)[0]["data"];
        assert_eq!(record["error"]["rule"], "INTEGRITY-SHA256", "{record}");
        let message = record["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("--expect-sha256 publishes {other}"))
                && message.contains(&real),
            "{message}"
        );
        assert_eq!(
            record["published_sha256"],
            serde_json::json!([{"source": "--expect-sha256", "sha256": other}])
        );
    }
    for args in [
        &["--expect-sha256", &real, "."][..],
        &["--expect-sha256", &real, "a.safetensors", "b.safetensors"],
    ] {
        let out = run_in(&dir, args, None);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stdout);
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
        assert!(
            out.stderr
                .contains("--expect-sha256 gives the SHA-256 of one file"),
            "{}",
            out.stderr
        );
    }
}
