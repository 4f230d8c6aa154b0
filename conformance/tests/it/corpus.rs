//! The golden corpus: regeneration is byte-identical, stcheck's strict profile agrees with every
//! recipe, and every rule is covered on both sides.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use stcheck::{Config, Rule, Severity};
use stcheck_conformance::corpus::{self, build, expected, Recipe, Verdict};

fn corpus_dir() -> PathBuf {
    corpus::default_corpus_dir()
}

fn recipes() -> Vec<Recipe> {
    match corpus::load_recipes(&corpus_dir().join("recipes")) {
        Ok(r) => r,
        Err(e) => panic!("recipes do not load: {e}"),
    }
}

fn committed(recipes: &[Recipe]) -> impl Iterator<Item = &Recipe> {
    recipes.iter().filter(|r| !r.large)
}

/// The committed single-file cases (index cases are checked by their own test).
fn committed_files(recipes: &[Recipe]) -> impl Iterator<Item = &Recipe> {
    committed(recipes).filter(|r| r.index.is_none())
}

fn bytes_of(r: &Recipe) -> Vec<u8> {
    match build::file_bytes(r) {
        Ok(b) => b,
        Err(e) => panic!("{e}"),
    }
}

/// A scratch directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("stcorpus-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn regeneration_reproduces_every_committed_byte() {
    let dir = corpus_dir();
    let tmp = TempDir::new("regen");
    let summary = corpus::generate(&dir.join("recipes"), &tmp.0).expect("generate");
    assert!(summary.files > 0);

    let fresh = corpus::case_files(&tmp.0);
    let old = corpus::case_files(&dir);
    let missing: Vec<_> = fresh.iter().filter(|p| !old.contains(p)).collect();
    let stale: Vec<_> = old.iter().filter(|p| !fresh.contains(p)).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "regenerate the corpus (cargo run -p stcheck-conformance --bin stcorpus -- generate): \
         not committed: {missing:?}; committed but no recipe: {stale:?}"
    );
    let mut differ = Vec::new();
    for p in fresh.iter().map(String::as_str).chain(["manifest.json"]) {
        // A symbolic link (an index case's shard) is compared by its target.
        let link = |d: &Path| fs::read_link(d.join(p)).ok();
        if link(&tmp.0).is_some() || link(&dir).is_some() {
            if link(&tmp.0) != link(&dir) {
                differ.push(p.to_owned());
            }
            continue;
        }
        let a = fs::read(tmp.0.join(p)).expect("read generated");
        let b = fs::read(dir.join(p)).unwrap_or_default();
        if a != b {
            differ.push(p.to_owned());
        }
    }
    assert!(
        differ.is_empty(),
        "regenerating differs from the committed corpus in {differ:?}: \
         run `cargo run -p stcheck-conformance --bin stcorpus -- generate` and commit"
    );
}

fn ids(v: &[stcheck::Warning]) -> Vec<&'static str> {
    v.iter().map(|w| w.rule().id()).collect()
}

fn is_deep_rule(id: &str) -> bool {
    matches!(id, "DATA-BOOL" | "DATA-NONFINITE" | "DATA-POLYGLOT")
}

/// The warnings of a recipe that a header-level check (no deep scan) reports.
fn header_level_warnings(r: &Recipe) -> Vec<&str> {
    r.warnings
        .iter()
        .map(String::as_str)
        .filter(|w| !is_deep_rule(w))
        .collect()
}

/// Compare a report with the expected content the manifest records.
fn check_content(r: &Recipe, file: &[u8], report: &stcheck::Report<'_>, out: &mut Vec<String>) {
    let want = match corpus::case_entry(r, file).map(|c| c.expected) {
        Ok(Some(e)) => e,
        Ok(None) => {
            out.push(format!("{}: no expected content", r.id));
            return;
        }
        Err(e) => {
            out.push(format!("{}: expected content: {e}", r.id));
            return;
        }
    };
    let got: Vec<expected::ExpectedTensor> = report
        .tensors()
        .map(|t| expected::ExpectedTensor {
            name: t.name.to_owned(),
            dtype: t.dtype.name().to_owned(),
            shape: t.shape.iter().map(u64::to_string).collect(),
            data_offsets: [t.begin.to_string(), t.end.to_string()],
            sha256: expected::sha256_hex(t.data(file)),
            values: None,
            shard: None,
        })
        .collect();
    let want_tensors: Vec<expected::ExpectedTensor> = want
        .tensors
        .iter()
        .cloned()
        .map(|mut t| {
            t.values = None;
            t
        })
        .collect();
    if got.len().to_string() != want.tensor_count {
        out.push(format!(
            "{}: {} tensors, manifest {}",
            r.id,
            got.len(),
            want.tensor_count
        ));
    }
    if !want.tensors.is_empty() && got != want_tensors {
        out.push(format!(
            "{}: tensors differ:\n  stcheck  {got:?}\n  manifest {:?}",
            r.id, want_tensors
        ));
    }
    let got_meta: Option<Vec<(String, String)>> = match report.metadata_form() {
        stcheck::MetadataForm::Map => Some(
            report
                .metadata()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        ),
        _ => None,
    };
    let want_meta = want.metadata.map(|m| m.0);
    if got_meta != want_meta {
        out.push(format!(
            "{}: metadata differs: stcheck {got_meta:?}, manifest {want_meta:?}",
            r.id
        ));
    }
}

