//! The conformance runner's untrusted inputs: what an adapter prints (`protocol_reply`) and a
//! corpus release archive given with `--corpus X.tar.gz` (`corpus_archive`).

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use stcheck_conformance::corpus::archive::{self, Entry};
use stcheck_conformance::runner::protocol::{self, Reason, Reply};

/// A text the runner puts in its report: no control character (a newline or an escape
/// sequence from an adapter could forge report lines).
fn assert_printable(text: &str, what: &str) {
    assert!(
        !text.chars().any(char::is_control),
        "FUZZ FINDING: {what} holds a control character: {text:?}"
    );
}

fn assert_clipped(reason: &Reason) {
    for text in [&reason.rule, &reason.message].into_iter().flatten() {
        assert!(
            !text.is_empty() && text.chars().count() <= 300,
            "FUZZ FINDING: a reason of {} characters",
            text.chars().count()
        );
        assert_printable(text, "a reason");
    }
}

/// The `protocol_reply` target: the input up to its first 0xFF byte is a request's id, the
/// rest a reply line of the persistent mode; the whole input is also a one-shot adapter's
/// standard output. Never a panic; a reply for another id is an error; the reasons the report
/// shows are clipped to 300 characters without control characters, and every error message
/// and excerpt has none either; decoding the output at once or as JSON first agrees.
pub fn check_protocol_reply(data: &[u8]) {
    let (id, line) = match data.iter().position(|&b| b == 0xFF) {
        Some(i) => (
            String::from_utf8_lossy(&data[..i]).into_owned(),
            &data[i + 1..],
        ),
        None => (String::new(), data),
    };
    match protocol::parse_reply(line, &id) {
        Ok(reply) => {
            let v = protocol::json(line).expect("a reply that parsed is JSON");
            assert_eq!(
                v.get("id").and_then(|i| i.as_str()),
                Some(id.as_str()),
                "FUZZ FINDING: a reply taken for another id"
            );
            match reply {
                Reply::Accept(v) => match protocol::parse_value(&v) {
                    Ok(_) => {}
                    Err(e) => assert_printable(&e, "an answer's error"),
                },
                Reply::Reject(r) | Reply::Unsupported(r) | Reply::Crash(r) => assert_clipped(&r),
            }
        }
        Err(e) => assert_printable(&e, "a reply's error"),
    }
    let at_once = protocol::parse(data);
    let via_json = protocol::json(data)
        .map_err(|e| format!("output is not JSON: {e}"))
        .and_then(|v| protocol::parse_value(&v));
    assert_eq!(
        at_once, via_json,
        "FUZZ FINDING: parse and parse_value differ"
    );
    if let Err(e) = &at_once {
        assert_printable(e, "an output's error");
    }
    assert_clipped(&Reason::from_stdout(data));
    let text = String::from_utf8_lossy(data);
    for (max, tail) in [(0, false), (5, true), (80, false)] {
        let shown = protocol::excerpt(&text, max, tail);
        assert!(shown.starts_with('"') && shown.ends_with('"') && shown.len() >= 2);
        assert_printable(&shown, "an excerpt");
    }
    assert!(protocol::clip(&text).chars().count() <= 300);
}

/// One member of an archive the `corpus_archive` target builds.
#[derive(Debug, Clone)]
struct Member {
    kind: tar::EntryType,
    /// The path as written in the tar header (under the release's root unless raw).
    path: Vec<u8>,
    data: Vec<u8>,
    link: Option<Vec<u8>>,
    /// The size the header claims, when it is not the data's.
    claimed: Option<u64>,
}

