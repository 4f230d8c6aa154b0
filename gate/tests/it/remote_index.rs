//! Sharded checkpoints by URL: the index is fetched, each shard resolved next to it under the
//! `INDEX-*` rules and checked remotely; the findings equal the local check of the same set.
#![cfg(feature = "remote")]

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::test_options;
use stcheck::index::{check_index, IndexReport, MemorySource};
use stcheck::write::{serialize, TensorSpec};
use stcheck::{Config, Dtype};
use stcheck_gate::remote::{Depth, ErrorKind, Found, Remote};
use stcheck_testkit::http::{serve_file, Reply, Request, Server};
use stcheck_testkit::short;

type Files = Arc<Mutex<BTreeMap<String, Vec<u8>>>>;

/// Files under `/models/` by name, 500 for names starting with `broken`.
fn server(files: &Files) -> Server {
    let files = Arc::clone(files);
    Server::start(move |req| {
        let Some(name) = req.path().strip_prefix("/models/") else {
            return Reply::new(404);
        };
        if name.starts_with("broken") {
            return Reply::new(500);
        }
        let files = files.lock().expect("files");
        match files.get(name) {
            Some(bytes) => serve_file(req, bytes, true),
            None => Reply::new(404),
        }
    })
}

fn shard(tensors: &[(&str, usize)]) -> Vec<u8> {
    let data: Vec<Vec<u8>> = tensors.iter().map(|&(_, n)| vec![0u8; n * 4]).collect();
    let shapes: Vec<[u64; 1]> = tensors.iter().map(|&(_, n)| [n as u64]).collect();
    let specs: Vec<TensorSpec<'_>> = tensors
        .iter()
        .zip(&data)
        .zip(&shapes)
        .map(|((&(name, _), d), s)| TensorSpec::new(name, Dtype::F32, s, d))
        .collect();
    serialize(&specs, &[]).expect("serialize")
}

/// The findings as compared: rule, offset, location, shard, tensor, and the cause's rule and
/// offset (messages differ: "HTTP 404" is not "no such file").
type Row = (
    String,
    u64,
    String,
    Option<String>,
    Option<String>,
    Option<(String, u64)>,
);

fn rows(r: &IndexReport) -> (bool, Vec<Row>, usize, u64) {
    let rows = r
        .errors()
        .iter()
        .chain(r.warnings())
        .map(|f| {
            (
                f.rule().id().to_owned(),
                f.offset(),
                f.location().as_str().to_owned(),
                f.shard().map(str::to_owned),
                f.tensor().map(str::to_owned),
                f.cause().map(|c| (c.rule().id().to_owned(), c.offset())),
            )
        })
        .collect();
    (r.is_valid(), rows, r.tensors(), r.parameters())
}

