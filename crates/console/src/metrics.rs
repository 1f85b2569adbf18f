//! The console's own Prometheus figures, `GET /metrics` for an API token of any role, and
//! `GET /healthz` (no token). The console exports only what it does itself: requests by
//! route and status (counted by [`count_requests`], a layer over every route), sign-ins
//! and sign-outs (`pages/sign_in.rs`), and live streams open (`pages/live.rs`,
//! `api/events.rs`). The queue's figures are each server's, on its own metrics listener.

use std::sync::Arc;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::{EncodeLabelSet, prometheus_text};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::app::App;
use crate::auth::ApiUser;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    /// The route's pattern (`/proposals/{id}`), never the path asked for, so the series
    /// stay few; `unmatched` for a path no route has.
    route: String,
    method: String,
    status: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ResultLabels {
    result: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StreamLabels {
    kind: String,
}

/// Which live stream: the pages' `/live` or the API's `/api/v1/events`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum StreamKind {
    Page,
    Api,
}

/// How a sign-in attempt ended.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SignIn {
    /// A session began.
    Started,
    /// The link was spent, expired or unknown.
    Refused,
    /// Over the sign-in rate limit.
    Limited,
}

/// Every family the console exports.
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    sign_ins: Family<ResultLabels, Counter>,
    sign_outs: Counter,
    streams: Family<StreamLabels, Gauge>,
}

/// A live stream's place on its gauge, taken off when dropped.
pub(crate) struct Open(Gauge);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl Metrics {
    pub(crate) fn new() -> Arc<Metrics> {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "supervise_console_requests",
            "Requests this console answered, by route pattern, method and status",
            requests.clone(),
        );
        let sign_ins = Family::<ResultLabels, Counter>::default();
        for result in ["started", "refused", "limited"] {
            sign_ins
                .get_or_create(&ResultLabels {
                    result: result.into(),
                })
                .inc_by(0);
        }
        registry.register(
            "supervise_console_sign_ins",
            "Sign-in link posts: sessions started, links refused, attempts over the rate limit",
            sign_ins.clone(),
        );
        let sign_outs = Counter::default();
        registry.register(
            "supervise_console_sign_outs",
            "Sessions ended by signing out",
            sign_outs.clone(),
        );
        let streams = Family::<StreamLabels, Gauge>::default();
        for kind in ["page", "api"] {
            streams
                .get_or_create(&StreamLabels { kind: kind.into() })
                .set(0);
        }
        registry.register(
            "supervise_console_live_streams",
            "Live streams open now: the pages' /live and the API's event streams",
            streams.clone(),
        );
        Arc::new(Metrics {
            registry,
            requests,
            sign_ins,
            sign_outs,
            streams,
        })
    }

    pub(crate) fn sign_in(&self, how: SignIn) {
        let result = match how {
            SignIn::Started => "started",
            SignIn::Refused => "refused",
            SignIn::Limited => "limited",
        };
        self.sign_ins
            .get_or_create(&ResultLabels {
                result: result.into(),
            })
            .inc();
    }

    pub(crate) fn sign_out(&self) {
        self.sign_outs.inc();
    }

    /// A live stream opens; it counts until the returned value is dropped.
    pub(crate) fn stream(&self, kind: StreamKind) -> Open {
        let kind = match kind {
            StreamKind::Page => "page",
            StreamKind::Api => "api",
        };
        let gauge = self
            .streams
            .get_or_create(&StreamLabels { kind: kind.into() })
            .clone();
        gauge.inc();
        Open(gauge)
    }

    fn render(&self) -> String {
        let mut out = String::new();
        prometheus_text::encode(&mut out, &self.registry).expect("writing to a String");
        out
    }
}

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
        .requests
        .get_or_create(&RequestLabels {
            route,
            method,
            status: response.status().as_u16().to_string(),
        })
        .inc();
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
