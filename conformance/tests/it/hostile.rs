//! The runners verify what they run (issue 35, item 5): the corpus cache is checked against
//! the archive on every use, archives are capped and typed on unpacking, `stcorpus verify`
//! trusts no shared directory, adapters and writers are handed copies and judged against
//! bytes they cannot touch, and an adapter's process group ends with it.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use stcheck_conformance::corpus::{self, archive};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hostile-{name}"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

const CASE: &str = "invalid/layout/gap-between.safetensors";

#[test]
fn an_edited_cache_with_a_recomputed_description_is_unpacked_again() {
    let dir = scratch("cache");
    let file = dir.join("corpus.tar.gz");
    archive::pack(&corpus::default_corpus_dir(), &file).expect("pack");
    let cache = dir.join("cache");
    let (root, _) = archive::unpack(&file, &cache).expect("unpack");
    let original = fs::read(root.join(CASE)).expect("case");
    // The hostile edit: a changed byte, and RELEASE.json recomputed to match it.
    let mut edited = original.clone();
    edited[0] ^= 1;
    fs::write(root.join(CASE), &edited).expect("edit");
    let mut r = archive::release_of(&root).expect("describe");
    r.corpus_version = corpus::CORPUS_VERSION.to_owned();
    fs::write(
        root.join(archive::RELEASE_FILE),
        serde_json::to_vec_pretty(&r).expect("json"),
    )
    .expect("rewrite RELEASE.json");
    assert!(archive::verify(&root).is_ok(), "self-consistent on its own");
    let (again, _) = archive::unpack(&file, &cache).expect("unpack again");
    assert_eq!(
        fs::read(again.join(CASE)).expect("case"),
        original,
        "the cache was trusted"
    );
}

/// One member of a hand-made archive: path, type, size in the header, data, link target (bytes:
/// a target need not be UTF-8).
type Member<'a> = (&'a str, tar::EntryType, u64, &'a [u8], Option<&'a [u8]>);

/// A gzipped tar of `entries`.
fn tarball(entries: &[Member<'_>]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut b = tar::Builder::new(gz);
    for (path, kind, size, data, link) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(*kind);
        h.set_size(*size);
        h.set_mode(0o644);
        // Paths and link targets over the header's 100 bytes go in GNU long-name entries.
        match link {
            Some(t) => {
                use std::os::unix::ffi::OsStrExt as _;
                b.append_link(&mut h, path, std::ffi::OsStr::from_bytes(t))
            }
            None => b.append_data(&mut h, path, *data),
        }
        .expect("append");
    }
    let gz = b.into_inner().expect("tar");
    let mut bytes = gz.finish().expect("gzip");
    // A header that claims more than it holds: the stream simply ends.
    bytes.flush().expect("flush");
    bytes
}

/// The `manifest.json` of the hand-made releases.
const MANIFEST: &[u8] = br#"{"corpus_version": "9.9.9", "version": "1", "cases": []}"#;

/// The `RELEASE.json` that describes `entries` honestly.
fn description(entries: Vec<(String, archive::Entry)>) -> Vec<u8> {
    serde_json::to_vec(&archive::describe_entries(entries).expect("describable")).expect("json")
}

/// The members a hand-made release under `c/` starts with: its description and its
/// `manifest.json`.
fn release_head<'a>(json: &'a [u8], manifest: &'a [u8]) -> Vec<Member<'a>> {
    vec![
        (
            "c/RELEASE.json",
            tar::EntryType::Regular,
            json.len() as u64,
            json,
            None,
        ),
        (
            "c/manifest.json",
            tar::EntryType::Regular,
            manifest.len() as u64,
            manifest,
            None,
        ),
    ]
}

