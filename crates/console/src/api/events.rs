//! `GET /events?after=SEQ`: the change feed. With `Accept: text/event-stream` it streams
//! Server-Sent Events (`id` = seq, `event` = the event's name, `data` = the event), first
//! the backlog after SEQ (or after `Last-Event-ID`, or from now), then each event as the
//! feed reader sees it; otherwise the events after SEQ as a JSON array (at most 1000: ask
//! again after the last one). Only events the operator may see are sent, and with
//! `host=NAME` only those of that host's bottles (and of no bottle).

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Json, Response};
use futures_util::stream;
use serde::Deserialize;
use supervise_store::{Actor, Event, EventDoc, Follow};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use utoipa::IntoParams;

use super::model::{ErrorDoc, EventSchema};
use super::{ApiError, bad_query};
use crate::app::App;
use crate::auth::ApiUser;
use crate::metrics::StreamKind;

/// Events in one JSON answer at most.
const JSON_LIMIT: u32 = 1000;
/// How often an open stream checks that its token still holds.
const RECHECK: Duration = Duration::from_secs(5);

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct EventsQuery {
    /// Events after this sequence number (default: all for JSON, from now for a stream).
    after: Option<i64>,
    /// Only the events of this host's bottles, and those of no bottle (as `supervise audit
    /// --host` shows them).
    host: Option<String>,
}

/// The change feed as JSON; with `Accept: text/event-stream`, as a live stream.
#[utoipa::path(get, path = "/api/v1/events", params(EventsQuery), tag = "events",
    responses(
        (status = 200, description = "events after SEQ, oldest first", body = Vec<EventSchema>),
        (status = 400, body = ErrorDoc), (status = 401, body = ErrorDoc),
    ))]
pub(crate) async fn events(
    State(app): State<App>,
    user: ApiUser,
    headers: HeaderMap,
    query: Result<Query<EventsQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(q) = query.map_err(bad_query)?;
    let wants_stream = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"));
    let host = q.host.filter(|h| !h.is_empty());
    if !wants_stream {
        return Ok(
            Json(backlog(&app, &user.actor, host.as_deref(), q.after).await?).into_response(),
        );
    }
    let resume = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok());
    let follow = match q.after.or(resume) {
        Some(seq) => app.store().follow(seq),
        None => app.store().follow_from_end().await?,
    };
    Ok(stream_from(app, user, host, follow))
}

/// Whether the stream or answer for `actor`, filtered to `host`, carries `event`: the
/// store's scope rule ([`Actor::sees_event`]), then the host (events of no bottle go with every host).
fn shows(actor: &Actor, host: Option<&str>, event: &Event) -> bool {
    actor.sees_event(event)
        && (host.is_none() || event.host.is_none() || event.host.as_deref() == host)
}

/// The JSON answer: the first [`JSON_LIMIT`] events after `after` that `shows` passes,
/// read a page at a time so a filter that skips many still answers up to the limit (or
/// the end of the feed), and the last one is a cursor to ask on from.
async fn backlog(
    app: &App,
    actor: &Actor,
    host: Option<&str>,
    after: Option<i64>,
) -> Result<Vec<EventDoc>, ApiError> {
    let mut follow = app.store().follow(after.unwrap_or(0));
    let mut docs = Vec::new();
    loop {
        for event in &follow.read_page().await? {
            if shows(actor, host, event) {
                docs.push(document(app, event));
                if docs.len() == JSON_LIMIT as usize {
                    return Ok(docs);
                }
            }
        }
        if follow.caught_up() {
            return Ok(docs);
        }
    }
}

/// The event's one document (the store's), linking its proposal's page here.
pub(super) fn document(app: &App, event: &Event) -> EventDoc {
    event.document().with_console(app.public_url())
}

fn sse(app: &App, event: &Event) -> SseEvent {
    let data = serde_json::to_string(&document(app, event)).unwrap_or_else(|_| "{}".into());
    SseEvent::default()
        .id(event.seq.to_string())
        .event(event.event.as_str())
        .data(data)
}

/// Sends the visible events after the follower's position from the store, oldest first,
/// up to the end of the feed (or a failed read: the stream carries on from where it got);
/// false once nobody reads the stream.
async fn catch_up(
    app: &App,
    follow: &mut Follow,
    actor: &Actor,
    host: Option<&str>,
    tx: &mpsc::Sender<SseEvent>,
) -> bool {
    loop {
        let page = match follow.read_page().await {
            Ok(page) => page,
            Err(err) => {
                tracing::debug!(error = %err, "reading the feed for a stream failed");
                return true;
            }
        };
        for event in &page {
            if shows(actor, host, event) && tx.send(sse(app, event)).await.is_err() {
                return false;
            }
        }
        if follow.caught_up() {
            return true;
        }
    }
}

fn stream_from(app: App, user: ApiUser, host: Option<String>, mut follow: Follow) -> Response {
    let (tx, rx) = mpsc::channel::<SseEvent>(64);
    // Subscribed before the backlog is read, so nothing falls between the two; events the
    // backlog already sent are skipped by their sequence number.
    let mut feed = app.subscribe();
    let mut stop = app.stopping();
    let open = app.metrics().stream(StreamKind::Api);
    tokio::spawn(async move {
        let _open = open;
        let host = host.as_deref();
        if !catch_up(&app, &mut follow, &user.actor, host, &tx).await {
            return;
        }
        let mut recheck = tokio::time::interval(RECHECK);
        recheck.tick().await;
        loop {
            tokio::select! {
                _ = tx.closed() => return,
                _ = stop.changed() => return,
                _ = recheck.tick() => {
                    if let Ok(None) = app.store().token_operator(&user.token).await {
                        return;
                    }
                }
                received = feed.recv() => match received {
                    Ok(event) if event.seq <= follow.position() => {}
                    Ok(event) => {
                        follow.skip_to(event.seq);
                        if shows(&user.actor, host, &event) && tx.send(sse(&app, &event)).await.is_err() {
                            return;
                        }
                    }
                    Err(RecvError::Lagged(_)) => {
                        if !catch_up(&app, &mut follow, &user.actor, host, &tx).await {
                            return;
                        }
                    }
                    Err(RecvError::Closed) => return,
                },
            }
        }
    });
    let body = stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok::<_, Infallible>(e), rx))
    });
    Sse::new(body)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}
