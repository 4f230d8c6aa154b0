//! Credentials in addresses never reach any output (issue 19): a secret planted in the user
//! information, the query or the fragment of a URL is looked for in the text lines, JSON Lines
//! (with `-v`), SARIF and standard error, for a valid file, an invalid one, a sharded set, a
//! server error and a refused address, against a loopback server.
#![cfg(feature = "remote")]

use std::process::Command;

use stcheck_testkit::http::{serve_file, zeros_file, Reply, Server};

fn bin() -> std::path::PathBuf {
    std::env::var_os("STCHECK_SECRETS_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_BIN_EXE_stcheck")))
}

/// The planted secrets; none may appear in any output.
const SECRETS: [&str; 4] = [
    "hunter2pass",
    "alicesecretuser",
    "SIGabc123secret",
    "fragsecret99",
];

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(bin())
        .args(args)
        .env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT")
        .output()
        .expect("run stcheck");
    let all = format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().expect("exit code"), all)
}

/// The text around the first `needle` in `all` (SARIF logs are long).
fn around(all: &str, needle: &str) -> String {
    let at = all.find(needle).unwrap_or(0);
    let chars: Vec<char> = all.chars().collect();
    let at = all[..at].chars().count();
    chars[at.saturating_sub(300)..(at + 300).min(chars.len())]
        .iter()
        .collect()
}

fn shard(name: &str) -> Vec<u8> {
    stcheck::write::serialize(
        &[stcheck::write::TensorSpec::new(
            name,
            stcheck::Dtype::F32,
            &[1],
            &[0; 4],
        )],
        &[],
    )
    .expect("shard")
}

fn server() -> Server {
    let good = zeros_file(2);
    let mut bad = zeros_file(2);
    bad.push(0);
    let index = br#"{"metadata":{"total_size":8},"weight_map":{"a":"m-1.safetensors","b":"m-2.safetensors"}}"#.to_vec();
    let (s1, s2) = (shard("a"), shard("b"));
    Server::start(move |req| match req.path() {
        "/good.safetensors" => serve_file(req, &good, true),
        "/bad.safetensors" => serve_file(req, &bad, true),
        "/set/model.safetensors.index.json" => serve_file(req, &index, true),
        "/set/m-1.safetensors" => serve_file(req, &s1, true),
        "/set/m-2.safetensors" => serve_file(req, &s2, true),
        _ => Reply::new(404),
    })
}

#[test]
fn no_output_format_shows_a_secret_of_an_address() {
    let srv = server();
    let port = srv.port();
    let query = "?X-Amz-Signature=SIGabc123secret&X-Amz-Credential=SIGabc123secret";
    let urls = [
        format!("http://127.0.0.1:{port}/good.safetensors{query}"),
        format!("http://127.0.0.1:{port}/bad.safetensors{query}#fragsecret99"),
        format!("http://127.0.0.1:{port}/set/model.safetensors.index.json{query}"),
        format!("http://127.0.0.1:{port}/missing.safetensors{query}"),
        format!("http://alicesecretuser:hunter2pass@127.0.0.1:{port}/good.safetensors"),
        format!("http://alicesecretuser:hunter2pass@127.0.0.1:1/x.safetensors.index.json{query}"),
        format!("hf://org/repo/x.safetensors{query}"),
    ];
    let formats: [&[&str]; 6] = [
        &[],
        &["-v"],
        &["--json"],
        &["--json", "-v", "--deep", "--sha256"],
        &["--format", "sarif"],
        &["--compare-reference", "-q"],
    ];
    for format in formats {
        for url in &urls {
            let mut args: Vec<&str> = format.to_vec();
            args.push(url);
            let (code, all) = run(&args);
            assert!(code == 0 || code == 1 || code == 2, "{args:?}: exit {code}");
            for secret in SECRETS {
                assert!(
                    !all.contains(secret),
                    "{args:?} shows the secret {secret:?}:\n{}",
                    around(&all, secret)
                );
            }
            let named = all.contains(&format!("127.0.0.1:{port}/")) || all.contains("hf://");
            if url.contains('?') && !url.contains('@') && !format.contains(&"sarif") && named {
                assert!(
                    all.contains("?..."),
                    "{args:?}: the query is not shown as ?...:\n{all}"
                );
            }
        }
        // All at once, in one run (the summary, the ordering, the shards).
        let mut args: Vec<&str> = format.to_vec();
        args.extend(urls.iter().map(String::as_str));
        let (_, all) = run(&args);
        for secret in SECRETS {
            assert!(
                !all.contains(secret),
                "{format:?}, every URL, shows {secret:?}:\n{}",
                around(&all, secret)
            );
        }
    }
}