fn refused(name: &str, bytes: &[u8]) -> String {
    let dir = scratch(name);
    let file = dir.join("a.tar.gz");
    fs::write(&file, bytes).expect("write");
    let err = archive::unpack(&file, &dir.join("cache")).expect_err("a hostile archive");
    assert!(
        !dir.join("cache").exists() || fs::read_dir(dir.join("cache")).expect("ls").count() == 0,
        "nothing left in the cache"
    );
    let again = archive::verify_archive(&file).expect_err("verify");
    assert_eq!(err, again);
    err
}

#[test]
fn archives_are_refused_for_links_out_special_files_and_sizes() {
    use tar::EntryType::{Char, Link, Regular, Symlink};
    let case = "c/valid/a.safetensors";
    let cases: &[(&str, Vec<Member<'_>>, &str)] = &[
        (
            "link",
            vec![
                ("c/RELEASE.json", Regular, 2, b"{}", None),
                (case, Symlink, 0, b"", Some("/etc/passwd".as_bytes())),
            ],
            "outside the release",
        ),
        (
            "climb",
            vec![(case, Symlink, 0, b"", Some("../../x".as_bytes()))],
            "outside the release",
        ),
        (
            "hardlink",
            vec![(case, Link, 0, b"", Some("c/manifest.json".as_bytes()))],
            "neither a file",
        ),
        (
            "device",
            vec![("c/manifest.json", Char, 0, b"", None)],
            "neither a file",
        ),
        // More than a release may hold is refused before a byte is read.
        (
            "huge",
            vec![(
                "c/manifest.json",
                Regular,
                archive::MAX_UNPACKED + 1,
                b"",
                None,
            )],
            "larger than allowed",
        ),
        (
            "release-json",
            vec![(
                "c/RELEASE.json",
                Regular,
                archive::MAX_RELEASE_JSON + 1,
                b"",
                None,
            )],
            "larger than allowed",
        ),
    ];
    for (name, members, why) in cases {
        let err = refused(name, &tarball(members));
        assert!(err.contains(why), "{name}: {err}");
    }
}

/// Found while writing the `corpus_archive` fuzz target: every link of these releases points
/// inside by the text of its target, but not on the disk.
/// - `through`: `a/b/c/d/e` is a link to `0` (four levels up), so the link `a/b/c/d/e/t`
///   beneath it lies in `0`, and its `../../../../out` climbs from there out of the release,
///   the staging directory and the cache, into the directory holding the cache: the file
///   `a/b/c/d/e/t/evil` was written there.
/// - `dot-dot`: `m/n/x` is a link to `0`, so `l`'s target `m/n/x/../../../out` climbs from
///   `0`, not from `m/n`, and names `out` beside the unpacked copy, in the cache.
///
/// Both are refused now: no entry beneath a link, and `..` only at the start of a target.
#[test]
fn a_release_whose_links_climb_through_links_is_refused_and_writes_nothing_outside() {
    use archive::Entry;
    let manifest = MANIFEST;
    let common = || {
        vec![
            ("manifest.json".to_owned(), Entry::File(manifest.to_vec())),
            ("0/keep".to_owned(), Entry::File(b"k".to_vec())),
        ]
    };
    let mut through = common();
    through.extend([
        ("a/b/c/d/e".to_owned(), Entry::Link("../../../../0".into())),
        (
            "a/b/c/d/e/t".to_owned(),
            Entry::Link("../../../../out".into()),
        ),
        (
            "a/b/c/d/e/t/evil".to_owned(),
            Entry::File(b"outside".to_vec()),
        ),
    ]);
    let mut dot_dot = common();
    dot_dot.extend([
        ("m/n/x".to_owned(), Entry::Link("../../0".into())),
        ("l".to_owned(), Entry::Link("m/n/x/../../../out".into())),
    ]);
    for (name, entries, why) in [
        ("through", through, "beneath a file or a link"),
        ("dot-dot", dot_dot, "outside the release"),
    ] {
        let release = archive::describe_entries(entries.clone()).expect("describable");
        let json = serde_json::to_vec(&release).expect("json");
        let paths: Vec<String> = entries.iter().map(|(p, _)| format!("c/{p}")).collect();
        let mut members: Vec<Member<'_>> = vec![(
            "c/RELEASE.json",
            tar::EntryType::Regular,
            json.len() as u64,
            &json,
            None,
        )];
        for ((_, e), path) in entries.iter().zip(&paths) {
            members.push(match e {
                Entry::File(b) => (path, tar::EntryType::Regular, b.len() as u64, b, None),
                Entry::Link(t) => (path, tar::EntryType::Symlink, 0, b"", Some(t.as_bytes())),
            });
        }
        let dir = scratch(&format!("climb-through-{name}"));
        // Where the escapes would land, made beforehand (a write needs its directory).
        fs::create_dir_all(dir.join("out")).expect("out");
        fs::create_dir_all(dir.join("cache/out")).expect("cache/out");
        let file = dir.join("a.tar.gz");
        fs::write(&file, tarball(&members)).expect("write");
        let err = archive::unpack(&file, &dir.join("cache")).expect_err(name);
        assert!(err.contains(why), "{name}: {err}");
        assert_eq!(archive::verify_archive(&file).expect_err(name), err);
        let listed = |d: &Path| fs::read_dir(d).map_or(0, |d| d.count());
        assert_eq!(
            listed(&dir.join("out")),
            0,
            "{name}: written outside the cache"
        );
        assert_eq!(listed(&dir.join("cache")), 1, "{name}: left in the cache");
    }
}

