//! The headers every answer carries: a Content-Security-Policy that allows no inline
//! script or style and nothing from elsewhere, no framing, no referrer, no sniffing, no
//! caching of pages or API answers (assets say otherwise themselves), and HSTS over https.
//! One debug log line per request.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::app::App;

pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self'; manifest-src 'self'; connect-src 'self'; form-action 'self'; \
    frame-ancestors 'none'; \
    base-uri 'none'";

pub(crate) async fn security_headers(State(app): State<App>, req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let mut resp = next.run(req).await;
    tracing::debug!(%method, %path, status = resp.status().as_u16(), "request");
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    if app.secure() {
        h.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000"),
        );
    }
    resp
}
