//! The one reader of the store's change feed: every `feed_interval`, and at once when the
//! store's change notification fires (PostgreSQL's `NOTIFY`), it reads the events after
//! the last one seen and broadcasts each to the live streams. The console is its
//! own process, so this is how it learns of proposals filed by the server and decisions
//! made with the CLI or another console.

use std::sync::Arc;
use std::time::Duration;

use supervise_store::{Event, Store};
use tokio::sync::{broadcast, watch};

/// Events read per query; a longer backlog is read over several polls in a row.
const PAGE: u32 = 512;

pub(crate) async fn run(
    store: Store,
    tx: broadcast::Sender<Arc<Event>>,
    interval: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut seq = None;
    let mut changes = store.changes();
    loop {
        if *stop.borrow() {
            return;
        }
        let position = match seq {
            Some(s) => Ok(s),
            // Start at the end: live streams want what happens from now on; a stream that
            // asks for older events reads them from the store itself.
            None => store.last_seq().await,
        };
        let mut full_page = false;
        match position {
            Ok(from) => {
                seq = Some(from);
                match store.events_after(from, PAGE).await {
                    Ok(events) => {
                        full_page = events.len() == PAGE as usize;
                        for event in events {
                            seq = Some(event.seq);
                            // No subscriber is fine: nobody is watching.
                            let _ = tx.send(Arc::new(event));
                        }
                    }
                    Err(err) => tracing::warn!(error = %err, "reading the change feed failed"),
                }
            }
            Err(err) => tracing::warn!(error = %err, "reading the change feed position failed"),
        }
        if full_page {
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            () = changes.changed() => {}
            _ = stop.changed() => return,
        }
    }
}
