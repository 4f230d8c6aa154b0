//! The writer suite: the shipped tasks cover what they claim, the runner classifies every kind
//! of writer behaviour (fake adapters wrapping stcheck's own writer), stcheck's and the
//! reference crate's writers give their recorded results, and the protocol's example adapter
//! is the shipped file.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use stcheck_conformance::writers::known::{Difference, WriterKnown};
use stcheck_conformance::writers::run::{run_all, WriterRunOptions};
use stcheck_conformance::writers::stcheck_api;
use stcheck_conformance::writers::{report, Expect, Task, WriterOutcome, WriterResults};

fn conformance_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn shipped_tasks() -> Vec<Task> {
    Task::load_dir(&conformance_dir().join("../corpus/writers")).expect("corpus/writers loads")
}

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("stwrite-{name}"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn options(name: &str, command: Vec<String>, work: &Path, timeout: Duration) -> WriterRunOptions {
    let mut opts = WriterRunOptions::new(name, command, work.to_path_buf());
    opts.spec.timeout = timeout;
    opts.spec.jobs = 2;
    opts
}

fn outcome(r: &WriterResults, id: &str) -> WriterOutcome {
    r.task(id)
        .unwrap_or_else(|| panic!("no result for {id}"))
        .outcome
}

// ---------------------------------------------------------------------------------------
// The shipped tasks

fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

#[test]
fn utf16_order_differs_from_byte_order_above_the_bmp() {
    // U+FF61 is EF BD A1 in UTF-8 and FF61 in UTF-16; U+1F600 is F0 9F 98 80 and D83D DE00.
    assert!("\u{ff61}" < "\u{1f600}");
    assert_eq!(
        utf16_cmp("\u{ff61}", "\u{1f600}"),
        std::cmp::Ordering::Greater
    );
}

fn byte_len(dtype: &str, shape: &[u64]) -> Option<u64> {
    stcheck_api::byte_length(dtype, shape).ok()
}

/// Names of one dtype whose order by UTF-8 bytes differs from their order by UTF-16 units.
fn sorts_differently(ts: &[stcheck_conformance::writers::task::Tensor]) -> bool {
    let mut by_bytes: Vec<(&str, &str)> = ts
        .iter()
        .map(|x| (x.dtype.as_str(), x.name.as_str()))
        .collect();
    by_bytes.sort();
    by_bytes
        .windows(2)
        .any(|w| w[0].0 == w[1].0 && utf16_cmp(w[0].1, w[1].1) == std::cmp::Ordering::Greater)
}

#[test]
fn the_tasks_cover_what_the_suite_promises() {
    let tasks = shipped_tasks();
    assert!(tasks.len() >= 40, "only {} tasks", tasks.len());
    // Each task with its tensors expanded once.
    let expanded: Vec<(&Task, Vec<stcheck_conformance::writers::task::Tensor>)> =
        tasks.iter().map(|t| (t, t.tensors())).collect();
    let writes: Vec<&(&Task, Vec<_>)> = expanded
        .iter()
        .filter(|(t, _)| t.expect == Expect::Write)
        .collect();
    let refuses: Vec<&(&Task, Vec<_>)> = expanded
        .iter()
        .filter(|(t, _)| t.expect == Expect::Refuse)
        .collect();
    let any_write = |f: &dyn Fn(&Task, &[stcheck_conformance::writers::task::Tensor]) -> bool| {
        writes.iter().any(|(t, ts)| f(t, ts))
    };
    let any_refuse = |f: &dyn Fn(&Task, &[stcheck_conformance::writers::task::Tensor]) -> bool| {
        refuses.iter().any(|(t, ts)| f(t, ts))
    };

    for d in stcheck_api::dtype_names() {
        assert!(
            any_write(&|_, ts| ts.len() == 1 && ts[0].dtype == d),
            "no write task with one {d} tensor"
        );
    }
    assert!(
        any_write(&|_, ts| ts.iter().any(|x| x.shape.is_empty())),
        "scalars"
    );
    assert!(
        any_write(&|_, ts| !ts.is_empty() && ts.iter().all(|x| x.data.is_empty())),
        "only zero-size tensors"
    );
    // Zero-size tensors first, in the middle and last (by name, within one dtype).
    let zero_at = |pick: fn(usize) -> Vec<usize>| {
        any_write(&|_, ts| {
            let mut v: Vec<_> = ts.iter().collect();
            v.sort_by(|a, b| a.name.cmp(&b.name));
            v.len() >= 2
                && v.iter().all(|x| x.dtype == v[0].dtype)
                && pick(v.len()).iter().any(|&i| v[i].data.is_empty())
        })
    };
    assert!(zero_at(|_| vec![0]), "no zero-size tensor first");
    assert!(
        zero_at(|n| (1..n - 1).collect()),
        "no zero-size tensor in the middle"
    );
    assert!(zero_at(|n| vec![n - 1]), "no zero-size tensor last");
    let empty_meta = |t: &Task| t.metadata.as_ref().is_some_and(|m| m.0.is_empty());
    assert!(
        any_write(&|t, ts| ts.is_empty() && t.metadata.is_none()),
        "no tensors, no metadata"
    );
    assert!(
        any_write(&|t, ts| ts.is_empty() && empty_meta(t)),
        "no tensors, empty metadata"
    );
    assert!(
        any_write(&|t, ts| !ts.is_empty() && t.metadata.is_none()),
        "absent metadata"
    );
    assert!(
        any_write(&|t, ts| !ts.is_empty() && empty_meta(t)),
        "empty metadata"
    );
    assert!(
        any_write(&|t, _| {
            t.metadata.as_ref().is_some_and(|m| {
                m.0.iter()
                    .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
                    .sum::<usize>()
                    >= 64 * 1024
            })
        }),
        "large metadata"
    );
    assert!(
        any_write(&|_, ts| ts.iter().any(|x| !x.name.is_ascii())),
        "non-ASCII names"
    );
    assert!(
        any_write(&|_, ts| ts.iter().any(|x| x.name.chars().count() >= 1024)),
        "long names"
    );
    assert!(
        any_write(&|_, ts| sorts_differently(ts)),
        "no names that sort differently by bytes and by UTF-16"
    );
    assert!(any_write(&|_, ts| ts.len() >= 10_000), "10,000 tensors");
    assert!(
        expanded.iter().any(|(t, ts)| t.large
            && t.expect == Expect::Write
            && ts.iter().any(|x| x.data.len() >= 1 << 30)),
        "a tensor of at least 1 GiB"
    );
    assert!(tasks
        .iter()
        .filter(|t| t.large)
        .all(|t| t.data_len() >= 1 << 30));

    // What a writer must refuse.
    assert!(
        any_refuse(&|_, ts| ts
            .iter()
            .enumerate()
            .any(|(i, a)| ts[i + 1..].iter().any(|b| a.name == b.name))),
        "duplicate names"
    );
    assert!(
        any_refuse(&|_, ts| ts.iter().any(|x| x.name == "__metadata__")),
        "__metadata__"
    );
    assert!(
        any_refuse(&|_, ts| ts
            .iter()
            .any(|x| byte_len(&x.dtype, &x.shape) != Some(x.data.len()))),
        "data length not dtype x shape"
    );
    assert!(
        any_refuse(&|_, ts| ts
            .iter()
            .any(|x| x.name.chars().any(stcheck::internal::is_control))),
        "control characters in names"
    );
    assert!(
        any_refuse(&|t, _| t.metadata.as_ref().is_some_and(|m| m.strings().is_err())),
        "non-string metadata"
    );
}

#[test]
fn tasks_are_well_formed_and_determinism_is_not_left_to_chance() {
    for t in shipped_tasks() {
        if t.expect == Expect::Refuse {
            continue;
        }
        // A task without warnings of its own is one stcheck's canonical writer writes, and
        // the file is valid without a warning; only `either` tasks may bring warnings.
        if let Some(m) = &t.metadata {
            let n = m.0.len();
            assert!(
                n <= 1 || n >= 10,
                "{}: {n} metadata entries: a hash-ordered writer would pass now and then",
                t.id
            );
        }
        if !t.warnings.is_empty() {
            assert_eq!(
                t.expect,
                Expect::Either,
                "{}: warnings only on either tasks",
                t.id
            );
        } else if !t.large {
            let ts = t.tensors();
            let data: Vec<Vec<u8>> = ts.iter().map(|x| x.data.to_vec()).collect();
            let specs: Vec<stcheck_api::WriteTensor<'_>> = ts
                .iter()
                .zip(&data)
                .map(|(x, d)| stcheck_api::WriteTensor {
                    name: &x.name,
                    dtype: &x.dtype,
                    shape: &x.shape,
                    data: d,
                })
                .collect();
            let meta = t
                .metadata
                .as_ref()
                .map(|m| m.strings().expect("strings"))
                .unwrap_or_default();
            let file = stcheck_api::write_canonical(&specs, &meta)
                .unwrap_or_else(|e| panic!("{}: stcheck's writer refuses it: {e:?}", t.id));
            let checked = stcheck_api::check_strict(&file).expect("canonical file is valid");
            assert!(
                checked.warnings.is_empty(),
                "{}: {:?}",
                t.id,
                checked.warnings
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// The runner, with fake writers

/// Three small tasks: one to write, one to refuse, one either way.
fn small_tasks(dir: &Path) -> Vec<Task> {
    let tasks = [
        (
            "a/write",
            r#"{"description":"d","expect":"write","tensors":[
                {"name":"w","dtype":"F32","shape":["2"],"data":{"random":"1"}},
                {"name":"b","dtype":"U8","shape":["3"],"data":{"fill":"07"}}],
               "metadata":{"format":"pt"}}"#,
        ),
        (
            "b/refuse",
            r#"{"description":"d","expect":"refuse","reason":"r","tensors":[
                {"name":"__metadata__","dtype":"U8","shape":["2"],"data":{"hex":"0102"}}]}"#,
        ),
        (
            "c/either",
            r#"{"description":"d","expect":"either","reason":"r","warnings":["NAME-PATH"],
               "tensors":[{"name":"../x","dtype":"U8","shape":["1"],"data":{"hex":"05"}}]}"#,
        ),
    ];
    for (id, text) in tasks {
        let path = dir.join("tasks").join(format!("{id}.json"));
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write task");
    }
    Task::load_dir(&dir.join("tasks")).expect("tasks load")
}

