//! HTTPS on loopback: a CA and a server certificate (for `localhost` and `127.0.0.1`) are made
//! at test time; the client trusts them only when given the CA with
//! `RemoteOptions::ca_bundle_pem`, and then gives the local verdicts.
#![cfg(feature = "remote")]

use std::sync::Arc;

use crate::test_options;
use stcheck::Config;
use stcheck_gate::remote::{Depth, ErrorKind, Found, Remote};
use stcheck_testkit::corpus::Manifest;
use stcheck_testkit::http::{pki, serve_file, Reply, Server};
use stcheck_testkit::short;

#[test]
fn https_with_a_ca_given_at_run_time() {
    let (ca_pem, config) = pki();
    let files = Arc::new(Manifest::load().file_bytes());
    let served = Arc::clone(&files);
    let server = Server::start_tls(config, move |req| {
        let path = req.path().trim_start_matches('/');
        match served.iter().find(|(p, _)| p == path) {
            Some((_, bytes)) => serve_file(req, bytes, true),
            None => Reply::new(404),
        }
    });
    assert!(server.url("/").starts_with("https://127.0.0.1:"));

    let trusting = Remote::new(test_options().ca_bundle_pem(ca_pem.into_bytes())).expect("client");
    let config = Config::default();
    // A sample of the corpus (every tenth file), both host names the certificate names.
    for (i, (path, bytes)) in files.iter().enumerate().step_by(10) {
        let url = if i % 20 == 0 {
            server.url(&format!("/{path}"))
        } else {
            server.url_as("localhost", &format!("/{path}"))
        };
        let check = trusting.check(&url, &config, Depth::Header);
        let got = match &check.outcome {
            Ok(Found::File(f)) => f
                .checked
                .verdict
                .as_ref()
                .map(|_| ())
                .map_err(|e| (e.rule(), e.offset())),
            other => panic!("{path}: {}", short(other, 300)),
        };
        let want = stcheck::validate(bytes, &config)
            .map(|_| ())
            .map_err(|e| (e.rule(), e.offset()));
        assert_eq!(got, want, "{path}");
    }

    // The built-in roots do not know the test CA: no verdict.
    let default = Remote::new(test_options()).expect("client");
    let check = default.check(
        &server.url(&format!("/{}", files[0].0)),
        &config,
        Depth::Header,
    );
    let e = check.outcome.expect_err("untrusted certificate");
    assert_eq!(e.kind(), ErrorKind::Tls, "{e}");
    assert!(e.message().contains("TLS"), "{e}");

    // A bundle that holds no certificate is refused up front.
    let e = Remote::new(test_options().ca_bundle_pem(b"not pem".to_vec())).expect_err("bad");
    assert_eq!(e.kind(), ErrorKind::Setup);
}
