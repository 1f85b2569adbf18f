//! `GET /live`: the pages' Server-Sent Events stream. Each change-feed event the operator
//! may see becomes a small `data:` message (its sequence number and event name), and
//! `live.js` reloads the page's `#live` part. The session is checked again every few
//! seconds, so a signed-out or removed operator's stream ends.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use crate::app::App;
use crate::auth::PageUser;
use crate::metrics::StreamKind;

/// How often an open stream checks that its session still holds.
const RECHECK: Duration = Duration::from_secs(5);

pub(crate) async fn stream(State(app): State<App>, user: PageUser) -> Response {
    let (tx, rx) = mpsc::channel::<SseEvent>(16);
    let mut feed = app.subscribe();
    let mut stop = app.stopping();
    let open = app.metrics().stream(StreamKind::Page);
    tokio::spawn(async move {
        let _open = open;
        let hello = SseEvent::default().event("ready").data("{}");
        if tx.send(hello).await.is_err() {
            return;
        }
        let mut recheck = tokio::time::interval(RECHECK);
        recheck.tick().await;
        loop {
            let message = tokio::select! {
                _ = tx.closed() => return,
                _ = stop.changed() => return,
                _ = recheck.tick() => {
                    match app.store().session(&user.secret).await {
                        Ok(Some(_)) => continue,
                        Ok(None) => return,
                        Err(err) => {
                            tracing::debug!(error = %err, "rechecking a live stream's session failed");
                            continue;
                        }
                    }
                }
                received = feed.recv() => match received {
                    Ok(event) if user.actor.sees_event(&event) => {
                        serde_json::json!({"seq": event.seq, "event": event.event}).to_string()
                    }
                    Ok(_) => continue,
                    // Fell behind: whatever was missed, the page reloads.
                    Err(RecvError::Lagged(_)) => r#"{"resync":true}"#.to_owned(),
                    Err(RecvError::Closed) => return,
                },
            };
            if tx.send(SseEvent::default().data(message)).await.is_err() {
                return;
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