/// A fake writer: `sh -c SCRIPT writer TASK OUT`. `$W` is stcheck's writer adapter, and
/// `$R` a writer that writes whatever it is given (the reference crate).
fn fake(script: &str) -> Vec<String> {
    let script = format!(
        "W='{}'; R='{}'; {script}",
        env!("CARGO_BIN_EXE_writer-stcheck"),
        env!("CARGO_BIN_EXE_writer-reference-crate")
    );
    vec!["sh".into(), "-c".into(), script, "writer".into()]
}

fn run_fake(name: &str, script: &str, timeout: Duration) -> WriterResults {
    let dir = scratch(name);
    let tasks = small_tasks(&dir);
    run_all(
        &options(name, fake(script), &dir.join("work"), timeout),
        &tasks,
        &|_| {},
    )
}

const T: Duration = Duration::from_secs(20);

#[test]
fn stcheck_writer_passes_writes_and_refuses() {
    let r = run_fake("good", r#"exec "$W" "$1" "$2""#, T);
    assert_eq!(outcome(&r, "a/write"), WriterOutcome::Pass);
    assert_eq!(outcome(&r, "b/refuse"), WriterOutcome::Pass);
    assert_eq!(outcome(&r, "c/either"), WriterOutcome::Refused);
    assert!(r.tasks.iter().all(|t| t.form.is_empty()));
    assert_eq!(r.worst(), Some(WriterOutcome::Refused));
}

#[test]
fn writing_what_must_be_refused_is_the_worst_outcome() {
    // The reference crate writes a tensor named __metadata__.
    let r = run_fake("lenient", r#"exec "$R" "$1" "$2""#, T);
    assert_eq!(outcome(&r, "a/write"), WriterOutcome::Pass);
    assert_eq!(outcome(&r, "c/either"), WriterOutcome::Wrote);
    let bad = r.task("b/refuse").expect("result");
    assert_eq!(bad.outcome, WriterOutcome::ShouldHaveRefused);
    assert!(bad.detail.contains("SCHEMA-METADATA"), "{}", bad.detail);
    assert!(
        bad.detail.contains(r#"header: {"__metadata__":"#),
        "{}",
        bad.detail
    );
    assert_eq!(r.worst(), Some(WriterOutcome::ShouldHaveRefused));
    let md = report::matrix(
        std::slice::from_ref(&r),
        &small_tasks(&scratch("lenient-tasks")),
    );
    assert!(md.contains("| **SHOULD_HAVE_REFUSED** |"), "{md}");
    assert!(md.contains("| `b/refuse` | refuse | **WRITES!** |"), "{md}");
}

#[test]
fn refusing_everything() {
    let r = run_fake("refuser", "echo no >&2; exit 1", T);
    assert_eq!(outcome(&r, "a/write"), WriterOutcome::ShouldHaveWritten);
    assert_eq!(outcome(&r, "b/refuse"), WriterOutcome::Pass);
    assert_eq!(outcome(&r, "c/either"), WriterOutcome::Refused);
    assert_eq!(r.task("a/write").map(|t| t.stderr.as_str()), Some("no"));
}

#[test]
fn unsupported_crash_signal_timeout_and_adapter_errors() {
    let all = |r: &WriterResults, o: WriterOutcome| r.tasks.iter().all(|t| t.outcome == o);
    assert!(all(
        &run_fake("skip", "exit 77", T),
        WriterOutcome::Unsupported
    ));
    assert!(all(&run_fake("exit2", "exit 2", T), WriterOutcome::Crash));
    assert!(all(&run_fake("exit3", "exit 3", T), WriterOutcome::Crash));
    let sig = run_fake("signal", "kill -SEGV $$", T);
    assert!(all(&sig, WriterOutcome::Crash));
    assert!(
        sig.tasks[0].detail.contains("signal"),
        "{}",
        sig.tasks[0].detail
    );
    assert!(all(
        &run_fake("slow", "sleep 30", Duration::from_millis(500)),
        WriterOutcome::Timeout
    ));
}

#[test]
fn a_refusal_that_leaves_a_file_is_reported() {
    let r = run_fake("leaves", r#": > "$2"; exit 1"#, T);
    let t = r.task("b/refuse").expect("result");
    assert_eq!(t.outcome, WriterOutcome::Pass);
    assert_eq!(t.detail, "left a file of 0 bytes at the output path");
}

#[test]
fn bad_files_are_invalid_or_wrong_content() {
    // One byte after the data: stcheck rejects the file (DATA-TRAILING).
    let r = run_fake("trailing", r#""$W" "$1" "$2" && printf x >> "$2""#, T);
    let t = r.task("a/write").expect("result");
    assert_eq!(t.outcome, WriterOutcome::InvalidFile);
    assert!(t.detail.starts_with("DATA-TRAILING"), "{}", t.detail);
    // The last data byte changed: a valid file with other bytes.
    let r = run_fake(
        "flipped",
        r#""$W" "$1" "$2" && n=$(wc -c < "$2") && printf '\377' | dd of="$2" bs=1 seek=$((n - 1)) conv=notrunc 2>/dev/null"#,
        T,
    );
    let t = r.task("a/write").expect("result");
    assert_eq!(t.outcome, WriterOutcome::WrongContent);
    assert!(t.detail.contains("tensor \"b\""), "{}", t.detail);
    // Exit 0 without a file, and a symbolic link instead of a file.
    let r = run_fake("nofile", "exit 0", T);
    assert_eq!(outcome(&r, "a/write"), WriterOutcome::InvalidFile);
    assert_eq!(outcome(&r, "b/refuse"), WriterOutcome::ShouldHaveRefused);
    let r = run_fake("symlink", r#""$W" "$1" "$2.real"; ln -s "$2.real" "$2""#, T);
    let t = r.task("a/write").expect("result");
    assert_eq!(t.outcome, WriterOutcome::InvalidFile);
    assert!(t.detail.contains("not a regular file"), "{}", t.detail);
}

#[test]
fn other_content_is_found_field_by_field() {
    // The reference crate, given an edited task: each edit must show as WRONG_CONTENT.
    let edits: &[(&str, &str, &str)] = &[
        (
            "name",
            r#"s/"name":"w"/"name":"v"/"#,
            "tensor \"w\" is missing",
        ),
        (
            "dtype",
            r#"s/"dtype":"F32"/"dtype":"I32"/"#,
            "dtype I32, not F32",
        ),
        (
            "shape",
            r#"s/"shape":\["2"\]/"shape":["1","2"]/"#,
            "shape [1, 2], not [2]",
        ),
        ("metadata", r#"s/"pt"/"np"/"#, "metadata differs"),
        (
            "no-metadata",
            r#"s/,"metadata":{[^}]*}//"#,
            "metadata differs",
        ),
    ];
    for (name, sed, want) in edits {
        let script = format!(r#"sed -e '{sed}' "$1" > "$1.edited" && exec "$R" "$1.edited" "$2""#);
        let r = run_fake(&format!("edit-{name}"), &script, T);
        let t = r.task("a/write").expect("result");
        assert_eq!(
            t.outcome,
            WriterOutcome::WrongContent,
            "{name}: {}",
            t.detail
        );
        assert!(t.detail.contains(want), "{name}: {}", t.detail);
    }
}

#[test]
fn a_second_run_with_other_bytes_is_not_deterministic() {
    // The first run writes the canonical file; later runs add a metadata entry.
    let script = r#"if [ -e "$1.seen" ]; then sed -e 's/"metadata":{/"metadata":{"run":"2",/' "$1" > "$1.2"; exec "$W" "$1.2" "$2"; fi; : > "$1.seen"; exec "$W" "$1" "$2""#;
    let r = run_fake("nondet", script, T);
    let t = r.task("a/write").expect("result");
    assert_eq!(t.outcome, WriterOutcome::NotDeterministic, "{}", t.detail);
    // A second run that refuses is not deterministic either.
    let script = r#"if [ -e "$1.seen" ]; then exit 1; fi; : > "$1.seen"; exec "$W" "$1" "$2""#;
    let r = run_fake("nondet-refuse", script, T);
    assert_eq!(outcome(&r, "a/write"), WriterOutcome::NotDeterministic);
}

#[test]
fn the_form_of_a_file_is_recorded_apart_from_the_task_warnings() {
    // Rewrite the header unpadded: the same content, but FRAME-ALIGN.
    let script = r#""$R" "$1" "$2" || exit $?
python3 - "$2" <<'PY'
import json, struct, sys
p = sys.argv[1]; b = open(p, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = b[8:8 + n].rstrip(b" ")
if len(h) % 8 == 0:
    h += b" "
open(p, "wb").write(struct.pack("<Q", len(h)) + h + b[8 + n:])
PY"#;
    let r = run_fake("unpadded", script, T);
    let w = r.task("a/write").expect("result");
    assert_eq!(w.outcome, WriterOutcome::Pass);
    assert_eq!(w.form, ["FRAME-ALIGN"]);
    // The either task's NAME-PATH is the task's own warning, not the writer's form.
    let e = r.task("c/either").expect("result");
    assert_eq!(e.outcome, WriterOutcome::Wrote);
    assert_eq!(e.form, ["FRAME-ALIGN"]);
    assert_eq!(report::canonical(&r), (0, 2));
}

// ---------------------------------------------------------------------------------------
// Known failures

#[test]
fn known_failures_catch_every_change_and_bless_records_them() {
    let dir = scratch("known");
    let tasks = small_tasks(&dir);
    let r = run_fake("known-run", r#"exec "$R" "$1" "$2""#, T);
    let blessed = WriterKnown::default().bless(&r, &tasks);
    assert_eq!(blessed.results.len(), 2, "{:?}", blessed.results);
    assert!(blessed.check(&r, &tasks).is_empty());
    // Round trip through the file format.
    let text = serde_json::to_string(&blessed).expect("json");
    assert_eq!(WriterKnown::parse(&text).expect("parses"), blessed);

    let mut changed = blessed.clone();
    changed.results.remove("b/refuse");
    assert!(matches!(
        changed.check(&r, &tasks).as_slice(),
        [Difference::New { id, got: WriterOutcome::ShouldHaveRefused }] if id == "b/refuse"
    ));
    let mut form = blessed.clone();
    form.form
        .insert("a/write".into(), vec!["FRAME-ALIGN".into()]);
    assert!(matches!(
        form.check(&r, &tasks).as_slice(),
        [Difference::Form { .. }]
    ));
    let mut gone = blessed.clone();
    gone.results.insert(
        "z/gone".into(),
        stcheck_conformance::writers::known::Entry::Plain(WriterOutcome::Crash),
    );
    assert!(matches!(
        gone.check(&r, &tasks).as_slice(),
        [Difference::Unknown {
            what: "listed task does not exist",
            ..
        }]
    ));
    let good = run_fake("known-good", r#"exec "$W" "$1" "$2""#, T);
    let diffs = blessed.check(&good, &tasks);
    assert!(
        diffs
            .iter()
            .any(|d| matches!(d, Difference::NowPasses { id, .. } if id == "b/refuse")),
        "{diffs:?}"
    );
    assert!(WriterKnown::parse(r#"{"results":{"a":"PASS"}}"#).is_err());
}

// ---------------------------------------------------------------------------------------
// The shipped writers that need nothing installed

fn shipped(name: &str, command: Vec<String>) {
    let tasks = shipped_tasks();
    let work = scratch(&format!("shipped-{name}"));
    let r = run_all(
        &options(name, command, &work, Duration::from_secs(60)),
        &tasks,
        &|_| {},
    );
    let path = conformance_dir().join(format!("known-failures/writers/{name}.json"));
    let known =
        WriterKnown::parse(&fs::read_to_string(&path).expect("known failures")).expect("parses");
    let diffs = known.check(&r, &tasks);
    assert!(
        diffs.is_empty(),
        "{name} differs from {}:\n{}",
        path.display(),
        diffs.iter().map(|d| format!("  {d}\n")).collect::<String>()
    );
}

#[test]
fn stcheck_writer_gives_its_recorded_results_and_fails_no_task() {
    shipped("stcheck", vec![env!("CARGO_BIN_EXE_writer-stcheck").into()]);
    let known = WriterKnown::parse(
        &fs::read_to_string(conformance_dir().join("known-failures/writers/stcheck.json"))
            .expect("file"),
    )
    .expect("parses");
    assert!(known.results.values().all(|e| !e.result().is_failure()));
    assert!(known.form.is_empty(), "stcheck's writer is canonical");
}

#[test]
fn reference_crate_writers_give_their_recorded_results() {
    let bin = env!("CARGO_BIN_EXE_writer-reference-crate");
    for api in ["serialize_to_file", "serialize"] {
        shipped(
            &format!("reference-{}", api.replace('_', "-")),
            vec![bin.into(), "--api".into(), api.into()],
        );
    }
}

// ---------------------------------------------------------------------------------------
// The protocol document

#[test]
fn the_example_adapter_in_writer_protocol_md_is_the_shipped_file() {
    let dir = conformance_dir();
    let doc = fs::read_to_string(dir.join("WRITER-PROTOCOL.md")).expect("doc");
    let example =
        fs::read_to_string(dir.join("adapters/writers/example_writer.py")).expect("example");
    assert!(doc.contains(&format!("```python\n{example}```\n")));
    assert!(
        example.lines().count() <= 40,
        "the example should stay short"
    );
}

/// Runs the example over a few shipped tasks where the conformance venv exists
/// (`conformance/setup-python.sh`; `run-all.sh` creates it before the tests run).
#[test]
fn the_example_adapter_writes_refuses_and_skips() {
    let python = conformance_dir().join("../target/conformance-venv/bin/python");
    if !python.is_file() {
        eprintln!(
            "skipped: no {} (run conformance/setup-python.sh)",
            python.display()
        );
        return;
    }
    let tasks: Vec<Task> = shipped_tasks()
        .into_iter()
        .filter(|t| ["dtype/f32", "dtype/bf16", "refuse/metadata-number"].contains(&t.id.as_str()))
        .collect();
    let command = vec![
        python.to_string_lossy().into_owned(),
        conformance_dir()
            .join("adapters/writers/example_writer.py")
            .to_string_lossy()
            .into_owned(),
    ];
    let r = run_all(
        &options(
            "example",
            command,
            &scratch("example"),
            Duration::from_secs(60),
        ),
        &tasks,
        &|_| {},
    );
    assert_eq!(outcome(&r, "dtype/f32"), WriterOutcome::Pass);
    assert_eq!(outcome(&r, "dtype/bf16"), WriterOutcome::Unsupported);
    // safetensors refuses a number as a metadata value (it takes a dict of strings).
    assert_eq!(outcome(&r, "refuse/metadata-number"), WriterOutcome::Pass);
}
