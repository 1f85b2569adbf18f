//! The proposal and grant rows every write path reads or adds: loading a proposal by id,
//! and inserting the grant a decision (an operator's or a rule's) makes. Below `proposals`,
//! `decisions` and `rules`, which all use them.

use std::time::Duration;

use sqlx::AnyConnection;

use super::rows::{PROPOSAL_COLUMNS, ProposalRow};
use crate::error::StoreResult;
use crate::model::{GrantId, Proposal, Timestamp};

/// One proposal by its full id, as it reads at `now`.
pub(super) async fn load_proposal(
    conn: &mut AnyConnection,
    id: &str,
    now: &Timestamp,
) -> StoreResult<Option<Proposal>> {
    let row: Option<ProposalRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{PROPOSAL_COLUMNS} WHERE p.id = $1"
    )))
    .bind(id)
    .fetch_optional(&mut *conn)
    .await?;
    row.map(|r| r.at(now)).transpose()
}

/// Records the grant an approve or modify (or a rule's permit) makes.
pub(super) async fn insert_grant(
    conn: &mut AnyConnection,
    p: &Proposal,
    change: &str,
    operator: &str,
    now: &Timestamp,
    grant_for: Option<Duration>,
) -> StoreResult<GrantId> {
    let grant_id = GrantId::generate();
    sqlx::query(
        "INSERT INTO grants (id, bottle_id, proposal_id, kind, change, granted_by, \
         created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(grant_id.as_str())
    .bind(p.bottle_id.get())
    .bind(p.id.as_str())
    .bind(p.kind.as_str())
    .bind(change)
    .bind(operator)
    .bind(now.as_str())
    .bind(grant_for.map(|d| Timestamp::after(d).as_str().to_owned()))
    .execute(&mut *conn)
    .await?;
    Ok(grant_id)
}
