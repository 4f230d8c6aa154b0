//! The runner classifies results correctly: tiny fake adapters (shell scripts that accept,
//! reject, crash, hang, or print wrong JSON) over a tiny corpus written with stcheck's writer.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use sha2::{Digest, Sha256};
use stcheck::write::{serialize, TensorSpec};
use stcheck::Dtype;
use stcheck_conformance::runner::classify::{Expect, Judge};
use stcheck_conformance::runner::known::{Difference, KnownFailures};
use stcheck_conformance::runner::run::run_all;
use stcheck_conformance::runner::{report, Manifest, Outcome, RunOptions, RunResults};

fn hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("stconform-{name}"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The fixture corpus: `valid/two` (accept, with metadata), `invalid/trailing` (reject),
/// `choice/empty-name` (implementation-defined), `deep/bool` (reject, deep). Returns the
/// manifest path.
fn corpus(dir: &Path) -> PathBuf {
    let w: Vec<u8> = (0u8..24).collect();
    let b = [1u8, 0];
    let two = serialize(
        &[
            TensorSpec::new("w", Dtype::F32, &[2, 3], &w),
            TensorSpec::new("b", Dtype::BOOL, &[2], &b),
        ],
        &[("format", "pt")],
    )
    .expect("valid file");
    let mut trailing = two.clone();
    trailing.push(0);
    let bad_bool = serialize(&[TensorSpec::new("b", Dtype::BOOL, &[2], &[1, 0])], &[])
        .map(|mut f| {
            let n = f.len();
            f[n - 1] = 7; // not 0 or 1: only a data scan sees it
            f
        })
        .expect("valid file");
    fs::create_dir_all(dir.join("files")).expect("mkdir");
    fs::write(dir.join("files/two.safetensors"), &two).expect("write");
    fs::write(dir.join("files/trailing.safetensors"), &trailing).expect("write");
    fs::write(dir.join("files/choice.safetensors"), &two).expect("write");
    fs::write(dir.join("files/bool.safetensors"), &bad_bool).expect("write");
    let report = stcheck::validate(&two, &stcheck::Config::default()).expect("valid");
    let tensors: Vec<serde_json::Value> = report
        .tensors()
        .map(|t| {
            serde_json::json!({
                "name": t.name, "dtype": t.dtype.name(),
                "shape": t.shape.iter().map(u64::to_string).collect::<Vec<_>>(),
                "data_offsets": [t.begin.to_string(), t.end.to_string()],
                "sha256": hex(t.data(&two)),
            })
        })
        .collect();
    let expected = serde_json::json!({"tensors": tensors, "metadata": {"format": "pt"}});
    let manifest = serde_json::json!({"version": "1", "cases": [
        {"id": "valid/two", "path": "files/two.safetensors", "verdict": "accept",
         "rules": [], "warnings": [], "deep": false, "reference": "accept",
         "description": "two tensors", "expected": expected},
        {"id": "invalid/trailing", "path": "files/trailing.safetensors", "verdict": "reject",
         "rules": ["DATA-TRAILING"], "warnings": [], "deep": false, "reference": "reject",
         "description": "one byte after the last tensor"},
        {"id": "choice/same", "path": "files/choice.safetensors",
         "verdict": "implementation-defined", "reason": "test", "rules": [], "warnings": [],
         "deep": false, "reference": "accept", "description": "either"},
        {"id": "deep/bool", "path": "files/bool.safetensors", "verdict": "reject",
         "rules": ["DATA-BOOL"], "warnings": [], "deep": true, "reference": "accept",
         "description": "a BOOL byte 0x07"}
    ]});
    // The correct answer for the valid case, for the fake adapter that `cat`s answers.
    fs::write(
        dir.join("files/two.safetensors.answer"),
        expected.to_string(),
    )
    .expect("write");
    let path = dir.join("manifest.json");
    fs::write(&path, manifest.to_string()).expect("write");
    path
}

/// A fake adapter: `sh -c SCRIPT adapter FILE`.
fn fake(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into(), "adapter".into()]
}

fn run(manifest: &Path, command: Vec<String>, timeout: Duration, deep: bool) -> RunResults {
    let m = Manifest::load(manifest).expect("manifest");
    let mut opts = RunOptions {
        deep,
        ..RunOptions::new("fake", command)
    };
    opts.spec.timeout = timeout;
    opts.spec.jobs = 2;
    run_all(&opts, &m, manifest.parent().expect("dir"), &|_| {})
}

