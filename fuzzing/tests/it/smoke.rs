//! Every fuzz target's logic, run on stable as a seeded smoke test (as wasm-tools does), so the
//! fuzz code cannot rot between fuzzing runs. The targets in `fuzz/fuzz_targets/` call the
//! same functions of `stcheck_fuzzing`.

use std::collections::BTreeMap;

use stcheck_fuzzing::{self as fuzzing, Differential, Mutation, Rng, Source, Structured};

const ITERATIONS: u64 = 3000;

#[test]
fn validate_target_on_seeded_inputs() {
    let mut rng = Rng::new(0x5eed_0001);
    for _ in 0..ITERATIONS {
        let file = fuzzing::smoke_file(&mut rng);
        fuzzing::check_validate(&file);
    }
}

#[test]
fn structured_target_applies_every_mutation() {
    let mut rng = Rng::new(0x5eed_0002);
    let mut applied: BTreeMap<&str, u64> = BTreeMap::new();
    let mut unmutated = 0u64;
    for _ in 0..ITERATIONS {
        let case = Structured::generate(&mut rng);
        match case.check() {
            Some(name) => *applied.entry(name).or_default() += 1,
            None => unmutated += 1,
        }
    }
    // The smoke test is only worth something if it reaches every mutation and the unmutated
    // path; a generator change that starves one of them must fail here.
    assert!(unmutated > 0, "no unmutated case checked");
    for name in Mutation::NAMES {
        assert!(
            applied.get(name).copied().unwrap_or(0) > 0,
            "mutation {name} never applied: {applied:?}"
        );
    }
}

#[test]
fn structured_generator_on_exhausted_input_still_generates() {
    // libFuzzer starts from tiny inputs; zeros must select valid, small choices.
    let case = Structured::generate(&mut fuzzing::ByteSource::new(&[]));
    assert!(case.model.tensors.is_empty());
    case.check();
}

#[test]
fn fast_path_target_on_seeded_headers() {
    let mut rng = Rng::new(0x5eed_0006);
    for _ in 0..ITERATIONS {
        let file = fuzzing::smoke_file(&mut rng);
        fuzzing::check_fast_path(file.get(8..).unwrap_or(&[]));
        // Canonical files, whose headers the fast path takes, unmutated.
        let case = Structured::generate(&mut rng);
        let file = case.model.serialize();
        fuzzing::check_fast_path(file.get(8..).unwrap_or(&[]));
    }
}

#[test]
fn stream_target_on_seeded_inputs_and_chunkings() {
    let mut rng = Rng::new(0x5eed_0003);
    for _ in 0..ITERATIONS {
        let file = fuzzing::smoke_file(&mut rng);
        let len = rng.below(8) as usize;
        let schedule = rng.bytes(len);
        fuzzing::check_stream(&file, &schedule);
    }
}

#[test]
fn stream_input_split_keeps_seed_files_whole() {
    let file = stcheck::write::serialize(
        &[stcheck::write::TensorSpec::new(
            "w",
            stcheck::Dtype::U8,
            &[3],
            &[1, 2, 3],
        )],
        &[],
    )
    .expect("a valid model");
    let mut seed = file.clone();
    seed.push(0);
    let (f, schedule) = fuzzing::split_stream_input(&seed);
    assert_eq!(f, &file[..]);
    assert!(schedule.is_empty());
    let mut with_schedule = file.clone();
    with_schedule.extend_from_slice(&[5, 0xFF, 2]);
    let (f, schedule) = fuzzing::split_stream_input(&with_schedule);
    assert_eq!(f, &file[..]);
    assert_eq!(schedule, &[5, 0xFF]);
}

#[test]
fn differential_target_on_seeded_inputs() {
    let mut rng = Rng::new(0x5eed_0004);
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    for _ in 0..ITERATIONS {
        let file = fuzzing::smoke_file(&mut rng);
        let key = match fuzzing::check_differential(&file) {
            Differential::BothAccept => "both-accept".to_owned(),
            Differential::BothReject => "both-reject".to_owned(),
            Differential::Documented(rule) => format!("documented {rule}"),
            Differential::ReferencePanic { strict, .. } => format!("reference panic ({strict})"),
        };
        *seen.entry(key).or_default() += 1;
    }
    assert!(
        seen.get("both-accept").copied().unwrap_or(0) > 0,
        "{seen:?}"
    );
    assert!(
        seen.get("both-reject").copied().unwrap_or(0) > 0,
        "{seen:?}"
    );
}

