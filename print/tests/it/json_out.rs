//! `stcheck_print::json_out`: JSON that is still valid, decodes to the same value, and holds no
//! character at which a line splitter (Python's `str.splitlines()`, JavaScript before ES2019,
//! editors) would break it.

use std::collections::BTreeMap;
use std::process::Command;

use serde::Serialize;
use serde_json::Value;
use stcheck_print::json_out;

/// The line boundaries of Python's `str.splitlines()` (the documentation's table).
const PYTHON_LINE_BOUNDARIES: &[char] = &[
    '\n', '\r', '\u{0b}', '\u{0c}', '\u{1c}', '\u{1d}', '\u{1e}', '\u{85}', '\u{2028}', '\u{2029}',
];

/// Strings holding every line boundary, raw, at the start, middle and end, and neighbours
/// that must stay raw.
fn hostile() -> Vec<String> {
    let mut v: Vec<String> = PYTHON_LINE_BOUNDARIES
        .iter()
        .flat_map(|c| [format!("{c}"), format!("a{c}b"), format!("x{c}{c}")])
        .collect();
    v.push("\r\n".to_owned());
    v.push("name\u{2028}{\"type\":\"forged\"}".to_owned());
    v.push("café \u{84}\u{86}\u{2027}\u{202a}\u{202f} 模型".to_owned());
    v
}

#[derive(Serialize)]
struct Record<'a> {
    path: &'a str,
    names: Vec<&'a str>,
    by_name: BTreeMap<&'a str, u64>,
    nested: Option<Vec<Record<'a>>>,
}

fn record(strings: &[String]) -> Record<'_> {
    Record {
        path: &strings[0],
        names: strings.iter().map(String::as_str).collect(),
        by_name: strings
            .iter()
            .enumerate()
            .map(|(i, s)| (s.as_str(), i as u64))
            .collect(),
        nested: Some(vec![Record {
            path: &strings[strings.len() - 1],
            names: vec![],
            by_name: BTreeMap::new(),
            nested: None,
        }]),
    }
}

#[test]
fn escapes_the_three_line_breaks_serde_json_leaves_raw() {
    assert_eq!(
        json_out::to_string(&"a\u{85}b\u{2028}c\u{2029}d").expect("serializes"),
        r#""a\u0085b\u2028c\u2029d""#
    );
    // Keys too.
    let mut m = BTreeMap::new();
    m.insert("k\u{2028}", "v\u{85}");
    assert_eq!(
        json_out::to_string(&m).expect("serializes"),
        r#"{"k\u2028":"v\u0085"}"#
    );
    // Everything else exactly as serde_json writes it, compact.
    for s in [
        "",
        "plain",
        "quote \" back \\ slash",
        "\n\t\u{1f}",
        "模型 ✓ \u{7f}",
    ] {
        assert_eq!(
            json_out::to_string(&s).expect("serializes"),
            serde_json::to_string(&s).expect("serializes"),
            "{s:?}"
        );
    }
}

#[test]
fn round_trips_and_is_one_line_for_splitlines() {
    let strings = hostile();
    let value = record(&strings);
    let out = json_out::to_string(&value).expect("serializes");
    // Still JSON, and the same value as serde_json's own output decodes to.
    let decoded: Value = serde_json::from_str(&out).expect("valid JSON");
    let plain: Value =
        serde_json::from_str(&serde_json::to_string(&value).expect("serializes")).expect("JSON");
    assert_eq!(decoded, plain);
    assert_eq!(
        decoded["names"].as_array().map(Vec::len),
        Some(strings.len())
    );
    // No line boundary anywhere: splitlines() sees one line.
    assert!(!out.contains(PYTHON_LINE_BOUNDARIES), "{out}");
    // The same through to_writer and to_vec.
    let mut w = Vec::new();
    json_out::to_writer(&mut w, &value).expect("serializes");
    assert_eq!(w, out.as_bytes());
    assert_eq!(
        json_out::to_vec(&value).expect("serializes"),
        out.as_bytes()
    );
}

/// Python itself: `str.splitlines()` gives one line per record, and `json.loads` of each gives
/// back the strings. Needs `python3` on PATH (it is on the project's machines); without it the
/// test says so and checks nothing more than the test above.
#[test]
fn python_splitlines_and_json_loads_agree() {
    let strings = hostile();
    let mut lines = String::new();
    for s in &strings {
        lines.push_str(&json_out::to_string(&record(std::slice::from_ref(s))).expect("JSON"));
        lines.push('\n');
    }
    let expected = json_out::to_string(&strings).expect("JSON");
    let script = "import json, sys\n\
        data = open(sys.argv[1], 'rb').read().decode('utf-8')\n\
        lines = data.splitlines()\n\
        names = [json.loads(l)['names'][0] for l in lines]\n\
        print(len(lines))\n\
        print(json.dumps(names, ensure_ascii=True))\n";
    let dir = std::env::temp_dir().join(format!("stcheck-json-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let input = dir.join("lines.jsonl");
    std::fs::write(&input, &lines).expect("write");
    let run = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&input)
        .output();
    let _ = std::fs::remove_dir_all(&dir);
    let out = match run {
        Ok(out) => out,
        Err(e) => {
            eprintln!("python3 not run ({e}); splitlines() checked in Rust only");
            return;
        }
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).expect("UTF-8");
    let mut it = stdout.lines();
    assert_eq!(it.next(), Some(strings.len().to_string().as_str()));
    let names: Vec<String> = serde_json::from_str(it.next().expect("names")).expect("JSON");
    assert_eq!(names, strings, "expected {expected}");
}