fn outcomes(r: &RunResults) -> Vec<(String, Outcome)> {
    r.cases.iter().map(|c| (c.id.clone(), c.outcome)).collect()
}

fn o(pairs: &[(&str, Outcome)]) -> Vec<(String, Outcome)> {
    pairs.iter().map(|(i, o)| ((*i).to_owned(), *o)).collect()
}

const T: Duration = Duration::from_secs(20);

#[test]
fn an_adapter_that_always_rejects() {
    let m = corpus(&scratch("reject"));
    let r = run(&m, fake("echo no >&2; exit 1"), T, false);
    assert_eq!(
        outcomes(&r),
        o(&[
            ("valid/two", Outcome::ShouldHaveAccepted),
            ("invalid/trailing", Outcome::Pass),
            ("choice/same", Outcome::Rejected),
            // A header-only reader must accept a file whose fault only a data scan sees.
            ("deep/bool", Outcome::ShouldHaveAccepted),
        ])
    );
    assert_eq!(r.cases[0].stderr, "no");
    assert_eq!(r.cases[0].exit_code, Some(1));
}

#[test]
fn deep_cases_follow_their_verdict_for_a_deep_adapter() {
    let m = corpus(&scratch("deep"));
    let r = run(&m, fake("exit 1"), T, true);
    assert_eq!(r.case("deep/bool").map(|c| c.outcome), Some(Outcome::Pass));
    assert_eq!(
        r.case("deep/bool").map(|c| c.expected),
        Some(Expect::Reject)
    );
}

