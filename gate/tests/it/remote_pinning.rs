//! Pinning on every response: a file or set asked for at a commit gets a verdict only if every
//! response of the hub (each range request of a long header, the index and each shard of a
//! set) names that commit in `X-Repo-Commit`; one naming another is `commit_moved`, never a
//! verdict. The server counts what it answers; nothing depends on timing.
#![cfg(feature = "remote")]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::test_options;
use stcheck::write::{serialize, TensorSpec};
use stcheck::{Config, Dtype, ReadError};
use stcheck_gate::remote::{Depth, ErrorKind, Found, Remote};
use stcheck_testkit::http::{serve_file, Reply, Server};
use stcheck_testkit::short;

fn pinned() -> String {
    "ab".repeat(20)
}

fn other() -> String {
    "cd".repeat(20)
}

/// A valid file whose header is longer than the first fetch (two range requests).
fn long_header_file() -> Vec<u8> {
    let value = "x".repeat(100_000);
    serialize(
        &[TensorSpec::new("w", Dtype::F32, &[2], &[0u8; 8])],
        &[("note", value.as_str())],
    )
    .expect("serialize")
}

fn small(name: &str) -> Vec<u8> {
    serialize(&[TensorSpec::new(name, Dtype::F32, &[1], &[0u8; 4])], &[]).expect("serialize")
}

/// Files by path under `/org/repo/resolve/{pinned}/`; the `moved`-th response (1-based, in
/// the order answered) names another commit, every other one the pinned commit.
fn hub(files: BTreeMap<String, Vec<u8>>, moved: u32) -> (Server, Arc<AtomicU32>) {
    let answered = Arc::new(AtomicU32::new(0));
    let n = Arc::clone(&answered);
    let server = Server::start(move |req| {
        let prefix = format!("/org/repo/resolve/{}/", pinned());
        let Some(bytes) = req.path().strip_prefix(&prefix).and_then(|p| files.get(p)) else {
            return Reply::new(404);
        };
        let k = n.fetch_add(1, Ordering::SeqCst) + 1;
        let commit = if k == moved { other() } else { pinned() };
        serve_file(req, bytes, true).header("X-Repo-Commit", commit)
    });
    (server, answered)
}

fn client(server: &Server) -> Remote {
    Remote::new(test_options().hf_endpoint(&server.url(""))).expect("client")
}

fn assert_moved(outcome: &Result<Found, stcheck_gate::remote::RemoteError>) {
    match outcome {
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::CommitMoved, "{e}");
            assert!(e.message().contains(&other()), "{e}");
            assert_eq!(ReadError::from(e.clone()).code(), "commit_moved");
        }
        Ok(found) => panic!("a verdict on another commit's bytes: {}", short(found, 300)),
    }
}

#[test]
fn the_second_range_request_of_a_long_header_is_compared_with_the_commit() {
    let files = BTreeMap::from([("model.safetensors".to_owned(), long_header_file())]);
    let address = format!("hf://org/repo@{}/model.safetensors", pinned());
    // Every response of the pinned commit: valid, in two requests.
    let (server, answered) = hub(files.clone(), 0);
    let check = client(&server).check(&address, &Config::default(), Depth::Header);
    match &check.outcome {
        Ok(Found::File(f)) => assert!(f.checked.verdict.is_ok(), "{:?}", f.checked.verdict),
        other => panic!("{}", short(other, 300)),
    }
    assert_eq!(answered.load(Ordering::SeqCst), 2);
    // The second answered from another commit: no verdict.
    let (server, answered) = hub(files, 2);
    let check = client(&server).check(&address, &Config::default(), Depth::Header);
    assert_eq!(answered.load(Ordering::SeqCst), 2);
    assert_moved(&check.outcome);
}

#[test]
fn an_unpinned_address_is_held_to_the_commit_of_its_first_response() {
    let files = BTreeMap::from([("model.safetensors".to_owned(), long_header_file())]);
    let (server, _) = hub(files, 2);
    let address = format!(
        "{}/org/repo/resolve/{}/model.safetensors",
        server.url(""),
        pinned()
    );
    let check = client(&server).check(&address, &Config::default(), Depth::Header);
    assert_moved(&check.outcome);
}

#[test]
fn a_shard_served_from_another_commit_makes_the_set_commit_moved() {
    let index = r#"{"metadata":{},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}"#;
    let files = BTreeMap::from([
        ("model.safetensors.index.json".to_owned(), index.into()),
        ("model-00001-of-00002.safetensors".to_owned(), small("a")),
        ("model-00002-of-00002.safetensors".to_owned(), small("b")),
    ]);
    let address = format!("hf://org/repo@{}/model.safetensors.index.json", pinned());
    let (server, answered) = hub(files.clone(), 0);
    let c = client(&server);
    let check = c.check(&address, &Config::default(), Depth::Header);
    match &check.outcome {
        Ok(Found::Index(i)) => assert!(i.report.is_valid(), "{:?}", i.report.errors()),
        other => panic!("{}", short(other, 300)),
    }
    assert_eq!(answered.load(Ordering::SeqCst), 3);
    // The index first, then the shards: whichever shard is answered second is moved.
    for depth in [Depth::Header, Depth::Deep { sha256: true }] {
        let (server, _) = hub(files.clone(), 2);
        let check = client(&server).check(&address, &Config::default(), depth);
        assert_moved(&check.outcome);
    }
}
