//! Why the console could not start or keep serving, and why a page or an API call could
//! not be answered.

use std::path::PathBuf;

use axum::http::header;
use axum::response::{IntoResponse, Json, Response};
use http::StatusCode;
use supervise_store::StoreError;

use crate::api::model::ErrorDoc;

/// A refusal to start.
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
        | E::AlreadyApproved { .. }
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
    /// No session: to the sign-in page, remembering the page that asked (a GET's path).
    SignIn(Option<String>),
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

/// An API refusal: its status and `{"error": "...", "field": "..."}`.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    error: String,
    field: Option<String>,
    decided_by: Option<String>,
    decided_at: Option<String>,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, error: impl Into<String>) -> ApiError {
        ApiError {
            status,
            error: error.into(),
            field: None,
            decided_by: None,
            decided_at: None,
        }
    }

    pub(crate) fn unauthorized(error: &str) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, error)
    }

    pub(crate) fn bad_request(field: Option<&str>, error: impl Into<String>) -> ApiError {
        ApiError {
            field: field.map(str::to_owned),
            ..ApiError::new(StatusCode::BAD_REQUEST, error)
        }
    }

    pub(crate) fn not_found(error: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, error)
    }
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> ApiError {
        let status = status_of(&err);
        if status.is_server_error() {
            tracing::warn!(error = %err, "an API request failed in the store");
        }
        let mut out = ApiError::new(status, err.to_string());
        match err {
            StoreError::Invalid { field, .. } => out.field = Some(field),
            StoreError::NotPending {
                decided_by,
                decided_at,
                ..
            } => {
                out.decided_by = decided_by;
                out.decided_at = decided_at.map(|t| t.to_string());
            }
            _ => {}
        }
        out
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorDoc {
            error: self.error,
            field: self.field,
            decided_by: self.decided_by,
            decided_at: self.decided_at,
        };
        let mut resp = (self.status, Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
        }
        resp
    }
}
