//! Why the console could not start or keep serving.

use std::path::PathBuf;

/// A refusal to start, or a failure of the listening socket.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// The public URL is not `http://HOST[:PORT]` or `https://HOST[:PORT]`.
    #[error("invalid public URL {url:?}: {why}; give one like https://console.example.org")]
    PublicUrl { url: String, why: &'static str },
    /// A TLS file could not be read or holds nothing usable.
    #[error("cannot use TLS file {}: {why}", .path.display())]
    TlsFile { path: PathBuf, why: String },
    /// The certificate and key do not make a TLS configuration.
    #[error("invalid TLS configuration: {0}")]
    Tls(String),
    /// Serving stopped on an I/O error.
    #[error("serving the console failed: {0}")]
    Io(#[from] std::io::Error),
}

/// The HTTP status a store refusal maps to, the same for pages and API: 400 invalid input,
/// 403 a missing role, 404 not found (also outside the operator's bottles: no leak), 409 a
/// state that no longer allows it, 503 a busy database; anything else is the store's own
/// failure, 500.
pub(crate) fn status_of(err: &supervise_store::StoreError) -> http::StatusCode {
    use http::StatusCode;
    use supervise_store::StoreError as E;
    match err {
        E::Invalid { .. } | E::AmbiguousId(_) => StatusCode::BAD_REQUEST,
        E::Forbidden { .. } => StatusCode::FORBIDDEN,
        E::ProposalNotFound(_)
        | E::BottleNotFound(_)
        | E::GrantNotFound(_)
        | E::OperatorNotFound(_) => StatusCode::NOT_FOUND,
        E::NotPending { .. }
        | E::GrantEnded { .. }
        | E::BottleExists(_)
        | E::IpTaken { .. }
        | E::OperatorExists(_) => StatusCode::CONFLICT,
        E::SignInRefused(_) => StatusCode::FORBIDDEN,
        E::Busy => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}
