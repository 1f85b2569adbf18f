//! The static files, compiled into the binary: the stylesheet, the one script (live
//! updates), and the web app manifest with its icons (the console installs on a phone's
//! home screen). CSP allows exactly these (`'self'`), nothing inline.

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

use crate::app::App;

const CSS: &str = include_str!("../static/console.css");
const JS: &str = include_str!("../static/live.js");
const MANIFEST: &str = include_str!("../static/manifest.webmanifest");
const ICON_192: &[u8] = include_bytes!("../static/icon-192.png");
const ICON_512: &[u8] = include_bytes!("../static/icon-512.png");

pub(crate) fn router() -> Router<App> {
    Router::new()
        .route("/static/console.css", get(css))
        .route("/static/live.js", get(js))
        .route("/static/manifest.webmanifest", get(manifest))
        .route("/static/icon-192.png", get(|| icon(ICON_192)))
        .route("/static/icon-512.png", get(|| icon(ICON_512)))
}

async fn manifest() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "application/manifest+json"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        MANIFEST,
    )
}

async fn icon(png: &'static [u8]) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "image/png"),
            (header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        png,
    )
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