/// Found by the `corpus_archive` fuzz target: an archive holding, besides its description, a
/// link named `RELEASE.json` (to a name inside the release) that its description lists. The
/// link was written, then the description written through it, into a new file the
/// description does not list; the unpacked copy then did not check out and was left in the
/// cache. A second `RELEASE.json`, or one that is not a regular file, is refused now, and a
/// copy that does not check out is removed.
#[test]
fn a_release_json_that_is_a_link_is_refused_and_nothing_is_left_in_the_cache() {
    use archive::Entry;
    let manifest = MANIFEST;
    let entries = vec![
        ("manifest.json".to_owned(), Entry::File(manifest.to_vec())),
        ("RELEASE.json".to_owned(), Entry::Link("F".into())),
    ];
    let json = description(entries);
    let mut members = release_head(&json, manifest);
    members.push((
        "c/RELEASE.json",
        tar::EntryType::Symlink,
        0,
        b"",
        Some(b"F"),
    ));
    let err = refused("release-json-link", &tarball(&members));
    assert!(
        err.contains("is not the one regular file RELEASE.json"),
        "{err}"
    );
}

/// Found by the `corpus_archive` fuzz target (kept as
/// fuzz/corpus/corpus_archive/regression-file-and-directory): a release holding a file `c`
/// and a file `c/f` checked out (`verify_archive` accepted it, and so would a runner given it
/// with `--corpus`), but could not be unpacked (`c` exists as a file). A path beneath a file
/// is refused now, by both.
#[test]
fn a_release_with_a_path_beneath_a_file_is_refused_by_verify_and_unpack() {
    use archive::Entry;
    let manifest = MANIFEST;
    let entries = vec![
        ("manifest.json".to_owned(), Entry::File(manifest.to_vec())),
        ("c".to_owned(), Entry::File(Vec::new())),
        ("c/f".to_owned(), Entry::File(b"f".to_vec())),
    ];
    let json = description(entries);
    let mut members = release_head(&json, manifest);
    members.push(("c/c/", tar::EntryType::Regular, 0, b"", None));
    members.push(("c/c/f", tar::EntryType::Regular, 1, b"f", None));
    let err = refused("path-beneath-a-file", &tarball(&members));
    assert!(
        err.contains("\"c/f\" lies beneath a file or a link"),
        "{err}"
    );
}

