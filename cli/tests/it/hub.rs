//! Whole repositories on a loopback mock of the Hugging Face hub (`hf://org/repo[@rev]`): the
//! revision resolved once and every file requested at that commit, the tree listing followed
//! through its pages, LFS files redirected to a "CDN" on another loopback host (127.0.0.2), the
//! hub's commit and SHA-256 in the records, `--sha256` against the LFS id (INTEGRITY-SHA256),
//! the hub's error codes turned into advice, other weight formats named, and the token sent to
//! the hub only and never printed. A repository checks as the same files do on disk.
#![cfg(feature = "remote")]

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use sha2::{Digest, Sha256};
use stcheck_testkit::cli::{json_lines as lines, output, Out};
use stcheck_testkit::http::{serve_file, zeros_file, Reply, Request, Server};

const TOKEN: &str = "hf_mock_secret_token_4242";
/// A token of an account that has not accepted the gated repository's terms.
const OTHER_TOKEN: &str = "hf_not_accepted_token_77";
/// Entries per page of the tree listing (small, so that every listing has pages).
const PAGE: usize = 3;

fn sha256_hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

fn commit_id(n: u8) -> String {
    format!("{n:02x}").repeat(20)
}

#[derive(Clone)]
struct File {
    path: String,
    bytes: Vec<u8>,
    /// Stored in LFS: served through the CDN, with X-Linked-Etag and an `lfs` entry.
    lfs: bool,
    /// What the CDN serves instead (a tampered object), if anything.
    served: Option<Vec<u8>>,
    /// What the listing publishes as `lfs.oid` instead of the SHA-256, if anything.
    listed: Option<String>,
    /// What `X-Linked-Etag` publishes instead of the SHA-256, if anything.
    linked: Option<String>,
}

fn file(path: &str, bytes: Vec<u8>) -> File {
    let lfs = !path.ends_with(".json");
    File {
        path: path.to_owned(),
        bytes,
        lfs,
        served: None,
        listed: None,
        linked: None,
    }
}

#[derive(Clone, Default)]
struct Repo {
    /// Branch or tag -> commit.
    refs: HashMap<String, String>,
    /// Commit -> files.
    commits: HashMap<String, Vec<File>>,
    gated: bool,
    /// The tree listing's next page always links to itself.
    looping_pages: bool,
    /// The tree listing's next page is on another host.
    foreign_next: bool,
    /// The tree listing's body, as sent (hostile listings).
    raw_tree: Option<&'static str>,
    /// Files are answered with another commit's X-Repo-Commit.
    wrong_commit: bool,
    /// The tree listing's next page (on the hub's host) redirects to another host, which
    /// serves it.
    redirected_next: bool,
}

/// The mock hub (127.0.0.1) and its CDN (127.0.0.2).
struct Hub {
    hub: Server,
    cdn: Server,
    /// `resolve` requests of `org/slow`: under way now, the most under way at once, and
    /// arrived in all (the last two since reset).
    slow: Arc<(AtomicUsize, AtomicUsize, AtomicUsize)>,
}

