//! The two static files, compiled into the binary: the stylesheet and the one script
//! (live updates). CSP allows exactly these (`'self'`), nothing inline.

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

use crate::app::App;

const CSS: &str = include_str!("../static/console.css");
const JS: &str = include_str!("../static/live.js");

pub(crate) fn router() -> Router<App> {
    Router::new()
        .route("/static/console.css", get(css))
        .route("/static/live.js", get(js))
}

async fn css() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        CSS,
    )
}

async fn js() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        JS,
    )
}
