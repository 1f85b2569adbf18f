//! Wake-ups for the change feed's reader, the same API on both backends: [`Changes`] says
//! when the trail may have grown. On PostgreSQL it is `LISTEN supervise_events` (every
//! write that appends an event notifies at COMMIT), with the listener reconnecting by
//! itself; on SQLite there is nothing to listen to and the reader reads at its interval.
//! Either way a wake-up is a hint, never the data: the reader then reads the feed itself.

use tokio::sync::watch;

use super::{Location, Store, pg};

/// Tells the change feed's reader when to read (see the module docs). Dropping it stops
/// the listener.
#[derive(Debug)]
pub struct Changes {
    /// `None` on SQLite (never wakes).
    wake: Option<watch::Receiver<u64>>,
    live: watch::Receiver<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Store {
    /// Starts listening for changes (PostgreSQL; on SQLite an inert [`Changes`]). Call it
    /// from within a tokio runtime.
    pub fn changes(&self) -> Changes {
        let (live_tx, live) = watch::channel(false);
        match &self.inner.location {
            Location::File(_) => Changes {
                wake: None,
                live,
                task: None,
            },
            Location::Postgres(url) => {
                let (wake_tx, wake) = watch::channel(0u64);
                let task = tokio::spawn(pg::listen(
                    url.clone(),
                    self.inner.host.clone(),
                    wake_tx,
                    live_tx,
                ));
                Changes {
                    wake: Some(wake),
                    live,
                    task: Some(task),
                }
            }
        }
    }
}

impl Changes {
    /// Returns when the feed may have changed: a notification arrived, or the listener's
    /// connection was lost or is back (notifications may have been missed). Never returns
    /// on SQLite. Cancel-safe.
    pub async fn changed(&mut self) {
        match &mut self.wake {
            Some(rx) => {
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending().await,
        }
    }

    /// Whether notifications arrive now (PostgreSQL with its listener connected): the
    /// reader may then read less often, as a safety net only.
    pub fn live(&self) -> bool {
        *self.live.borrow()
    }
}

impl Drop for Changes {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