type Repos = Arc<Mutex<HashMap<String, Repo>>>;

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() + 1 {
            if let Some(v) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn error(status: u16, code: &str) -> Reply {
    Reply::new(status)
        .header("X-Error-Code", code)
        .header("X-Error-Message", format!("mock hub: {code}"))
}

impl Hub {
    fn start(repos: HashMap<String, Repo>) -> Hub {
        let repos: Repos = Arc::new(Mutex::new(repos));
        // The CDN serves LFS objects by SHA-256, signed URLs, no credentials wanted.
        let blobs: Arc<Mutex<HashMap<String, Vec<u8>>>> = Arc::default();
        for repo in repos.lock().expect("repos").values() {
            for files in repo.commits.values() {
                for f in files.iter().filter(|f| f.lfs) {
                    let body = f.served.clone().unwrap_or_else(|| f.bytes.clone());
                    blobs
                        .lock()
                        .expect("blobs")
                        .insert(sha256_hex(&f.bytes), body);
                }
            }
        }
        let cdn = Server::start_at("127.0.0.2", move |req| {
            let sha = req.path().trim_start_matches("/blobs/");
            match blobs.lock().expect("blobs").get(sha) {
                Some(b) if req.target.contains("X-Amz-Signature=") => serve_file(req, b, true),
                Some(_) => Reply::new(403),
                None => Reply::new(404),
            }
        });
        let cdn_base = cdn.url("");
        let hub_base: Arc<Mutex<String>> = Arc::default();
        let base = Arc::clone(&hub_base);
        let slow: Arc<(AtomicUsize, AtomicUsize, AtomicUsize)> = Arc::default();
        let seen = Arc::clone(&slow);
        let hub = Server::start(move |req| {
            if req.path().starts_with("/org/drip/resolve/") {
                // An index that never ends: 64 bytes of white space every 50 ms (faster than
                // the minimum speed, so only a deadline ends it), for hours.
                return Reply::new(200)
                    .header("X-Repo-Commit", commit_id(0xd1))
                    .body(vec![b' '; 1 << 30])
                    .drip(64, std::time::Duration::from_millis(50));
            }
            if req.path().starts_with("/org/slow/resolve/") {
                let now = seen.0.fetch_add(1, Ordering::SeqCst) + 1;
                seen.1.fetch_max(now, Ordering::SeqCst);
                seen.2.fetch_add(1, Ordering::SeqCst);
                // A barrier, not a pause: no answer before a second request has arrived, so
                // a client that overlaps its URLs is seen to (the limit is a hang guard for
                // one that never does, which then fails the test).
                let guard = std::time::Instant::now() + std::time::Duration::from_secs(60);
                while seen.2.load(Ordering::SeqCst) < 2 && std::time::Instant::now() < guard {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                // Out before the answer is sent: the count never exceeds the client's.
                seen.0.fetch_sub(1, Ordering::SeqCst);
            }
            let base = base.lock().expect("base").clone();
            route(req, &repos.lock().expect("repos"), &base, &cdn_base)
        });
        *hub_base.lock().expect("base") = hub.url("");
        Hub { hub, cdn, slow }
    }

    fn endpoint(&self) -> String {
        self.hub.url("")
    }

    /// How many requests of the hub's log `which` accepts.
    fn count(&self, which: impl Fn(&Request) -> bool) -> usize {
        self.hub.requests().iter().filter(|r| which(r)).count()
    }

    fn run(&self, args: &[&str], token: Option<&str>) -> Out {
        let mut env = vec![("HF_ENDPOINT", self.endpoint())];
        if let Some(t) = token {
            env.push(("HF_TOKEN", t.to_owned()));
        }
        run(args, &env)
    }
}

/// The refusal of a request that may not read `repo`: a gated one needs the token of the
/// account that accepted its terms.
fn refusal(req: &Request, repo: &Repo) -> Option<Reply> {
    if !repo.gated {
        return None;
    }
    match req.header("authorization") {
        Some(a) if a == format!("Bearer {TOKEN}") => None,
        Some(_) => Some(error(403, "GatedRepo")),
        None => Some(error(401, "GatedRepo")),
    }
}

/// The repository `key` (`[datasets/]org/name`), the commit its revision `rev` (as sent, URL
/// encoded) names, and that commit's files; or the hub's refusal.
fn at_revision<'r>(
    req: &Request,
    repos: &'r HashMap<String, Repo>,
    key: &str,
    rev: &str,
) -> Result<(&'r Repo, String, &'r Vec<File>), Box<Reply>> {
    let Some(repo) = repos.get(key) else {
        return Err(Box::new(error(404, "RepoNotFound")));
    };
    if let Some(r) = refusal(req, repo) {
        return Err(Box::new(r));
    }
    let rev = decode(rev);
    let commit = repo.refs.get(&rev).cloned().unwrap_or(rev);
    let Some(files) = repo.commits.get(&commit) else {
        return Err(Box::new(error(404, "RevisionNotFound")));
    };
    Ok((repo, commit, files))
}

fn route(req: &Request, repos: &HashMap<String, Repo>, hub: &str, cdn: &str) -> Reply {
    let path = req.path();
    if let Some(rest) = path.strip_prefix("/api/") {
        let (kind, rest) = rest.split_once('/').unwrap_or(("", ""));
        let prefix = if kind == "datasets" { "datasets/" } else { "" };
        let parts: Vec<&str> = rest.splitn(4, '/').collect();
        let [org, name, what, rev] = parts[..] else {
            return Reply::new(400);
        };
        let (repo, commit, files) =
            match at_revision(req, repos, &format!("{prefix}{org}/{name}"), rev) {
                Ok(found) => found,
                Err(refused) => return *refused,
            };
        return match what {
            "revision" => Reply::new(200)
                .header("Content-Type", "application/json")
                .body(format!(
                    r#"{{"id":"{org}/{name}","sha":"{commit}","siblings":[]}}"#
                )),
            "tree" => {
                let mut entries: Vec<Value> = Vec::new();
                let mut dirs: Vec<String> = Vec::new();
                for f in files {
                    let mut d = f.path.as_str();
                    while let Some((parent, _)) = d.rsplit_once('/') {
                        if !dirs.contains(&parent.to_owned()) {
                            dirs.push(parent.to_owned());
                            entries.push(serde_json::json!({
                                "type": "directory", "oid": "0", "size": 0, "path": parent
                            }));
                        }
                        d = parent;
                    }
                    let mut e = serde_json::json!({
                        "type": "file", "oid": "1", "size": f.bytes.len(), "path": f.path
                    });
                    if f.lfs {
                        e["lfs"] = serde_json::json!({
                            "oid": f.listed.clone().unwrap_or_else(|| sha256_hex(&f.bytes)),
                            "size": f.bytes.len(), "pointerSize": 134
                        });
                    }
                    entries.push(e);
                }
                let cursor: usize = req
                    .target
                    .split(['?', '&'])
                    .find_map(|q| q.strip_prefix("cursor="))
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0);
                if repo.redirected_next && cursor > 0 && !req.target.contains("away=1") {
                    let api = format!("{hub}/api/{kind}/{org}/{name}/tree/{commit}");
                    let elsewhere = api.replace("127.0.0.1", "localhost");
                    return Reply::redirect(
                        302,
                        &format!("{elsewhere}?recursive=true&cursor={cursor}&away=1"),
                    );
                }
                if let Some(raw) = repo.raw_tree {
                    return Reply::new(200).body(raw);
                }
                let page: Vec<Value> = entries.iter().skip(cursor).take(PAGE).cloned().collect();
                let mut reply = Reply::new(200)
                    .header("Content-Type", "application/json")
                    .body(serde_json::to_vec(&page).expect("page"));
                let api = format!("{hub}/api/{kind}/{org}/{name}/tree/{commit}");
                if repo.foreign_next && cursor == 0 {
                    let elsewhere = api.replace("127.0.0.1", "localhost");
                    reply = reply.header(
                        "Link",
                        format!("<{elsewhere}?recursive=true&cursor=1>; rel=\"next\""),
                    );
                } else if repo.looping_pages {
                    reply = reply.header(
                        "Link",
                        format!("<{api}?recursive=true&cursor=0>; rel=\"next\""),
                    );
                } else if cursor + PAGE < entries.len() {
                    reply = reply.header(
                        "Link",
                        format!(
                            "<{api}?recursive=true&cursor={}>; rel=\"next\"",
                            cursor + PAGE
                        ),
                    );
                }
                reply
            }
            _ => Reply::new(404),
        };
    }
    // /[datasets/]org/repo/resolve/rev/path
    let (prefix, rest) = match path.strip_prefix("/datasets/") {
        Some(r) => ("datasets/", r),
        None => ("", path.trim_start_matches('/')),
    };
    let parts: Vec<&str> = rest.splitn(5, '/').collect();
    let [org, name, "resolve", rev, file_path] = parts[..] else {
        return Reply::new(404);
    };
    let (repo, commit, files) = match at_revision(req, repos, &format!("{prefix}{org}/{name}"), rev)
    {
        Ok(found) => found,
        Err(refused) => return *refused,
    };
    let file_path = decode(file_path);
    let Some(f) = files.iter().find(|f| f.path == file_path) else {
        return error(404, "EntryNotFound");
    };

    if f.lfs {
        let sha = sha256_hex(&f.bytes);
        Reply::redirect(302, &format!("{cdn}/blobs/{sha}?X-Amz-Signature=sig{sha}"))
            .header(
                "X-Repo-Commit",
                if repo.wrong_commit {
                    commit_id(0xee)
                } else {
                    commit.clone()
                },
            )
            .header(
                "X-Linked-Etag",
                format!("\"{}\"", f.linked.as_deref().unwrap_or(&sha)),
            )
            .header("X-Linked-Size", f.bytes.len().to_string())
    } else {
        serve_file(req, &f.bytes, true).header("X-Repo-Commit", commit.as_str())
    }
}