#[test]
fn an_adapter_that_accepts_with_the_right_answer() {
    let m = corpus(&scratch("right"));
    // Prints the stored answer where there is one, else an empty accept.
    let r = run(
        &m,
        fake(r#"if [ -f "$1.answer" ]; then cat "$1.answer"; else echo '{"tensors":[]}'; fi"#),
        T,
        false,
    );
    assert_eq!(
        outcomes(&r),
        o(&[
            ("valid/two", Outcome::Pass),
            ("invalid/trailing", Outcome::ShouldHaveRejected),
            ("choice/same", Outcome::Accepted),
            // Accepting the deep case is right for a header-only reader; no content expected.
            ("deep/bool", Outcome::Pass),
        ])
    );
}

#[test]
fn wrong_content_is_found_field_by_field() {
    let dir = scratch("wrong");
    let m = corpus(&dir);
    let answer = fs::read_to_string(dir.join("files/two.safetensors.answer")).expect("answer");
    let cases: &[(&str, String, &str)] = &[
        ("not JSON", "this is not json".into(), "not JSON"),
        (
            "no tensors",
            r#"{"metadata":null}"#.into(),
            "no \"tensors\"",
        ),
        ("missing tensor", r#"{"tensors":[]}"#.into(), "missing"),
        ("dtype", answer.replacen("\"F32\"", "\"F16\"", 1), "dtype"),
        (
            "shape",
            answer.replacen("[\"2\",\"3\"]", "[\"3\",\"2\"]", 1),
            "shape",
        ),
        (
            "offsets",
            answer.replacen("[\"0\",\"24\"]", "[\"0\",\"23\"]", 1),
            "data_offsets",
        ),
        (
            "bytes",
            {
                let v: serde_json::Value = serde_json::from_str(&answer).expect("json");
                let sha = v["tensors"][0]["sha256"].as_str().expect("sha").to_owned();
                answer.replacen(&sha, &"0".repeat(64), 1)
            },
            "bytes differ",
        ),
        (
            "metadata",
            answer.replacen("\"pt\"", "\"tf\"", 1),
            "metadata",
        ),
        (
            "warnings",
            answer.replacen(
                "{\"format\":\"pt\"}",
                "{\"format\":\"pt\"},\"warnings\":[\"NAME-EMPTY\"]",
                1,
            ),
            "warnings",
        ),
        (
            "extra tensor",
            answer.replacen(
                "\"tensors\":[",
                "\"tensors\":[{\"name\":\"x\",\"dtype\":\"U8\",\"shape\":[]},",
                1,
            ),
            "does not have",
        ),
    ];
    for (what, text, needle) in cases {
        assert_ne!(text, &answer, "{what}: the mutation did not apply");
        fs::write(dir.join("out.json"), text).expect("write");
        let out = dir.join("out.json");
        let r = run(&m, fake(&format!("cat '{}'", out.display())), T, false);
        let c = r.case("valid/two").expect("case");
        assert_eq!(c.outcome, Outcome::WrongContent, "{what}: {c:?}");
        assert!(c.detail.contains(needle), "{what}: {:?}", c.detail);
    }
    // Optional fields left out are not compared: no offsets, no sha256, no metadata.
    let v: serde_json::Value = serde_json::from_str(&answer).expect("json");
    let bare: Vec<serde_json::Value> = v["tensors"]
        .as_array()
        .expect("tensors")
        .iter()
        .map(|t| serde_json::json!({"name": t["name"], "dtype": t["dtype"], "shape": t["shape"]}))
        .collect();
    fs::write(
        dir.join("out.json"),
        serde_json::json!({ "tensors": bare }).to_string(),
    )
    .expect("write");
    let r = run(
        &m,
        fake(&format!("cat '{}'", dir.join("out.json").display())),
        T,
        false,
    );
    assert_eq!(r.case("valid/two").map(|c| c.outcome), Some(Outcome::Pass));
}

#[test]
fn crashes_by_exit_code_and_by_signal() {
    let m = corpus(&scratch("crash"));
    let r = run(&m, fake("exit 3"), T, false);
    assert!(r.cases.iter().all(|c| c.outcome == Outcome::Crash), "{r:?}");
    assert!(r.cases[0].detail.contains("exit code 3"));
    let r = run(&m, fake("kill -SEGV $$"), T, false);
    assert!(r.cases.iter().all(|c| c.outcome == Outcome::Crash), "{r:?}");
    assert!(r.cases[0].detail.contains("signal 11"), "{:?}", r.cases[0]);
}

fn alive(pid: &str) -> bool {
    // A zombie is dead for this purpose: `kill -0` succeeds on it, so read its state.
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.contains(") Z "),
        Err(_) => false,
    }
}

#[test]
fn a_hanging_adapter_times_out_and_its_whole_group_is_killed() {
    let dir = scratch("timeout");
    let m = corpus(&dir);
    let pids = dir.join("pids");
    fs::create_dir_all(&pids).expect("mkdir");
    // The script starts a grandchild that holds stdout open, records its pid, and waits.
    let script = format!(
        "sleep 300 & echo $! > '{}'/$(basename \"$1\").pid; wait",
        pids.display()
    );
    let r = run(&m, fake(&script), Duration::from_millis(500), false);
    assert!(
        r.cases.iter().all(|c| c.outcome == Outcome::Timeout),
        "{r:?}"
    );
    for entry in fs::read_dir(&pids).expect("pids") {
        let pid = fs::read_to_string(entry.expect("entry").path()).expect("pid");
        let pid = pid.trim().to_owned();
        // The group was sent SIGKILL before the runner returned; give the kernel a moment to
        // finish the exit (this waits for a state, it measures no time; 60 s is a hang guard).
        let mut tries = 0;
        while alive(&pid) && tries < 2400 {
            std::thread::sleep(Duration::from_millis(25));
            tries += 1;
        }
        assert!(!alive(&pid), "grandchild {pid} survived the timeout");
    }
}

#[test]
fn stcheck_and_the_reference_crate_pass_the_fixture() {
    let m = corpus(&scratch("real"));
    let strict = run(
        &m,
        vec![env!("CARGO_BIN_EXE_adapter-stcheck").into()],
        T,
        false,
    );
    assert!(
        strict
            .cases
            .iter()
            .all(|c| matches!(c.outcome, Outcome::Pass | Outcome::Accepted)),
        "{strict:?}"
    );
    let crate_run = run(
        &m,
        vec![env!("CARGO_BIN_EXE_adapter-reference-crate").into()],
        T,
        false,
    );
    let profile = run(
        &m,
        vec![
            env!("CARGO_BIN_EXE_adapter-stcheck").into(),
            "--profile".into(),
            "reference".into(),
        ],
        T,
        false,
    );
    assert_eq!(outcomes(&crate_run), outcomes(&profile));
    assert_eq!(
        crate_run.case("valid/two").map(|c| c.outcome),
        Some(Outcome::Pass)
    );
    assert_eq!(
        crate_run.case("invalid/trailing").map(|c| c.outcome),
        Some(Outcome::Pass)
    );
}

fn stconform(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_stconform"))
        .args(args)
        .output()
        .expect("run stconform");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn known_failures_fail_the_run_when_anything_changes() {
    let dir = scratch("known");
    let m = corpus(&dir);
    let m = m.to_str().expect("utf-8 path");
    let known = dir.join("known.json");
    let k = known.to_str().expect("utf-8 path");
    let reject = ["--", "sh", "-c", "exit 1", "adapter"];
    let base = ["--manifest", m, "--adapter", "fake", "--known-failures", k];

    // Without a known-failures file, any failure fails the run.
    let (code, out, _) =
        stconform(&[&["--manifest", m, "--adapter", "fake"][..], &reject].concat());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("SHOULD_HAVE_ACCEPTED  valid/two"), "{out}");

    // Bless, then the same run matches.
    let (code, _, err) = stconform(&[&base[..], &["--bless"], &reject].concat());
    assert_eq!(code, 0, "{err}");
    let blessed = KnownFailures::parse(&fs::read_to_string(&known).expect("file")).expect("parse");
    assert_eq!(blessed.results.len(), 3);
    let (code, out, _) = stconform(&[&base[..], &reject].concat());
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("every result is as recorded"), "{out}");

    // A known failure that now passes fails the run and is named. (The adapter is handed a
    // copy of the case files: the stored answers are read from the fixture.)
    let answers = format!(
        "cat '{}'/files/\"$(basename \"$1\")\".answer 2>/dev/null || exit 1",
        dir.display()
    );
    let (code, out, _) =
        stconform(&[&base[..], &["--", "sh", "-c", answers.as_str(), "adapter"]].concat());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("now passes"), "{out}");
    assert!(out.contains("valid/two"), "{out}");

    // A new failure fails the run; --run limits the cases checked.
    let (code, out, _) = stconform(
        &[
            &base[..],
            &["--run", "invalid/*", "--", "sh", "-c", "exit 0", "adapter"],
        ]
        .concat(),
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("new result SHOULD_HAVE_REJECTED: invalid/trailing"),
        "{out}"
    );
    assert!(!out.contains("valid/two"), "{out}");
}

