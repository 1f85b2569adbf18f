//! The console's one reader of the store's change feed: it follows the feed from its end
//! ([`supervise_store::Follow`]: at once when the store's change signal fires, else every
//! `feed_interval`) and broadcasts each event to the live streams. The console is its own
//! process, so this is how it learns of proposals filed by the server and decisions made
//! with the CLI or another console.

use std::sync::Arc;
use std::time::Duration;

use supervise_store::{Event, Store};
use tokio::sync::{broadcast, watch};

pub(crate) async fn run(
    store: Store,
    tx: broadcast::Sender<Arc<Event>>,
    interval: Duration,
    mut stop: watch::Receiver<bool>,
) {
    // Start at the end: live streams want what happens from now on; a stream that asks for
    // older events reads them from the store itself.
    let mut follow = loop {
        if *stop.borrow() {
            return;
        }
        match store.follow_from_end().await {
            Ok(follow) => break follow.every(interval),
            Err(err) => tracing::warn!(error = %err, "reading the change feed position failed"),
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = stop.changed() => return,
        }
    };
    loop {
        if *stop.borrow() {
            return;
        }
        tokio::select! {
            page = follow.next_page() => match page {
                Ok(events) => {
                    for event in events {
                        // No subscriber is fine: nobody is watching.
                        let _ = tx.send(Arc::new(event));
                    }
                }
                Err(err) => tracing::warn!(error = %err, "reading the change feed failed"),
            },
            _ = stop.changed() => return,
        }
    }
}