#[test]
fn index_target_on_seeded_sets() {
    let mut rng = Rng::new(0x5eed_0005);
    for _ in 0..ITERATIONS / 3 {
        fuzzing::IndexCase::generate(&mut rng).check();
    }
}

/// Every fault of a shard source and every change of the set's layout, on generated sets
/// (the check asserts each change's rule or error).
#[test]
fn index_target_on_every_source_fault_and_layout_change() {
    use fuzzing::IndexChange;
    let mut rng = Rng::new(0x5eed_0008);
    for round in 0..40u64 {
        let mut case = fuzzing::IndexCase::generate(&mut rng);
        // Hostile names for `RenameShard`: a path, a parent, a control character, a plain one.
        case.raw = [
            &b"../up.safetensors"[..],
            b"a/b",
            b"x\x01y",
            b"other.safetensors",
        ][(round % 4) as usize]
            .to_vec();
        let changes = (0..fuzzing::READ_FAULTS.len() as u8)
            .map(|k| IndexChange::ShardFails(round, k))
            .chain([
                IndexChange::ListFails,
                IndexChange::MoveEntry(round, round / 3),
                IndexChange::DuplicateTensor(round, round / 5),
                IndexChange::RenameShard(round),
            ]);
        for change in changes {
            case.change = change;
            case.check();
        }
    }
}

/// Text spliced from `pieces` and a few random bytes: inputs with structure for the targets
/// whose input is text.
fn spliced(rng: &mut Rng, pieces: &[&str], most: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..rng.below(most) {
        if rng.below(8) == 0 {
            out.extend(rng.bytes(1));
        } else {
            out.extend(pieces[rng.below(pieces.len() as u64) as usize].as_bytes());
        }
    }
    out
}

#[test]
fn glob_target_on_seeded_patterns() {
    let mut rng = Rng::new(0x5eed_0007);
    let pattern = [
        "**", "*", "?", "a", "b", "[a-c]", "[!b]", "\\*", "/", ".st", "!",
    ];
    let path = ["a", "b", "ab", "c", "*", "x.st", "/"];
    let (mut hits, mut misses) = (0, 0);
    for _ in 0..ITERATIONS {
        let mut input = vec![rng.below(2) as u8];
        input.extend(spliced(&mut rng, &pattern, 6));
        input.push(b'\n');
        input.extend(spliced(&mut rng, &path, 8));
        match fuzzing::check_glob(&input) {
            Some(true) => hits += 1,
            Some(false) => misses += 1,
            None => {}
        }
    }
    assert!(
        hits > 100 && misses > 100,
        "{hits} matches, {misses} misses"
    );
}

#[test]
fn glob_target_on_the_hostile_pattern() {
    // Issue 35: six `**` against a path 80 deep, within the counted bound.
    let mut input = b"\x01**/**/**/**/**/**/nomatch\n".to_vec();
    input.extend(vec!["d"; 80].join("/").as_bytes());
    assert_eq!(fuzzing::check_glob(&input), Some(false));
}

#[test]
fn address_target_on_seeded_addresses() {
    let mut rng = Rng::new(0x5eed_0008);
    let pieces = [
        "https://",
        "hf://",
        "http://",
        "h.example",
        "[::1]",
        ":8080",
        ":0",
        "/",
        "a",
        "..",
        ".",
        "@",
        "?",
        "#",
        "%2F",
        "%2e%2e",
        "datasets/",
        "org/repo",
        "@main",
        "@refs/pr/1",
        "\n",
        "x.safetensors",
        "u:p@",
        "~",
        " ",
        "\\",
    ];
    let mut parsed = 0;
    for _ in 0..ITERATIONS {
        let mut input = ["https://h.example/", "hf://org/repo", "http://", ""]
            [rng.below(4) as usize]
            .as_bytes()
            .to_vec();
        input.extend(spliced(&mut rng, &pieces, 8));
        if fuzzing::check_address(&input) {
            parsed += 1;
        }
    }
    assert!(parsed > 300, "only {parsed} inputs parsed");
}

