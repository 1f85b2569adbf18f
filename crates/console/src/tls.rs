//! `--tls-cert` / `--tls-key`: the PEM files read once at start into a rustls acceptor
//! (the workspace's rustls with the ring provider, TLS 1.2 and 1.3).

use std::sync::Arc;

use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use crate::config::TlsFiles;
use crate::error::ConsoleError;

/// Reads the certificate chain and key; refuses an empty chain, a missing key or a key that
/// does not match.
pub(crate) fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor, ConsoleError> {
    let file_err = |path: &std::path::Path, why: String| ConsoleError::TlsFile {
        path: path.to_owned(),
        why,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| file_err(&files.cert, e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| file_err(&files.cert, e.to_string()))?;
    if certs.is_empty() {
        return Err(file_err(&files.cert, "no certificate in the file".into()));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| file_err(&files.key, e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ConsoleError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| ConsoleError::Tls(e.to_string()))?;
    let mut config = config;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
