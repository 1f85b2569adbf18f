//! `supervise audit`'s filters, applied in SQL: a time window, an event name, an actor
//! (exact, or a prefix ending in `:`), a bottle and host, and the newest N.

use sqlx::{FromRow, Row};

use super::Store;
use super::rows::{self, EVENT_COLUMNS, EventRow};
use crate::error::StoreResult;
use crate::model::{Event, EventKind, Timestamp};

/// The `schema_version` of each line of `audit --format jsonl` (the event document with
/// `seq`, `hash` and this added).
pub const EVENT_SCHEMA_VERSION: u32 = 1;

/// Which events `audit` shows. `Default` is every event.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    /// One host's bottles (events of no bottle are shown with every host).
    pub host: Option<String>,
    /// One bottle slug (`SLUG` or `HOST/SLUG`), every generation.
    pub bottle: Option<String>,
    /// At or after this time.
    pub since: Option<Timestamp>,
    /// Before this time.
    pub until: Option<Timestamp>,
    pub event: Option<EventKind>,
    /// `operator:ana` exactly, or every actor starting with a prefix ending in `:`
    /// (`rules:`, `bottle:`).
    pub actor: Option<String>,
    /// Only the newest N (still shown oldest first).
    pub limit: Option<u32>,
}

impl Store {
    /// The events `filter` selects, oldest first; the filtering and the limit are done by
    /// the database (the `events_at` index for a window, the primary key for the newest N).
    /// Each event comes with its hash in the chain.
    pub async fn audit_filtered(
        &self,
        filter: &AuditFilter,
    ) -> StoreResult<Vec<(Event, Option<String>)>> {
        let (host, bottle) = self
            .bottle_filter(filter.host.as_deref(), filter.bottle.as_deref())
            .await?;
        let (exact, prefix) = match &filter.actor {
            Some(a) if a.ends_with(':') => (None, Some(a.clone())),
            Some(a) => (Some(a.clone()), None),
            None => (None, None),
        };
        let limit = filter
            .limit
            .map(|n| format!(" LIMIT {n}"))
            .unwrap_or_default();
        let columns = EVENT_COLUMNS.replacen("SELECT ", "SELECT e.hash AS chain_hash, ", 1);
        let sql = format!(
            "{columns} WHERE ($1 IS NULL OR b.slug = $1) \
             AND ($2 IS NULL OR b.host = $2 OR e.bottle_id IS NULL) \
             AND ($3 IS NULL OR e.at >= $3) AND ($4 IS NULL OR e.at < $4) \
             AND ($5 IS NULL OR e.event = $5) AND ($6 IS NULL OR e.actor = $6) \
             AND ($7 IS NULL OR substr(e.actor, 1, length($7)) = $7) \
             ORDER BY e.seq DESC{limit}"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(bottle)
            .bind(host)
            .bind(filter.since.as_ref().map(|t| t.as_str().to_string()))
            .bind(filter.until.as_ref().map(|t| t.as_str().to_string()))
            .bind(filter.event.map(EventKind::as_str))
            .bind(exact)
            .bind(prefix)
            .fetch_all(&self.inner.pool)
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows.iter().rev() {
            let hash: Option<String> = row.try_get("chain_hash")?;
            let event = EventRow::from_row(row)?;
            out.push((rows::all(vec![event])?.remove(0), hash));
        }
        Ok(out)
    }
}