#[test]
fn known_failures_check_reports_each_kind_of_difference() {
    let m = Manifest::load(&corpus(&scratch("diff"))).expect("manifest");
    let r = run_results(&[
        ("valid/two", Outcome::Pass),
        ("invalid/trailing", Outcome::Crash),
        ("choice/same", Outcome::Accepted),
    ]);
    let k = KnownFailures::parse(
        r#"{"adapter":"x","results":{"valid/two":"SHOULD_HAVE_ACCEPTED","invalid/trailing":{"result":"TIMEOUT","note":"slow"},"gone/case":"CRASH"}}"#,
    )
    .expect("parse");
    let d = k.check(&r, &m);
    assert!(d.contains(&Difference::NowPasses {
        id: "valid/two".into(),
        known: Outcome::ShouldHaveAccepted
    }));
    assert!(d.contains(&Difference::Changed {
        id: "invalid/trailing".into(),
        known: Outcome::Timeout,
        got: Outcome::Crash
    }));
    assert!(d.contains(&Difference::New {
        id: "choice/same".into(),
        got: Outcome::Accepted
    }));
    assert!(d.contains(&Difference::Unknown {
        id: "gone/case".into(),
        what: "listed case is not in the manifest"
    }));
    assert_eq!(d.len(), 4);
    assert!(KnownFailures::parse(r#"{"results":{"a":"PASS"}}"#).is_err());
    assert!(KnownFailures::parse(r#"{"results":{"a":"NOT_AN_OUTCOME"}}"#).is_err());
}

fn run_results(pairs: &[(&str, Outcome)]) -> RunResults {
    let cases = pairs
        .iter()
        .map(|(id, o)| stcheck_conformance::runner::CaseResult {
            id: (*id).into(),
            outcome: *o,
            expected: Expect::Accept,
            class: None,
            detail: String::new(),
            exit_code: None,
            stderr: String::new(),
            rule: None,
            message: None,
            millis: 0,
        })
        .collect();
    RunResults {
        version: "1".into(),
        adapter: "x".into(),
        corpus_version: None,
        command: vec![],
        judge: Judge::Strict,
        deep: false,
        timeout_ms: 1,
        persistent: false,
        index: false,
        dedicated_refusal: false,
        run: Vec::new(),
        skip: Vec::new(),
        summary: Default::default(),
        cases,
    }
}

#[test]
fn json_results_and_the_matrix() {
    let dir = scratch("matrix");
    let m = corpus(&dir);
    let ms = m.to_str().expect("path");
    let save = dir.join("accept.json");
    let (code, out, _) = stconform(&[
        "--manifest",
        ms,
        "--adapter",
        "always-accepts",
        "--json",
        "--save",
        save.to_str().expect("p"),
        "--",
        "sh",
        "-c",
        "echo '{\"tensors\":[]}'",
        "x",
    ]);
    assert_eq!(code, 1);
    let parsed: RunResults = serde_json::from_str(&out).expect("--json prints the results");
    assert_eq!(
        parsed.case("invalid/trailing").map(|c| c.outcome),
        Some(Outcome::ShouldHaveRejected)
    );
    assert_eq!(parsed.summary.get(&Outcome::WrongContent), Some(&1));
    let saved: RunResults =
        serde_json::from_str(&fs::read_to_string(&save).expect("saved")).expect("json");
    assert_eq!(saved, parsed);
    let (_, _, _) = stconform(&[
        "--manifest",
        ms,
        "--adapter",
        "always-rejects",
        "--save",
        dir.join("reject.json").to_str().expect("p"),
        "--",
        "sh",
        "-c",
        "exit 1",
        "x",
    ]);
    let (code, md, err) = stconform(&[
        "matrix",
        "--manifest",
        ms,
        save.to_str().expect("p"),
        dir.join("reject.json").to_str().expect("p"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        md.contains("| Case | verdict | class | always-accepts | always-rejects |"),
        "{md}"
    );
    assert!(
        md.contains("| `invalid/trailing` | reject | - | **ACCEPTS** | ok |"),
        "{md}"
    );
    assert!(
        md.contains("| `choice/same` | impl-defined | - | accepts | rejects |"),
        "{md}"
    );
    assert!(
        md.contains("[DATA-TRAILING] one byte after the last tensor"),
        "{md}"
    );
    let again = report::matrix(&[parsed], None);
    assert!(
        again.contains("| `valid/two` | ? | - | **CONTENT** |"),
        "{again}"
    );
}

#[test]
fn judging_against_the_reference() {
    let m = corpus(&scratch("judge"));
    let man = Manifest::load(&m).expect("manifest");
    let mut opts = RunOptions {
        judge: Judge::Reference,
        ..RunOptions::new(
            "crate",
            vec![env!("CARGO_BIN_EXE_adapter-reference-crate").into()],
        )
    };
    opts.spec.timeout = T;
    opts.spec.skip = vec!["choice/*".into()];
    let r = run_all(&opts, &man, m.parent().expect("dir"), &|_| {});
    assert_eq!(
        outcomes(&r),
        o(&[
            ("valid/two", Outcome::Pass),
            ("invalid/trailing", Outcome::Pass),
            ("deep/bool", Outcome::Pass)
        ])
    );
}

/// The fixture manifest with protocol-v2 members: a class per case.
fn corpus_v2(dir: &Path) -> PathBuf {
    let path = corpus(dir);
    let mut m: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("json");
    m["version"] = "2".into();
    for (c, class) in m["cases"].as_array_mut().expect("cases").iter_mut().zip([
        "interoperability",
        "security",
        "interoperability",
        "strictness",
    ]) {
        c["class"] = class.into();
    }
    fs::write(&path, m.to_string()).expect("write");
    path
}

/// An adapter written from PROTOCOL.md v2 alone (one-shot): it names a rule when it rejects,
/// and says "unsupported" for the BOOL-only file.
#[test]
fn a_v2_adapter_gets_reasons_unsupported_and_class_summaries() {
    let dir = scratch("v2");
    let m = corpus_v2(&dir);
    let script = r#"
case "$1" in
  *bool*) echo '{"message":"no BOOL type"}'; exit 4 ;;
  *trailing*) echo '{"rule":"DATA-TRAILING","message":"1 byte after the data"}'; exit 1 ;;
  *choice*) echo '{"rule":"LAYOUT-GAP"}'; exit 1 ;;
  *) echo '{"rule":"SIZE-MISMATCH","message":"wrong size"}'; exit 1 ;;
esac"#;
    let r = run(&m, fake(script), T, false);
    assert_eq!(
        outcomes(&r),
        o(&[
            ("valid/two", Outcome::ShouldHaveAccepted),
            ("invalid/trailing", Outcome::Pass),
            ("choice/same", Outcome::Rejected),
            ("deep/bool", Outcome::Unsupported),
        ])
    );
    let c = r.case("invalid/trailing").expect("case");
    assert_eq!(c.rule.as_deref(), Some("DATA-TRAILING"));
    assert_eq!(c.message.as_deref(), Some("1 byte after the data"));
    assert_eq!(
        r.case("valid/two").map(|c| c.detail.as_str()),
        Some("[SIZE-MISMATCH] wrong size")
    );
    assert!(!Outcome::Unsupported.is_failure());

    // The same adapter naming the wrong rule for the rejected case.
    let wrong = script.replace("\"rule\":\"DATA-TRAILING\"", "\"rule\":\"LAYOUT-GAP\"");
    let r = run(&m, fake(&wrong), T, false);
    let c = r.case("invalid/trailing").expect("case");
    assert_eq!(c.outcome, Outcome::WrongRule);
    assert!(
        c.detail.contains("LAYOUT-GAP") && c.detail.contains("DATA-TRAILING"),
        "{c:?}"
    );

    // The summary counts per class and shows [RULES] description for every non-PASS case.
    let manifest = Manifest::load(&m).expect("manifest");
    let text = report::summary(&r, Some(&manifest), None, false);
    assert!(text.contains("security"), "{text}");
    assert!(
        text.contains("WRONG_RULE            invalid/trailing [DATA-TRAILING] one byte after the last tensor (security)"),
        "{text}"
    );
    assert!(text.contains("UNSUPPORTED"), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let first_case = lines.iter().position(|l| l.contains("invalid/trailing"));
    let other = lines.iter().position(|l| l.contains("valid/two "));
    assert!(first_case < other, "security cases come first: {text}");
}

/// A persistent adapter (PROTOCOL.md v2): one process answers every case; a crash in the
/// middle is a CRASH for that case only, and the next case gets a fresh process.
#[test]
fn a_persistent_adapter_answers_every_case_and_survives_a_crash() {
    let dir = scratch("persistent");
    let m = corpus_v2(&dir);
    let starts = dir.join("starts");
    let script = format!(
        r#"echo start >> '{}'
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed 's/.*"id":"\([^"]*\)".*/\1/')
  case "$id" in
    valid/two) cat "$(dirname "$0")/files/two.safetensors.answer" | sed 's/^{{/{{"id":"valid\/two","status":"accept",/'; echo ;;
    invalid/trailing) echo "noise from $id" >&2; echo '{{"id":"invalid/trailing","status":"reject","rule":"DATA-TRAILING"}}' ;;
    choice/same) echo "dying on $id" >&2; exit 9 ;;
    deep/bool) echo '{{"id":"deep/bool","status":"unsupported","message":"no BOOL"}}' ;;
  esac
