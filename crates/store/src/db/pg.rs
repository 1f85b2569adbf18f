//! What only PostgreSQL has: the per-host server claim (a session advisory lock on a
//! connection of its own), the change notifications (`LISTEN`, on another) and the
//! snapshot reads that prove a poll's remembered answer fresh.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use sqlx::{AnyPool, Connection, PgConnection};
use tokio::sync::{Notify, watch};

use super::backend::HOST_LOCK_CLASS;
use crate::error::{StoreError, StoreResult};

/// Takes the session advisory lock `(HOST_LOCK_CLASS, hashtext(host))` on a connection of
/// its own, without waiting: held while the connection lives, released by PostgreSQL when
/// the session ends, however the process ends. Another server holding it is
/// [`StoreError::AlreadyServed`], with its backend's pid.
pub(super) async fn claim_host(url: &str, host: &str, shown: PathBuf) -> StoreResult<PgConnection> {
    let mut conn = PgConnection::connect(url).await?;
    let got: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, hashtext($2))")
        .bind(HOST_LOCK_CLASS)
        .bind(host)
        .fetch_one(&mut conn)
        .await?;
    if got {
        let _ = sqlx::query("SELECT set_config('application_name', $1, false)")
            .bind(format!("supervise-server {host}"))
            .execute(&mut conn)
            .await;
        return Ok(conn);
    }
    let holder: Option<i32> = sqlx::query_scalar(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::int::oid \
         AND objid = hashtext($2)::oid AND objsubid = 2 AND granted LIMIT 1",
    )
    .bind(HOST_LOCK_CLASS)
    .bind(host)
    .fetch_optional(&mut conn)
    .await
    .unwrap_or(None);
    let _ = conn.close().await;
    Err(StoreError::AlreadyServed {
        path: PathBuf::from(format!("{} (host {host})", shown.display())),
        pid: holder.map(|p| p as u32),
    })
}

/// The channel every write transaction that appends to the trail notifies (a statement
/// trigger on `events`, so the notification is sent at COMMIT, never for a rollback).
pub(super) const CHANNEL: &str = "supervise_events";

/// How long the listener waits before connecting again after losing its connection.
const RECONNECT: Duration = Duration::from_secs(1);

/// Listens on [`CHANNEL`] on a connection of its own (`application_name`
/// `supervise-listen HOST`), in a task of its own, and bumps `wake` for every
/// notification, and once more whenever the connection is lost or comes back (so the feed
/// is read then: notifications sent meanwhile are gone). `live` says whether the
/// connection is up now. Reconnects every [`RECONNECT`] until it is.
pub(super) async fn listen(
    url: String,
    host: String,
    wake: watch::Sender<u64>,
    live: watch::Sender<bool>,
) {
    let bump = || wake.send_modify(|n| *n = n.wrapping_add(1));
    let mut logged_down = false;
    loop {
        match connect_listener(&url, &host).await {
            Ok(mut listener) => {
                live.send_replace(true);
                bump();
                tracing::info!(channel = CHANNEL, "change notifications live");
                logged_down = false;
                // A notification, or the connection lost (`None`, or an error such as
                // the server terminating the session).
                while let Ok(Some(_)) = listener.try_recv().await {
                    while listener.next_buffered().is_some() {}
                    bump();
                }
                live.send_replace(false);
                bump();
                tracing::warn!(
                    channel = CHANNEL,
                    "change notifications lost; reading the change feed at its interval until they are back"
                );
            }
            Err(e) => {
                if !logged_down {
                    tracing::warn!(error = %e, channel = CHANNEL, "cannot listen for change notifications; retrying");
                    logged_down = true;
                }
            }
        }
        if wake.is_closed() {
            return;
        }
        tokio::time::sleep(RECONNECT).await;
    }
}

async fn connect_listener(url: &str, host: &str) -> sqlx::Result<PgListener> {
    let options =
        PgConnectOptions::from_str(url)?.application_name(&format!("supervise-listen {host}"));
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await?;
    let mut listener = PgListener::connect_with(&pool).await?;
    listener.listen(CHANNEL).await?;
    Ok(listener)
}

/// PostgreSQL's `pg_current_snapshot()` as text, the version of [`fresh`](super::fresh),
/// read for concurrent callers at once: a caller is given the result of a read *sent after
/// it asked* (its statement's snapshot is taken later still), never one already in flight
/// when it asked, so what it gets shows every commit that returned before it asked. Under
/// concurrent polls one round trip serves every poll that arrived while the one before it
/// was in flight.
pub(super) struct Snapshots {
    pool: AnyPool,
    reads: std::sync::Mutex<Reads>,
    done: Notify,
}

