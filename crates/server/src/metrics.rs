//! The server's Prometheus figures and the listener that serves them (`--metrics-listen`),
//! apart from the MCP listener bottles reach: per-bottle figures are no bottle's business.
//!
//! Where each is recorded: the queue gauges (pending by bottle and kind, the oldest one's
//! age) are read from the store at scrape time, one grouped query
//! ([`Store::pending_summary`]); decisions, time to decide and grant uses are counted from
//! the change feed ([`follow_feed`], so the CLI's and the console's decisions count too,
//! this host's bottles only); waiting calls and task streams are gauges the grace flow and
//! `subscriptions/listen` move; hook runs in `hooks`; refusals where `http` and `grace`
//! refuse; store write latency through the store's [`WriteObserver`].

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode, header};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::encoding::{EncodeLabelSet, prometheus_text};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use supervise_store::{Event, EventKind, Kind, Store, Timestamp, Via, WriteObserver};
use tokio::net::TcpListener;

use crate::body::ReplyBody;
use crate::feed::{Subscription, Update};
use crate::shutdown::Shutdown;

/// Why the server turned a request or a call away (`supervise_refusals_total{cause}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// DNS-rebinding protection: an `Origin` or `Host` not allowed.
    OriginOrHost,
    /// No bottle is registered for the source address.
    UnknownBottle,
    /// `Content-Type` or `Accept` not what Streamable HTTP needs.
    MediaType,
    /// A body over the limit.
    TooLarge,
    /// A body not received in time.
    BodyTimeout,
    /// The bottle's `--max-pending-per-bottle` is reached: nothing filed.
    PendingCap,
    /// `--max-waiting` or `--max-waiting-per-bottle` is reached: a call answered `pending`
    /// at once, or a listen stream refused.
    WaitCap,
}

impl Refusal {
    const ALL: [Refusal; 7] = [
        Refusal::OriginOrHost,
        Refusal::UnknownBottle,
        Refusal::MediaType,
        Refusal::TooLarge,
        Refusal::BodyTimeout,
        Refusal::PendingCap,
        Refusal::WaitCap,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Refusal::OriginOrHost => "origin-or-host",
            Refusal::UnknownBottle => "unknown-bottle",
            Refusal::MediaType => "media-type",
            Refusal::TooLarge => "too-large",
            Refusal::BodyTimeout => "body-timeout",
            Refusal::PendingCap => "pending-cap",
            Refusal::WaitCap => "wait-cap",
        }
    }
}