done"#,
        starts.display()
    );
    let adapter = dir.join("adapter.sh");
    fs::write(&adapter, script).expect("write");
    let mut opts = RunOptions {
        persistent: true,
        ..RunOptions::new(
            "persistent",
            vec!["sh".into(), adapter.to_string_lossy().into_owned()],
        )
    };
    opts.spec.timeout = T;
    opts.spec.jobs = 1;
    let man = Manifest::load(&m).expect("manifest");
    let r = run_all(&opts, &man, &dir, &|_| {});
    assert_eq!(
        outcomes(&r),
        o(&[
            ("valid/two", Outcome::Pass),
            ("invalid/trailing", Outcome::Pass),
            ("choice/same", Outcome::Crash),
            ("deep/bool", Outcome::Unsupported),
        ])
    );
    assert!(r
        .case("choice/same")
        .is_some_and(|c| c.detail.contains("exit code 9")));
    // Standard error explains a process that died; a reply's cannot be told apart from the
    // previous case's, so replies carry none.
    assert_eq!(
        r.case("choice/same").map(|c| c.stderr.as_str()),
        Some("dying on choice/same")
    );
    for c in r.cases.iter().filter(|c| c.id != "choice/same") {
        assert_eq!(c.stderr, "", "{c:?}");
    }
    // One process for the first three cases, a second after the crash.
    let n = fs::read_to_string(&starts).expect("starts").lines().count();
    assert_eq!(n, 2);

    // A reply for another id is a protocol error (CRASH), and the process is replaced.
    let bad = dir.join("bad.sh");
    fs::write(
        &bad,
        "while read -r line; do echo '{\"id\":\"nope\",\"status\":\"accept\",\"tensors\":[]}'; done",
    )
    .expect("write");
    let mut opts = RunOptions {
        persistent: true,
        ..RunOptions::new("bad", vec!["sh".into(), bad.to_string_lossy().into_owned()])
    };
    opts.spec.timeout = T;
    opts.spec.skip = vec!["choice/*".into(), "deep/*".into(), "valid/*".into()];
    let r = run_all(&opts, &man, &dir, &|_| {});
    let c = r.case("invalid/trailing").expect("case");
    assert_eq!(c.outcome, Outcome::Crash);
    assert!(c.detail.contains("protocol error"), "{c:?}");
}

