//! The policy in force: the grants approve and modify made, and ending one early.

use tracing::instrument;

use super::Store;
use super::bottles::live_bottle_by_slug;
use super::rows::{
    self, BOTTLE_COLUMNS, BottleRow, GRANT_COLUMNS, GRANT_COLUMNS_WITH_USE, GrantRow,
};
use super::trail::{NewEvent, actor_of, record};
use crate::error::{StoreError, StoreResult};
use crate::model::{Actor, Bottle, BottleId, EndReason, EventKind, Grant, Timestamp};

impl Store {
    /// The grants in force for a live bottle (`SLUG` of this store's host, or `HOST/SLUG`),
    /// oldest first, each with its last recorded use. A git gate's one-shot approval is in
    /// force until a push uses it.
    pub async fn grants_in_force(&self, slug: &str) -> StoreResult<Vec<Grant>> {
        let now = Timestamp::now();
        let mut conn = self.inner.pool.acquire().await?;
        let (host, name) = slug.split_once('/').unwrap_or((&self.inner.host, slug));
        let bottle = live_bottle_by_slug(&mut conn, host, name)
            .await?
            .ok_or_else(|| StoreError::BottleNotFound(slug.into()))?;
        let rows: Vec<GrantRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{GRANT_COLUMNS_WITH_USE} WHERE g.bottle_id = $1 AND g.ended_at IS NULL \
             AND (g.expires_at IS NULL OR g.expires_at > $2) \
             AND NOT EXISTS (SELECT 1 FROM proposals u WHERE u.id = g.proposal_id \
                             AND u.gate_used_at IS NOT NULL) ORDER BY g.created_at"
        )))
        .bind(bottle.id.get())
        .bind(now.as_str())
        .fetch_all(&mut *conn)
        .await?;
        rows::all(rows)
    }

    /// Every live bottle of this host (by slug) with its grants in force (oldest first, each
    /// with its last recorded use), read in one transaction: the host's whole policy.
    pub async fn policy_all(&self) -> StoreResult<Vec<(Bottle, Vec<Grant>)>> {
        let host = self.inner.host.clone();
        self.policy_on(Some(&host)).await
    }

    /// [`Store::policy_all`] of one host's bottles (`host`), or of every host's (`None`, by
    /// host then slug): what the console's grants page and `supervise policy --all
    /// [--host NAME]` show, and what enforcement points other than the Squid helper read.
    pub async fn policy_on(&self, host: Option<&str>) -> StoreResult<Vec<(Bottle, Vec<Grant>)>> {
        let now = Timestamp::now();
        let mut tx = self.read().await?;
        let bottles: Vec<BottleRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{BOTTLE_COLUMNS} WHERE ($1 IS NULL OR host = $1) AND removed_at IS NULL \
             ORDER BY host, slug"
        )))
        .bind(host)
        .fetch_all(&mut *tx)
        .await?;
        let grants: Vec<GrantRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{GRANT_COLUMNS_WITH_USE} WHERE ($2 IS NULL OR b.host = $2) AND b.removed_at IS NULL \
             AND g.ended_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > $1) \
             AND NOT EXISTS (SELECT 1 FROM proposals u WHERE u.id = g.proposal_id \
                             AND u.gate_used_at IS NOT NULL) ORDER BY g.created_at"
        )))
        .bind(now.as_str())
        .bind(host)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        let bottles: Vec<Bottle> = rows::all(bottles)?;
        let grants: Vec<Grant> = rows::all(grants)?;
        // A live slug is unique per host, so (host, slug) names one live bottle.
        Ok(bottles
            .into_iter()
            .map(|b| {
                let mine = grants
                    .iter()
                    .filter(|g| g.host == b.host && g.bottle == b.slug)
                    .cloned()
                    .collect();
                (b, mine)
            })
            .collect())
    }

    /// Ends a grant now. `by` must be an approver or admin ([`StoreError::Forbidden`]) and
    /// see the grant's bottle (otherwise [`StoreError::GrantNotFound`]).
    #[instrument(skip(self, by), fields(operator = %by.name, via = %by.via), err)]
    pub async fn revoke(&self, grant_id: &str, by: &Actor) -> StoreResult<Grant> {
        if !by.may_decide() {
            return Err(StoreError::forbidden(by, "revoke grants"));
        }
        let mut w = self.write().await?;
        let now = Timestamp::now();
        let g: Option<GrantRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{GRANT_COLUMNS} WHERE g.id = $1"
        )))
        .bind(grant_id)
        .fetch_optional(w.conn())
        .await?;
        let mut grant = g
            .map(Grant::try_from)
            .transpose()?
            .filter(|g| by.sees(&g.bottle))
            .ok_or_else(|| StoreError::GrantNotFound(grant_id.into()))?;
        if let (Some(at), Some(reason)) = (&grant.ended_at, grant.end_reason) {
            return Err(StoreError::GrantEnded {
                id: grant_id.into(),
                reason,
                at: at.clone(),
            });
        }
        if let Some(exp) = grant.expires_at.as_ref().filter(|e| **e <= now) {
            return Err(StoreError::GrantEnded {
                id: grant_id.into(),
                reason: EndReason::Expired,
                at: exp.clone(),
            });
        }
        let actor = actor_of(by);
        let bottle_id: i64 = sqlx::query_scalar(
            "UPDATE grants SET ended_at = $1, end_reason = 'revoked', ended_by = $2 WHERE id = $3 \
             RETURNING bottle_id",
        )
        .bind(now.as_str())
        .bind(&actor)
        .bind(grant_id)
        .fetch_one(w.conn())
        .await?;
        let change = grant.change.to_string();
        record(
            w.conn(),
            &now,
            NewEvent {
                bottle_id: Some(BottleId::from_row(bottle_id)),
                proposal_id: Some(&grant.proposal_id),
                grant_id: Some(grant_id),
                kind: Some(grant.kind),
                change: Some(&change),
                via: Some(by.via),
                ..NewEvent::new(EventKind::GrantRevoked, &actor)
            },
        )
        .await?;
        w.commit().await?;
        grant.ended_at = Some(now);
        grant.end_reason = Some(EndReason::Revoked);
        tracing::info!(bottle = %grant.bottle, grant = grant_id, operator = %by.name, via = %by.via, "grant revoked");
        Ok(grant)
    }
}
