//! The console's own Prometheus figures (served by `monitoring.rs`: `GET /metrics` for an
//! API token of any role, and `GET /healthz`, no token). The console exports only what it does itself: requests by
//! route and status (counted by `monitoring::count_requests`, a layer over every route), sign-ins
//! and sign-outs (`pages/sign_in.rs`), and live streams open (`pages/live.rs`,
//! `api/events.rs`). The queue's figures are each server's, on its own metrics listener.

use std::sync::Arc;

use prometheus_client::encoding::{EncodeLabelSet, prometheus_text};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

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

    /// Counts one answer by its route's pattern, method and status.
    pub(crate) fn count_request(&self, route: String, method: String, status: u16) {
        self.requests
            .get_or_create(&RequestLabels {
                route,
                method,
                status: status.to_string(),
            })
            .inc();
    }

    /// The text exposition of every family.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        prometheus_text::encode(&mut out, &self.registry).expect("writing to a String");
        out
    }
}
