//! `SPEC.md` and the code agree: every rule has its section and every section is a rule; each
//! section states the rule's severity and kind; the "Differences from the reference" section
//! names exactly the rules with a `reference_divergence`; and the reference behaviour the spec
//! states is what the `safetensors` 0.8.0 crate does today (re-probed on minimal files).

use std::collections::BTreeSet;

use stcheck::reference::{verdict, Verdict};
use stcheck::{validate, Config, Rule, Severity};
use stcheck_testkit::corpus::Manifest;

fn spec() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../SPEC.md");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// Whether a heading's text looks like a rule ID: upper-case words joined by hyphens.
fn is_rule_like(s: &str) -> bool {
    s.contains('-')
        && !s.starts_with('-')
        && !s.ends_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'-')
}

/// The `### ID` headings, in document order.
fn rule_headings(spec: &str) -> Vec<String> {
    spec.lines()
        .filter_map(|l| l.strip_prefix("### "))
        .map(str::trim)
        .filter(|h| is_rule_like(h))
        .map(str::to_owned)
        .collect()
}

/// The body of the `### ID` section: up to the next heading.
fn section<'s>(spec: &'s str, id: &str) -> &'s str {
    let head = format!("### {id}\n");
    let start = spec
        .find(&head)
        .unwrap_or_else(|| panic!("no section {id}"))
        + head.len();
    let rest = &spec[start..];
    let end = rest.find("\n#").map_or(rest.len(), |i| i + 1);
    &rest[..end]
}

/// The body of the `## ... Differences from the reference` section.
fn differences(spec: &str) -> &str {
    let start = spec
        .lines()
        .find(|l| l.starts_with("## ") && l.contains("Differences from the reference"))
        .and_then(|l| spec.find(l))
        .expect("a \"Differences from the reference\" section");
    let rest = &spec[start + 3..];
    let end = rest.find("\n## ").map_or(rest.len(), |i| i + 1);
    &rest[..end]
}

fn is_index(r: &Rule) -> bool {
    r.id().starts_with("INDEX-")
}

#[test]
fn every_rule_has_a_section_and_every_section_is_a_rule() {
    let spec = spec();
    let headings = rule_headings(&spec);
    let unique: BTreeSet<&str> = headings.iter().map(String::as_str).collect();
    assert_eq!(
        unique.len(),
        headings.len(),
        "a rule has two sections: {headings:?}"
    );
    let missing: Vec<&str> = Rule::ALL
        .iter()
        .map(|r| r.id())
        .filter(|id| !unique.contains(id))
        .collect();
    assert!(
        missing.is_empty(),
        "rules without a `### ID` section in SPEC.md: {missing:?}"
    );
    let unknown: Vec<&str> = unique
        .iter()
        .copied()
        .filter(|h| Rule::from_id(h).is_none())
        .collect();
    assert!(
        unknown.is_empty(),
        "SPEC.md sections that are not rules: {unknown:?}"
    );
}

#[test]
fn header_rule_sections_follow_rule_order() {
    let spec = spec();
    let headings = rule_headings(&spec);
    let in_spec: Vec<&str> = headings
        .iter()
        .map(String::as_str)
        .filter(|h| !h.starts_with("INDEX-"))
        .collect();
    let in_code: Vec<&str> = Rule::ALL
        .iter()
        .filter(|r| !is_index(r))
        .map(|r| r.id())
        .collect();
    assert_eq!(in_spec, in_code);
}

#[test]
fn sections_state_severity_and_kind() {
    let spec = spec();
    for rule in Rule::ALL.iter().filter(|r| !is_index(r)) {
        let body = section(&spec, rule.id());
        let line = body
            .lines()
            .find(|l| l.contains("Severity:"))
            .unwrap_or_else(|| panic!("{rule}: no Severity line"));
        let severity = line
            .split("Severity:")
            .nth(1)
            .map(|s| s.trim_start())
            .unwrap_or_default();
        assert!(
            severity.starts_with(rule.severity().as_str()),
            "{rule}: {line:?} but the code says {}",
            rule.severity().as_str()
        );
        let kind = format!("Kind: {}", rule.kind().as_str());
        assert!(
            line.contains(&kind),
            "{rule}: {line:?} but the code says {kind}"
        );
        assert!(body.contains("Reference:"), "{rule}: no Reference line");
        assert!(body.contains("Rationale:"), "{rule}: no Rationale line");
        assert!(body.contains("Corpus:"), "{rule}: no Corpus line");
    }
}