#[test]
fn hub_listing_target_on_seeded_pages() {
    let mut rng = Rng::new(0x5eed_0009);
    let entries = [
        r#"{"type":"file","path":"a.safetensors","size":8}"#,
        r#"{"type":"file","path":"d/b.safetensors","lfs":{"oid":"AB01AB01AB01AB01AB01AB01AB01AB01AB01AB01AB01AB01AB01AB01AB01AB01"}}"#,
        r#"{"type":"directory","path":"d"}"#,
        r#"{"type":"file","path":"../x"}"#,
        r#"{"type":"file","path":"a//b"}"#,
        r#"{"type":"file","path":"c","lfs":{"oid":"zz"}}"#,
    ];
    let links = [
        "<https://hub.example/api/models/o/r/tree/0123?cursor=2>; rel=\"next\"",
        "<?cursor=3>; rel=next",
        "<https://evil.example/p>; rel=\"next\"",
        "<https://hub.example/api/models/o/r/tree/0123?recursive=true>; rel=\"next\"",
        "<x>; rel=\"last\"",
    ];
    let (mut read, mut files) = (0, 0);
    for _ in 0..ITERATIONS {
        let mut input = Vec::new();
        for page in 0..1 + rng.below(4) {
            if page > 0 {
                input.push(0xFF);
            }
            let n = rng.below(4) as usize;
            let chosen: Vec<&str> = (0..n)
                .map(|_| entries[rng.below(entries.len() as u64) as usize])
                .collect();
            input.extend(format!("[{}]", chosen.join(",")).as_bytes());
            if rng.below(2) == 0 {
                input.push(0xFE);
                input.extend(links[rng.below(links.len() as u64) as usize].as_bytes());
            }
        }
        if let Some(n) = fuzzing::check_hub_listing(&input) {
            read += 1;
            files += n;
        }
    }
    assert!(
        read > 100 && files > 100,
        "{read} listings read, {files} files kept"
    );
}

#[test]
fn remote_index_target_on_seeded_indexes() {
    let mut rng = Rng::new(0x5eed_000a);
    let names = [
        "model-00001-of-00002.safetensors",
        "a b.safetensors",
        "../up.safetensors",
        "d/x.safetensors",
        "%2e%2e",
        "q?x.safetensors",
        "h#x.safetensors",
        "é.safetensors",
        "..",
        "",
    ];
    let mut planned = 0;
    for _ in 0..ITERATIONS {
        let n = rng.below(4) as usize;
        let map: Vec<String> = (0..n)
            .map(|i| {
                let name = names[rng.below(names.len() as u64) as usize];
                format!(
                    "\"t{i}\": {}",
                    serde_json::to_string(name).expect("a string")
                )
            })
            .collect();
        let index = format!(
            "{{\"metadata\": {{\"total_size\": 8}}, \"weight_map\": {{{}}}}}",
            map.join(", ")
        );
        planned += fuzzing::check_remote_index(index.as_bytes());
    }
    assert!(planned > 100, "only {planned} shard names planned");
}

#[test]
fn content_range_on_seeded_values() {
    let mut rng = Rng::new(0x5eed_000b);
    let numbers = [
        "0",
        "7",
        "",
        "*",
        " 9",
        "18446744073709551615",
        "99999999999999999999",
        "+1",
    ];
    let mut parsed = 0;
    for _ in 0..ITERATIONS {
        let mut pick = || numbers[rng.below(numbers.len() as u64) as usize];
        let (a, b, t) = (pick(), pick(), pick());
        let value = if rng.below(4) == 0 {
            spliced(&mut rng, &["bytes", " ", "7", "-", "/", "*"], 8)
        } else {
            format!("bytes {a}-{b}/{t}").into_bytes()
        };
        if fuzzing::check_content_range(&value) {
            parsed += 1;
        }
    }
    assert!(parsed > 10, "only {parsed} values parsed");
}

#[test]
fn remote_range_target_on_seeded_scripts() {
    let mut rng = Rng::new(0x5eed_000c);
    let (mut verdicts, mut refused) = (0, 0);
    for _ in 0..400 {
        let file = if rng.below(2) == 0 {
            fuzzing::smoke_file(&mut rng)
        } else {
            Structured::generate(&mut rng).model.serialize()
        };
        let n = rng.below(9) as u8;
        let mut input = vec![rng.below(8) as u8, n];
        // Honest answers half the time, so that verdicts are reached.
        for _ in 0..n {
            let answer = if rng.below(2) == 0 {
                0
            } else {
                rng.below(12) as u8
            };
            input.push(answer);
        }
        input.extend(&file);
        if fuzzing::check_remote_range(&input) {
            verdicts += 1;
        } else {
            refused += 1;
        }
    }
    assert!(
        verdicts > 50 && refused > 50,
        "{verdicts} verdicts, {refused} refusals"
    );
}

