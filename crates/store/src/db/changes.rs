//! Wake-ups for the change feed's readers, the same API on both backends: [`Changes`] says
//! when the trail may have grown, and a [`Follow`](super::Follow) waits on it. On PostgreSQL it is `LISTEN supervise_events` (every
//! write that appends an event notifies at COMMIT), with the listener reconnecting by
//! itself. On SQLite it is the file's `PRAGMA data_version` on the store's watch connection
//! ([`fresh`](super::fresh)), read every [`SQLITE_EVERY`]: it changes at any commit, of
//! this process or another, for about a microsecond of CPU per read, so the reader reads
//! the feed only after something was committed and at most that long after. Without a
//! watch the reader reads at its interval. Either way a wake-up is a hint, never the data:
//! the reader then reads the feed itself.

use std::time::Duration;

use tokio::sync::watch;

use super::{Location, Store, pg};

/// How often the SQLite watch's data version is read for the change feed.
const SQLITE_EVERY: Duration = Duration::from_millis(2);

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
    /// Starts listening for changes (PostgreSQL: notifications; SQLite: the data version;
    /// a SQLite store without its watch gives an inert [`Changes`]). Call it from within a
    /// tokio runtime.
    pub fn changes(&self) -> Changes {
        let (live_tx, live) = watch::channel(false);
        match &self.inner.location {
            Location::File(_) if self.inner.fresh.is_some() => {
                let (wake_tx, wake) = watch::channel(0u64);
                let task = tokio::spawn(watch_data_version(self.clone(), wake_tx, live_tx));
                Changes {
                    wake: Some(wake),
                    live,
                    task: Some(task),
                }
            }
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

/// Reads the SQLite watch's data version every [`SQLITE_EVERY`] and wakes the reader when it
/// changed; live while it can be read (the store closed, or a failing read, leaves the
/// reader on its interval).
async fn watch_data_version(store: Store, wake: watch::Sender<u64>, live: watch::Sender<bool>) {
    let Some(fresh) = store.inner.fresh.as_ref() else {
        return;
    };
    let mut last = None;
    let mut tick = tokio::time::interval(SQLITE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let version = fresh.observe().await;
        live.send_if_modified(|l| std::mem::replace(l, version.is_some()) != version.is_some());
        // The first version read wakes the reader too: a commit may have landed between the
        // reader's last read and this one.
        if version.is_some() && version != last {
            wake.send_modify(|n| *n += 1);
            last = version;
        }
    }
}

impl Changes {
    /// Returns when the feed may have changed: a notification arrived or the data version
    /// moved, or the listener's connection was lost or is back (notifications may have
    /// been missed). Never returns on an inert one. Cancel-safe.
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

    /// Whether wake-ups arrive now (PostgreSQL with its listener connected; SQLite with its
    /// watch readable): the reader may then read less often, as a safety net only.
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