#[test]
fn differences_section_names_exactly_the_divergent_rules() {
    let spec = spec();
    let diff = differences(&spec);
    // Each difference is a bullet starting with the bold rule ID.
    let listed: BTreeSet<&str> = diff
        .lines()
        .filter_map(|l| l.strip_prefix("- **"))
        .filter_map(|l| l.split("**").next())
        .collect();
    for rule in Rule::ALL {
        let divergent = rule.reference_divergence().is_some();
        assert_eq!(
            listed.contains(rule.id()),
            divergent,
            "{rule}: reference_divergence is {:?}, but the Differences section {} it",
            rule.reference_divergence(),
            if listed.contains(rule.id()) {
                "lists"
            } else {
                "does not list"
            }
        );
        if divergent {
            assert!(diff.contains(rule.id()));
        }
    }
    for id in &listed {
        assert!(
            Rule::from_id(id).is_some(),
            "Differences lists a non-rule {id}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The reference behaviour stated in SPEC.md, re-probed.

fn raw(header: &[u8], data: &[u8]) -> Vec<u8> {
    let mut f = (header.len() as u64).to_le_bytes().to_vec();
    f.extend_from_slice(header);
    f.extend_from_slice(data);
    f
}

fn file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut h = header.to_owned();
    while !h.len().is_multiple_of(8) {
        h.push(' ');
    }
    raw(h.as_bytes(), data)
}

const T: &str = r#""t":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}"#;

/// A minimal file breaking each header rule (and only it, in the default profile).
fn minimal(rule: Rule) -> Option<Vec<u8>> {
    let t = T;
    let big = (1u64 << 61) - 1;
    let f = match rule.id() {
        "FRAME-SHORT" => vec![1, 0, 0],
        "FRAME-EMPTY-HEADER" => vec![0; 8],
        "FRAME-HEADER-LIMIT" => {
            let mut f = 100_000_001u64.to_le_bytes().to_vec();
            f.extend_from_slice(b"{}");
            f
        }
        "FRAME-HEADER-BOUNDS" => {
            let mut f = 100u64.to_le_bytes().to_vec();
            f.extend_from_slice(b"{}");
            f
        }
        "FRAME-NOT-SAFETENSORS" => b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n".to_vec(),
        "FRAME-ALIGN" => raw(format!("{{{t}}}").as_bytes(), &[1, 2]),
        "UTF8-INVALID" => raw(b"{\"\xc0\xaf\":1}   ", &[]),
        "JSON-BOM" => file(&format!("\u{feff}{{{t}}}"), &[1, 2]),
        "JSON-SYNTAX" => file(&format!("{{{t},}}"), &[1, 2]),
        "JSON-DEPTH" => file(&format!("{{\"t\":{}", "[".repeat(100_000)), &[]),
        "JSON-TRAILING" => file(&format!("{{{t}}}{{}}"), &[1, 2]),
        "JSON-DUPLICATE-KEY" => file(
            r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#,
            &[1, 2],
        ),
        "JSON-LEADING-WHITESPACE" => file(&format!(" {{{t}}}"), &[1, 2]),
        "JSON-PADDING-WHITESPACE" => file(&format!("{{{t}}}\t"), &[1, 2]),
        "SCHEMA-ROOT" => file("[]", &[]),
        "SCHEMA-METADATA" => file(&format!(r#"{{"__metadata__":{{"k":1}},{t}}}"#), &[1, 2]),
        "SCHEMA-METADATA-NULL" => file(&format!(r#"{{"__metadata__":null,{t}}}"#), &[1, 2]),
        "SCHEMA-ENTRY" => file(r#"{"t":["U8",[2],[0,2]]}"#, &[1, 2]),
        "SCHEMA-MISSING-FIELD" => file(r#"{"t":{"dtype":"U8","shape":[2]}}"#, &[1, 2]),
        "SCHEMA-UNKNOWN-FIELD" => file(
            r#"{"t":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"x":1}}"#,
            &[1, 2],
        ),
        "SCHEMA-SHAPE" => file(
            r#"{"t":{"dtype":"U8","shape":"2","data_offsets":[0,2]}}"#,
            &[1, 2],
        ),
        "SCHEMA-OFFSETS" => file(
            r#"{"t":{"dtype":"U8","shape":[2],"data_offsets":[0,2,2]}}"#,
            &[1, 2],
        ),
        "SCHEMA-INTEGER" => file(
            r#"{"t":{"dtype":"U8","shape":[2.0],"data_offsets":[0,2]}}"#,
            &[1, 2],
        ),
        "DTYPE-TYPE" => file(
            r#"{"t":{"dtype":{"U8":null},"shape":[2],"data_offsets":[0,2]}}"#,
            &[1, 2],
        ),
        "DTYPE-UNKNOWN" => file(
            r#"{"t":{"dtype":"u8","shape":[2],"data_offsets":[0,2]}}"#,
            &[1, 2],
        ),
        "SIZE-OVERFLOW" => file(
            r#"{"t":{"dtype":"U8","shape":[0,9223372036854775808,9223372036854775808],"data_offsets":[0,0]}}"#,
            &[],
        ),
        "SIZE-BITS" => file(
            r#"{"t":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}"#,
            &[1, 2],
        ),
        "SIZE-MISMATCH" => file(
            r#"{"t":{"dtype":"U8","shape":[3],"data_offsets":[0,2]}}"#,
            &[1, 2],
        ),
        "SIZE-TOTAL-PARAMETERS" => file(
            &format!(r#"{{"__metadata__":{{"total_parameters":"3"}},{t}}}"#),
            &[1, 2],
        ),
        "LAYOUT-ORDER" => file(
            r#"{"t":{"dtype":"U8","shape":[0],"data_offsets":[2,0]}}"#,
            &[1, 2],
        ),
        "LAYOUT-GAP" => file(
            r#"{"t":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}"#,
            &[1, 2],
        ),
        "LAYOUT-OVERLAP" => file(
            r#"{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#,
            &[1, 2],
        ),
        "LAYOUT-ALIGN" => file(
            r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}}"#,
            &[0; 5],
        ),
        "NAME-CONTROL" => file(
            r#"{"a\u0000b":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#,
            &[1, 2],
        ),
        "NAME-EMPTY" => file(
            r#"{"":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#,
            &[1, 2],
        ),
        "NAME-INVISIBLE" => file(
            "{\"a\u{202e}b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}",
            &[1, 2],
        ),
        "NAME-PATH" => file(
            r#"{"../x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#,
            &[1, 2],
        ),
        "DATA-TRAILING" => file(&format!("{{{t}}}"), &[1, 2, 3]),
        "DATA-TRUNCATED" => {
            // The spec's case: eight tensors of 2^61-1 bytes each, in an 854-byte file.
            let entries: Vec<String> = (0..8u64)
                .map(|i| {
                    format!(
                        r#""t{i}":{{"dtype":"U8","shape":[{big}],"data_offsets":[{},{}]}}"#,
                        i * big,
                        (i + 1) * big
                    )
                })
                .collect();
            raw(format!("{{{}}}", entries.join(",")).as_bytes(), &[])
        }
        "DATA-BOOL" => file(
            r#"{"t":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}}"#,
            &[1, 2],
        ),
        _ => return None,
    };
    Some(f)
}

/// The minimal files break the rule they are for, in the default profile (warnings: accepted
/// with that warning first).
#[test]
fn minimal_files_break_their_rule() {
    for &rule in Rule::ALL {
        let Some(f) = minimal(rule) else { continue };
        if rule.id().starts_with("DATA-")
            && rule != Rule::DataTrailing
            && rule != Rule::DataTruncated
        {
            continue; // deep scan
        }
        match rule.severity() {
            Severity::Error => {
                let e = validate(&f, &Config::default()).expect_err(rule.id());
                assert_eq!(e.rule(), rule, "{e}");
            }
            Severity::Warning => {
                let r = validate(&f, &Config::default()).unwrap_or_else(|e| panic!("{rule}: {e}"));
                assert!(
                    r.warnings().iter().any(|w| w.rule() == rule),
                    "{rule}: {:?}",
                    r.warnings()
                );
            }
        }
    }
}

/// For every rule with a minimal file: the reference accepts it exactly when the spec says
/// strict and the reference differ, or when the rule is only a warning; otherwise it rejects.
#[test]
fn reference_agrees_with_reference_divergence() {
    let mut checked = 0;
    for &rule in Rule::ALL {
        let Some(f) = minimal(rule) else { continue };
        checked += 1;
        let v = verdict(&f);
        match (rule.severity(), rule.reference_divergence()) {
            (Severity::Warning, _) => {
                assert!(v.accepts(), "{rule}: the reference should load it: {v:?}")
            }
            (Severity::Error, Some(_)) if rule == Rule::DataTruncated => {
                // Debug builds (tests) panic on the unchecked addition; release builds reject.
                if cfg!(debug_assertions) {
                    assert!(matches!(v, Verdict::Panic(_)), "{rule}: {v:?}");
                } else {
                    assert!(matches!(v, Verdict::Reject(_)), "{rule}: {v:?}");
                }
            }
            (Severity::Error, Some(_)) => {
                assert!(
                    v.accepts(),
                    "{rule}: the spec says the reference loads it: {v:?}"
                )
            }
            (Severity::Error, None) => {
                assert!(
                    matches!(v, Verdict::Reject(_)),
                    "{rule}: the spec says the reference rejects it: {v:?}"
                )
            }
        }
    }
    // Every header rule and DATA-BOOL has a minimal file; the other deep-scan rules are about
    // data values the reference never reads, and the INDEX-* rules about sets of files.
    // The portable profile's rules and NAME-SPECIAL come from its reader table and are tested
    // (the Rust crate included) in tests/it/portable.rs. INTEGRITY-SHA256 is about a file and
    // the digest its server publishes: no file alone breaks it (cli/tests/it/hub.rs).
    let expected = Rule::ALL
        .iter()
        .filter(|r| !is_index(r) && **r != Rule::DataNonFinite && **r != Rule::DataPolyglot)
        .filter(|r| !r.is_portable() && **r != Rule::NameSpecial)
        .filter(|r| **r != Rule::IntegritySha256)
        .count();
    assert_eq!(checked, expected);
}

/// The particular reference behaviours the Differences section states.
#[test]
fn reference_quirks_stated_in_the_spec() {
    let accepted = |f: &[u8]| match verdict(f) {
        Verdict::Accept(ts) => ts,
        other => panic!("expected the reference to load it: {other:?}"),
    };
    // Duplicate tensor names: the last entry wins (also "a" vs "\u0061").
    for second in ["a", "\\u0061"] {
        let h = format!(
            r#"{{"a":{{"dtype":"U8","shape":[1],"data_offsets":[0,1]}},"{second}":{{"dtype":"I8","shape":[2],"data_offsets":[0,2]}}}}"#
        );
        let ts = accepted(&file(&h, &[1, 2]));
        assert_eq!(ts.len(), 1);
        assert_eq!((ts[0].name.as_str(), ts[0].dtype.as_str()), ("a", "I8"));
    }
    // Duplicate keys inside __metadata__: accepted.
    accepted(&file(
        &format!(r#"{{"__metadata__":{{"k":"1","k":"2"}},{T}}}"#),
        &[1, 2],
    ));
    // __metadata__ twice, a field twice: rejected.
    for h in [
        format!(r#"{{"__metadata__":{{}},"__metadata__":{{}},{T}}}"#),
        r#"{"t":{"dtype":"U8","dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#.to_owned(),
    ] {
        assert!(
            matches!(verdict(&file(&h, &[1, 2])), Verdict::Reject(_)),
            "{h}"
        );
    }
    // The array form and {"U8": null} load as U8 tensors.
    for h in [
        r#"{"t":["U8",[2],[0,2]]}"#,
        r#"{"t":{"dtype":{"U8":null},"shape":[2],"data_offsets":[0,2]}}"#,
    ] {
        let ts = accepted(&file(h, &[1, 2]));
        assert_eq!(
            (ts[0].dtype.as_str(), &ts[0].shape[..]),
            ("U8", &[2u64][..])
        );
    }
    // Size overflow: left-to-right with checks.
    let p = 1u64 << 63;
    accepted(&file(
        &format!(r#"{{"t":{{"dtype":"U8","shape":[0,{p},{p}],"data_offsets":[0,0]}}}}"#),
        &[],
    ));
    accepted(&file(
        &format!(
            r#"{{"t":{{"dtype":"U8","shape":[{},0],"data_offsets":[0,0]}}}}"#,
            u64::MAX
        ),
        &[],
    ));
    assert!(matches!(
        verdict(&file(
            &format!(r#"{{"t":{{"dtype":"U8","shape":[{p},{p},0],"data_offsets":[0,0]}}}}"#),
            &[]
        )),
        Verdict::Reject(_)
    ));
    // Control characters in names: newline, raw U+0085 and the line and paragraph separators
    // load too.
    for name in ["a\\nb", "a\u{85}b", "a\u{2028}b", "a\\u2029b"] {
        let h = format!(r#"{{"{name}":{{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}}}"#);
        accepted(&file(&h, &[1, 2]));
    }
    // The 854-byte file.
    let f = minimal(Rule::DataTruncated).expect("a file");
    assert_eq!(f.len(), 854);
}

/// Files of other formats: the reference rejects each with the message of the length fault it
/// meets, as the FRAME-NOT-SAFETENSORS section says.
#[test]
fn reference_messages_for_other_formats() {
    let cases: [(&[u8], &str); 7] = [
        (
            b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n",
            "header too large",
        ),
        (
            b"PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00\x00\x00",
            "header too large",
        ),
        (
            b"GGUF\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
            "header too large",
        ),
        (b"<!DOCTYPE html>\n<html></html>\n", "header too large"),
        (b"{\"architectures\": [\"x\"]}\n", "header too large"),
        // pickle.dumps((1,), protocol=4) and a gzip stream with mtime 0: N is 93,652,096 and
        // 559,903, below the limit, so it runs past the end.
        (
            b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00K\x01\x85\x94.",
            "invalid header length",
        ),
        (
            b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00",
            "invalid header length",
        ),
    ];
    for (f, message) in cases {
        match verdict(f) {
            Verdict::Reject(m) => assert_eq!(m, message, "{f:?}"),
            other => panic!("{f:?}: {other:?}"),
        }
        let e = validate(f, &Config::default()).expect_err("strict rejects");
        assert_eq!(e.rule(), Rule::FrameNotSafetensors, "{e}");
    }
}

/// The reference rejects the other forms the rule sections say it rejects.
#[test]
fn reference_rejects_what_the_spec_says() {
    let rejects = |h: &str, data: &[u8]| {
        let v = verdict(&file(h, data));
        assert!(matches!(v, Verdict::Reject(_)), "{h}: {v:?}");
    };
    for value in [r#"{"a":"b"}"#, r#"["v"]"#, "true", "null"] {
        rejects(
            &format!(r#"{{"__metadata__":{{"k":{value}}},{T}}}"#),
            &[1, 2],
        );
    }
    for entry in ["null", "1", r#""U8""#, "true"] {
        rejects(&format!(r#"{{"t":{entry}}}"#), &[]);
    }
    for shape in [r#""2""#, "{}", "[[2]]", "null"] {
        rejects(
            &format!(r#"{{"t":{{"dtype":"U8","shape":{shape},"data_offsets":[0,2]}}}}"#),
            &[1, 2],
        );
    }
    for offsets in ["[2]", "[0,2,2]", "[]", "null"] {
        rejects(
            &format!(r#"{{"t":{{"dtype":"U8","shape":[2],"data_offsets":{offsets}}}}}"#),
            &[1, 2],
        );
    }
    for n in ["1.0", "1e2", "-0", "-1", "18446744073709551616"] {
        rejects(
            &format!(r#"{{"t":{{"dtype":"U8","shape":[{n}],"data_offsets":[0,2]}}}}"#),
            &[1, 2],
        );
        rejects(
            &format!(r#"{{"t":{{"dtype":"U8","shape":[2],"data_offsets":[0,{n}]}}}}"#),
            &[1, 2],
        );
    }
    for dtype in ["3", "null", r#"["U8"]"#, r#""f32""#, r#""F128""#] {
        rejects(
            &format!(r#"{{"t":{{"dtype":{dtype},"shape":[2],"data_offsets":[0,2]}}}}"#),
            &[1, 2],
        );
    }
    for tail in ["\u{0}", "{}", "x"] {
        rejects(&format!("{{{T}}}{tail}"), &[1, 2]);
    }
    // Zero-size tensors: inside another and past the end are rejected, at boundaries loaded.
    rejects(
        r#"{"z":{"dtype":"U8","shape":[0],"data_offsets":[1,1]},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#,
        &[1, 2],
    );
    rejects(
        r#"{"z":{"dtype":"U8","shape":[0],"data_offsets":[3,3]},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#,
        &[1, 2],
    );
    for at in [0, 2] {
        let h = format!(
            r#"{{"z":{{"dtype":"U8","shape":[0],"data_offsets":[{at},{at}]}},"a":{{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}}}"#
        );
        assert!(verdict(&file(&h, &[1, 2])).accepts(), "{h}");
    }
}

// ---------------------------------------------------------------------------------------------
// SPEC.md and the corpus manifest.

/// The corpus files the rule sections name exist in the manifest.
#[test]
fn corpus_paths_in_the_spec_are_in_the_manifest() {
    let m = Manifest::load();
    let paths: BTreeSet<&str> = m.cases.iter().map(|c| c.path.as_str()).collect();
    let spec = spec();
    let mut missing = Vec::new();
    for rule in Rule::ALL.iter().filter(|r| !is_index(r)) {
        let body = section(&spec, rule.id());
        let Some(start) = body.find("- Corpus:") else {
            continue;
        };
        let corpus = &body[start..];
        let corpus = &corpus[..corpus[1..].find("\n-").map_or(corpus.len(), |i| i + 1)];
        for p in corpus.split('`').skip(1).step_by(2) {
            if p.ends_with(".safetensors") && !paths.contains(p) {
                missing.push(format!("{rule}: {p}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "SPEC.md names corpus files not in the manifest: {missing:#?}"
    );
}

/// The corpus's recorded reference verdicts agree with the Differences section: a file strict
/// rejects and the reference loads (or panics on) breaks only divergent rules, and every
/// divergent rule has such a file.
#[test]
fn corpus_reference_verdicts_match_the_differences() {
    let m = Manifest::load();
    let mut shown = BTreeSet::new();
    for c in &m.cases {
        let (verdict, reference) = (c.verdict.as_str(), c.reference.as_str());
        // Sharded sets have no reference verdict (the crate reads single files).
        if verdict != "reject" || reference == "reject" || reference.is_empty() {
            continue;
        }
        for id in c.rules.iter().map(String::as_str) {
            let rule = Rule::from_id(id).unwrap_or_else(|| panic!("manifest rule {id}"));
            assert!(
                rule.reference_divergence().is_some(),
                "{}: the reference {reference}s it, but {id} has no reference_divergence",
                c.path
            );
            shown.insert(rule);
        }
    }
    for rule in Rule::ALL
        .iter()
        .filter(|r| r.reference_divergence().is_some())
    {
        assert!(
            shown.contains(rule),
            "{rule}: no corpus file shows the divergence"
        );
    }
}

/// Tensors on the same bytes: the reference's verdict is the same on every run, while the
/// tensor its message names is whichever of them its hash map visits second, which varies
/// from run to run (SPEC §5, "Same verdict, a reason that varies").
#[test]
fn tied_offsets_give_one_reference_verdict_and_a_message_naming_a_tied_tensor() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../corpus/");
    for (path, tied) in [
        (
            "invalid/attack/aliased-tensors.safetensors",
            ["weight", "bias"],
        ),
        ("invalid/layout/same-bytes.safetensors", ["a", "b"]),
    ] {
        let bytes = std::fs::read(format!("{dir}{path}")).expect("corpus file");
        for _ in 0..40 {
            match verdict(&bytes) {
                Verdict::Reject(message) => assert!(
                    tied.iter()
                        .any(|t| message == format!("invalid offset for tensor `{t}`")),
                    "{path}: {message}"
                ),
                other => panic!("{path}: {other:?}"),
            }
        }
    }
}