struct Case {
    index: String,
    shards: Vec<(&'static str, Vec<u8>)>,
}

fn the_set() -> Case {
    Case {
        index: r#"{"metadata":{"total_size":24},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00001-of-00002.safetensors","c":"model-00002-of-00002.safetensors"}}"#.to_owned(),
        shards: vec![
            ("model-00001-of-00002.safetensors", shard(&[("a", 2), ("b", 3)])),
            ("model-00002-of-00002.safetensors", shard(&[("c", 1)])),
        ],
    }
}

/// Serve `case` and check it remotely and locally; the findings must be equal.
fn compare(case: &Case, files: &Files, server: &Server, client: &Remote) -> IndexReport {
    let name = "model.safetensors.index.json";
    {
        let mut f = files.lock().expect("files");
        f.clear();
        f.insert(name.to_owned(), case.index.clone().into_bytes());
        for (n, b) in &case.shards {
            f.insert((*n).to_owned(), b.clone());
        }
    }
    let mut local = MemorySource::new();
    for (n, b) in &case.shards {
        local.insert(*n, b.clone());
    }
    let config = Config::default();
    let want = check_index(case.index.as_bytes(), &local, &config).expect("local");
    let check = client.check(
        &server.url(&format!("/models/{name}")),
        &config,
        Depth::Header,
    );
    let got = match check.outcome {
        Ok(Found::Index(i)) => i,
        other => panic!("{}", short(&other, 500)),
    };
    assert_eq!(rows(&got.report), rows(&want), "{}", case.index);
    // One request for the index, then per shard checked.
    let per_shard: u32 = got.shards.iter().map(|(_, c)| c.requests).sum();
    assert_eq!(check.cost.requests, 1 + per_shard);
    got.report
}

#[test]
fn a_valid_set_by_url() {
    let files: Files = Arc::default();
    let server = server(&files);
    let client = Remote::new(test_options()).expect("client");
    let report = compare(&the_set(), &files, &server, &client);
    assert!(report.is_valid());
    assert_eq!(report.tensors(), 3);
    assert_eq!(report.computed_size(), Some(24));
    // The shards are fetched concurrently: in either order, after the index.
    let mut paths: Vec<String> = server.requests().iter().map(|r| r.target.clone()).collect();
    assert_eq!(paths[0], "/models/model.safetensors.index.json");
    paths[1..].sort();
    assert_eq!(
        paths,
        [
            "/models/model.safetensors.index.json",
            "/models/model-00001-of-00002.safetensors",
            "/models/model-00002-of-00002.safetensors"
        ]
    );
}

#[test]
fn broken_sets_give_the_local_findings() {
    let files: Files = Arc::default();
    let server = server(&files);
    let client = Remote::new(test_options()).expect("client");
    let base = the_set();
    let mut cases = Vec::new();
    // A shard missing on the server.
    cases.push(Case {
        index: base.index.clone(),
        shards: vec![base.shards[0].clone()],
    });
    // A shard that is not a valid file (truncated: DATA-TRUNCATED from the length alone).
    let mut cut = base.shards[1].1.clone();
    cut.truncate(cut.len() - 2);
    cases.push(Case {
        index: base.index.clone(),
        shards: vec![
            base.shards[0].clone(),
            ("model-00002-of-00002.safetensors", cut),
        ],
    });
    // A tensor unlisted, one missing, one duplicated, and a wrong total size.
    cases.push(Case {
        index: r#"{"metadata":{"total_size":99},"weight_map":{"a":"model-00001-of-00002.safetensors","z":"model-00002-of-00002.safetensors","c":"model-00002-of-00002.safetensors"}}"#.to_owned(),
        shards: vec![
            ("model-00001-of-00002.safetensors", shard(&[("a", 2), ("b", 3)])),
            ("model-00002-of-00002.safetensors", shard(&[("c", 1), ("a", 1)])),
        ],
    });
    // Not JSON.
    cases.push(Case {
        index: r#"{"weight_map":{"a":"x.safetensors",}}"#.to_owned(),
        shards: vec![],
    });
    for case in &cases {
        let report = compare(case, &files, &server, &client);
        assert!(!report.is_valid(), "{}", case.index);
    }
}

#[test]
fn shard_names_cannot_leave_the_directory_or_the_host() {
    let files: Files = Arc::default();
    let server = server(&files);
    let client = Remote::new(test_options()).expect("client");
    let bad = [
        "../outside.safetensors",
        "sub/inner.safetensors",
        "http://127.0.0.1:1/x.safetensors",
        "//evil.example/x.safetensors",
        "..",
        "%2e%2e%2foutside.safetensors",
    ];
    let map: Vec<String> = bad
        .iter()
        .enumerate()
        .map(|(i, s)| format!("\"t{i}\":{}", serde_json::to_string(s).expect("json")))
        .collect();
    let case = Case {
        index: format!("{{\"weight_map\":{{{}}}}}", map.join(",")),
        shards: vec![],
    };
    let report = compare(&case, &files, &server, &client);
    let rules: Vec<&str> = report.errors().iter().map(|e| e.rule().id()).collect();
    // Five names break INDEX-SHARD-NAME; the percent-encoded one is a plain (odd) name, which
    // is looked up as itself, encoded again, inside the directory: missing.
    assert_eq!(
        rules,
        [
            "INDEX-SHARD-NAME",
            "INDEX-SHARD-NAME",
            "INDEX-SHARD-NAME",
            "INDEX-SHARD-NAME",
            "INDEX-SHARD-NAME",
            "INDEX-SHARD-MISSING"
        ]
    );
    let paths: Vec<String> = server.requests().iter().map(|r| r.target.clone()).collect();
    assert_eq!(
        paths,
        [
            "/models/model.safetensors.index.json",
            "/models/%252e%252e%252foutside.safetensors"
        ]
    );
}

#[test]
fn a_shard_that_cannot_be_fetched_makes_the_set_unchecked() {
    let files: Files = Arc::default();
    let server = server(&files);
    files.lock().expect("files").insert(
        "model.safetensors.index.json".to_owned(),
        br#"{"weight_map":{"a":"broken-00001.safetensors"}}"#.to_vec(),
    );
    let mut o = test_options();
    o.max_retries = 1;
    let client = Remote::new(
        o.header("Authorization", "Bearer secret-value-1234")
            .expect("h"),
    )
    .expect("client");
    let check = client.check(
        &server.url("/models/model.safetensors.index.json"),
        &Config::default(),
        Depth::Header,
    );
    let e = check.outcome.expect_err("no verdict");
    assert_eq!(e.kind(), ErrorKind::Shard);
    assert!(e.message().contains("broken-00001.safetensors"), "{e}");
    assert!(e.message().contains("HTTP 500"), "{e}");
    assert!(!e.message().contains("secret-value-1234"));
    // The index, then the shard and its one retry; credentials went to every one (one origin).
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    for r in reqs {
        assert_eq!(r.header("authorization"), Some("Bearer secret-value-1234"));
    }
}

#[test]
fn an_index_by_hf_address_and_deep() {
    let set = the_set();
    let mut by_path = BTreeMap::new();
    by_path.insert(
        "/org/repo/resolve/main/model.safetensors.index.json".to_owned(),
        set.index.clone().into_bytes(),
    );
    for (n, b) in &set.shards {
        by_path.insert(format!("/org/repo/resolve/main/{n}"), b.clone());
    }
    let server = Server::start(move |req| match by_path.get(req.path()) {
        Some(b) => serve_file(req, b, true),
        None => Reply::new(404),
    });
    let client = Remote::new(
        test_options()
            .hf_endpoint(&server.url(""))
            .hf_token(Some("hf_abcdefgh")),
    )
    .expect("client");
    for depth in [Depth::Header, Depth::Deep { sha256: true }] {
        server.clear_log();
        let check = client.check(
            "hf://org/repo/model.safetensors.index.json",
            &Config::default(),
            depth,
        );
        match &check.outcome {
            Ok(Found::Index(i)) => {
                assert!(i.report.is_valid(), "{:?}", i.report.errors());
                assert_eq!(i.report.tensors(), 3);
                assert_eq!(i.shards.len(), 2);
            }
            other => panic!("{}", short(other, 500)),
        }
        let reqs = server.requests();
        assert_eq!(reqs.len(), 3);
        for r in &reqs {
            assert_eq!(r.header("authorization"), Some("Bearer hf_abcdefgh"));
            // Deep checks ask for whole bodies, header checks for ranges.
            assert_eq!(
                r.header("range").is_some(),
                depth == Depth::Header && r.path().ends_with(".safetensors")
            );
        }
    }
}

/// The `weight_map` entries `"t{i}": names[i]`.
fn weight_map(names: &[String]) -> String {
    let map: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, s)| format!("\"t{i}\":\"{s}\""))
        .collect();
    map.join(",")
}

