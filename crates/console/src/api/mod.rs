//! The JSON API at `/api/v1`, for scripts and chat bridges: bearer tokens, the same roles
//! and scopes as the pages (the store's rule), errors as `{"error", "field"}` with
//! 400/401/403/404/409. One module per area; `model` is the wire, `openapi` describes it.

mod events;
mod grants;
mod model;
mod openapi;
mod proposals;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use supervise_store::StoreError;

use crate::app::App;
use model::ErrorDoc;
pub(crate) use proposals::grant_duration;

pub(crate) fn router() -> Router<App> {
    Router::new()
        .route("/proposals", get(proposals::list))
        .route("/proposals/{id}", get(proposals::show))
        .route("/proposals/{id}/approve", post(proposals::approve))
        .route("/proposals/{id}/modify", post(proposals::modify))
        .route("/proposals/{id}/reject", post(proposals::reject))
        .route("/grants", get(grants::list))
        .route("/grants/{id}/revoke", post(grants::revoke))
        .route("/events", get(events::events))
        .route("/openapi.json", get(openapi::document))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
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
        let status = crate::error::status_of(&err);
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

async fn not_found() -> ApiError {
    ApiError::not_found("no such API endpoint; see /api/v1/openapi.json")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method not allowed here; see /api/v1/openapi.json",
    )
}

/// A query string the endpoint cannot read, as a 400 in the API's shape.
pub(crate) fn bad_query(err: axum::extract::rejection::QueryRejection) -> ApiError {
    ApiError::bad_request(None, format!("invalid query string: {}", err.body_text()))
}