/// Found by the `corpus_archive` fuzz target in CI (stop 39): a release holding `RELEASE.json/x`
/// checked out (`verify_archive` accepted it) but could not be unpacked, as the directory
/// `RELEASE.json` leaves no room for the description. So could a name longer than the file
/// system takes (255 bytes), a path or a link target longer than `PATH_MAX` allows, or one
/// holding a NUL byte (a PAX record can carry one). Each is refused now by both, with the
/// same answer, and nothing is left in the cache.
#[test]
fn a_release_that_could_not_be_written_is_refused_by_verify_and_unpack() {
    use archive::Entry;
    let manifest = MANIFEST;
    let long_name = format!("a/{}", "x".repeat(archive::MAX_NAME + 1));
    let long_path = format!("a/{}", vec!["y".repeat(200); 6].join("/"));
    let long_target = "z".repeat(archive::MAX_PATH + 1);
    let huge_nul = format!("a\0{}", "b".repeat(100_000));
    let cases: [(&str, &str, Option<&str>, &str); 6] = [
        (
            "beneath-release-json",
            "RELEASE.json/x",
            None,
            "\"RELEASE.json/x\" lies beneath a file or a link",
        ),
        (
            "long-name",
            &long_name,
            None,
            "a name of more than 255 bytes",
        ),
        (
            "long-path",
            &long_path,
            None,
            "the path of 1209 bytes, more than the 1024 allowed",
        ),
        (
            "long-target",
            "l",
            Some(&long_target),
            "is a link to a target of 1025 bytes, more than the 1024 allowed",
        ),
        ("nul", "a\0b", None, "holds a NUL byte"),
        (
            "huge-nul",
            &huge_nul,
            None,
            "the path of 100004 bytes, more than the 1024 allowed",
        ),
    ];
    for (name, path, link, why) in cases {
        let entry = match link {
            Some(t) => Entry::Link(t.to_owned()),
            None => Entry::File(b"f".to_vec()),
        };
        let entries = vec![
            ("manifest.json".to_owned(), Entry::File(manifest.to_vec())),
            (path.to_owned(), entry),
        ];
        let json = description(entries);
        let full = format!("c/{path}");
        let mut members = release_head(&json, manifest);
        // A NUL goes in a PAX record (`LEN path=VALUE\n`) for the next member: a header's own
        // field ends at a NUL.
        let body = format!(" path={full}\n");
        let digits = (body.len() + 8).to_string().len();
        let record = format!("{}{body}", body.len() + digits);
        if full.contains('\0') {
            members.push((
                "pax",
                tar::EntryType::XHeader,
                record.len() as u64,
                record.as_bytes(),
                None,
            ));
            members.push(("c/placeholder", tar::EntryType::Regular, 1, b"f", None));
        } else if let Some(t) = link {
            members.push((&full, tar::EntryType::Symlink, 0, b"", Some(t.as_bytes())));
        } else {
            members.push((&full, tar::EntryType::Regular, 1, b"f", None));
        }
        let err = refused(name, &tarball(&members));
        assert!(err.contains(why), "{name}: {err}");
        assert!(err.len() < 1500, "{name}: a message of {} bytes", err.len());
    }
}