/// Whether a request is for a shard (not the index).
fn is_shard(req: &Request) -> bool {
    !req.path().ends_with("/model.safetensors.index.json")
}

/// An index of `n` one-tensor shards (tensor `t{i}` in shard `i`), and the shards.
fn many(n: usize) -> (String, Vec<(String, Vec<u8>)>) {
    let names: Vec<String> = (1..=n)
        .map(|i| format!("model-{i:05}-of-{n:05}.safetensors"))
        .collect();
    let index = format!(
        "{{\"metadata\":{{\"total_size\":{}}},\"weight_map\":{{{}}}}}",
        4 * n,
        weight_map(&names)
    );
    let shards = names
        .into_iter()
        .enumerate()
        .map(|(i, name)| (name, shard(&[(&format!("t{i}"), 1)])))
        .collect();
    (index, shards)
}

/// Serve an index at `/set/model.safetensors.index.json` (and the same set in any other
/// directory, `/DIR/model.safetensors.index.json`) and its shards, each shard's body
/// dripped 8 bytes at a time every `every(i)` for shard `i`. Shard requests are counted in
/// flight ([`Server::most_in_flight`]); none is answered before `together` of them are in
/// flight at once (a barrier: the client's overlap, made certain, not left to the scheduler;
/// a generous hang guard lets a client that never overlaps fail the test instead of hanging).
fn dripping_set(
    index: String,
    shards: Vec<(String, Vec<u8>)>,
    together: usize,
    every: impl Fn(usize) -> Duration + Send + Sync + 'static,
) -> Server {
    holding_set(index, shards, together, Duration::from_secs(60), every)
}

