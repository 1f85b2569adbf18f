//! Asking for what is already allowed: the bottle's grant in force that covers a proposed
//! change, so the server answers at once from it and queues nothing.

use serde_json::Value;
use tracing::instrument;

use super::Store;
use super::egress::covers;
use super::rows::{self, GRANT_COLUMNS, GrantRow};
use crate::change;
use crate::error::StoreResult;
use crate::model::{BottleId, Grant, Kind, Timestamp};

impl Store {
    /// The grant in force of bottle `bottle_id` that already allows `change` (as an agent
    /// proposed it, normalised here), the one lasting longest when several do; `None` when
    /// none does or the change is invalid (filing it reports why). An egress change is
    /// covered by a grant of the same port whose host is the same or a wildcard over it (a
    /// wildcard asked for only by the same wildcard); a standing git-push by a grant of the
    /// same remote whose ref is the same or a namespace over it. A gate push (exact old and
    /// new) is never answered here: the gate decides those.
    #[instrument(skip(self, change), err)]
    pub async fn grant_allowing(
        &self,
        bottle_id: BottleId,
        kind: Kind,
        change: &Value,
    ) -> StoreResult<Option<Grant>> {
        let Ok(asked) = change::normalise(kind, change) else {
            return Ok(None);
        };
        if kind == Kind::GitPush && asked.get("new").is_some() {
            return Ok(None);
        }
        let now = Timestamp::now();
        let mut conn = self.inner.pool.acquire().await?;
        let rows: Vec<GrantRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{GRANT_COLUMNS} WHERE g.bottle_id = $1 AND g.kind = $2 AND g.ended_at IS NULL \
             AND (g.expires_at IS NULL OR g.expires_at > $3) \
             AND NOT EXISTS (SELECT 1 FROM proposals u WHERE u.id = g.proposal_id \
                             AND u.gate_used_at IS NOT NULL) ORDER BY g.created_at"
        )))
        .bind(bottle_id.get())
        .bind(kind.as_str())
        .bind(now.as_str())
        .fetch_all(&mut *conn)
        .await?;
        let text = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_owned();
        let best = rows::all::<GrantRow, Grant>(rows)?
            .into_iter()
            .filter(|g| match kind {
                Kind::Egress => {
                    g.change.get("port") == asked.get("port")
                        && covers(&text(&g.change, "host"), &text(&asked, "host"))
                }
                Kind::GitPush => {
                    g.change.get("new").is_none()
                        && text(&g.change, "remote") == text(&asked, "remote")
                        && (text(&g.change, "ref") == text(&asked, "ref")
                            || change::ref_covers(&text(&g.change, "ref"), &text(&asked, "ref")))
                }
            })
            .max_by_key(|g| {
                let ends = g.expires_at.as_ref().map(|t| t.as_str().to_owned());
                (ends.is_none(), ends)
            });
        Ok(best)
    }
}
