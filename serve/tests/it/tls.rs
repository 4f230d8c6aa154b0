//! The HTTP API over TLS with client certificates: certificates made in the test (a CA, the
//! service's, a client's, and one from another CA), a client presenting one or not.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use stcheck_testkit::http::{Ca, Leaf};

use crate::support::{self, connect, Response};

fn model() -> Vec<u8> {
    std::fs::read(support::root().join("examples/model.safetensors")).expect("example")
}

/// A client trusting `ca_pem`, presenting `cert` when given.
fn client(ca_pem: &str, cert: Option<&Leaf>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).expect("CA PEM"))
        .expect("root");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let b = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocols")
        .with_root_certificates(roots);
    Arc::new(match cert {
        Some(l) => b
            .with_client_auth_cert(vec![l.cert.clone()], l.key.clone_key())
            .expect("client cert"),
        None => b.with_no_client_auth(),
    })
}

/// An HTTPS request on a connection closed after it: the response, or why there is none.
fn https(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    method: &str,
    target: &str,
    body: &[u8],
) -> Result<Response, String> {
    let name = "localhost".try_into().expect("name");
    let conn = rustls::ClientConnection::new(config, name).map_err(|e| e.to_string())?;
    let mut tls = rustls::StreamOwned::new(conn, connect(addr));
    let mut all = format!(
        "{method} {target} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\
         content-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    all.extend_from_slice(body);
    tls.write_all(&all).map_err(|e| format!("write: {e}"))?;
    let mut raw = Vec::new();
    tls.read_to_end(&mut raw)
        .map_err(|e| format!("read: {e}"))?;
    if !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        return Err(format!("no response: {:?}", String::from_utf8_lossy(&raw)));
    }
    Ok(support::read_response(&mut &raw[..]))
}

