//! Every input of the kept corpora (`fuzz/corpus/<target>/`) through its target's check, on
//! stable: the inputs that once broke something (named `regression-...`) stay fixed, and the
//! corpus stays readable by the current targets. `structured` and `index` take `arbitrary`
//! bytes, which only the fuzz build decodes; they are left out here.

use std::path::Path;

/// A target's name and its check.
type Target<'a> = (&'a str, &'a dyn Fn(&[u8]));

fn each_input(target: &str, check: &dyn Fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        check(&bytes);
        count += 1;
    }
    count
}

#[test]
fn kept_corpora_pass_their_checks() {
    let targets: [Target<'_>; 22] = [
        ("validate", &|b| stcheck_fuzzing::check_validate(b)),
        ("stream", &|b| stcheck_fuzzing::check_stream_input(b)),
        ("differential", &|b| {
            stcheck_fuzzing::check_differential(b);
        }),
        ("fast_path", &|b| stcheck_fuzzing::check_fast_path(b)),
        ("glob", &|b| {
            stcheck_fuzzing::check_glob(b);
        }),
        ("address", &|b| {
            stcheck_fuzzing::check_address(b);
        }),
        ("hub_listing", &|b| {
            stcheck_fuzzing::check_hub_listing(b);
        }),
        ("remote_index", &|b| {
            stcheck_fuzzing::check_remote_index(b);
        }),
        ("content_range", &|b| {
            stcheck_fuzzing::check_content_range(b);
        }),
        ("remote_range", &|b| {
            stcheck_fuzzing::check_remote_range(b);
        }),
        ("serve_clamd", &|b| {
            stcheck_fuzzing::check_clamd(b);
        }),
        ("serve_query", &|b| {
            stcheck_fuzzing::check_query(b);
        }),
        ("deep_scan", &|b| stcheck_fuzzing::check_deep_scan(b)),
        ("portable", &|b| stcheck_fuzzing::check_portable(b)),
        ("reference_profile", &|b| {
            stcheck_fuzzing::check_reference_profile(b)
        }),
        ("file_source", &|b| stcheck_fuzzing::check_file_source(b)),
        ("source_faults", &|b| {
            stcheck_fuzzing::check_source_faults(b)
        }),
        ("rule_table", &|b| stcheck_fuzzing::check_rule_table(b)),
        ("reader_table", &|b| stcheck_fuzzing::check_reader_table(b)),
        ("writer", &|b| stcheck_fuzzing::check_writer(b)),
        ("protocol_reply", &|b| {
            stcheck_fuzzing::check_protocol_reply(b)
        }),
        ("corpus_archive", &|b| {
            stcheck_fuzzing::check_corpus_archive(b)
        }),
    ];
    for (target, check) in targets {
        assert!(each_input(target, check) > 0, "no kept corpus for {target}");
    }
}