enum Step<'a> {
    Done(Option<Arc<str>>),
    Wait(tokio::sync::futures::Notified<'a>),
    Send(u64),
}

struct Reads {
    /// Reads sent so far; a caller arriving now needs read number `started + 1` or later.
    started: u64,
    /// Whether read number `started` is in flight.
    in_flight: bool,
    /// The latest read that ended: its number and its result.
    last: (u64, Option<Arc<str>>),
}

impl Snapshots {
    pub(super) fn new(pool: AnyPool) -> Snapshots {
        Snapshots {
            pool,
            reads: std::sync::Mutex::new(Reads {
                started: 0,
                in_flight: false,
                last: (0, None),
            }),
            done: Notify::new(),
        }
    }

    /// The current snapshot, read after this call began; `None` when it cannot be read.
    pub(super) async fn read(&self) -> Option<Arc<str>> {
        let want = self.lock().started + 1;
        loop {
            let number = match self.step(want) {
                Step::Done(result) => return result,
                Step::Wait(ended) => {
                    ended.await;
                    continue;
                }
                Step::Send(number) => number,
            };
            // Ends the read (with no result) if this caller is dropped while it is in flight,
            // so the callers waiting on it send another.
            let mut ending = Ending {
                snapshots: self,
                number,
                result: None,
            };
            ending.result = self.fetch().await;
            return ending.result.clone();
        }
    }

    /// What a caller needing read number `want` does next, decided under the lock.
    fn step(&self, want: u64) -> Step<'_> {
        let mut reads = self.lock();
        if reads.last.0 >= want {
            return Step::Done(reads.last.1.clone());
        }
        if reads.in_flight {
            // Created before the lock is released: the end of the read in flight wakes it
            // even if that comes before it is first polled.
            return Step::Wait(self.done.notified());
        }
        reads.in_flight = true;
        reads.started += 1;
        Step::Send(reads.started)
    }

    async fn fetch(&self) -> Option<Arc<str>> {
        match sqlx::query_scalar::<_, String>("SELECT pg_current_snapshot()::text")
            .fetch_one(&self.pool)
            .await
        {
            Ok(text) => Some(text.into()),
            Err(e) => {
                tracing::debug!(error = %e, "no snapshot read: the poll reads the database");
                None
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Reads> {
        self.reads.lock().expect("not poisoned")
    }
}

/// Records the end of read `number` when dropped, with its result (`None` if the read
/// did not finish), and wakes its waiters.
struct Ending<'a> {
    snapshots: &'a Snapshots,
    number: u64,
    result: Option<Arc<str>>,
}

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        let mut reads = self.snapshots.lock();
        reads.in_flight = false;
        reads.last = (self.number, self.result.take());
        drop(reads);
        self.snapshots.done.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use sqlx::{Connection, PgConnection};

    use super::Snapshots;

    /// Concurrent callers get a snapshot; a commit between two reads changes it; a caller
    /// dropped while its read is in flight leaves the next caller a read of its own.
    #[tokio::test]
    async fn snapshot_reads_are_shared_and_see_every_commit_before_them() {
        let Some(cluster) = supervise_testpg::cluster() else {
            return;
        };
        let url = cluster.fresh_database().await;
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&url).await.unwrap();
        let snapshots = Arc::new(Snapshots::new(pool.clone()));
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let s = snapshots.clone();
                tokio::spawn(async move { s.read().await })
            })
            .collect();
        for task in tasks {
            assert!(task.await.unwrap().is_some(), "every caller gets one");
        }

        let before = snapshots.read().await.unwrap();
        let mut raw = PgConnection::connect(&url).await.unwrap();
        sqlx::query("CREATE TABLE t (x int)")
            .execute(&mut raw)
            .await
            .unwrap();
        raw.close().await.unwrap();
        let after = snapshots.read().await.unwrap();
        assert_ne!(
            before, after,
            "a commit before the read changes the snapshot"
        );

        for _ in 0..20 {
            let _ = tokio::time::timeout(Duration::from_micros(50), snapshots.read()).await;
        }
        let next = tokio::time::timeout(Duration::from_secs(10), snapshots.read())
            .await
            .expect("a dropped caller does not stall the next");
        assert!(next.is_some());
        pool.close().await;
    }
}