/// The members an input describes: tokens split at 0x00, taken in pairs (kind and path, then
/// the data or the link target). The kind is the first byte: `F` a file, `L` a symbolic link,
/// `D` a directory, `H` a hard link, `P` a FIFO, `B` a file whose header claims a size of
/// 2^(payload's first byte mod 40) bytes; an upper-case kind puts the path under the root
/// `c/`, a lower-case one uses it as it is. (No member adds `MAX_ENTRIES` + 1 files: reading
/// 20,001 tar headers twice took over 10 s per input under AddressSanitizer here, a timeout
/// of the harness's own making; the entry cap is left to the reader's counter.)
fn members(spec: &[u8]) -> Vec<Member> {
    let mut out = Vec::new();
    let mut tokens = spec.split(|&b| b == 0);
    while let Some(head) = tokens.next() {
        let Some((&kind, path)) = head.split_first() else {
            continue;
        };
        let payload = tokens.next().unwrap_or_default().to_vec();
        let rooted = kind.is_ascii_uppercase();
        let path = if rooted {
            [b"c/".as_slice(), path].concat()
        } else {
            path.to_vec()
        };
        let member = |kind, data, link, claimed| Member {
            kind,
            path: path.clone(),
            data,
            link,
            claimed,
        };
        out.push(match kind.to_ascii_uppercase() {
            b'F' => member(tar::EntryType::Regular, payload, None, None),
            b'L' => member(tar::EntryType::Symlink, Vec::new(), Some(payload), None),
            b'D' => member(tar::EntryType::Directory, Vec::new(), None, None),
            b'H' => member(tar::EntryType::Link, Vec::new(), Some(payload), None),
            b'P' => member(tar::EntryType::Fifo, Vec::new(), None, None),
            b'B' => {
                let claimed = 1u64 << (payload.first().copied().unwrap_or(0) % 40);
                member(tar::EntryType::Regular, payload, None, Some(claimed))
            }
            _ => continue,
        });
    }
    out
}

/// The release description of `members` as the reader would gather them (regular files and
/// links under `c/`), a `manifest.json` added when there is none.
fn with_release(mut members: Vec<Member>) -> Vec<Member> {
    let mut entries = Vec::new();
    let rel = |m: &Member| {
        let p = String::from_utf8_lossy(&m.path);
        p.trim_end_matches('/')
            .strip_prefix("c/")
            .map(str::to_owned)
    };
    if !members
        .iter()
        .any(|m| rel(m).as_deref() == Some("manifest.json"))
    {
        members.push(Member {
            kind: tar::EntryType::Regular,
            path: b"c/manifest.json".to_vec(),
            data: br#"{"corpus_version":"0.0.0","version":"1","cases":[{}],"large":[]}"#.to_vec(),
            link: None,
            claimed: None,
        });
    }
    for m in &members {
        let Some(p) = rel(m) else { continue };
        match m.kind {
            tar::EntryType::Regular if m.claimed.is_none() => {
                entries.push((p, Entry::File(m.data.clone())));
            }
            tar::EntryType::Symlink => entries.push((
                p,
                Entry::Link(String::from_utf8_lossy(m.link.as_deref().unwrap_or_default()).into()),
            )),
            _ => {}
        }
    }
    let json = archive::describe_entries(entries)
        .ok()
        .and_then(|r| serde_json::to_vec(&r).ok())
        .unwrap_or_else(|| b"{}".to_vec());
    members.insert(
        0,
        Member {
            kind: tar::EntryType::Regular,
            path: format!("c/{}", archive::RELEASE_FILE).into_bytes(),
            data: json,
            link: None,
            claimed: None,
        },
    );
    members
}

/// A gzipped tar of `members`, their paths and link targets written into the headers as they
/// are (no check of the `tar` crate's: the reader must make them safe).
fn tarball(members: &[Member]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut b = tar::Builder::new(gz);
    for m in members {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(m.kind);
        h.set_size(m.claimed.unwrap_or(m.data.len() as u64));
        h.set_mode(0o644);
        let old = h.as_old_mut();
        let n = m.path.len().min(old.name.len());
        old.name[..n].copy_from_slice(&m.path[..n]);
        if let Some(link) = &m.link {
            let n = link.len().min(old.linkname.len());
            old.linkname[..n].copy_from_slice(&link[..n]);
        }
        h.set_cksum();
        if b.append(&h, m.data.as_slice()).is_err() {
            break;
        }
    }
    b.into_inner()
        .and_then(|gz| gz.finish())
        .unwrap_or_default()
}