/// The contents' checksum hashes one line per entry, `L path target` for a link: with a space
/// in a path or a target, a link `a` to `b c` and a link `a b` to `c` gave the same lines, so a
/// release whose description was made for the one verified with the other in its place (and a
/// newline in a target could stand for whole lines of other entries). Paths and link targets
/// with a space or a control character are refused now, by verify and unpack alike, and so is
/// a link target that is not UTF-8 (it was read with its bytes replaced); building a release
/// of a directory refuses such names too.
#[test]
fn a_release_whose_checksum_lines_could_read_two_ways_is_refused() {
    use archive::Entry;
    let manifest = MANIFEST;
    // The description of a link `a` to `b c`: a link `a b` to `c` gives the same lines.
    let json = description(vec![
        ("manifest.json".to_owned(), Entry::File(manifest.to_vec())),
        ("a".to_owned(), Entry::Link("b c".into())),
    ]);
    let cases = [
        (
            "space-in-target",
            "c/a",
            "b c",
            "\"c/a\" is a link to a target \"b c\" holds a space",
        ),
        (
            "space-in-path",
            "c/a b",
            "c",
            "the path \"c/a b\" holds a space",
        ),
        (
            "newline-in-target",
            "c/a",
            "b\nF x",
            "holds a space or a control character",
        ),
        (
            "tab-in-path",
            "c/a\tb",
            "c",
            "holds a space or a control character",
        ),
    ];
    for (name, path, target, why) in cases {
        let mut members = release_head(&json, manifest);
        members.push((
            path,
            tar::EntryType::Symlink,
            0,
            b"",
            Some(target.as_bytes()),
        ));
        let err = refused(name, &tarball(&members));
        assert!(err.contains(why), "{name}: {err}");
    }
    // A link target that is not UTF-8.
    let mut members = release_head(&json, manifest);
    members.push(("c/a", tar::EntryType::Symlink, 0, b"", Some(b"b\xff")));
    let bytes = tarball(&members);
    let err = refused("non-utf8-target", &bytes);
    assert!(
        err.contains("is a link to a target that is not UTF-8"),
        "{err}"
    );
    // A release of a directory holding such a name is not made.
    let dir = scratch("space-in-name");
    fs::write(dir.join("manifest.json"), manifest).expect("manifest");
    fs::write(dir.join("a b"), b"f").expect("file");
    let err = archive::release_of(&dir).expect_err("a name with a space");
    assert!(err.contains("the path \"a b\" holds a space"), "{err}");
}

#[test]
fn a_manifest_that_is_a_device_or_a_link_out_is_not_read() {
    let dir = scratch("devzero");
    std::os::unix::fs::symlink("/dev/zero", dir.join("manifest.json")).expect("link");
    let err = stcheck_conformance::runner::Manifest::load(&dir.join("manifest.json"))
        .expect_err("/dev/zero");
    assert!(err.to_string().contains("not a regular file"), "{err}");
    let err = archive::release_of(&dir).expect_err("a link out of the corpus");
    assert!(err.contains("outside the corpus"), "{err}");
}

#[test]
fn stcorpus_verify_trusts_no_directory_under_the_shared_tmpdir() {
    let dir = scratch("verify");
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).expect("tmp");
    let file = dir.join("corpus.tar.gz");
    let real = archive::pack(&corpus::default_corpus_dir(), &file).expect("pack");
    // Another user plants a self-consistent, edited copy where a verify would unpack it.
    let planted = dir.join("planted");
    archive::unpack(&file, &planted).expect("unpack");
    let key = {
        use sha2::Digest;
        let d = sha2::Sha256::digest(fs::read(&file).expect("archive"));
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    let root = tmp
        .join("stcorpus-verify")
        .join(&key[..16])
        .join(archive::release_name(&real));
    fs::create_dir_all(root.parent().expect("parent")).expect("mkdir");
    let unpacked = fs::read_dir(planted.join(&key[..16]))
        .expect("ls")
        .next()
        .expect("root")
        .expect("entry")
        .path();
    fs::rename(&unpacked, &root).expect("plant");
    fs::write(root.join(CASE), b"planted").expect("edit");
    let fake = archive::release_of(&root).expect("describe");
    fs::write(
        root.join(archive::RELEASE_FILE),
        serde_json::to_vec_pretty(&fake).expect("json"),
    )
    .expect("planted RELEASE.json");
    let out = Command::new(env!("CARGO_BIN_EXE_stcorpus"))
        .arg("verify")
        .arg(&file)
        .env("TMPDIR", &tmp)
        .output()
        .expect("stcorpus");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(text.contains(&real.content_sha256), "{text}");
    assert!(!text.contains(&fake.content_sha256), "{text}");
}

