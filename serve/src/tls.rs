//! TLS for the HTTP API (rustls): the service's certificate and key, and optionally the CAs
//! whose client certificates callers must present (then a caller without one is refused in
//! the handshake, before any request is read).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

use crate::settings::Settings;

/// The TLS configuration the settings ask for: `None` without `--tls-cert`; an error when the
/// files cannot be read or do not make a configuration.
pub(crate) fn config(s: &Settings) -> Result<Option<Arc<ServerConfig>>, String> {
    let (cert, key) = match (&s.tls_cert, &s.tls_key) {
        (None, None) if s.tls_client_ca.is_some() => {
            return Err("--tls-client-ca needs --tls-cert and --tls-key".into())
        }
        (None, None) => return Ok(None),
        (Some(c), Some(k)) => (c, k),
        (Some(_), None) => return Err("--tls-cert needs --tls-key".into()),
        (None, Some(_)) => return Err("--tls-key needs --tls-cert".into()),
    };
    if s.http.is_none() {
        return Err("--tls-cert: TLS is for the HTTP API, and there is no --http".into());
    }
    let chain = certificates(cert, "--tls-cert")?;
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("--tls-key {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let builder = match &s.tls_client_ca {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let mut roots = RootCertStore::empty();
            for c in certificates(path, "--tls-client-ca")? {
                roots
                    .add(c)
                    .map_err(|e| format!("--tls-client-ca {}: {e}", path.display()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("--tls-client-ca {}: {e}", path.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Some(Arc::new(config)))
}

/// The certificates of a PEM file, at least one.
fn certificates(path: &Path, flag: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let all = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    if all.is_empty() {
        return Err(format!("{flag} {}: no certificate in it", path.display()));
    }
    Ok(all)
}