/// This process's sandbox: `T/a.tar.gz` and `T/work/cache`; nothing else may appear in `T`.
fn sandbox() -> &'static Mutex<PathBuf> {
    static DIR: OnceLock<Mutex<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!(
            "stcheck-fuzz-corpus-archive-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("a sandbox in the temporary directory");
        Mutex::new(dir)
    })
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Files and links under `dir` (not following links): their count, the bytes of the files,
/// and the links.
fn tree(dir: &Path, out: &mut (usize, u64, Vec<PathBuf>)) {
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = e.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            out.0 += 1;
            out.2.push(path);
        } else if meta.is_dir() {
            tree(&path, out);
        } else {
            out.0 += 1;
            out.1 += meta.len();
        }
    }
}

/// The `corpus_archive` target: the first byte chooses raw gzip bytes (the rest of the input
/// is the archive) or members built from the rest (`members`), with a `RELEASE.json` that
/// describes them honestly or not. The archive is unpacked into `T/work/cache`: nothing is
/// ever written outside the cache; a refused archive leaves nothing in it; an unpacked release
/// holds at most `MAX_ENTRIES` files and links and `MAX_UNPACKED` bytes, every link in it
/// resolves inside it, it checks out ([`archive::verify`]) as the release the archive
/// describes; checking the archive without unpacking it gives the same answer.
pub fn check_corpus_archive(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let bytes = match mode % 4 {
        0 => rest.to_vec(),
        1 => tarball(&members(rest)),
        _ => tarball(&with_release(members(rest))),
    };
    let guard = sandbox().lock().unwrap_or_else(|e| e.into_inner());
    let t: &Path = &guard;
    let work = t.join("work");
    let _ = fs::remove_dir_all(&work);
    for name in names(t) {
        if name != "a.tar.gz" {
            let _ = fs::remove_dir_all(t.join(&name));
            let _ = fs::remove_file(t.join(&name));
        }
    }
    fs::create_dir_all(&work).expect("work directory");
    let file = t.join("a.tar.gz");
    fs::File::create(&file)
        .and_then(|mut f| f.write_all(&bytes))
        .expect("write the archive");
    let cache = work.join("cache");
    let unpacked = archive::unpack(&file, &cache);
    let verified = archive::verify_archive(&file);
    assert_eq!(
        names(t),
        ["a.tar.gz", "work"],
        "FUZZ FINDING: the archive wrote outside the work directory"
    );
    assert!(
        names(&work).iter().all(|n| n == "cache"),
        "FUZZ FINDING: the archive wrote beside the cache: {:?}",
        names(&work)
    );
    match unpacked {
        Err(e) => {
            assert!(
                names(&cache).is_empty(),
                "FUZZ FINDING: a refused archive ({e}) left {:?} in the cache",
                names(&cache)
            );
            assert!(
                verified.is_err(),
                "FUZZ FINDING: verified but not unpacked: {e}"
            );
        }
        Ok((root, release)) => {
            assert_eq!(verified.as_ref().ok(), Some(&release));
            let real_cache = cache.canonicalize().expect("the cache exists");
            let real_root = root.canonicalize().expect("the root exists");
            assert!(real_root.starts_with(&real_cache));
            let mut found = (0, 0, Vec::new());
            tree(&root, &mut found);
            let (count, bytes, links) = found;
            assert!(
                count <= archive::MAX_ENTRIES + 1 && bytes <= archive::MAX_UNPACKED + 65536,
                "FUZZ FINDING: {count} entries, {bytes} bytes unpacked"
            );
            for link in links {
                if let Ok(to) = link.canonicalize() {
                    assert!(
                        to.starts_with(&real_root),
                        "FUZZ FINDING: {} resolves to {}, outside the release",
                        link.display(),
                        to.display()
                    );
                }
            }
            assert_eq!(
                archive::verify(&root).as_ref().ok(),
                Some(&release),
                "FUZZ FINDING: the unpacked release does not check out"
            );
        }
    }
}
