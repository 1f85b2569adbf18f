//! Why the console could not start or keep serving, and why a page could not be served.

use std::path::PathBuf;

use http::StatusCode;
use supervise_store::StoreError;

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
pub(crate) fn status_of(err: &StoreError) -> StatusCode {
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

/// A page that could not be served: no session (to the sign-in page), or an error page.
#[derive(Debug)]
pub(crate) enum PageError {
    SignIn,
    Status {
        status: StatusCode,
        title: &'static str,
        message: String,
    },
}

impl PageError {
    pub(crate) fn forbidden(message: impl Into<String>) -> PageError {
        PageError::Status {
            status: StatusCode::FORBIDDEN,
            title: "Not allowed",
            message: message.into(),
        }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> PageError {
        PageError::Status {
            status: StatusCode::BAD_REQUEST,
            title: "Not accepted",
            message: message.into(),
        }
    }

    pub(crate) fn not_found(message: impl Into<String>) -> PageError {
        PageError::Status {
            status: StatusCode::NOT_FOUND,
            title: "Not found",
            message: message.into(),
        }
    }
}

impl From<StoreError> for PageError {
    fn from(err: StoreError) -> PageError {
        let status = status_of(&err);
        if status.is_server_error() {
            tracing::warn!(error = %err, "a console request failed in the store");
        }
        let title = match status {
            StatusCode::BAD_REQUEST => "Not accepted",
            StatusCode::FORBIDDEN => "Not allowed",
            StatusCode::NOT_FOUND => "Not found",
            StatusCode::CONFLICT => "Already changed",
            StatusCode::SERVICE_UNAVAILABLE => "Busy",
            _ => "Something failed",
        };
        PageError::Status {
            status,
            title,
            message: err.to_string(),
        }
    }
}
