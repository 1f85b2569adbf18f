//! The feed subscriber for `subscriptions/listen` streams: it relays every page of the change
//! feed to the open streams (a `broadcast`, so a stream that falls behind is told it lagged
//! and reads its tasks again instead of holding memory), and tells them to read again when
//! the feed could not be read (then every second, until it can).

use std::sync::Arc;
use std::time::Duration;

use supervise_store::Event;
use tokio::sync::broadcast;

use crate::feed::{Subscription, Update};
use crate::shutdown::Shutdown;

/// Pages kept for a stream slow to take them.
const CAPACITY: usize = 64;
/// While the feed cannot be read, streams read their tasks this often.
const FALLBACK: Duration = Duration::from_secs(1);

/// What a stream is told.
#[derive(Debug, Clone)]
pub(crate) enum TaskChange {
    /// The next events of the feed.
    Events(Arc<[Event]>),
    /// Something may have changed unseen: read every watched task again.
    ReadAgain,
}

/// Where streams subscribe.
#[derive(Debug, Clone)]
pub(crate) struct TaskFeed {
    tx: broadcast::Sender<TaskChange>,
}

impl TaskFeed {
    pub(crate) fn new() -> TaskFeed {
        TaskFeed {
            tx: broadcast::channel(CAPACITY).0,
        }
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<TaskChange> {
        self.tx.subscribe()
    }

    /// Relays `feed` until shutdown starts or the feed reader stops.
    pub(crate) async fn relay(self, mut feed: Subscription, shutdown: Shutdown) {
        let mut failing = false;
        loop {
            let update = tokio::select! {
                () = shutdown.started() => return,
                () = tokio::time::sleep(FALLBACK), if failing => {
                    let _ = self.tx.send(TaskChange::ReadAgain);
                    continue;
                }
                u = feed.next() => u,
            };
            match update {
                None => return,
                // No stream open: nothing to tell (send fails only then).
                Some(Update::Events(events)) => {
                    let _ = self.tx.send(TaskChange::Events(events));
                }
                Some(Update::Failing(f)) => {
                    failing = f;
                    let _ = self.tx.send(TaskChange::ReadAgain);
                }
            }
        }
    }
}
