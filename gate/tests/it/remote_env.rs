//! `RemoteOptions::from_env`: `HF_ENDPOINT` points `hf://` addresses at another hub (here a
//! loopback server) and `HF_TOKEN` is sent to it. It sets the process environment, under
//! `env_lock`.
#![cfg(feature = "remote")]

use stcheck::Config;
use stcheck_gate::remote::{Depth, Found, Remote, RemoteOptions};
use stcheck_testkit::http::{serve_file, zeros_file, Reply, Server};

#[test]
fn hf_endpoint_and_token_from_the_environment() {
    let _env = crate::env_lock();
    let file = zeros_file(3);
    let server = Server::start(move |req| match req.path() {
        "/mirror/org/repo/resolve/main/model.safetensors" => serve_file(req, &file, true),
        _ => Reply::new(404),
    });
    std::env::set_var("HF_ENDPOINT", server.url("/mirror/"));
    std::env::set_var("HF_TOKEN", "hf_from_the_environment");
    let options = RemoteOptions::from_env();
    assert!(!format!("{options:?}").contains("hf_from_the_environment"));
    let client = Remote::new(options).expect("client");
    let check = client.check(
        "hf://org/repo/model.safetensors",
        &Config::default(),
        Depth::Header,
    );
    match &check.outcome {
        Ok(Found::File(f)) => assert!(f.checked.verdict.is_ok()),
        other => panic!("{other:?}"),
    }
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(
        reqs[0].header("authorization"),
        Some("Bearer hf_from_the_environment")
    );

    // Another host: no token.
    server.clear_log();
    let check = client.check(
        &server.url_as(
            "localhost",
            "/mirror/org/repo/resolve/main/model.safetensors",
        ),
        &Config::default(),
        Depth::Header,
    );
    assert!(check.outcome.is_ok());
    assert_eq!(server.requests()[0].header("authorization"), None);
}