#[test]
fn a_reader_that_writes_to_its_files_changes_nothing_another_run_reads() {
    let dir = scratch("reader-writes");
    let corpus_dir = dir.join("corpus");
    archive::export(&corpus::default_corpus_dir(), &corpus_dir).expect("export");
    let before = fs::read(corpus_dir.join(CASE)).expect("case");
    // A reader that makes its file writable (as a hostile one would) and appends to it.
    let out = Command::new(env!("CARGO_BIN_EXE_stconform"))
        .args(["--corpus"])
        .arg(&corpus_dir)
        .args([
            "--adapter",
            "scribbler",
            "--no-known-failures",
            "--run",
            "invalid/layout/*",
            "--",
            "sh",
            "-c",
            "chmod u+w \"$1\" 2>/dev/null; printf x >> \"$1\"; exit 1",
            "x",
        ])
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .output()
        .expect("stconform");
    assert!(out.status.code().is_some(), "{out:?}");
    assert_eq!(
        fs::read(corpus_dir.join(CASE)).expect("case"),
        before,
        "the adapter changed the corpus"
    );
    archive::verify(&corpus_dir).expect("the corpus is intact");
}

#[test]
fn a_writer_that_changes_its_data_file_is_judged_against_the_task() {
    let dir = scratch("writer-tamper");
    // The hostile writer: zeroes the data file it is handed, then writes honestly from it.
    let script = format!(
        "d=$(dirname \"$1\")/data.bin; chmod u+w \"$d\" 2>/dev/null; \
         n=$(wc -c < \"$d\"); head -c \"$n\" /dev/zero > \"$d\"; exec {} \"$@\"",
        env!("CARGO_BIN_EXE_writer-stcheck")
    );
    let out = Command::new(env!("CARGO_BIN_EXE_stwrite"))
        .args([
            "--adapter",
            "tamperer",
            "--no-known-failures",
            "--run",
            "dtype/f32",
            "--json",
            "--work",
        ])
        .arg(dir.join("work"))
        .args(["--", "sh", "-c", &script, "x"])
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .output()
        .expect("stwrite");
    let results: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let task = results["tasks"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["id"] == "dtype/f32"))
        .unwrap_or_else(|| panic!("no dtype/f32 in {results}"));
    assert_eq!(task["outcome"], "WRONG_CONTENT", "{task}");
}

#[test]
fn an_adapters_grandchild_holding_its_output_ends_with_it() {
    use stcheck_conformance::runner::exec::{self, Status};
    let dir = scratch("group");
    let pid_file = dir.join("pid");
    let script = format!(
        "sleep 600 & echo $! > '{}'; echo answered; exit 1",
        pid_file.display()
    );
    let command: Vec<String> = vec!["sh".into(), "-c".into(), script, "x".into()];
    // The timeout only guards against a hang: the run ends when the adapter does.
    let ran = exec::run(
        &command,
        Path::new("case.safetensors"),
        &[],
        std::time::Duration::from_secs(120),
    )
    .expect("run");
    assert_eq!(ran.status, Status::Exited(1), "waited for the grandchild");
    assert_eq!(String::from_utf8_lossy(&ran.stdout).trim(), "answered");
    let pid = fs::read_to_string(&pid_file).expect("pid");
    // Its pipes are closed, so it is exiting: soon gone, or a zombie its new parent reaps.
    // The loop's bound only guards against a hang (killed, it ends at once; the grandchild
    // left alone sleeps 600 s).
    let ended = |stat: &str| {
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        stat.is_empty() || state.starts_with('Z') || state.starts_with('X')
    };
    let stat = || fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    let guard = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !ended(&stat()) && std::time::Instant::now() < guard {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(
        ended(&stat()),
        "the grandchild outlived the adapter: {}",
        stat()
    );
}