/// Cases where stcheck is wrong by SPEC.md, reported to the maintainers: each must still
/// disagree (so the entry is removed when the bug is fixed), and nothing else may.
const KNOWN_STCHECK_BUGS: &[(&str, &str)] = &[];

#[test]
fn strict_agrees_with_every_recipe() {
    let config = Config::default();
    let mut failures = Vec::new();
    let mut checked = 0;
    for r in committed_files(&recipes()) {
        let file = bytes_of(r);
        checked += 1;
        let accept = corpus::strict_accepts(r);
        let result = stcheck::validate(&file, &config).map(|rep| rep.into_owned());
        let report = match result {
            Ok(rep) => rep,
            Err(e) => {
                if accept {
                    failures.push(format!("{}: recipe accepts, stcheck rejects: {e}", r.id));
                } else if r.deep {
                    failures.push(format!(
                        "{}: deep-only fault, but the header-level check rejects: {e}",
                        r.id
                    ));
                } else if r.rules.first().map(String::as_str) != Some(e.rule().id()) {
                    failures.push(format!(
                        "{}: recipe rejects by {:?}, stcheck by {e}",
                        r.id,
                        r.rules.first()
                    ));
                }
                continue;
            }
        };
        // The header-level result, before the deep scan.
        let header_warnings = header_level_warnings(r);
        if ids(report.warnings()) != header_warnings {
            failures.push(format!(
                "{}: header-level warnings {:?}, recipe {:?}",
                r.id,
                ids(report.warnings()),
                header_warnings
            ));
        }
        let deep = stcheck::Checker::check_slice(&config.clone().deep(true), &file).verdict;
        match (deep, accept) {
            (Ok(report), true) => {
                let got = ids(report.warnings());
                if got != r.warnings {
                    failures.push(format!(
                        "{}: warnings after the deep scan {got:?}, recipe {:?}",
                        r.id, r.warnings
                    ));
                }
                check_content(r, &file, &report, &mut failures);
            }
            (Ok(_), false) => failures.push(format!(
                "{}: recipe rejects by {:?}, stcheck accepts (deep scan included)",
                r.id,
                r.rules.first()
            )),
            (Err(e), true) => failures.push(format!(
                "{}: recipe accepts, the deep scan rejects: {e}",
                r.id
            )),
            (Err(e), false) => {
                if !r.deep {
                    failures.push(format!(
                        "{}: only the deep scan rejects ({e}) but the recipe is not deep: true",
                        r.id
                    ));
                } else if r.rules.first().map(String::as_str) != Some(e.rule().id()) {
                    failures.push(format!(
                        "{}: recipe rejects by {:?}, the deep scan by {e}",
                        r.id,
                        r.rules.first()
                    ));
                }
            }
        }
    }
    assert!(checked >= 150);
    for (id, why) in KNOWN_STCHECK_BUGS {
        let before = failures.len();
        failures.retain(|f| !f.starts_with(&format!("{id}: ")));
        assert!(
            failures.len() < before,
            "{id} now agrees with its recipe ({why}): remove it from KNOWN_STCHECK_BUGS"
        );
    }
    assert!(
        failures.is_empty(),
        "{} disagreement(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The index cases: `stcheck::index::check_index` over the committed directories agrees with
/// every recipe (verdict, first rule, warnings), and the expected tensors are the shards'.
#[test]
fn strict_agrees_with_every_index_case() {
    let config = Config::default();
    let mut failures = Vec::new();
    let mut checked = 0;
    for r in committed(&recipes()).filter(|r| r.index.is_some()) {
        checked += 1;
        let path = corpus_dir().join(corpus::case_path(r));
        let bytes = fs::read(&path).expect("index file");
        let source = stcheck_gate::shards::FsSource::for_index(&path);
        let report = match stcheck::index::check_index(&bytes, &source, &config) {
            Ok(rep) => rep,
            Err(e) => {
                failures.push(format!("{}: I/O error {e}", r.id));
                continue;
            }
        };
        let first = report.errors().first().map(|f| f.rule().id());
        let warnings: Vec<&str> = report.warnings().iter().map(|w| w.rule().id()).collect();
        match (corpus::strict_accepts(r), first) {
            (true, None) => {
                if warnings != r.warnings {
                    failures.push(format!(
                        "{}: warnings {warnings:?}, recipe {:?}",
                        r.id, r.warnings
                    ));
                }
                let want = corpus::case_entry(r, &bytes)
                    .ok()
                    .and_then(|c| c.expected)
                    .map(|e| e.tensor_count);
                let got = report.tensors().to_string();
                if want.as_deref() != Some(got.as_str()) {
                    failures.push(format!("{}: {got} tensors, manifest {want:?}", r.id));
                }
            }
            (true, Some(rule)) => {
                failures.push(format!("{}: recipe accepts, stcheck {rule}", r.id))
            }
            (false, None) => failures.push(format!("{}: recipe rejects, stcheck accepts", r.id)),
            (false, Some(rule)) => {
                if r.rules.first().map(String::as_str) != Some(rule) {
                    failures.push(format!(
                        "{}: recipe rejects by {:?}, stcheck by {rule}",
                        r.id,
                        r.rules.first()
                    ));
                }
            }
        }
    }
    assert!(checked >= 10, "only {checked} index cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn deep_flag_matches_what_a_header_only_check_sees() {
    // A case is `deep: true` exactly when a deep-scan rule decides it.
    for r in committed(&recipes()) {
        let deep_rule = (r.verdict == Verdict::Reject
            && r.rules.first().is_some_and(|id| is_deep_rule(id)))
            || r.warnings.iter().any(|w| is_deep_rule(w));
        assert_eq!(r.deep, deep_rule, "{}: deep flag", r.id);
    }
}

/// Whether every case the reader table cites for this portable rule is a probe case
/// (`index/...`, `probe/...` of conformance/probes/cases.json), none a corpus file.
fn probe_only(rule: Rule) -> bool {
    let table = stcheck::portable::ReaderTable::builtin().expect("corpus/readers.json loads");
    let mut rows = table
        .behaviours()
        .iter()
        .filter(|b| b.rule() == rule)
        .peekable();
    rows.peek().is_some()
        && rows.all(|b| {
            b.cases()
                .iter()
                .chain(b.near_misses())
                .all(|c| c.starts_with("index/") || c.starts_with("probe/"))
        })
}

#[test]
fn every_rule_is_covered_on_both_sides() {
    let all = recipes();
    let mut rejected: BTreeSet<&str> = BTreeSet::new();
    let mut accepted: BTreeSet<&str> = BTreeSet::new();
    let mut warned: BTreeSet<&str> = BTreeSet::new();
    for r in committed(&all) {
        match r.verdict {
            Verdict::Reject => rejected.extend(r.rules.iter().map(String::as_str)),
            Verdict::Accept => {
                accepted.extend(r.rules.iter().map(String::as_str));
                warned.extend(r.warnings.iter().map(String::as_str));
            }
            Verdict::ImplementationDefined => {}
        }
    }
    let mut missing = Vec::new();
    for rule in Rule::ALL {
        let id = rule.id();
        if rule.kind() == stcheck::Kind::Integrity {
            // INTEGRITY-SHA256 compares a file with the digest its server publishes: no file
            // alone breaks it, so it has no corpus case (SPEC.md says so; corpus/README.md
            // too). cli/tests/hub.rs tests it on both sides against a mock hub.
            continue;
        }
        if probe_only(*rule) {
            // Portable rules shown only on sharded sets or files too large for the manifest
            // (conformance/probes/cases.json): tests/portable.rs and the probes cover them.
            continue;
        }
        if rule.is_portable() {
            // The portable profile: a case it rejects (`portable: reject`) and a near miss
            // strict and portable both accept, each naming the rule; large cases count.
            let names = |r: &&Recipe| r.rules.iter().any(|x| x == id);
            let rejected = all
                .iter()
                .filter(names)
                .any(|r| r.portable == Some(Verdict::Reject));
            let near = all
                .iter()
                .filter(names)
                .any(|r| r.verdict == Verdict::Accept && r.portable.is_none());
            if *rule != Rule::PortableRefused && !rejected {
                missing.push(format!("{id}: no case the portable profile rejects"));
            }
            if !near {
                missing.push(format!("{id}: no accepted near-miss case"));
            }
            continue;
        }
        match rule.severity() {
            Severity::Error => {
                if !rejected.contains(id) {
                    missing.push(format!("{id}: no rejected case"));
                }
                if !accepted.contains(id) {
                    missing.push(format!("{id}: no accepted near-miss case"));
                }
            }
            Severity::Warning => {
                if !warned.contains(id) {
                    missing.push(format!("{id}: no accepted case that raises it"));
                }
                // The near miss: an accepted case exercising the rule without raising it.
                let near_miss = committed(&all).any(|r| {
                    r.verdict == Verdict::Accept
                        && r.rules.iter().any(|x| x == id)
                        && !r.warnings.iter().any(|x| x == id)
                });
                if !near_miss {
                    missing.push(format!("{id}: no accepted near-miss case"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "coverage gaps:\n{}", missing.join("\n"));
}

#[test]
fn corpus_has_at_least_150_cases_and_every_dtype() {
    let all = recipes();
    let n = committed(&all).count();
    assert!(n >= 150, "only {n} committed cases");
    let dtypes: BTreeSet<String> = committed_files(&all)
        .filter(|r| r.id.starts_with("valid/dtype/"))
        .filter_map(|r| expected::expected(&bytes_of(r)).ok())
        .flat_map(|e| e.tensors.into_iter().map(|t| t.dtype))
        .collect();
    for d in stcheck::Dtype::ALL {
        assert!(dtypes.contains(d.name()), "no valid/dtype case of {d}");
    }
    assert!(all.iter().any(|r| r.id == "valid/dtype/f4-even"));
}

/// Every corpus file that SPEC.md cites exists.
#[test]
fn spec_cites_only_existing_cases() {
    let spec_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../SPEC.md");
    let spec = fs::read_to_string(&spec_path).expect("SPEC.md");
    let ids: BTreeSet<String> = recipes().into_iter().map(|r| r.id).collect();
    let mut missing = Vec::new();
    for piece in spec.split('`') {
        let Some(id) = piece.strip_suffix(".safetensors") else {
            continue;
        };
        let is_case = corpus::CASE_DIRS
            .iter()
            .any(|d| id.starts_with(&format!("{d}/")));
        if is_case && !id.contains('<') && !ids.contains(id) {
            missing.push(id.to_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "SPEC.md cites cases that do not exist: {missing:?}"
    );
}

#[test]
fn manifest_schema_holds() {
    let text = fs::read_to_string(corpus_dir().join("manifest.json")).expect("manifest.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("manifest is JSON");
    assert_eq!(v["version"], "3");
    let cases = v["cases"].as_array().expect("cases");
    for c in cases.iter().chain(v["large"].as_array().expect("large")) {
        let id = c["id"].as_str().expect("id");
        assert!(
            ["security", "interoperability", "strictness"]
                .contains(&c["class"].as_str().expect("class")),
            "{id}"
        );
        let index = c["kind"] == "index";
        assert!(index || c["kind"] == "file", "{id}");
        let verdict = c["verdict"].as_str().expect("verdict");
        assert!(
            ["accept", "reject", "implementation-defined"].contains(&verdict),
            "{id}"
        );
        assert_eq!(
            c.get("reason").is_some(),
            verdict == "implementation-defined",
            "{id}"
        );
        if index {
            assert!(c.get("reference").is_none(), "{id}");
        } else {
            assert!(["accept", "reject", "panic"].contains(&c["reference"].as_str().expect("ref")));
        }
        assert!(c["deep"].is_boolean() && c["rules"].is_array() && c["warnings"].is_array());
        assert_eq!(
            c.get("acceptable_rules").is_some(),
            verdict == "reject",
            "{id}"
        );
        if verdict == "accept" {
            let e = &c["expected"];
            assert!(e["metadata"].is_null() || e["metadata"].is_object(), "{id}");
            let count: usize = e["tensor_count"]
                .as_str()
                .expect("count")
                .parse()
                .expect("n");
            let listed = e
                .get("tensors")
                .and_then(|t| t.as_array())
                .map_or(0, Vec::len);
            assert!(listed == count || (listed == 0 && count > 1000), "{id}");
            for t in e
                .get("tensors")
                .and_then(|t| t.as_array())
                .into_iter()
                .flatten()
            {
                for d in t["shape"].as_array().expect("shape") {
                    assert!(d.as_str().is_some_and(|s| s.parse::<u64>().is_ok()), "{id}");
                }
                assert_eq!(t["sha256"].as_str().map(str::len), Some(64), "{id}");
            }
        } else if verdict == "reject" {
            assert!(c.get("expected").is_none(), "{id}");
            // The acceptable rules start with the case's rule.
            let acceptable = c["acceptable_rules"].as_array().expect("acceptable_rules");
            assert_eq!(acceptable.first(), c["rules"].get(0), "{id}");
        }
    }
}

/// The large cases (hundreds of MB, built in memory): `cargo test -p stcheck-conformance
/// --test corpus -- --ignored`.
#[test]
#[ignore = "builds several hundred MB"]
fn strict_agrees_with_the_large_cases() {
    for r in recipes().iter().filter(|r| r.large) {
        let file = bytes_of(r);
        match stcheck::validate(&file, &Config::default()) {
            Ok(rep) => {
                assert!(corpus::strict_accepts(r), "{}: stcheck accepts", r.id);
                assert_eq!(ids(rep.warnings()), header_level_warnings(r), "{}", r.id);
                let mut failures = Vec::new();
                check_content(r, &file, &rep, &mut failures);
                assert!(failures.is_empty(), "{failures:?}");
                if r.deep {
                    let config = Config::default().deep(true);
                    let deep = stcheck::Checker::check_slice(&config, &file).verdict;
                    let deep =
                        deep.unwrap_or_else(|e| panic!("{}: the deep scan rejects: {e}", r.id));
                    assert_eq!(ids(deep.warnings()), r.warnings, "{} (deep)", r.id);
                }
            }
            Err(e) => {
                assert!(!corpus::strict_accepts(r), "{}: stcheck rejects: {e}", r.id);
                assert_eq!(
                    r.rules.first().map(String::as_str),
                    Some(e.rule().id()),
                    "{}",
                    r.id
                );
            }
        }
    }
}

/// Where the portable profile (`stcheck::portable`, every reader of `corpus/readers.json`)
/// disagrees with a recipe strict accepts: it must reject exactly the cases marked `portable:
/// reject`, among others by the first `PORTABLE-*` rule of their `rules`.
fn portable_disagreement(r: &Recipe, file: &[u8]) -> Option<String> {
    let table = stcheck::portable::ReaderTable::builtin().expect("corpus/readers.json loads");
    let options = stcheck::portable::Options::all(table);
    let report = match stcheck::validate(file, &Config::default()) {
        Ok(rep) => rep,
        Err(e) => return Some(format!("{}: strict rejects: {e}", r.id)),
    };
    let result = stcheck::portable::check_file(table, &report, &options);
    let want = r.portable == Some(Verdict::Reject);
    let first_rule = r.rules.iter().find(|id| id.starts_with("PORTABLE-"));
    match (result.findings().first(), want) {
        (None, false) => None,
        (None, true) => Some(format!(
            "{}: recipe portable: reject, stcheck's portable profile accepts",
            r.id
        )),
        (Some(f), false) => Some(format!("{}: stcheck's portable profile rejects: {f}", r.id)),
        (Some(_), true) => {
            let got: BTreeSet<&str> = result.findings().iter().map(|f| f.rule().id()).collect();
            (!first_rule.is_some_and(|id| got.contains(id.as_str()))).then(|| {
                format!(
                    "{}: portable rejects by {got:?}, recipe names {first_rule:?}",
                    r.id
                )
            })
        }
    }
}

#[test]
fn portable_agrees_with_every_recipe() {
    let mut failures = Vec::new();
    let mut rejected = 0;
    for r in committed_files(&recipes()).filter(|r| corpus::strict_accepts(r)) {
        rejected += usize::from(r.portable.is_some());
        failures.extend(portable_disagreement(r, &bytes_of(r)));
    }
    assert!(
        rejected >= 10,
        "only {rejected} cases marked portable: reject"
    );
    assert!(
        failures.is_empty(),
        "{} disagreement(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
