//! Reading the event log: the change feed the server follows, the audit trail operators
//! read, and the hook runner's durable position in the feed.

use super::rows::{self, EVENT_COLUMNS, EventRow};
use super::{Backend, Store};
use crate::error::StoreResult;
use crate::model::{BottleId, Event, Timestamp};

/// The `hook_cursors` row of the server's `--on-event` runner (on PostgreSQL one per host:
/// `on-event@HOST`, since every host's server runs its own hooks on the shared feed).
const ON_EVENT: &str = "on-event";

impl Store {
    /// The audit trail, oldest first: every event, or one bottle slug's (all generations;
    /// `SLUG` or `HOST/SLUG`).
    pub async fn audit(&self, bottle: Option<&str>) -> StoreResult<Vec<Event>> {
        self.audit_on(None, bottle).await
    }

    /// [`Store::audit`] of one host's bottles (`host`; events of no bottle are shown with
    /// every host), or of every host's (`None`).
    pub async fn audit_on(
        &self,
        host: Option<&str>,
        bottle: Option<&str>,
    ) -> StoreResult<Vec<Event>> {
        let (host, bottle) = self.bottle_filter(host, bottle).await?;
        let rows: Vec<EventRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{EVENT_COLUMNS} WHERE ($1 IS NULL OR b.slug = $1) \
             AND ($2 IS NULL OR b.host = $2 OR e.bottle_id IS NULL) ORDER BY e.seq"
        )))
        .bind(bottle)
        .bind(host)
        .fetch_all(&self.inner.pool)
        .await?;
        rows::all(rows)
    }

    /// The change feed: events after `seq`, oldest first, at most `limit`. One range scan on
    /// the primary key, whatever the number of waiters asking. The limit is written into the
    /// statement, never bound: SQLite's planner reads a bound `LIMIT` value, which marks the
    /// statement expired at every later bind, so each call would prepare it again (callers
    /// pass a few constant limits, each one cached statement).
    pub async fn events_after(&self, seq: i64, limit: u32) -> StoreResult<Vec<Event>> {
        let rows: Vec<EventRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{EVENT_COLUMNS} WHERE e.seq > $1 ORDER BY e.seq LIMIT {limit}"
        )))
        .bind(seq)
        .fetch_all(&self.inner.pool)
        .await?;
        rows::all(rows)
    }

    /// The newest event's sequence number (0 when there are none).
    pub async fn last_seq(&self) -> StoreResult<i64> {
        let seq: Option<i64> = sqlx::query_scalar("SELECT MAX(seq) FROM events")
            .fetch_one(&self.inner.pool)
            .await?;
        Ok(seq.unwrap_or(0))
    }

    /// One bottle generation's events (or, for `None`, the events of no bottle) after
    /// `after` and at most `through`, oldest first, at most `limit`: how the hook runner
    /// reads again a backlog it did not keep in memory. A range scan of the
    /// `(bottle_id, seq)` index. The limit is written into the statement, as in
    /// [`Store::events_after`].
    pub async fn bottle_events_between(
        &self,
        bottle_id: Option<BottleId>,
        after: i64,
        through: i64,
        limit: u32,
    ) -> StoreResult<Vec<Event>> {
        let rows: Vec<EventRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{EVENT_COLUMNS} WHERE e.bottle_id IS NOT DISTINCT FROM $1 AND e.seq > $2 AND e.seq <= $3 \
             ORDER BY e.seq LIMIT {limit}"
        )))
        .bind(bottle_id.map(BottleId::get))
        .bind(after)
        .bind(through)
        .fetch_all(&self.inner.pool)
        .await?;
        rows::all(rows)
    }

    /// The name of this store's `--on-event` cursor row.
    fn hook_cursor(&self) -> String {
        match self.backend() {
            Backend::Sqlite => ON_EVENT.to_string(),
            Backend::Postgres => format!("{ON_EVENT}@{}", self.inner.host),
        }
    }

    /// Where the `--on-event` runner stands in the change feed: every event at or below this
    /// `seq` has been handled. `None` when hooks never ran on this file.
    pub async fn hook_position(&self) -> StoreResult<Option<i64>> {
        Ok(
            sqlx::query_scalar("SELECT seq FROM hook_cursors WHERE name = $1")
                .bind(self.hook_cursor())
                .fetch_optional(&self.inner.pool)
                .await?,
        )
    }

    /// Records that every event at or below `seq` has been handled. The position never
    /// moves back: an older `seq` than the stored one changes nothing.
    pub async fn advance_hook_position(&self, seq: i64) -> StoreResult<()> {
        let mut w = self.write().await?;
        sqlx::query(
            "INSERT INTO hook_cursors (name, seq, updated_at) VALUES ($1, $2, $3) \
             ON CONFLICT (name) DO UPDATE SET seq = excluded.seq, updated_at = excluded.updated_at \
             WHERE excluded.seq > hook_cursors.seq",
        )
        .bind(self.hook_cursor())
        .bind(seq.max(0))
        .bind(Timestamp::now().as_str())
        .execute(w.conn())
        .await?;
        w.commit().await?;
        Ok(())
    }
}