#[test]
fn serve_clamd_target_on_seeded_sessions() {
    let mut rng = Rng::new(0x5eed_0011);
    let commands = [
        "zINSTREAM\0",
        "nINSTREAM\n",
        "zPING\0",
        "nPING\n",
        "PING\n",
        "zIDSESSION\0",
        "zEND\0",
        "nVERSIONCOMMANDS\n",
        "zSTATS\0",
        "zSCAN /etc\0",
        "\n",
        "z\0",
    ];
    let (mut ended, mut cut, mut over) = (0, 0, 0);
    for _ in 0..ITERATIONS {
        let mut input = spliced(&mut rng, &commands, 4);
        input.push(rng.below(20) as u8); // the limit: 2^0 .. 2^19 bytes
        input.push(rng.below(16) as u8); // the piece size
        for _ in 0..rng.below(5) {
            let n = rng.below(40) as u32;
            input.extend_from_slice(&n.to_be_bytes());
            let len = rng.below(u64::from(n) + 8) as usize;
            input.extend(rng.bytes(len));
        }
        if rng.below(2) == 0 {
            input.extend_from_slice(&[0, 0, 0, 0]);
        }
        match fuzzing::check_clamd(&input) {
            Some((_, true)) => ended += 1,
            Some((_, false)) => cut += 1,
            None => over += 1,
        }
    }
    assert!(
        ended > 0 && cut > 0 && over > 0,
        "{ended} ended, {cut} cut off, {over} over the limit"
    );
}

#[test]
fn serve_query_target_on_seeded_queries() {
    let mut rng = Rng::new(0x5eed_0012);
    let sha = "ab".repeat(32);
    let pieces = [
        "profile=",
        "portable",
        "strict",
        "reference",
        "&",
        "deep",
        "=true",
        "=false",
        "sha256",
        "deny=",
        "LAYOUT-ALIGN",
        ",",
        "allow=",
        "NAME-PATH",
        "expected-sha256=",
        "expected_sha256=",
        sha.as_str(),
        "max-header-size=",
        "100",
        "%2C",
        "%ZZ",
        "+",
        "deny-nonfinite",
        "bogus",
    ];
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..ITERATIONS {
        if fuzzing::check_query(&spliced(&mut rng, &pieces, 8)) {
            accepted += 1;
        } else {
            refused += 1;
        }
    }
    assert!(
        accepted > 0 && refused > 0,
        "{accepted} accepted, {refused} refused"
    );
}

/// Every golden file of `corpus/` (the seeds of the option targets), then seeded files.
fn corpus_and_seeded(seed: u64, iterations: u64, check: &dyn Fn(&[u8])) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut stack = vec![root];
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("corpus/ is readable") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "safetensors") {
                check(&std::fs::read(&path).expect("a corpus file"));
                files += 1;
            }
        }
    }
    assert!(files > 300, "corpus/ has {files} files");
    let mut rng = Rng::new(seed);
    for _ in 0..iterations {
        check(&fuzzing::smoke_file(&mut rng));
    }
}

#[test]
fn deep_scan_target_on_corpus_and_seeded_inputs() {
    corpus_and_seeded(0x5eed_0101, 300, &fuzzing::check_deep_scan);
}

#[test]
fn portable_target_on_corpus_and_seeded_inputs() {
    corpus_and_seeded(0x5eed_0102, 300, &fuzzing::check_portable);
}

#[test]
fn reference_profile_target_on_corpus_and_seeded_inputs() {
    corpus_and_seeded(0x5eed_0103, 300, &fuzzing::check_reference_profile);
}

#[test]
fn file_source_target_on_corpus_and_seeded_inputs() {
    corpus_and_seeded(0x5eed_0104, 300, &fuzzing::check_file_source);
}

/// Every fault plan (read mode, options, change, the progress report it comes at) over
/// corpus files and seeded ones.
#[test]
fn source_faults_target_on_corpus_and_seeded_inputs() {
    let plans = std::cell::Cell::new(0u64);
    corpus_and_seeded(0x5eed_0107, 300, &|file: &[u8]| {
        let n = plans.get();
        plans.set(n + 1);
        let len = file.len() as u16;
        let plan = [
            (n % 6) as u8,
            (n / 6 % 4) as u8,
            (n / 24 % 4) as u8,
            (n / 96 % 8) as u8,
        ];
        let at = (n.wrapping_mul(0x9e37) as u16) % len.max(1);
        let mut input = plan.to_vec();
        input.extend_from_slice(&at.to_le_bytes());
        input.extend_from_slice(file);
        fuzzing::check_source_faults(&input);
    });
}

