//! `stcheck_gate::remote` gives the local verdict, rule, offset, tensor and message on every file of
//! the golden corpus, served over loopback HTTP with and without range support, header-level
//! and deep, within the request and byte budget.
#![cfg(feature = "remote")]

use std::sync::Arc;

use stcheck::{Config, Error, Warning};
use stcheck_gate::remote::{Depth, Found, Remote, RemoteOptions, UrlCheck};
use stcheck_testkit::corpus::Manifest;
use stcheck_testkit::http;
use stcheck_testkit::http::{serve_file, Server};
use stcheck_testkit::short;

/// What is compared: a valid file's tensor names and warnings, or the error's rule, offset,
/// tensor and message.
type Outcome = Result<(Vec<String>, Vec<Warning>), (String, u64, Option<String>, String)>;

fn of_error(e: &Error) -> (String, u64, Option<String>, String) {
    (
        e.rule().id().to_owned(),
        e.offset(),
        e.tensor().map(str::to_owned),
        e.message().to_owned(),
    )
}

fn local(bytes: &[u8], config: &Config, deep_scan: bool) -> (Outcome, Option<[u8; 32]>) {
    let config = if deep_scan {
        config.clone().deep(true).sha256(true)
    } else {
        config.clone()
    };
    let c = stcheck::Checker::check_slice(&config, bytes);
    let sha = c.sha256;
    let outcome = match c.verdict {
        Ok(r) => Ok((
            r.tensors().map(|t| t.name.to_owned()).collect(),
            r.warnings().to_vec(),
        )),
        Err(e) => Err(of_error(&e)),
    };
    (outcome, sha)
}

fn remote(check: &UrlCheck, path: &str) -> (Outcome, Option<[u8; 32]>, Option<u64>) {
    let file = match &check.outcome {
        Ok(Found::File(f)) => f,
        Ok(Found::Index(_)) => panic!("{path}: taken for an index"),
        Err(e) => panic!("{path}: could not check: {e}"),
    };
    let outcome = match &file.checked.verdict {
        Ok(r) => Ok((
            r.tensors().map(|t| t.name.to_owned()).collect(),
            r.warnings().to_vec(),
        )),
        Err(e) => Err(of_error(e)),
    };
    let sha = file.checked.sha256;
    (outcome, sha, file.checked.file_len)
}

/// `assert_eq!`, with values cut short in the message (a name can be 65,536 characters).
fn same(got: &Outcome, want: &Outcome, what: &str) {
    assert!(
        got == want,
        "{what}: remote {} local {}",
        short(got, 400),
        short(want, 400)
    );
}

/// Corpus files: (path, bytes).
type Files = Arc<Vec<(String, Vec<u8>)>>;

/// The corpus under `/corpus/<path>`, with or without ranges.
fn corpus_server(ranges: bool) -> (Server, Files) {
    let files = Arc::new(Manifest::load().file_bytes());
    let served = Arc::clone(&files);
    let server = Server::start(move |req| {
        let path = req.path().trim_start_matches("/corpus/");
        match served.iter().find(|(p, _)| p == path) {
            Some((_, bytes)) => serve_file(req, bytes, ranges),
            None => http::Reply::new(404),
        }
    });
    (server, files)
}

/// The reference verdict without the tensor names its messages quote: for tensors that share
/// an offset, which one the crate names depends on its hash map's random order.
fn reference_verdict(v: &Option<stcheck::reference::Verdict>) -> String {
    format!("{v:?}")
        .split('`')
        .step_by(2)
        .collect::<Vec<_>>()
        .join("`_`")
}

/// The header length N from the length field, if it has one.
fn header_len(bytes: &[u8]) -> Option<u64> {
    let field: [u8; 8] = bytes.get(..8)?.try_into().ok()?;
    Some(u64::from_le_bytes(field))
}

fn header_level(ranges: bool) {
    let (server, files) = corpus_server(ranges);
    assert!(files.len() >= 150, "the corpus has {} files", files.len());
    let client = Remote::new(RemoteOptions::default()).expect("client");
    let mut multi_request = 0;
    for config in [
        Config::default(),
        Config::default().deny_warnings(true),
        Config::default().reference(true),
    ] {
        for (path, bytes) in files.iter() {
            let check = client.check(
                &server.url(&format!("/corpus/{path}")),
                &config,
                Depth::Header,
            );
            let (got, _, size) = remote(&check, path);
            let (want, _) = local(bytes, &config, false);
            same(&got, &want, &format!("{path} (ranges: {ranges})"));
            if config.reference {
                // The reference crate's verdict, from the header and the announced length
                // alone, is its verdict on the whole file.
                let Ok(Found::File(file)) = &check.outcome else {
                    panic!("{path}: not a file check")
                };
                let whole = stcheck::Checker::check_slice(&config, bytes);
                assert!(
                    file.checked.reference.is_some(),
                    "{path}: no reference verdict"
                );
                assert_eq!(
                    reference_verdict(&file.checked.reference),
                    reference_verdict(&whole.reference),
                    "{path} (ranges: {ranges})"
                );
            }
            assert_eq!(size, Some(bytes.len() as u64), "{path}");

            // The budget: <= 2 requests, and <= header + 64 KiB of body.
            let len = bytes.len() as u64;
            let n = header_len(bytes).unwrap_or(0);
            let head = 8u64.saturating_add(n).min(len);
            let cost = check.cost;
            assert!(cost.requests <= 2, "{path}: {cost:?}");
            assert!(
                cost.bytes <= head.max(8) + 64 * 1024,
                "{path}: {cost:?} for a header of {n} bytes"
            );
            if head <= 64 * 1024 {
                // A header that fits the first fetch costs one request and at most 64 KiB.
                assert_eq!(cost.requests, 1, "{path}: {cost:?}");
                assert!(cost.bytes <= (64 * 1024).min(len), "{path}: {cost:?}");
            } else {
                multi_request += 1;
            }
            assert_eq!((cost.redirects, cost.retries), (0, 0), "{path}");
        }
    }
    // The corpus has headers longer than the first fetch (a 65,536-character name), so the
    // second request is exercised.
    assert!(multi_request > 0);
}

#[test]
fn header_level_equals_local_on_every_corpus_file_with_ranges() {
    header_level(true);
}

#[test]
fn header_level_equals_local_on_every_corpus_file_without_ranges() {
    header_level(false);
}

#[test]
fn deep_equals_local_on_every_corpus_file() {
    let (server, files) = corpus_server(true);
    let client = Remote::new(RemoteOptions::default()).expect("client");
    for config in [
        Config::default(),
        Config::default().deny_warnings(true),
        Config::default().deny_nonfinite(true),
    ] {
        for (path, bytes) in files.iter() {
            let check = client.check(
                &server.url(&format!("/corpus/{path}")),
                &config,
                Depth::Deep { sha256: true },
            );
            let (got, sha, _) = remote(&check, path);
            let (want, want_sha) = local(bytes, &config, true);
            same(&got, &want, path);
            assert_eq!(sha, want_sha, "{path}");
            // One request, and never more than the file.
            assert_eq!(check.cost.requests, 1, "{path}");
            assert!(check.cost.bytes <= bytes.len() as u64, "{path}");
        }
    }
}
