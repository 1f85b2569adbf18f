//! Reading the event log: the change feed the server follows and the audit trail operators
//! read.

use super::Store;
use super::rows::{self, EVENT_COLUMNS, EventRow};
use crate::error::StoreResult;
use crate::model::Event;

impl Store {
    /// The audit trail, oldest first: every event, or one bottle slug's (all generations).
    pub async fn audit(&self, bottle: Option<&str>) -> StoreResult<Vec<Event>> {
        if let Some(slug) = bottle {
            self.known_slug(slug).await?;
        }
        let rows: Vec<EventRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{EVENT_COLUMNS} WHERE (?1 IS NULL OR b.slug = ?1) ORDER BY e.seq"
        )))
        .bind(bottle)
        .fetch_all(&self.inner.pool)
        .await?;
        rows::all(rows)
    }

    /// The change feed: events after `seq`, oldest first, at most `limit`. One range scan on
    /// the primary key, whatever the number of waiters asking.
    pub async fn events_after(&self, seq: i64, limit: u32) -> StoreResult<Vec<Event>> {
        let rows: Vec<EventRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{EVENT_COLUMNS} WHERE e.seq > ? ORDER BY e.seq LIMIT ?"
        )))
        .bind(seq)
        .bind(limit)
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
}