#[test]
fn rule_table_target_on_rule_names() {
    let mut text = String::new();
    for r in stcheck::Rule::ALL {
        text.push_str(&format!(
            "{}\n{}\n{}S\n",
            r.id(),
            r.id().to_lowercase(),
            r.id()
        ));
    }
    text.push_str("strict\nportable\nlax\nmmap\nread\nstream\n\nFRAME-\nGAP\n");
    fuzzing::check_rule_table(text.as_bytes());
    let mut rng = Rng::new(0x5eed_0105);
    for _ in 0..ITERATIONS {
        let len = rng.below(40) as usize;
        fuzzing::check_rule_table(&rng.bytes(len));
    }
}

#[test]
fn reader_table_target_on_the_builtin_table_and_its_mutations() {
    let table = stcheck::portable::BUILTIN_TABLE.as_bytes();
    fuzzing::check_reader_table(table);
    let mut rng = Rng::new(0x5eed_0106);
    for _ in 0..200 {
        let mut t = table.to_vec();
        let at = rng.below(t.len() as u64) as usize;
        t[at] = rng.byte();
        fuzzing::check_reader_table(&t);
        fuzzing::check_reader_table(&t[..at]);
    }
}

#[test]
fn protocol_reply_target_on_replies_and_outputs() {
    let lines: &[&[u8]] = &[
        b"7\xff{\"id\":\"7\",\"status\":\"accept\",\"tensors\":[{\"name\":\"w\",\"dtype\":\"F32\",\"shape\":[\"2\"]}]}",
        b"7\xff{\"id\":\"7\",\"status\":\"reject\",\"rule\":\"LAYOUT-GAP\",\"message\":\"a\\nb\\u001b[31m\"}",
        b"7\xff{\"id\":\"8\",\"status\":\"crash\"}",
        b"7\xff{\"id\":\"7\",\"status\":\"lost\"}",
        b"{\"tensors\":null}",
        b"{\"tensors\":[{\"name\":\"x\\ud800\",\"dtype\":\"U8\",\"shape\":[1e21],\"values\":[\"nan\"]}],\"metadata\":null,\"warnings\":[\"W\"]}",
        b"\xff\xfe not utf-8\n\x1b[2J",
    ];
    for line in lines {
        fuzzing::check_protocol_reply(line);
    }
    let mut rng = Rng::new(0x5eed_0201);
    for _ in 0..ITERATIONS {
        let mut line = lines[rng.below(lines.len() as u64) as usize].to_vec();
        let at = rng.below(line.len() as u64) as usize;
        line[at] = rng.byte();
        fuzzing::check_protocol_reply(&line);
    }
}

#[test]
fn corpus_archive_target_on_built_archives() {
    let inputs: &[&[u8]] = &[
        // A consistent release with a file, a link inside and a directory.
        b"\x02Fvalid/a.safetensors\0abc\0Lvalid/b.safetensors\0a.safetensors\0Dvalid\0\0",
        // A link out, a hard link, a FIFO, a path of its own root, a size that lies.
        b"\x02Lx\0../../etc\0",
        b"\x02Hx\0c/manifest.json\0",
        b"\x02Px\0\0",
        b"\x02fd/x\0y\0",
        b"\x02Bx\0\x27\0",
        // The climb through a link of the regression test.
        b"\x02F0/keep\0k\0La/b/c/d/e\0../../../../0\0La/b/c/d/e/t\0../../../../out\0Fa/b/c/d/e/t/evil\0e\0",
        // No description; raw bytes.
        b"\x01Fx\0y\0",
        b"\x00\x1f\x8b\x08\x00\x00\x00\x00\x00",
    ];
    for input in inputs {
        fuzzing::check_corpus_archive(input);
    }
    let mut rng = Rng::new(0x5eed_0202);
    for _ in 0..200 {
        let mut input = inputs[rng.below(inputs.len() as u64) as usize].to_vec();
        let at = 1 + rng.below(input.len() as u64 - 1) as usize;
        input[at] = rng.byte();
        fuzzing::check_corpus_archive(&input);
    }
}

#[test]
fn writer_target_on_specs_that_it_accepts_and_refuses() {
    let inputs: &[&[u8]] = &[
        b"w\0\x07\x02\x02\x03\0\x01format=pt",
        b"w\0\x07\x01\x02\xfe",
        b"__metadata__\0\x00",
        b"a\0\x00\0a\0\x00",
        b"\x01total_parameters=7\0b\0\x03\x01\x05",
        b"big\0\x02\x02\xff\xff",
    ];
    for input in inputs {
        fuzzing::check_writer(input);
    }
    let mut rng = Rng::new(0x5eed_0301);
    for _ in 0..ITERATIONS {
        let len = rng.below(48) as usize;
        fuzzing::check_writer(&rng.bytes(len));
    }
}