/// [`dripping_set`] whose barrier opens for every request once one has waited `hold` for it.
fn holding_set(
    index: String,
    shards: Vec<(String, Vec<u8>)>,
    together: usize,
    hold: Duration,
    every: impl Fn(usize) -> Duration + Send + Sync + 'static,
) -> Server {
    let arrived = Arc::new((Mutex::new((0usize, false)), Condvar::new()));
    Server::start_counting(is_shard, move |req| {
        let Some((_, name)) = req.path().strip_prefix('/').and_then(|p| p.split_once('/')) else {
            return Reply::new(404);
        };
        if name == "model.safetensors.index.json" {
            return serve_file(req, index.as_bytes(), true);
        }
        let (count, turn) = &*arrived;
        if let Ok(mut n) = count.lock() {
            n.0 += 1;
            turn.notify_all();
            if let Ok((mut n, _)) = turn.wait_timeout_while(n, hold, |n| n.0 < together && !n.1) {
                n.1 = true;
                turn.notify_all();
            }
        }
        match shards.iter().position(|(n, _)| n == name) {
            Some(i) => serve_file(req, &shards[i].1, true).drip(8, every(i)),
            None => Reply::new(404),
        }
    })
}

/// Issue 19: a set whose every shard drips, each within a file's deadline on its own but all
/// of them far past it one after another, ends at the one deadline the index and its shards
/// share: not checked, never a verdict, whatever the depth.
#[test]
fn a_set_whose_every_shard_drips_ends_at_the_set_deadline() {
    const SHARDS: usize = 16;
    let (index, shards) = many(SHARDS);
    // About 80 bytes a shard at 80 bytes/s (above the minimum speed): a second each.
    for depth in [Depth::Header, Depth::Deep { sha256: false }] {
        // A server for each depth: the first depth's abandoned responses are not the second's.
        let server = dripping_set(index.clone(), shards.clone(), 1, |_| {
            Duration::from_millis(100)
        });
        let mut o = test_options();
        o.total_timeout = Duration::from_secs(2);
        o.stream_timeout = Some(Duration::from_secs(2));
        o.max_concurrent_shards = 4;
        let client = Remote::new(o).expect("client");
        let mut seen = Vec::new();
        let check = client.check_with(
            &server.url("/set/model.safetensors.index.json"),
            &Config::default(),
            depth,
            &mut |name, _, _| seen.push(name.to_owned()),
        );
        let e = match &check.outcome {
            Err(e) => e.clone(),
            Ok(found) => panic!("{depth:?}: a verdict: {}", short(found, 300)),
        };
        assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
        assert!(e.message().contains("gave up after 2 s"), "{e}");
        assert!(e.message().contains("the whole set"), "{e}");
        // It ended there: not every shard was asked for (each takes a second to drip, and
        // the deadline is 2 s; load only makes the client slower, never fewer shards late).
        let asked = server.log().iter().filter(|l| is_shard(&l.request)).count();
        assert!(asked < SHARDS, "{depth:?}: {asked} shard requests");
        assert!(seen.len() < SHARDS, "{depth:?}: {seen:?}");
        // Never more shards at a time than the bound, as the server counts them (that they
        // overlap is the next test's: on a loaded machine the 2 s may not see two start).
        let at_once = server.most_in_flight();
        assert!(at_once <= 4, "{depth:?}: {at_once} at once");
    }
}

/// Shards are fetched a few at a time, yet handed over (and reported) in the index's order,
/// with the local check's findings.
#[test]
fn shards_are_fetched_a_few_at_a_time_and_reported_in_index_order() {
    const SHARDS: usize = 12;
    let (index, shards) = many(SHARDS);
    let want: Vec<String> = shards.iter().map(|(n, _)| n.clone()).collect();
    let mut local = MemorySource::new();
    for (n, b) in &shards {
        local.insert(n.clone(), b.clone());
    }
    let local = check_index(index.as_bytes(), &local, &Config::default()).expect("local");
    // The first shards are the slowest: a later one is done before an earlier one.
    // No shard is answered before three are asked for: the bound is reached, whatever the
    // scheduler does.
    let server = dripping_set(index, shards, 3, |i| {
        Duration::from_millis(5 * (SHARDS - i) as u64)
    });
    let mut o = test_options();
    o.max_concurrent_shards = 3;
    let client = Remote::new(o).expect("client");
    let mut seen = Vec::new();
    let check = client.check_with(
        &server.url("/set/model.safetensors.index.json"),
        &Config::default(),
        Depth::Header,
        &mut |name, _, _| seen.push(name.to_owned()),
    );
    let got = match check.outcome {
        Ok(Found::Index(i)) => i,
        other => panic!("{}", short(&other, 500)),
    };
    assert_eq!(rows(&got.report), rows(&local));
    assert!(got.report.is_valid());
    assert_eq!(seen, want);
    let names: Vec<&str> = got.shards.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, want);
    let per_shard: u32 = got.shards.iter().map(|(_, c)| c.requests).sum();
    assert_eq!(check.cost.requests, 1 + per_shard);
    // The server counts a request in flight until just before its last byte, so it never
    // sees more than the client had: exactly the bound (the barrier makes three meet).
    assert_eq!(server.most_in_flight(), 3);
}

