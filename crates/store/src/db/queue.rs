//! The queue's figures for a scrape of the server's metrics: how many proposals of this
//! host's bottles are pending, by bottle and kind, and since when the oldest waits. One
//! grouped read over the open-proposals index, whatever the queue's length.

use super::Store;
use crate::error::{StoreError, StoreResult};
use crate::model::{Kind, Timestamp};

/// The pending proposals of one bottle and one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingGroup {
    /// The bottle's slug (this host's bottles only).
    pub bottle: String,
    pub kind: Kind,
    pub count: u64,
    /// When the oldest of them was filed.
    pub oldest: Timestamp,
}

impl Store {
    /// This host's pending proposals (undecided, not archived, not past their expiry),
    /// grouped by bottle and kind, in slug order.
    pub async fn pending_summary(&self) -> StoreResult<Vec<PendingGroup>> {
        let now = Timestamp::now();
        let mut conn = self.inner.pool.acquire().await?;
        let rows: Vec<(String, String, i64, String)> = sqlx::query_as(
            "SELECT b.slug, p.kind, COUNT(*), MIN(p.created_at) \
             FROM proposals p JOIN bottles b ON b.id = p.bottle_id \
             WHERE p.status = 'pending' AND p.archived_at IS NULL \
             AND (p.expires_at IS NULL OR p.expires_at > $1) AND b.host = $2 \
             GROUP BY b.slug, p.kind ORDER BY b.slug, p.kind",
        )
        .bind(now.as_str())
        .bind(self.host())
        .fetch_all(&mut *conn)
        .await?;
        rows.into_iter()
            .map(|(bottle, kind, count, oldest)| {
                let corrupt = |what: String| StoreError::Corrupt {
                    table: "proposals",
                    id: format!("pending of bottle {bottle}"),
                    what,
                };
                Ok(PendingGroup {
                    kind: kind.parse().map_err(|e| corrupt(format!("kind: {e}")))?,
                    oldest: oldest
                        .parse()
                        .map_err(|e| corrupt(format!("created_at: {e}")))?,
                    count: u64::try_from(count).unwrap_or(0),
                    bottle,
                })
            })
            .collect()
    }
}