#[test]
fn off_loopback_with_client_certificates_instead_of_a_token() {
    let ca = Ca::new("stcheck serve test CA");
    let service = ca.issue(&["localhost", "127.0.0.1"]);
    let caller = ca.issue(&["caller.example"]);
    let stranger = Ca::new("another CA").issue(&["caller.example"]);
    let cert = support::scratch("tls-cert.pem", &service.cert_pem);
    let key = support::scratch("tls-key.pem", &service.key_pem);
    let client_ca = support::scratch("tls-client-ca.pem", ca.pem());
    let (c, k, a) = (cert.clone(), key.clone(), client_ca.clone());
    // Every address, no token: allowed because callers need a certificate.
    let run = support::start_with(move |s| {
        s.clamd = None;
        s.http = Some(SocketAddr::from(([0, 0, 0, 0], 0)));
        s.tls_cert = Some(c);
        s.tls_key = Some(k);
        s.tls_client_ca = Some(a);
    });
    let at = SocketAddr::from(([127, 0, 0, 1], run.http().port()));

    let valid = https(
        at,
        client(ca.pem(), Some(&caller)),
        "POST",
        "/v1/check",
        &model(),
    )
    .expect("answered");
    assert_eq!(valid.status, 200);
    assert_eq!(valid.json()["data"]["status"], "valid");
    let mut invalid = model();
    invalid.push(0);
    let r = https(
        at,
        client(ca.pem(), Some(&caller)),
        "POST",
        "/v1/check",
        &invalid,
    )
    .expect("answered");
    assert_eq!(r.status, 422);

    // No certificate, one from another CA, plain HTTP: no request is read.
    let none = https(at, client(ca.pem(), None), "POST", "/v1/check", &model());
    assert!(none.is_err(), "answered without a certificate");
    let other = https(
        at,
        client(ca.pem(), Some(&stranger)),
        "GET",
        "/metrics",
        b"",
    );
    assert!(other.is_err(), "answered a certificate of another CA");
    let mut plain = connect(at);
    let _ = plain.write_all(b"GET /metrics HTTP/1.1\r\nhost: t\r\n\r\n");
    let mut got = Vec::new();
    let _ = plain.read_to_end(&mut got);
    assert!(
        !got.starts_with(b"HTTP/"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
    run.until("three handshakes refused", |s| s.tls_refused() == 3);
    assert_eq!(run.server.verdicts(), (1, 1, 0));
    let metrics = https(at, client(ca.pem(), Some(&caller)), "GET", "/metrics", b"")
        .expect("metrics")
        .text();
    assert!(
        metrics.contains("stcheck_tls_refused_total 3\n"),
        "{metrics}"
    );
    run.stop();

    // Off loopback with TLS but no client CA and no token: it does not start; nor with a CA
    // and no certificate of its own.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut s = support::settings();
    s.http = Some(SocketAddr::from(([0, 0, 0, 0], 0)));
    s.tls_cert = Some(cert.clone());
    s.tls_key = Some(key.clone());
    let e = rt
        .block_on(stcheck_serve::Server::start(s))
        .expect_err("refused");
    assert!(e.contains("--tls-client-ca"), "{e}");
    let mut s = support::settings();
    s.tls_client_ca = Some(client_ca.clone());
    let e = rt
        .block_on(stcheck_serve::Server::start(s))
        .expect_err("refused");
    assert!(e.contains("--tls-cert"), "{e}");
    for f in [cert, key, client_ca] {
        let _ = std::fs::remove_file(f);
    }
}

/// Plain HTTP: the answer, or `None` when what came back is not HTTP (a TLS alert, nothing).
fn plain(at: SocketAddr) -> Option<u16> {
    let mut s = connect(at);
    let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n");
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    got.starts_with(b"HTTP/")
        .then(|| support::read_response(&mut &got[..]).status)
}

/// One more `GET /healthz` on a keep-alive connection: whether it was answered `ok`.
fn again(s: &mut std::net::TcpStream) -> bool {
    let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nhost: t\r\n\r\n");
    let mut got = Vec::new();
    let mut b = [0u8; 256];
    while !(got.windows(4).any(|w| w == b"\r\n\r\n") && got.ends_with(b"ok\n")) {
        match s.read(&mut b) {
            Ok(0) | Err(_) => return false,
            Ok(n) => got.extend_from_slice(&b[..n]),
        }
    }
    got.starts_with(b"HTTP/1.1 200")
}

#[test]
fn a_reload_turns_tls_on_and_off_for_new_connections() {
    let ca = Ca::new("stcheck serve reload CA");
    let service = ca.issue(&["localhost", "127.0.0.1"]);
    let cert = support::scratch("reload-cert.pem", &service.cert_pem);
    let key = support::scratch("reload-key.pem", &service.key_pem);
    let config = support::scratch("reload-tls.toml", "");
    let run = support::start(crate::lifecycle::from_args(&[
        "--config",
        config.to_str().expect("UTF-8"),
        "--http",
        "127.0.0.1:0",
    ]));
    let at = run.http();
    assert_eq!(plain(at), Some(200));
    let mut before = connect(at);
    assert!(again(&mut before));

    let on = format!("tls-cert = {cert:?}\ntls-key = {key:?}\n");
    std::fs::write(&config, on).expect("config");
    run.server.reload().expect("reloaded");
    // New connections speak TLS; plain HTTP is refused; the connection open keeps its own.
    let valid = https(at, client(ca.pem(), None), "POST", "/v1/check", &model())
        .expect("answered over TLS");
    assert_eq!(valid.status, 200);
    assert_eq!(plain(at), None);
    run.until("the plain connection refused", |s| s.tls_refused() == 1);
    assert!(again(&mut before), "the open connection keeps plain HTTP");

    std::fs::write(&config, "").expect("config");
    run.server.reload().expect("reloaded");
    assert_eq!(plain(at), Some(200));
    assert!(https(at, client(ca.pem(), None), "GET", "/healthz", b"").is_err());
    assert_eq!(run.server.verdicts(), (1, 0, 0));
    run.stop();
    for f in [cert, key, config] {
        let _ = std::fs::remove_file(f);
    }
}
