//! The task row of a proposal: opening it in the filing transaction and reading it back.
//! Both the filing code and the task reads use these, so they depend on nothing else here.

use sqlx::AnyConnection;

use super::rows::{TASK_COLUMNS, TaskRow};
use crate::error::{StoreError, StoreResult};
use crate::model::{BottleId, Proposal, Task, Timestamp};

/// Opens (or finds) the task of the open proposal `p`, readable until its expiry.
pub(super) async fn open_task_in(
    conn: &mut AnyConnection,
    p: &Proposal,
    now: &Timestamp,
) -> StoreResult<Task> {
    sqlx::query(
        "INSERT INTO tasks (proposal_id, bottle_id, created_at, readable_until) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (proposal_id) DO NOTHING",
    )
    .bind(p.id.as_str())
    .bind(p.bottle_id.get())
    .bind(now.as_str())
    .bind(p.expires_at.as_ref().map(Timestamp::as_str))
    .execute(&mut *conn)
    .await?;
    task_of(conn, p.bottle_id, p.id.as_str())
        .await?
        .ok_or_else(|| StoreError::ProposalNotFound(p.id.as_str().into()))
}

pub(super) async fn task_of(
    conn: &mut AnyConnection,
    bottle_id: BottleId,
    id: &str,
) -> StoreResult<Option<Task>> {
    let row: Option<TaskRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{TASK_COLUMNS} WHERE proposal_id = $1 AND bottle_id = $2"
    )))
    .bind(id)
    .bind(bottle_id.get())
    .fetch_optional(&mut *conn)
    .await?;
    row.map(Task::try_from).transpose()
}
