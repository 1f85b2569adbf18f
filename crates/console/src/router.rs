//! Every route of the console and the layers over them: pages at `/` behind the guard of
//! state-changing requests (`auth::guard`), the API at `/api/v1`, assets at `/static`,
//! `/metrics` and `/healthz` for monitoring, all counted by route and status and
//! with their bodies read within the limits (`listener::read_body`) and behind the
//! security headers. Handlers import the state, never this.

use axum::Router;
use axum::middleware::from_fn_with_state;
use axum::routing::{MethodRouter, get, post};

use crate::api::{self, events, grants as api_grants, openapi, proposals as api_proposals};
use crate::app::App;
use crate::auth::{self, SIGN_IN};
use crate::pages::{self, admin, audit, grants, live, proposal, queue, sign_in};
use crate::{assets, headers, listener, monitoring};

/// The whole console.
pub(crate) fn router(app: App) -> Router {
    Router::new()
        .merge(pages(app.clone()))
        .nest("/api/v1", api())
        .merge(assets::router())
        .merge(operations())
        .layer(from_fn_with_state(app.body_timeout(), listener::read_body))
        .layer(from_fn_with_state(app.clone(), headers::security_headers))
        .layer(from_fn_with_state(app.clone(), monitoring::count_requests))
        .with_state(app)
}

/// The routes for the machines that watch the console, outside the pages and the API:
/// `GET /metrics` (a bearer token of any role) and `GET /healthz` (public). Both only read,
/// so no other method is served on them.
pub(crate) fn operation_routes() -> Vec<(&'static str, MethodRouter<App>)> {
    vec![
        (METRICS, get(monitoring::scrape)),
        (HEALTHZ, get(monitoring::healthz)),
    ]
}

/// The console's Prometheus figures.
pub(crate) const METRICS: &str = "/metrics";
/// The console's health check, answered without a token.
pub(crate) const HEALTHZ: &str = "/healthz";

fn operations() -> Router<App> {
    operation_routes()
        .into_iter()
        .fold(Router::new(), |router, (path, handler)| {
            router.route(path, handler)
        })
}

/// Every state-changing route of the pages: its path and its handler. Each is served
/// behind [`auth::guard`], which the page router lays over all its routes.
pub(crate) fn page_posts() -> Vec<(&'static str, MethodRouter<App>)> {
    vec![
        ("/proposals/{id}/approve", post(proposal::approve)),
        ("/proposals/{id}/modify", post(proposal::modify)),
        ("/proposals/{id}/reject", post(proposal::reject)),
        ("/grants/{id}/revoke", post(grants::revoke)),
        ("/bottles", post(admin::add_bottle)),
        ("/bottles/{slug}/remove", post(admin::remove_bottle)),
        ("/operators", post(admin::add_operator)),
        ("/operators/{name}/remove", post(admin::remove_operator)),
        ("/operators/{name}/link", post(admin::new_link)),
        ("/operators/{name}/token", post(admin::new_token)),
        (SIGN_IN, post(sign_in::spend)),
        ("/sign-out", post(sign_in::sign_out)),
    ]
}

/// The pages: what they show, then what changes state ([`page_posts`]); the guard covers
/// every route and the fallback, whatever its method.
fn pages(app: App) -> Router<App> {
    let reads = Router::new()
        .route("/", get(queue::page))
        .route("/proposals/{id}", get(proposal::page))
        .route("/grants", get(grants::page))
        .route("/audit", get(audit::page))
        .route("/bottles", get(admin::bottles))
        .route("/operators", get(admin::operators))
        .route("/sign-in", get(sign_in::need_link))
        .route(SIGN_IN, get(sign_in::page))
        .route("/live", get(live::stream));
    page_posts()
        .into_iter()
        .fold(reads, |router, (path, handler)| router.route(path, handler))
        .fallback(pages::not_found)
        .layer(from_fn_with_state(app, auth::guard))
}

/// Every route of the API with its handler, the OpenAPI document among them (the one
/// route answered without a token).
pub(crate) fn api_routes() -> Vec<(&'static str, MethodRouter<App>)> {
    vec![
        ("/proposals", get(api_proposals::list)),
        ("/proposals/{id}", get(api_proposals::show)),
        ("/proposals/{id}/approve", post(api_proposals::approve)),
        ("/proposals/{id}/modify", post(api_proposals::modify)),
        ("/proposals/{id}/reject", post(api_proposals::reject)),
        ("/grants", get(api_grants::list)),
        ("/grants/{id}/revoke", post(api_grants::revoke)),
        ("/events", get(events::events)),
        (OPENAPI, get(openapi::document)),
    ]
}

/// The OpenAPI document's path under `/api/v1`.
pub(crate) const OPENAPI: &str = "/openapi.json";

/// The API: bearer tokens, no cookies, so no CSRF check.
fn api() -> Router<App> {
    api_routes()
        .into_iter()
        .fold(Router::new(), |router, (path, handler)| {
            router.route(path, handler)
        })
        .fallback(api::not_found)
        .method_not_allowed_fallback(api::method_not_allowed)
}

#[cfg(test)]
mod tests;