/// The `via` of a decision no operator made (the rejection cooldown's).
const SYSTEM_VIA: &str = "system";

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct QueueLabels {
    bottle: String,
    kind: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct DecisionLabels {
    outcome: String,
    via: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct CauseLabels {
    cause: String,
}

/// The counters a hook run moves, shared with [`crate::hooks`].
#[derive(Debug, Clone, Default)]
pub(crate) struct HookCounters {
    pub(crate) runs: Counter,
    pub(crate) failures: Counter,
}

/// Every family the server exports, registered once.
#[derive(Debug)]
pub(crate) struct Metrics {
    registry: Registry,
    pending: Family<QueueLabels, Gauge>,
    oldest_pending: Gauge<f64, AtomicU64>,
    decisions: Family<DecisionLabels, Counter>,
    time_to_decide: Histogram,
    waiting_calls: Gauge,
    task_streams: Gauge,
    pub(crate) hooks: HookCounters,
    grant_uses: Family<KindLabels, Counter>,
    store_writes: Histogram,
    refusals: Family<CauseLabels, Counter>,
    /// One scrape at a time: the queue gauges are filled, then everything is encoded.
    scrape: tokio::sync::Mutex<()>,
}

/// Held while a call waits in its grace window or a listen stream is open; dropping it
/// takes it off its gauge.
#[derive(Debug)]
pub(crate) struct Held(Gauge);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl Metrics {
    pub(crate) fn new() -> Arc<Metrics> {
        let mut registry = Registry::default();
        let pending = Family::<QueueLabels, Gauge>::default();
        registry.register(
            "supervise_proposals_pending",
            "Undecided proposals of this host's bottles, by bottle and kind",
            pending.clone(),
        );
        let oldest_pending = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "supervise_proposals_oldest_pending_age_seconds",
            "How long the oldest undecided proposal of this host's bottles has waited (0: none)",
            oldest_pending.clone(),
        );
        let decisions = Family::<DecisionLabels, Counter>::default();
        // Each outcome an operator gives, through each way there is, and the cooldown's: a
        // series from the start, so a rate over the first decision is right.
        let outcomes = [
            EventKind::Approved,
            EventKind::Modified,
            EventKind::Rejected,
        ];
        for outcome in outcomes {
            for via in Via::ALL {
                decisions
                    .get_or_create(&DecisionLabels {
                        outcome: outcome.as_str().into(),
                        via: via.as_str().into(),
                    })
                    .inc_by(0);
            }
        }
        decisions
            .get_or_create(&DecisionLabels {
                outcome: EventKind::AutoRejected.as_str().into(),
                via: SYSTEM_VIA.into(),
            })
            .inc_by(0);
        registry.register(
            "supervise_decisions",
            "Decisions on this host's proposals by outcome and through what they were made",
            decisions.clone(),
        );
        // 1 s to about 3 days: an operator at the desk, then one who reads the queue later.
        let time_to_decide = Histogram::new(exponential_buckets(1.0, 4.0, 10));
        registry.register(
            "supervise_time_to_decide_seconds",
            "From a proposal's filing to an operator's decision",
            time_to_decide.clone(),
        );
        let waiting_calls = Gauge::default();
        registry.register(
            "supervise_waiting_calls",
            "Proposal calls held in their grace window now",
            waiting_calls.clone(),
        );
        let task_streams = Gauge::default();
        registry.register(
            "supervise_task_streams",
            "subscriptions/listen streams open now",
            task_streams.clone(),
        );
        let hooks = HookCounters::default();
        registry.register(
            "supervise_hook_runs",
            "--on-event hook runs",
            hooks.runs.clone(),
        );
        registry.register(
            "supervise_hook_failures",
            "--on-event hook runs that failed: non-zero exit, could not start, or timed out",
            hooks.failures.clone(),
        );
        let grant_uses = Family::<KindLabels, Counter>::default();
        for kind in Kind::ALL {
            grant_uses
                .get_or_create(&KindLabels {
                    kind: kind.as_str().into(),
                })
                .inc_by(0);
        }
        registry.register(
            "supervise_grant_uses",
            "Grant uses the egress proxy's helper recorded for this host's bottles",
            grant_uses.clone(),
        );
        // 250 µs to about 4 s.
        let store_writes = Histogram::new(exponential_buckets(0.000_25, 2.0, 15));
        registry.register(
            "supervise_store_write_duration_seconds",
            "Write transactions of this server, from asking for the write lock to the end of COMMIT",
            store_writes.clone(),
        );
        let refusals = Family::<CauseLabels, Counter>::default();
        for cause in Refusal::ALL {
            refusals
                .get_or_create(&CauseLabels {
                    cause: cause.as_str().into(),
                })
                .inc_by(0);
        }
        registry.register(
            "supervise_refusals",
            "Requests and calls turned away, by cause",
            refusals.clone(),
        );
        Arc::new(Metrics {
            registry,
            pending,
            oldest_pending,
            decisions,
            time_to_decide,
            waiting_calls,
            task_streams,
            hooks,
            grant_uses,
            store_writes,
            refusals,
            scrape: tokio::sync::Mutex::new(()),
        })
    }

    /// What the store tells of each committed write.
    pub(crate) fn write_observer(&self) -> WriteObserver {
        let h = self.store_writes.clone();
        WriteObserver::new(move |d: Duration| h.observe(d.as_secs_f64()))
    }

    pub(crate) fn refused(&self, why: Refusal) {
        self.refusals
            .get_or_create(&CauseLabels {
                cause: why.as_str().into(),
            })
            .inc();
    }

    /// A call starts waiting its grace window.
    pub(crate) fn waiting(&self) -> Held {
        self.waiting_calls.inc();
        Held(self.waiting_calls.clone())
    }

    /// A listen stream opens.
    pub(crate) fn streaming(&self) -> Held {
        self.task_streams.inc();
        Held(self.task_streams.clone())
    }

    /// Counts one event of the feed, if it is this host's: decisions (with the time from
    /// `filed`, when known, to the decision) and grant uses.
    fn count(&self, host: &str, e: &Event, filed: Option<&Timestamp>) {
        if e.host.as_deref() != Some(host) {
            return;
        }
        match e.event {
            EventKind::Approved
            | EventKind::Modified
            | EventKind::Rejected
            | EventKind::AutoRejected => {
                let via = e.via.map_or(SYSTEM_VIA, |v| v.as_str());
                self.decisions
                    .get_or_create(&DecisionLabels {
                        outcome: e.event.as_str().into(),
                        via: via.into(),
                    })
                    .inc();
                if let Some(filed) = filed {
                    let waited = e.at.to_time() - filed.to_time();
                    self.time_to_decide
                        .observe(waited.as_seconds_f64().max(0.0));
                }
            }
            EventKind::GrantUsed => {
                let kind = e.kind.map_or("unknown", Kind::as_str);
                self.grant_uses
                    .get_or_create(&KindLabels { kind: kind.into() })
                    .inc();
            }
            _ => {}
        }
    }

    /// Reads the queue gauges from `store`, then encodes every family in Prometheus's
    /// text format. A queue read that fails leaves the gauges as the last scrape set them
    /// and is an error, so the scrape fails rather than reporting a stale queue as fresh.
    pub(crate) async fn render(&self, store: &Store) -> supervise_store::StoreResult<String> {
        let _one = self.scrape.lock().await;
        let groups = store.pending_summary().await?;
        let bottles = store.list_bottles_on(Some(store.host())).await?;
        self.pending.clear();
        // Every bottle and kind has a series, 0 when nothing waits, so a drop to zero is seen.
        for b in &bottles {
            for kind in Kind::ALL {
                self.pending
                    .get_or_create(&QueueLabels {
                        bottle: b.slug.clone(),
                        kind: kind.as_str().into(),
                    })
                    .set(0);
            }
        }
        let now = Timestamp::now().to_time();
        let mut oldest: f64 = 0.0;
        for g in groups {
            self.pending
                .get_or_create(&QueueLabels {
                    bottle: g.bottle,
                    kind: g.kind.as_str().into(),
                })
                .set(i64::try_from(g.count).unwrap_or(i64::MAX));
            oldest = oldest.max((now - g.oldest.to_time()).as_seconds_f64());
        }
        self.oldest_pending.set(oldest.max(0.0));
        let mut out = String::new();
        prometheus_text::encode(&mut out, &self.registry).expect("writing to a String");
        Ok(out)
    }
}

/// Counts decisions and grant uses from the change feed until shutdown starts. An operator
/// decision's filing time is read from the store (one lookup per decision).
pub(crate) async fn follow_feed(
    metrics: Arc<Metrics>,
    store: Store,
    mut feed: Subscription,
    shutdown: Shutdown,
) {
    let host = store.host().to_owned();
    loop {
        let update = tokio::select! {
            () = shutdown.started() => return,
            u = feed.next() => u,
        };
        let events = match update {
            None => return,
            Some(Update::Failing(_)) => continue,
            Some(Update::Events(events)) => events,
        };
        for e in events.iter() {
            let operator_decision = matches!(
                e.event,
                EventKind::Approved | EventKind::Modified | EventKind::Rejected
            );
            let filed = match (&e.proposal_id, operator_decision) {
                (Some(id), true) if e.host.as_deref() == Some(host.as_str()) => {
                    match store.show(id).await {
                        Ok((p, _)) => Some(p.created_at),
                        Err(err) => {
                            tracing::debug!(proposal = %id, error = %err, "time to decide not recorded");
                            None
                        }
                    }
                }
                _ => None,
            };
            metrics.count(&host, e, filed.as_ref());
        }
    }
}

/// Serves `GET /metrics` on `listener` until shutdown starts; anything else is 404.
pub(crate) async fn serve(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    store: Store,
    shutdown: Shutdown,
) {
    let stop = shutdown.started();
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    tracing::warn!(error = %e, "metrics listener: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => return,
        };
        let metrics = metrics.clone();
        let store = store.clone();
        let service = service_fn(move |req| {
            let metrics = metrics.clone();
            let store = store.clone();
            async move { Ok::<_, Infallible>(answer(&metrics, &store, req).await) }
        });
        let conn = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(Duration::from_secs(10))
            .serve_connection(TokioIo::new(stream), service);
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            tokio::select! {
                ended = conn => if let Err(e) = ended {
                    tracing::debug!(%peer, error = %e, "metrics connection ended with an error");
                },
                () = shutdown.started() => {}
            }
        });
    }
}

async fn answer(metrics: &Metrics, store: &Store, req: Request<Incoming>) -> Response<ReplyBody> {
    let text = |status: StatusCode, body: String, content_type: &'static str| {
        Response::builder()
            .status(status)
            .header(header::CONTENT_TYPE, content_type)
            .body(ReplyBody::full(Bytes::from(body)))
            .expect("static response")
    };
    if req.uri().path() != "/metrics" {
        return text(
            StatusCode::NOT_FOUND,
            "not found: this listener answers GET /metrics\n".into(),
            "text/plain; charset=utf-8",
        );
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = text(
            StatusCode::METHOD_NOT_ALLOWED,
            "use GET\n".into(),
            "text/plain; charset=utf-8",
        );
        r.headers_mut()
            .insert(header::ALLOW, http::HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    match metrics.render(store).await {
        Ok(body) => text(StatusCode::OK, body, prometheus_text::CONTENT_TYPE),
        Err(e) => {
            tracing::warn!(error = %e, "metrics: the queue could not be read");
            text(
                StatusCode::SERVICE_UNAVAILABLE,
                "the database did not answer; the next scrape tries again\n".into(),
                "text/plain; charset=utf-8",
            )
        }
    }
}