/// A manifest of version 3: the rejected case accepts two rules.
fn corpus_v3(dir: &Path) -> PathBuf {
    let path = corpus_v2(dir);
    let mut m: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("json");
    m["version"] = "3".into();
    for c in m["cases"].as_array_mut().expect("cases") {
        if c["id"] == "invalid/trailing" {
            c["acceptable_rules"] = serde_json::json!(["DATA-TRAILING", "FRAME-HEADER-BOUNDS"]);
        }
    }
    fs::write(&path, m.to_string()).expect("write");
    path
}

/// Right reasons: a rule of the case's acceptable set passes, another is WRONG_RULE, and the
/// default summary (no -v) shows both, per class, with the passes that gave no reason apart.
#[test]
fn right_reasons_are_judged_against_the_acceptable_rules_and_shown_by_default() {
    let dir = scratch("reasons");
    let m = corpus_v3(&dir);
    let manifest = Manifest::load(&m).expect("manifest");
    let answer = |rule: &str| {
        format!(
            r#"case "$1" in
  *two*|*choice*) cat "$1.answer" 2>/dev/null || cat "$(dirname "$1")/two.safetensors.answer"; exit 0 ;;
  *) echo '{rule}'; exit 1 ;;
esac"#
        )
    };
    // The second acceptable rule passes.
    let r = run(
        &m,
        fake(&answer(r#"{"rule":"FRAME-HEADER-BOUNDS"}"#)),
        T,
        false,
    );
    assert_eq!(
        r.case("invalid/trailing").map(|c| c.outcome),
        Some(Outcome::Pass)
    );
    // A rule outside the set is WRONG_RULE, with the set in the detail; the default summary
    // shows it in its class's line.
    let r = run(&m, fake(&answer(r#"{"rule":"LAYOUT-GAP"}"#)), T, false);
    let c = r.case("invalid/trailing").expect("case");
    assert_eq!(c.outcome, Outcome::WrongRule);
    assert!(
        c.detail
            .contains("the case accepts DATA-TRAILING, FRAME-HEADER-BOUNDS"),
        "{c:?}"
    );
    let text = report::summary(&r, Some(&manifest), None, false);
    let security = text
        .lines()
        .find(|l| l.trim_start().starts_with("security"))
        .expect("a security line");
    assert!(security.contains("WRONG_RULE 1"), "{text}");
    // A v1 adapter (exit codes only): its rejections pass with no reason given, counted apart.
    let r = run(&m, fake(&answer("")), T, false);
    assert_eq!(
        r.case("invalid/trailing").map(|c| c.outcome),
        Some(Outcome::Pass)
    );
    let text = report::summary(&r, Some(&manifest), None, false);
    assert!(text.contains("PASS (no reason given) 1"), "{text}");
    assert!(
        text.contains("rejections passed with no reason given"),
        "{text}"
    );
    // Version 2 manifests judge by the first rule only.
    let v2 = corpus_v2(&scratch("reasons-v2"));
    let r = run(
        &v2,
        fake(&answer(r#"{"rule":"FRAME-HEADER-BOUNDS"}"#)),
        T,
        false,
    );
    assert_eq!(
        r.case("invalid/trailing").map(|c| c.outcome),
        Some(Outcome::WrongRule)
    );
    // A manifest version the runner does not know is refused by name.
    let mut future: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&m).expect("read")).expect("json");
    future["version"] = "99".into();
    let err = Manifest::parse(&future.to_string()).expect_err("unknown version");
    assert!(
        err.contains("\"99\"") && err.contains("newer runner"),
        "{err}"
    );
}

/// An adapter that dies at start-up (here: a Python-like traceback after a banner) stops the
/// run after --max-startup-deaths cases, with its error line quoted, exit 2; it cannot be
/// blessed either way.
#[test]
fn an_adapter_that_never_starts_stops_the_run_and_is_not_blessed() {
    let dir = scratch("dies");
    let m = corpus(&dir);
    let m = m.to_str().expect("utf-8 path");
    let count = dir.join("count");
    let script = format!(
        "echo x >> '{}'; echo 'my-adapter 1.0 (build 7)' >&2; \
         echo 'Traceback (most recent call last):' >&2; \
         echo \"ModuleNotFoundError: No module named 'tinygrad'\" >&2; echo 'Node.js v20' >&2; exit 3",
        count.display()
    );
    let known = dir.join("known.json");
    let known = known.to_str().expect("utf-8");
    let dead = |max: &str| {
        stconform(&[
            "--manifest",
            m,
            "--adapter",
            "dead",
            "--max-startup-deaths",
            max,
            "-j",
            "1",
            "--known-failures",
            known,
            "--bless",
            "--",
            "sh",
            "-c",
            &script,
            "adapter",
        ])
    };
    let (code, _, err) = dead("2");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("2 times in a row"), "{err}");
    assert!(
        err.contains("ModuleNotFoundError: No module named 'tinygrad'"),
        "{err}"
    );
    assert!(
        !err.contains("Node.js v20"),
        "the banner is not quoted: {err}"
    );
    let runs = fs::read_to_string(&count).expect("count").lines().count();
    assert_eq!(runs, 2, "stopped after two cases");
    assert!(!Path::new(known).exists(), "nothing blessed");

    // With the tripwire off, the run goes on, and --bless still refuses an all-CRASH run.
    let (code, _, err) = dead("0");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not blessing"), "{err}");
    assert!(!Path::new(known).exists(), "nothing blessed");

    // A v1 adapter whose start-up exception exits 1 (Python's ImportError does) refuses every
    // file with the same traceback: that stops the run too.
    let importer = "echo 'Traceback (most recent call last):' >&2; \
                    echo \"ModuleNotFoundError: No module named 'x'\" >&2; exit 1";
    let (code, _, err) = stconform(&[
        "--manifest",
        m,
        "--adapter",
        "importer",
        "-j",
        "1",
        "--no-known-failures",
        "--max-startup-deaths",
        "3",
        "--",
        "sh",
        "-c",
        importer,
        "adapter",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("refused with the same words 3 times"), "{err}");

    // An adapter that answers once (on the second case) is not stopped by later crashes.
    let (code, out, err) = stconform(&[
        "--manifest",
        m,
        "--adapter",
        "flaky",
        "--max-startup-deaths",
        "2",
        "-j",
        "1",
        "--no-known-failures",
        "--",
        "sh",
        "-c",
        r#"case "$1" in *trailing*) exit 1 ;; *) exit 3 ;; esac"#,
        "adapter",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("CRASH 3"), "{out}");
}

/// A persistent adapter that prints a banner on standard output: the protocol error names the
/// line of standard output, what it held, and where such text belongs.
#[test]
fn protocol_errors_name_the_line_that_broke() {
    let dir = scratch("banner");
    let m = corpus_v2(&dir);
    let man = Manifest::load(&m).expect("manifest");
    let adapter = dir.join("adapter.sh");
    fs::write(
        &adapter,
        "echo 'loading weights...'\nwhile IFS= read -r line; do echo '{\"id\":\"x\"'; done\n",
    )
    .expect("write");
    let mut opts = RunOptions {
        persistent: true,
        ..RunOptions::new(
            "banner",
            vec!["sh".into(), adapter.to_string_lossy().into_owned()],
        )
    };
    opts.spec.timeout = T;
    opts.spec.run = vec!["invalid/*".into()];
    let r = run_all(&opts, &man, &dir, &|_| {});
    let c = r.case("invalid/trailing").expect("case");
    assert_eq!(c.outcome, Outcome::Crash);
    assert!(
        c.detail.contains("line 1 of the adapter's standard output")
            && c.detail.contains("\"loading weights...\"")
            && c.detail.contains("belongs on standard error"),
        "{c:?}"
    );
}

/// "N sharded-set cases not run" counts only the index cases --run/--skip would have run.
#[test]
fn the_sharded_set_note_counts_only_cases_the_filters_select() {
    let dir = scratch("index-note");
    let m = corpus_v2(&dir);
    let mut v: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&m).expect("read")).expect("json");
    v["cases"]
        .as_array_mut()
        .expect("cases")
        .push(serde_json::json!({
        "id": "valid/index/set", "path": "files/two.safetensors", "verdict": "accept",
        "rules": [], "warnings": [], "deep": false, "kind": "index",
        "class": "interoperability", "description": "a set"}));
    fs::write(&m, v.to_string()).expect("write");
    let m = m.to_str().expect("utf-8");
    let (_, out, _) = stconform(&[
        "--manifest",
        m,
        "--adapter",
        "x",
        "--no-known-failures",
        "--run",
        "invalid/*",
        "--",
        "sh",
        "-c",
        "exit 1",
        "adapter",
    ]);
    assert!(!out.contains("sharded-set"), "{out}");
    let (_, out, _) = stconform(&[
        "--manifest",
        m,
        "--adapter",
        "x",
        "--no-known-failures",
        "--",
        "sh",
        "-c",
        "exit 1",
        "adapter",
    ]);
    assert!(out.contains("(1 sharded-set cases not run"), "{out}");
}
