//! Memory bounds of the inputs issue 19 found past SPEC §3's bound, checked for what they keep
//! (the peak memory itself is measured by `benches/memory.sh`, not here): the reference verdict
//! is refused above `reference::MAX_MEMBERS` before the crate allocates, and computed at it;
//! an index naming many distinct missing shards keeps counts, not a list.

use stcheck::index::{check_index, MemorySource, MAX_FINDINGS};
use stcheck::reference::MAX_MEMBERS;
use stcheck::{Checker, Config, ReadErrorKind, ReadMode};

/// A valid file of one U8 tensor and `entries` metadata entries: `entries + 4` JSON members.
fn file_with_members(entries: u64) -> Vec<u8> {
    let mut h = String::from(r#"{"__metadata__":{"#);
    for i in 0..entries {
        if i > 0 {
            h.push(',');
        }
        h.push_str(&format!(r#""{i}":"""#));
    }
    h.push_str(r#"},"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#);
    while h.len() % 8 != 0 {
        h.push(' ');
    }
    let mut f = (h.len() as u64).to_le_bytes().to_vec();
    f.extend_from_slice(h.as_bytes());
    f.push(1);
    f
}

#[test]
fn the_reference_verdict_is_refused_above_max_members_and_given_at_it() {
    // The metadata object and the tensor's key count as members too: 1 + entries + 1 + 3.
    let at = file_with_members(MAX_MEMBERS - 5);
    let above = file_with_members(MAX_MEMBERS - 4);
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("bounds-reference");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let mut config = Config::default().reference(true);
    // The message names the options as the caller's face writes them.
    config.names.compare_reference = "compare_reference=True";
    config.names.reference_profile = "profile=\"reference\"";
    for (name, bytes, refused) in [("at", &at, false), ("above", &above, true)] {
        let path = dir.join(format!("{name}.safetensors"));
        std::fs::write(&path, bytes).expect("write");
        for mode in [ReadMode::Read, ReadMode::Mmap, ReadMode::Stream] {
            let file = std::fs::File::open(&path).expect("open");
            let got = stcheck::check_file(&file, &config, mode, |c| c.reference.clone());
            match (refused, got) {
                (true, Err(e)) => {
                    assert_eq!(e.kind(), ReadErrorKind::TooLarge, "{name} {mode:?}: {e}");
                    assert!(e.message().contains("262144"), "{e}");
                    assert!(
                        e.message().ends_with(
                            "; check it without compare_reference=True and profile=\"reference\""
                        ),
                        "{e}"
                    );
                }
                (false, Ok(Some(v))) => assert!(v.accepts(), "{name} {mode:?}: {v:?}"),
                (_, other) => panic!("{name} {mode:?}: {other:?}"),
            }
        }
        let streamed = stcheck::check_reader(std::io::Cursor::new(bytes.clone()), &config);
        assert_eq!(streamed.is_err(), refused, "{name} on a stream");
        // The strict verdict alone is not affected.
        assert!(Checker::check_slice(&Config::default(), bytes).is_valid());
    }
}

#[test]
fn an_index_of_many_distinct_missing_shards_keeps_counts() {
    let n = 20_000u64;
    let mut index = String::from(r#"{"metadata":{"total_size":0},"weight_map":{"#);
    for i in 0..n {
        if i > 0 {
            index.push(',');
        }
        index.push_str(&format!(r#""t{i}":"s{i}.safetensors""#));
    }
    index.push_str("}}");
    let report =
        check_index(index.as_bytes(), &MemorySource::new(), &Config::default()).expect("checked");
    assert!(!report.is_valid());
    assert_eq!(report.shards().missing, n);
    assert_eq!(report.shards().total(), n);
    assert_eq!(report.errors().len(), MAX_FINDINGS);
    assert_eq!(report.omitted() as u64, n - MAX_FINDINGS as u64);
    assert!(report
        .errors()
        .iter()
        .all(|f| f.rule().id() == "INDEX-SHARD-MISSING"));
}
