//! The console's operational routes, listed in `router.rs`'s `operation_routes()`:
//! `GET /metrics` (the figures of `metrics.rs`, for an API token of any role), `GET /healthz`
//! (no token), and the layer that counts every answer.

use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::prometheus_text;

use crate::app::App;
use crate::auth::ApiUser;

/// Counts every answer by its route's pattern, method and status.
pub(crate) async fn count_requests(State(app): State<App>, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |m| m.as_str())
        .to_owned();
    let method = req.method().as_str().to_owned();
    let response = next.run(req).await;
    app.metrics()
        .count_request(route, method, response.status().as_u16());
    response
}

/// `GET /metrics`: the console's figures, for a bearer token of any role (401 otherwise).
pub(crate) async fn scrape(State(app): State<App>, _user: ApiUser) -> Response {
    (
        [(header::CONTENT_TYPE, prometheus_text::CONTENT_TYPE)],
        app.metrics().render(),
    )
        .into_response()
}

/// `GET /healthz`: 200 `ok` while the database answers and takes writes, 503 and why not.
pub(crate) async fn healthz(State(app): State<App>) -> Response {
    match app.store().health().await {
        Ok(()) => (StatusCode::OK, "ok\n").into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "healthz: the database is not usable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("unavailable: {e}\n"),
            )
                .into_response()
        }
    }
}
