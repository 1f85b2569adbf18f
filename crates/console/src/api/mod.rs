//! The JSON API at `/api/v1`, for scripts and chat bridges: bearer tokens, the same roles
//! and scopes as the pages (the store's rule), errors as `{"error", "field"}` with
//! 400/401/403/404/409. One module per area; `model` is the wire, `openapi` describes it.

pub(crate) mod events;
pub(crate) mod grants;
pub(crate) mod model;
pub(crate) mod openapi;
pub(crate) mod proposals;

use axum::http::StatusCode;

pub(crate) use crate::error::ApiError;

pub(crate) async fn not_found() -> ApiError {
    ApiError::not_found("no such API endpoint; see /api/v1/openapi.json")
}

pub(crate) async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method not allowed here; see /api/v1/openapi.json",
    )
}

/// A query string the endpoint cannot read, as a 400 in the API's shape.
pub(crate) fn bad_query(err: axum::extract::rejection::QueryRejection) -> ApiError {
    ApiError::bad_request(None, format!("invalid query string: {}", err.body_text()))
}
