//! A gate push's recorded content ([`PushDiff`]): written with the proposal filed for it,
//! read for review, and which proposals have ended (so the gate drops the refs that keep
//! their objects).

use sqlx::AnyConnection;

use super::Store;
use crate::error::{StoreError, StoreResult};
use crate::model::{PushDiff, Timestamp};

impl Store {
    /// The content the gate recorded with proposal `id` (a full id), if any.
    pub async fn push_diff(&self, id: &str) -> StoreResult<Option<PushDiff>> {
        let mut conn = self.inner.pool.acquire().await?;
        let text: Option<String> =
            sqlx::query_scalar("SELECT diff FROM push_diffs WHERE proposal_id = $1")
                .bind(id)
                .fetch_optional(&mut *conn)
                .await?;
        text.map(|t| {
            serde_json::from_str(&t).map_err(|e| StoreError::Corrupt {
                table: "push_diffs",
                id: id.to_string(),
                what: format!("diff: {e}"),
            })
        })
        .transpose()
    }

    /// Of the proposal ids given, those that have ended: decided other than approved, or
    /// approved and used by the gate or no longer in force, expired, withdrawn, or unknown.
    /// What is left is pending, or an approval the agent may still push under.
    pub async fn ended_proposals(&self, ids: &[String]) -> StoreResult<Vec<String>> {
        let now = Timestamp::now();
        let mut conn = self.inner.pool.acquire().await?;
        let mut ended = Vec::new();
        for id in ids {
            let live: Option<i64> = sqlx::query_scalar(
                "SELECT 1 FROM proposals p LEFT JOIN grants g ON g.proposal_id = p.id \
                 WHERE p.id = $1 AND (p.status = 'pending' OR (p.status IN ('approved', \
                 'modified') AND p.gate_used_at IS NULL AND g.ended_at IS NULL \
                 AND (g.expires_at IS NULL OR g.expires_at > $2)))",
            )
            .bind(id.as_str())
            .bind(now.as_str())
            .fetch_optional(&mut *conn)
            .await?;
            if live.is_none() {
                ended.push(id.clone());
            }
        }
        Ok(ended)
    }
}

/// Records `diff` with proposal `id` inside the caller's transaction; a proposal that has
/// one already (an identical push filed again) keeps it.
pub(super) async fn record_diff(
    conn: &mut AnyConnection,
    id: &str,
    diff: &PushDiff,
    now: &Timestamp,
) -> StoreResult<()> {
    let text = serde_json::to_string(diff).map_err(|e| StoreError::Corrupt {
        table: "push_diffs",
        id: id.to_string(),
        what: format!("diff: {e}"),
    })?;
    sqlx::query(
        "INSERT INTO push_diffs (proposal_id, created_at, truncated, diff) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (proposal_id) DO NOTHING",
    )
    .bind(id)
    .bind(now.as_str())
    .bind(i64::from(diff.truncated))
    .bind(text)
    .execute(&mut *conn)
    .await?;
    Ok(())
}