/// Issue 34: the sets checked at once share one pool of shard fetchers. Each set fetches a
/// shard at a time on its own and more only with helpers of the client's pool
/// (`shard_helpers`), so two sets of up to 4 shards at a time, with 2 helpers, have 2 + 2
/// shard requests in flight, never more (before the pool, 4 + 4); and a set done gives its
/// helpers back, so a set checked afterwards has them all. Counted in the server, which
/// answers no shard before the bound is reached (a barrier, with a generous hang guard); to
/// show that the bound is not passed, a server that holds the requests until one more than
/// the bound arrive, or 2 s: the bound is asserted whatever the machine's load, and a
/// client past it would have 8 requests held.
#[test]
fn the_sets_checked_at_once_share_one_pool_of_shard_helpers() {
    const SHARDS: usize = 8;
    let (index, shards) = many(SHARDS);
    let mut o = test_options();
    o.max_concurrent_shards = 4;
    o.shard_helpers = 2;
    let client = Remote::new(o).expect("client");
    let valid = |server: &Server, dir: &str| {
        let check = client.check(
            &server.url(&format!("/{dir}/model.safetensors.index.json")),
            &Config::default(),
            Depth::Header,
        );
        match &check.outcome {
            Ok(Found::Index(i)) => {
                assert!(i.report.is_valid(), "{:?}", i.report.errors());
                assert_eq!(i.shards.len(), SHARDS);
            }
            other => panic!("{}", short(other, 500)),
        }
    };
    // Two sets at once: their own worker each and the pool's two helpers.
    let server = dripping_set(index.clone(), shards.clone(), 4, |_| Duration::ZERO);
    std::thread::scope(|s| {
        s.spawn(|| valid(&server, "a"));
        s.spawn(|| valid(&server, "b"));
    });
    let shard_requests = server.log().iter().filter(|l| is_shard(&l.request)).count();
    assert_eq!(shard_requests, 2 * SHARDS);
    assert_eq!(server.most_in_flight(), 2 + 2);
    let server = holding_set(
        index.clone(),
        shards.clone(),
        2 + 2 + 1,
        Duration::from_secs(2),
        |_| Duration::ZERO,
    );
    std::thread::scope(|s| {
        s.spawn(|| valid(&server, "a"));
        s.spawn(|| valid(&server, "b"));
    });
    assert!(
        server.most_in_flight() <= 2 + 2,
        "{}",
        server.most_in_flight()
    );
    // Then one set alone: both helpers came back.
    let server = dripping_set(index, shards, 3, |_| Duration::ZERO);
    valid(&server, "c");
    assert_eq!(server.most_in_flight(), 1 + 2);
}