fn run(args: &[&str], env: &[(&str, String)]) -> Out {
    let mut cmd = crate::stcheck();
    cmd.args(args).arg("--no-progress");
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    output(&mut cmd)
}

fn records<'a>(out: &'a [Value], kind: &str) -> Vec<&'a Value> {
    out.iter()
        .filter(|v| v["type"] == kind)
        .map(|v| &v["data"])
        .collect()
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hub-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn shard(name: &str, value: u8) -> Vec<u8> {
    stcheck::write::serialize(
        &[stcheck::write::TensorSpec::new(
            name,
            stcheck::Dtype::U8,
            &[1],
            &[value],
        )],
        &[],
    )
    .expect("shard")
}

fn one_commit(commit: &str, files: Vec<File>) -> Repo {
    let mut r = Repo::default();
    r.refs.insert("main".into(), commit.to_owned());
    r.commits.insert(commit.to_owned(), files);
    r
}

/// The corpus's files and sets (all but the one about local links), as a repository.
fn corpus_repo() -> Vec<File> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = ["valid", "invalid", "malformed", "implementation-defined"]
        .iter()
        .map(|d| root.join(d))
        .collect();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let ty = e.file_type().expect("type");
            if p.ends_with("shard-link-outside") || ty.is_symlink() {
                continue;
            }
            if ty.is_dir() {
                stack.push(p);
            } else if ty.is_file() {
                let name = p.to_string_lossy();
                if name.ends_with(".safetensors") || name.ends_with(".safetensors.index.json") {
                    let rel = p.strip_prefix(&root).expect("rel").to_string_lossy();
                    out.push(file(&rel, std::fs::read(&p).expect("read")));
                }
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// What a record says, keyed by the file's path in the repository.
fn verdicts(out: &[Value], prefix: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for v in out {
        let kind = v["type"].as_str().unwrap_or("");
        if kind == "summary" {
            continue;
        }
        let d = &v["data"];
        let path = d["path"].as_str().unwrap_or("");
        let rel = path
            .strip_prefix(prefix)
            .unwrap_or_else(|| panic!("{path} not under {prefix}"));
        let finding = |f: &Value| {
            format!(
                "{} {} {} {}",
                f["rule"], f["offset"], f["offset_in"], f["shard"]
            )
        };
        let mut said = format!("{kind} {} {}", d["status"], finding(&d["error"]));
        for key in ["errors", "warnings"] {
            if let Some(list) = d[key].as_array() {
                for f in list {
                    said.push_str(&format!(" | {key} {}", finding(f)));
                }
            }
        }
        if let Some(shards) = d["shards"].as_array() {
            for s in shards {
                said.push_str(&format!(
                    " | shard {} {} {}",
                    s["name"],
                    s["status"],
                    finding(&s["error"])
                ));
            }
        }
        m.insert(rel.to_owned(), said);
    }
    m
}

#[test]
fn a_repository_checks_as_its_files_do_on_disk() {
    let files = corpus_repo();
    assert!(files.len() > 300, "{} corpus files", files.len());
    let dir = scratch("corpus");
    for f in &files {
        let p = dir.join(&f.path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, &f.bytes).expect("write");
    }
    let commit = commit_id(1);
    let hub = Hub::start(HashMap::from([(
        "org/corpus".to_owned(),
        one_commit(&commit, files),
    )]));
    let local = run(&["--json", dir.to_str().expect("utf-8")], &[]);
    // The repository's one deadline is a hang guard here: its 400 files through a debug build
    // on a busy machine may take longer than the default 120 s, and this test is about verdicts.
    let remote = hub.run(&["--json", "--timeout", "3600", "hf://org/corpus"], None);
    assert_eq!(local.code, remote.code, "{}", remote.stderr);
    let (local, remote) = (lines(&local.stdout), lines(&remote.stdout));
    let l = verdicts(&local, &format!("{}/", dir.display()));
    let r = verdicts(&remote, &format!("hf://org/corpus@{commit}/"));
    assert_eq!(l.len(), r.len());
    for (path, said) in &l {
        assert_eq!(Some(said), r.get(path), "{path}");
    }
    // INDEX-SHARD-UNLISTED is decided from the listing.
    assert!(r["valid/index/unlisted-shard/model.safetensors.index.json"]
        .contains("INDEX-SHARD-UNLISTED"));
    let sum = |out: &[Value]| {
        let s = records(out, "summary")[0].clone();
        (s["files"].clone(), s["valid"].clone(), s["invalid"].clone())
    };
    assert_eq!(sum(&local), sum(&remote));
}

fn model_repo() -> (HashMap<String, Repo>, Vec<u8>) {
    let model = zeros_file(4);
    let mut repos = HashMap::new();
    let c1 = commit_id(0xc1);
    let c2 = commit_id(0xc2);
    let mut repo = one_commit(
        &c1,
        vec![
            file("model.safetensors", model.clone()),
            file("pytorch_model.bin", b"\x80\x02pickle".to_vec()),
            file("sub/dir/model.Q4.GGUF", b"GGUF....".to_vec()),
            file("README.md", b"# a model".to_vec()),
            file("config.json", b"{}".to_vec()),
        ],
    );
    repo.refs.insert("v2".into(), c2.clone());
    repo.commits
        .insert(c2, vec![file("model.safetensors", shard("x", 1))]);
    repos.insert("org/model".into(), repo);
    let mut gated = one_commit(&c1, vec![file("model.safetensors", model.clone())]);
    gated.gated = true;
    repos.insert("org/gated".into(), gated);
    // Bytes of its own: the CDN serves objects by SHA-256.
    let original = zeros_file(5);
    let mut tampered = file("model.safetensors", original.clone());
    let mut evil = original;
    let last = evil.len() - 1;
    evil[last] ^= 0x40;
    tampered.served = Some(evil);
    repos.insert("org/tampered".into(), one_commit(&c1, vec![tampered]));
    // Published ids that disagree: the listing's is the bytes', the X-Linked-Etag another's;
    // or the listing's is not a SHA-256 (63 hex digits).
    let mut disagree = file("model.safetensors", model.clone());
    disagree.linked = Some(sha256_hex(b"another file"));
    repos.insert("org/disagree".into(), one_commit(&c1, vec![disagree]));
    repos.insert(
        "org/one".into(),
        one_commit(&c1, vec![file("model.safetensors", model.clone())]),
    );
    // X-Linked-Etags that are not a SHA-256: 63 hex digits, a word, a git blob id (40).
    for (name, linked) in [
        ("org/etag63", sha256_hex(&model)[1..].to_owned()),
        ("org/etagword", "not-a-hash".to_owned()),
        ("org/etagblob", "b1".repeat(20)),
    ] {
        let mut f = file("model.safetensors", model.clone());
        f.linked = Some(linked);
        repos.insert(name.into(), one_commit(&c1, vec![f]));
    }
    let mut malformed = file("model.safetensors", model.clone());
    malformed.listed = Some(sha256_hex(&model)[1..].to_owned());
    repos.insert("org/malformed".into(), one_commit(&c1, vec![malformed]));
    // File names with '#' and '?' (an uploader's choice): one valid, one not.
    repos.insert(
        "org/odd".into(),
        one_commit(
            &c1,
            vec![
                file("a#1.safetensors", model.clone()),
                file("a?2.safetensors", b"not safetensors at all".to_vec()),
            ],
        ),
    );
    let mut looping = one_commit(&c1, vec![file("model.safetensors", model.clone())]);
    looping.looping_pages = true;
    repos.insert("org/loop".into(), looping);
    for (name, edit) in [
        (
            "org/foreign",
            (|r: &mut Repo| r.foreign_next = true) as fn(&mut Repo),
        ),
        ("org/notjson", |r| {
            r.raw_tree = Some("<html>not a listing</html>")
        }),
        ("org/object", |r| r.raw_tree = Some(r#"{"error":"x"}"#)),
        ("org/dotdot", |r| {
            r.raw_tree = Some(r#"[{"type":"file","path":"a/../../x.safetensors","size":1}]"#)
        }),
        ("org/moved", |r| r.wrong_commit = true),
    ] {
        let mut r = one_commit(&c1, vec![file("model.safetensors", model.clone())]);
        edit(&mut r);
        repos.insert(name.into(), r);
    }
    // Two pages of the listing, the second redirected to another host.
    let four = (1..=4)
        .map(|i| file(&format!("m{i}.safetensors"), model.clone()))
        .collect();
    let mut away = one_commit(&c1, four);
    away.redirected_next = true;
    repos.insert("org/away".into(), away);
    let set = vec![
        file(
            "model.safetensors.index.json",
            br#"{"metadata":{"total_size":2},"weight_map":{"a":"m-1.safetensors","b":"m-2.safetensors"}}"#.to_vec(),
        ),
        file("m-1.safetensors", shard("a", 1)),
        file("m-2.safetensors", shard("b", 2)),
        file("extra.safetensors", shard("c", 3)),
    ];
    repos.insert("datasets/org/set".into(), one_commit(&c1, set));
    (repos, model)
}

#[test]
fn a_revision_is_resolved_once_and_every_file_is_pinned_to_its_commit() {
    let (repos, model) = model_repo();
    let hub = Hub::start(repos);
    let c1 = commit_id(0xc1);
    let out = hub.run(&["--json", "hf://org/model"], Some(TOKEN));
    assert_eq!(out.code, 2, "other formats fail the run: {}", out.stdout);
    let v = lines(&out.stdout);
    let file = records(&v, "file");
    assert_eq!(file.len(), 1, "{}", out.stdout);
    let f = file[0];
    assert_eq!(f["path"], format!("hf://org/model@{c1}/model.safetensors"));
    assert_eq!(f["status"], "valid");
    assert_eq!(f["commit"], c1.as_str());
    assert_eq!(f["lfs_sha256"], sha256_hex(&model).as_str());
    assert_eq!(f["etag"], sha256_hex(&model).as_str());
    assert!(f["url"]
        .as_str()
        .is_some_and(|u| u.ends_with(&format!("/org/model/resolve/{c1}/model.safetensors"))));
    let other: Vec<(String, String, String)> = records(&v, "not_checked")
        .iter()
        .map(|n| {
            (
                n["path"].as_str().unwrap_or("").to_owned(),
                n["reason"].as_str().unwrap_or("").to_owned(),
                n["message"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(other.len(), 2, "{other:?}");
    assert!(other[0].0.ends_with("/pytorch_model.bin") && other[0].2.contains("pickle"));
    assert!(other[1].0.ends_with("/sub/dir/model.Q4.GGUF") && other[1].2.contains("GGUF"));
    assert!(other
        .iter()
        .all(|o| o.1 == "other_format" && o.2.contains("--allow-other-formats")));

    // The hub saw one revision request, pages of the listing, and files at the commit only.
    let reqs = hub.hub.requests();
    let revision: Vec<&Request> = reqs
        .iter()
        .filter(|r| r.path().contains("/revision/"))
        .collect();
    assert_eq!(revision.len(), 1);
    assert_eq!(revision[0].path(), "/api/models/org/model/revision/main");
    let pages = reqs.iter().filter(|r| r.path().contains("/tree/")).count();
    assert!(pages >= 3, "{pages} pages");
    assert!(reqs
        .iter()
        .filter(|r| r.path().contains("/resolve/"))
        .all(|r| r.path().contains(&format!("/resolve/{c1}/"))));
    // The token went to the hub, never to the CDN, and is never printed.
    assert!(reqs
        .iter()
        .all(|r| r.header("authorization") == Some(&format!("Bearer {TOKEN}"))));
    let cdn = hub.cdn.requests();
    assert!(!cdn.is_empty());
    assert!(cdn.iter().all(|r| !r.all_headers().contains(TOKEN)));
    assert!(!out.stdout.contains(TOKEN) && !out.stderr.contains(TOKEN));
    assert!(!out.stdout.contains("X-Amz-Signature"), "{}", out.stdout);

    // Accepted by name; another revision is another commit.
    let out = hub.run(
        &[
            "--allow-other-formats",
            "hf://org/model",
            "hf://org/model@v2",
        ],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(out
        .stdout
        .contains(&format!("@{}/model.safetensors: ok", commit_id(0xc2))));
    assert!(
        out.stdout.contains("summary: 2 files: 2 valid"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_set_in_a_dataset_repository_is_checked_with_its_listing() {
    let (repos, _) = model_repo();
    let hub = Hub::start(repos);
    let out = hub.run(&["--json", "hf://datasets/org/set"], None);
    let v = lines(&out.stdout);
    let index = records(&v, "index");
    assert_eq!(index.len(), 1, "{}", out.stdout);
    assert_eq!(index[0]["status"], "valid");
    assert!(index[0]["commit"].is_string());
    let warned: Vec<&str> = index[0]["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(|w| w["rule"].as_str())
        .collect();
    assert_eq!(warned, ["INDEX-SHARD-UNLISTED"]);
    // The unlisted file is checked on its own; the shards only with their index.
    let files: Vec<&str> = records(&v, "file")
        .iter()
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert_eq!(files.len(), 1);
    assert!(files[0].ends_with("/extra.safetensors"));
    assert_eq!(out.code, 0, "{}", out.stdout);
    let reqs = hub.hub.requests();
    assert!(reqs
        .iter()
        .any(|r| r.path().starts_with("/api/datasets/org/set/tree/")));
    // The index is fetched once: by the plan, for the names of its shards; its check uses
    // those bytes, and its record counts that request.
    let index_gets = reqs
        .iter()
        .filter(|r| r.path().contains("/resolve/") && r.path().ends_with(".index.json"))
        .count();
    assert_eq!(index_gets, 1, "{reqs:?}");
    assert!(
        index[0]["cost"]["requests"].as_u64() >= Some(1),
        "{}",
        index[0]
    );
    // Each shard's record says, as a file's does, where it was fetched, what that cost and
    // what the hub said: the commit of the listing for every one.
    let shards = index[0]["shards"].as_array().expect("shards");
    assert_eq!(shards.len(), 2, "{}", index[0]);
    for s in shards {
        let name = s["name"].as_str().expect("name");
        assert!(
            s["url"]
                .as_str()
                .is_some_and(|u| u.ends_with(&format!("/{name}"))),
            "{s}"
        );
        assert!(s["cost"]["requests"].as_u64() >= Some(1), "{s}");
        assert_eq!(s["commit"], index[0]["commit"], "{s}");
    }
}

#[test]
fn a_tampered_lfs_file_is_an_integrity_error() {
    let (repos, _) = model_repo();
    let hub = Hub::start(repos);
    for address in ["hf://org/tampered", "hf://org/tampered/model.safetensors"] {
        let out = hub.run(&["--json", "--sha256", address], None);
        assert_eq!(out.code, 1, "{address}: {}", out.stdout);
        let v = lines(&out.stdout);
        let f = records(&v, "file")[0];
        assert_eq!(f["status"], "invalid", "{address}");
        assert_eq!(f["error"]["rule"], "INTEGRITY-SHA256");
        assert_eq!(f["error"]["kind"], "integrity");
        // Without --sha256 the bytes' format is all that is checked: valid.
        let out = hub.run(&[address], None);
        assert_eq!(out.code, 0, "{address}: {}", out.stdout);
    }
    // The untampered file passes the same check.
    let out = hub.run(&["--sha256", "hf://org/model/model.safetensors"], None);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let out = hub.run(&["--explain", "INTEGRITY-SHA256"], None);
    assert_eq!(out.code, 0);
    assert!(out.stdout.contains("INTEGRITY-SHA256"));
}

#[test]
fn published_ids_that_disagree_are_an_integrity_error_by_every_route() {
    let (repos, model) = model_repo();
    let hub = Hub::start(repos);
    let real = sha256_hex(&model);
    let other = sha256_hex(b"another file");
    for address in ["hf://org/disagree", "hf://org/disagree/model.safetensors"] {
        let out = hub.run(&["--json", "--sha256", address], None);
        assert_eq!(out.code, 1, "{address}: {}", out.stdout);
        let v = lines(&out.stdout);
        let f = records(&v, "file")[0];
        assert_eq!(f["error"]["rule"], "INTEGRITY-SHA256", "{address}");
        let message = f["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("X-Linked-Etag publishes {other}")),
            "{message}"
        );
        assert!(
            message.contains("disagree") || message.contains("not the bytes"),
            "{message}"
        );
    }
    // Both ids named, each with its source, where the listing gave one.
    let out = hub.run(&["--json", "--sha256", "hf://org/disagree"], None);
    let v = lines(&out.stdout);
    let f = records(&v, "file")[0];
    let message = f["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("(lfs.oid) publishes {real}")),
        "{message}"
    );
    assert!(message.contains("disagree"), "{message}");
    assert_eq!(
        published(f),
        [
            ("the hub's listing (lfs.oid)".to_owned(), real),
            ("X-Linked-Etag".to_owned(), other)
        ],
        "{f}"
    );
    // A listing's id that is not a SHA-256 is not dropped: the file is not confirmed.
    let out = hub.run(&["--json", "--sha256", "hf://org/malformed"], None);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let v = lines(&out.stdout);
    let f = records(&v, "file")[0];
    assert_eq!(f["error"]["rule"], "INTEGRITY-SHA256");
    let message = f["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("not a SHA-256"), "{message}");
}

/// The published ids of a file record, `(source, sha256)`.
fn published(f: &Value) -> Vec<(String, String)> {
    f["published_sha256"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|i| {
                    let s = |k: &str| i[k].as_str().unwrap_or_default().to_owned();
                    (s("source"), s("sha256"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The verdict of a one-file run: exit code, status, rule of the error.
fn verdict(out: &Out) -> (i32, String, String) {
    let v = lines(&out.stdout);
    let f = records(&v, "file");
    let s = |k: &str, r: &str| {
        f.first()
            .and_then(|f| {
                if r.is_empty() {
                    f[k].as_str()
                } else {
                    f[k][r].as_str()
                }
            })
            .unwrap_or_default()
            .to_owned()
    };
    (out.code, s("status", ""), s("error", "rule"))
}

/// The record of a one-file run that must end in `INTEGRITY-SHA256`, and its message.
fn integrity_error(hub: &Hub, args: &[&str]) -> (Value, String) {
    let out = hub.run(args, None);
    assert_eq!(
        verdict(&out),
        (1, "invalid".into(), "INTEGRITY-SHA256".into()),
        "{args:?}: {}",
        out.stdout
    );
    let v = lines(&out.stdout);
    let f = records(&v, "file")[0].clone();
    let message = f["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (f, message)
}

#[test]
fn the_same_file_and_published_ids_give_one_verdict_by_every_route() {
    let (repos, model) = model_repo();
    let hub = Hub::start(repos);
    let real = sha256_hex(&model);
    let other = sha256_hex(b"another file");
    let tampered_id = sha256_hex(&zeros_file(5));
    let plain = |repo: &str| {
        format!(
            "{}/{repo}/resolve/main/model.safetensors",
            hub.endpoint().trim_end_matches('/')
        )
    };
    // A repository whose ids agree with the bytes, one whose CDN serves other bytes than
    // the ids (which agree), one whose listing and X-Linked-Etag disagree: through the
    // repository, the file at a revision, and a plain URL (the hub's resolve address, which
    // says only the X-Linked-Etag) given the listing's id with --expect-sha256.
    for (repo, listed, want) in [
        ("org/one", &real, (0, "valid", "")),
        (
            "org/tampered",
            &tampered_id,
            (1, "invalid", "INTEGRITY-SHA256"),
        ),
        ("org/disagree", &real, (1, "invalid", "INTEGRITY-SHA256")),
    ] {
        let routes: [Vec<String>; 3] = [
            vec!["--sha256".into(), format!("hf://{repo}")],
            vec![
                "--sha256".into(),
                format!("hf://{repo}@main/model.safetensors"),
            ],
            vec!["--expect-sha256".into(), listed.to_uppercase(), plain(repo)],
        ];
        for args in &routes {
            let mut a: Vec<&str> = vec!["--json"];
            a.extend(args.iter().map(String::as_str));
            let out = hub.run(&a, None);
            let (code, status, rule) = verdict(&out);
            assert_eq!(
                (code, status.as_str(), rule.as_str()),
                want,
                "{repo} {args:?}: {}{}",
                out.stdout,
                out.stderr
            );
        }
        // The plain URL's ids: the X-Linked-Etag and the user's, each named by its source.
        let out = hub.run(&["--json", "--expect-sha256", listed, &plain(repo)], None);
        let v = lines(&out.stdout);
        let f = records(&v, "file")[0];
        let etag = if repo == "org/disagree" {
            &other
        } else {
            listed
        };
        assert_eq!(
            published(f),
            [
                ("X-Linked-Etag".to_owned(), etag.to_string()),
                ("--expect-sha256".to_owned(), listed.to_string())
            ],
            "{f}"
        );
        if want.0 == 1 {
            let message = f["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains(&format!("--expect-sha256 publishes {listed}")),
                "{message}"
            );
        }
    }
    // The user's id is one more published id: another hash makes the ids disagree, whatever
    // the route; the repository's listing and the X-Linked-Etag stay in the decision.
    for address in [
        "hf://org/one".to_owned(),
        "hf://org/one@main/model.safetensors".to_owned(),
        plain("org/one"),
    ] {
        let (f, message) = integrity_error(&hub, &["--json", "--expect-sha256", &other, &address]);
        assert!(message.contains("disagree"), "{message}");
        assert!(
            published(&f).contains(&("--expect-sha256".to_owned(), other.clone())),
            "{f}"
        );
    }
    // A hash for several files is a usage error, said before anything is checked: a
    // repository of several files, two addresses.
    let one = plain("org/one");
    for args in [
        vec!["--expect-sha256", &real, "hf://org/model"],
        vec!["--expect-sha256", &real, &one, &one],
        vec!["--expect-sha256", "abc", &one],
    ] {
        let out = hub.run(&args, None);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stdout);
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
        assert!(out.stderr.contains("--expect-sha256"), "{}", out.stderr);
    }
}

#[test]
fn a_malformed_linked_etag_is_compared_and_a_git_blob_id_is_named() {
    let (repos, model) = model_repo();
    let hub = Hub::start(repos);
    let real = sha256_hex(&model);
    for repo in ["org/etag63", "org/etagword"] {
        for address in [
            format!("hf://{repo}"),
            format!("hf://{repo}/model.safetensors"),
        ] {
            let (_, message) = integrity_error(&hub, &["--json", "--sha256", &address]);
            assert!(
                message.contains("X-Linked-Etag publishes") && message.contains("not a SHA-256"),
                "{message}"
            );
            // Without the SHA-256 nothing is compared: the format's verdict.
            let out = hub.run(&[&address], None);
            assert_eq!(out.code, 0, "{address}: {}", out.stdout);
        }
    }
    // A git blob id (a file not in LFS) is named in the record and not compared: the
    // listing's id decides on the repository's route; nothing is published on the file's.
    for (address, ids) in [
        (
            "hf://org/etagblob",
            vec![("the hub's listing (lfs.oid)".to_owned(), real.clone())],
        ),
        ("hf://org/etagblob/model.safetensors", vec![]),
    ] {
        let out = hub.run(&["--json", "--sha256", address], None);
        assert_eq!(
            verdict(&out),
            (0, "valid".into(), String::new()),
            "{address}"
        );
        let v = lines(&out.stdout);
        let f = records(&v, "file")[0];
        assert_eq!(f["git_blob_id"], "b1".repeat(20), "{f}");
        assert_eq!(published(f), ids, "{f}");
    }
}

#[test]
fn names_with_hash_and_question_mark_are_shown_whole() {
    let (repos, _) = model_repo();
    let hub = Hub::start(repos);
    let out = hub.run(&["--json", "hf://org/odd"], None);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let v = lines(&out.stdout);
    let c1 = commit_id(0xc1);
    let got: BTreeMap<String, String> = records(&v, "file")
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap_or_default().to_owned();
            (s("path"), s("status"))
        })
        .collect();
    let want: BTreeMap<String, String> = [
        (format!("hf://org/odd@{c1}/a%231.safetensors"), "valid"),
        (format!("hf://org/odd@{c1}/a%3F2.safetensors"), "invalid"),
    ]
    .into_iter()
    .map(|(p, s)| (p, s.to_owned()))
    .collect();
    assert_eq!(got, want, "{}", out.stdout);
}

#[test]
fn every_hub_error_code_says_what_to_do() {
    let (repos, _) = model_repo();
    let hub = Hub::start(repos);
    for (args, token, words) in [
        (vec!["hf://org/nope"], None, "RepoNotFound"),
        (vec!["hf://org/nope/model.safetensors"], None, "HF_TOKEN"),
        (vec!["hf://org/model@nosuch"], None, "after '@'"),
        (
            vec!["hf://org/model@nosuch/model.safetensors"],
            None,
            "RevisionNotFound",
        ),
        (
            vec!["hf://org/model/gone.safetensors"],
            None,
            "check its path",
        ),
        (vec!["hf://org/gated"], None, "accept its terms"),
        (vec!["hf://org/gated/model.safetensors"], None, "401"),
        (vec!["hf://org/gated"], Some(OTHER_TOKEN), "403"),
        (
            vec!["hf://org/gated/model.safetensors"],
            Some(OTHER_TOKEN),
            "GatedRepo",
        ),
        (vec!["hf://org/loop"], None, "loop"),
        (vec!["hf://org/foreign"], None, "another host"),
        (vec!["hf://org/away"], None, "another host"),
        (vec!["hf://org/notjson"], None, "not the JSON the hub sends"),
        (vec!["hf://org/object"], None, "not the JSON the hub sends"),
        (vec!["hf://org/dotdot"], None, "unusable path"),
        (
            vec!["hf://org/moved"],
            None,
            "the server answered with commit eeee",
        ),
    ] {
        let out = hub.run(&args, token);
        let line = out.stdout.lines().next().unwrap_or("");
        assert_eq!(out.code, 2, "{args:?}: {}", out.stdout);
        assert!(line.contains(": not checked: "), "{line}");
        assert!(line.contains(words), "{args:?}: {line}");
        assert_eq!(line.matches("not checked").count(), 1, "{line}");
        assert!(!line.contains("could not check: could not check"), "{line}");
        assert!(!out.stdout.contains(OTHER_TOKEN) && !out.stderr.contains(OTHER_TOKEN));
    }
    let out = hub.run(&["hf://org/gated"], Some(TOKEN));
    assert_eq!(out.code, 0, "{}", out.stdout);
}

#[test]
fn a_repository_has_one_deadline_for_its_listing_indexes_and_files() {
    let (mut repos, _) = model_repo();
    // 20 indexes whose bodies drip without end: each used to have its own deadline, in the
    // plan and again in its check (20 x 2 x --timeout; 19 requested in the 54 s the test
    // waited before this fix, at --timeout 2).
    let files: Vec<File> = (0..20)
        .map(|i| file(&format!("m{i:02}.safetensors.index.json"), b"{}".to_vec()))
        .collect();
    repos.insert("org/drip".into(), one_commit(&commit_id(0xd1), files));
    let hub = Hub::start(repos);
    hub.hub.clear_log();
    // 10 s: time enough to list the repository on a loaded machine (a hang guard, not a
    // measure: only the deadline ends a dripping index).
    let out = hub.run(&["--json", "--timeout", "10", "hf://org/drip"], None);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let v = lines(&out.stdout);
    let indexes = records(&v, "index");
    assert_eq!(indexes.len(), 20, "{}", out.stdout);
    for r in &indexes {
        assert_eq!(r["status"], "io_error", "{r}");
        assert_eq!(r["read_error"], "timeout", "{r}");
    }
    // The one deadline passed while the plan read the first index (or, on a machine slow
    // enough, before it asked for it): nothing else was asked for (no other index, no
    // check's request).
    let resolves = hub.count(|r| r.path().contains("/resolve/"));
    assert!(resolves <= 1, "{resolves}: {:?}", hub.hub.requests());
    let message = indexes[0]["io_error"].as_str().unwrap_or_default();
    assert!(message.contains("the whole repository"), "{}", indexes[0]);
}

#[test]
fn what_the_plan_keeps_of_a_repository_is_bounded_by_the_header_limit() {
    let (mut repos, model) = model_repo();
    // 40 files of 1,000-byte names: about 46 KB of names and ids kept.
    let files: Vec<File> = (0..40)
        .map(|i| file(&format!("{:0>1000}.safetensors", i), model.clone()))
        .collect();
    repos.insert("org/wide".into(), one_commit(&commit_id(0xa1), files));
    // 5 indexes, each of about 13 KB naming 60 distinct shards of 200-byte names: about
    // 13 KB of names each, 67 KB in all.
    let indexes: Vec<File> = (0..5)
        .map(|n| {
            let map: serde_json::Map<String, Value> = (0..60)
                .map(|i| {
                    (
                        format!("t{i}"),
                        Value::from(format!("{:0>200}.safetensors", format!("{n}-{i}"))),
                    )
                })
                .collect();
            let index = serde_json::json!({ "weight_map": map })
                .to_string()
                .into_bytes();
            file(&format!("m{n}.safetensors.index.json"), index)
        })
        .collect();
    repos.insert("org/named".into(), one_commit(&commit_id(0xa2), indexes));
    let hub = Hub::start(repos);
    // Under a header limit of 20,000 bytes neither is kept: not checked, saying why.
    for (repo, words) in [
        ("org/wide", "bytes of names of files"),
        ("org/named", "bytes of shard names"),
    ] {
        hub.hub.clear_log();
        let address = format!("hf://{repo}");
        let out = hub.run(&["--json", "--max-header-size", "20000", &address], None);
        assert_eq!(out.code, 2, "{repo}: {}", out.stdout);
        let v = lines(&out.stdout);
        let f = records(&v, "file");
        assert_eq!(f.len(), 1, "{repo}: {}", out.stdout);
        let message = f[0]["io_error"].as_str().unwrap_or_default();
        assert!(
            message.contains(words) && message.contains("--max-header-size"),
            "{message}"
        );
        // The plan stopped at the index that passed the bound: the second of five.
        let indexes = hub.count(|r| r.path().ends_with(".index.json"));
        assert_eq!(indexes, if repo == "org/named" { 2 } else { 0 }, "{repo}");
    }
    // Under the default limit both are planned and checked.
    let out = hub.run(&["hf://org/wide"], None);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let out = hub.run(&["--json", "hf://org/named"], None);
    let v = lines(&out.stdout);
    assert_eq!(records(&v, "index").len(), 5, "{}", out.stdout);
}

#[test]
fn urls_have_their_own_bound_share_connections_and_a_request_budget() {
    let (mut repos, _) = model_repo();
    let files: Vec<File> = (0..8)
        .map(|i| file(&format!("m{i}.safetensors"), shard("w", i)))
        .collect();
    // Its files' `resolve` answers wait for a second one to be asked for (to see how many are
    // under way).
    repos.insert("org/slow".into(), one_commit(&commit_id(0x5e), files));
    let hub = Hub::start(repos);

    // --jobs 1 does not make the URLs wait for each other; --url-jobs bounds them.
    for (url_jobs, most) in [("2", 2), ("4", 4)] {
        hub.slow.1.store(0, Ordering::SeqCst);
        hub.slow.2.store(0, Ordering::SeqCst);
        let out = hub.run(&["-j", "1", "--url-jobs", url_jobs, "hf://org/slow"], None);
        assert_eq!(out.code, 0, "{}", out.stdout);
        assert!(
            out.stdout.contains("summary: 8 files: 8 valid"),
            "{}",
            out.stdout
        );
        let peak = hub.slow.1.load(Ordering::SeqCst);
        assert!(peak <= most, "--url-jobs {url_jobs}: {peak} at once");
        assert!(peak > 1, "--url-jobs {url_jobs} with -j 1: one at a time");
    }

    // One URL at a time: every request to the hub goes over one reused connection.
    hub.hub.clear_log();
    let out = hub.run(
        &["--url-jobs", "1", "--allow-other-formats", "hf://org/model"],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let log = hub.hub.log();
    let ports: std::collections::BTreeSet<u16> = log.iter().map(|l| l.peer_port).collect();
    assert!(log.len() >= 5, "{} requests", log.len());
    assert_eq!(
        ports.len(),
        1,
        "{} connections for {} requests",
        ports.len(),
        log.len()
    );

    // The budget of the run: the listing alone needs more than 3 requests.
    hub.hub.clear_log();
    let out = hub.run(&["--max-requests", "3", "hf://org/model"], None);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.stdout.contains("budget of 3 HTTP requests is spent"),
        "{}",
        out.stdout
    );
    assert!(hub.hub.requests().len() <= 3);
    let out = hub.run(&["--max-requests", "0", "hf://org/model"], None);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--max-requests"), "{}", out.stderr);
}