/// Issue 34: a set whose names are all planned takes the helpers another set gives back.
/// Set A starts alone and takes the pool's 3 helpers (4 shards in flight, held by its server);
/// set B starts with none, plans its 8 names, and its first shard opens A's. A ends and gives
/// its helpers back: B reaches 4 in flight (its server answers none before 4 are, or 60 s: a
/// hang guard, below the client's read timeout in this test). Before, helpers were taken only while a set planned
/// names, so B fetched its shards one at a time to the end (at a real hub's latency the last
/// sets of a run of whole repositories were its tail).
#[test]
fn a_set_planned_in_full_takes_the_helpers_another_set_gives_back() {
    const SHARDS: usize = 8;
    let (index, shards) = many(SHARDS);
    let mut o = test_options();
    o.max_concurrent_shards = 4;
    o.shard_helpers = 3;
    // Hang guards only, far above anything a busy machine needs: B's first shard is held
    // until 4 are in flight, however long A takes to give its helpers back.
    o.read_timeout = Duration::from_secs(120);
    o.total_timeout = Duration::from_secs(300);
    o.stream_timeout = Some(Duration::from_secs(300));
    let client = Remote::new(o).expect("client");
    let go = Arc::new((Mutex::new(false), Condvar::new()));
    let (g, ia, sa) = (Arc::clone(&go), index.clone(), shards.clone());
    let a = Server::start_counting(is_shard, move |req| {
        let name = req.path().rsplit('/').next().unwrap_or_default();
        if name == "model.safetensors.index.json" {
            return serve_file(req, ia.as_bytes(), true);
        }
        let (open, turn) = &*g;
        if let Ok(open) = open.lock() {
            let _ = turn.wait_timeout_while(open, Duration::from_secs(30), |o| !*o);
        }
        match sa.iter().find(|(n, _)| n == name) {
            Some((_, b)) => serve_file(req, b, true),
            None => Reply::new(404),
        }
    });
    let b = holding_set(index, shards, 4, Duration::from_secs(60), |_| {
        Duration::ZERO
    });
    let valid = |set: &str, server: &Server| {
        let url = server.url("/set/model.safetensors.index.json");
        match &client
            .check(&url, &Config::default(), Depth::Header)
            .outcome
        {
            Ok(Found::Index(i)) => assert!(i.report.is_valid(), "{:?}", i.report.errors()),
            other => panic!("set {set}: {}", short(other, 500)),
        }
    };
    // Hang guards only: the counts are what is waited for.
    let until = |what: &str, done: &dyn Fn() -> bool| {
        let start = std::time::Instant::now();
        while !done() {
            assert!(start.elapsed() < Duration::from_secs(30), "{what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    std::thread::scope(|s| {
        s.spawn(|| valid("A", &a));
        until("set A's 4 shards in flight", &|| a.in_flight() == 4);
        s.spawn(|| valid("B", &b));
        until("set B's first shard", &|| b.in_flight() >= 1);
        let (open, turn) = &*go;
        *open.lock().expect("lock") = true;
        turn.notify_all();
    });
    assert_eq!(a.most_in_flight(), 1 + 3);
    assert_eq!(
        b.most_in_flight(),
        1 + 3,
        "set B took the helpers set A gave back"
    );
}

/// Shards whose headers together pass the budget of header bytes in flight wait for the
/// ones before them: memory follows the largest header plus the budget, not the number of
/// workers.
/// Whether a request asks for the rest of a header (a range past the first read).
fn rest(req: &Request) -> bool {
    req.header("range")
        .is_some_and(|r| !r.starts_with("bytes=0-"))
}

#[test]
fn large_headers_wait_for_the_budget() {
    let big = |name: &str| {
        let value = "x".repeat(600_000);
        serialize(
            &[TensorSpec::new(name, Dtype::F32, &[1], &[0u8; 4])],
            &[("pad", value.as_str())],
        )
        .expect("serialize")
    };
    let names: Vec<String> = (1..=4).map(|i| format!("big-{i}.safetensors")).collect();
    let index = format!("{{\"weight_map\":{{{}}}}}", weight_map(&names));
    let shards: Vec<(String, Vec<u8>)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), big(&format!("t{i}"))))
        .collect();
    let server = Server::start_counting(rest, move |req| {
        let name = req.path().trim_start_matches("/set/");
        if name == "model.safetensors.index.json" {
            return serve_file(req, index.as_bytes(), true);
        }
        match shards.iter().find(|(n, _)| n == name) {
            // The rest of each header comes slowly: 600 KB in about half a second.
            Some((_, b))
                if req
                    .header("range")
                    .is_some_and(|r| !r.starts_with("bytes=0-")) =>
            {
                serve_file(req, b, true).drip(60_000, Duration::from_millis(50))
            }
            Some((_, b)) => serve_file(req, b, true),
            None => Reply::new(404),
        }
    });
    let mut o = test_options();
    o.max_concurrent_shards = 4;
    o.shard_header_budget = 1_000_000;
    let client = Remote::new(o).expect("client");
    let check = client.check(
        &server.url("/set/model.safetensors.index.json"),
        &Config::default(),
        Depth::Header,
    );
    match &check.outcome {
        Ok(Found::Index(i)) => assert!(i.report.is_valid(), "{:?}", i.report.errors()),
        other => panic!("{}", short(other, 500)),
    }
    let log = server.log();
    assert_eq!(log.iter().filter(|l| rest(&l.request)).count(), 4);
    // Four workers, but the rest of at most two headers at once: one within the budget, and
    // the one the checker wants next (which never waits, so the set cannot stall).
    assert!(server.most_in_flight() <= 2, "{}", server.most_in_flight());
}
