//! Proposals filed as tasks (the 2026-07-28 tasks extension): opening a task on a filed
//! proposal, reading it (the first read of an outcome delivers it), and cancelling it.
//!
//! Two facts are kept apart: the proposal's `archived_at` says its outcome reached the agent
//! (after which `check-proposal` says `unknown`, as for every delivered proposal), and the
//! `tasks` row says the outcome stays readable by `tasks/get` until `readable_until`. Only a
//! task read ever returns an outcome a second time.

use sqlx::AnyConnection;
use tracing::instrument;

use super::Store;
use super::bottles::live_generation;
use super::decisions::{deliver_in, withdraw_in};
use super::proposals::{load_proposal, open_proposal_of};
use super::task_rows::{open_task_in, task_of};
use crate::error::{StoreError, StoreResult};
use crate::model::{BottleId, Delivery, Proposal, Status, Task, TaskRead, Timestamp};

impl Store {
    /// Opens the task for the bottle's own undecided proposal `id` (filed just before),
    /// readable until the proposal's expiry. Filing the same change again as a task finds
    /// the same task. [`StoreError::ProposalNotFound`] when `id` is not an open proposal of
    /// this bottle.
    #[instrument(skip(self), err)]
    pub async fn open_task(&self, bottle_id: BottleId, id: &str) -> StoreResult<Task> {
        let mut w = self.write().await?;
        let now = Timestamp::now();
        live_generation(w.conn(), bottle_id).await?;
        let p = open_proposal_of(w.conn(), bottle_id, id, &now)
            .await?
            .ok_or_else(|| StoreError::ProposalNotFound(id.into()))?;
        let task = open_task_in(w.conn(), &p, &now).await?;
        w.commit().await?;
        Ok(task)
    }

    /// Reads the bottle's task `id`: `None` when it is not this bottle's task, or its
    /// lifetime is over and its outcome was delivered. An outcome not delivered yet (decided
    /// or expired) is delivered by this read, exactly once whoever else polls: archive plus
    /// `delivered` event in one write transaction, as `take_decision` does. An undecided
    /// proposal costs no write lock.
    #[instrument(skip(self), err)]
    pub async fn read_task(&self, bottle_id: BottleId, id: &str) -> StoreResult<Option<TaskRead>> {
        let mut reads = self.read_tasks(bottle_id, &[id]).await?;
        Ok(reads.pop().flatten())
    }

    /// [`Store::read_task`] for many of the bottle's tasks, in the order asked: one read
    /// transaction, and one write transaction for all the outcomes it delivers (none when
    /// nothing is to be delivered), so a stream told of a burst of decisions costs one
    /// commit, not one each.
    #[instrument(skip_all, fields(items = ids.len()), err)]
    pub async fn read_tasks(
        &self,
        bottle_id: BottleId,
        ids: &[impl AsRef<str>],
    ) -> StoreResult<Vec<Option<TaskRead>>> {
        let now = Timestamp::now();
        let mut reads = Vec::with_capacity(ids.len());
        {
            let mut tx = self.read().await?;
            for id in ids {
                reads.push(readable(&mut tx, bottle_id, id.as_ref(), &now).await?.map(
                    |(task, proposal)| TaskRead {
                        task,
                        proposal,
                        delivered_now: false,
                    },
                ));
            }
            tx.commit().await?;
        }
        if !reads
            .iter()
            .flatten()
            .any(|r| undelivered_outcome(&r.task, &r.proposal))
        {
            return Ok(reads);
        }
        let mut w = self.write().await?;
        let now = Timestamp::now();
        live_generation(w.conn(), bottle_id).await?;
        for read in reads.iter_mut().flatten() {
            if !undelivered_outcome(&read.task, &read.proposal) {
                continue;
            }
            let id = read.proposal.id.as_str().to_owned();
            match deliver_in(w.conn(), bottle_id, &id, &now).await? {
                Delivery::Decided(p) | Delivery::Expired(p) => {
                    read.proposal = p;
                    read.delivered_now = true;
                }
                // Another reader delivered it in between: read it as it now is.
                Delivery::Pending(_) | Delivery::Unknown => {
                    if let Some(p) = load_proposal(w.conn(), &id, &now).await? {
                        read.proposal = p;
                    }
                }
            }
        }
        w.commit().await?;
        for read in reads.iter().flatten().filter(|r| r.delivered_now) {
            tracing::info!(bottle = %read.proposal.bottle, proposal = %read.proposal.id, status = %read.proposal.status, "outcome delivered to its task");
        }
        Ok(reads)
    }

    /// Cancels the bottle's task `id`: an undecided proposal is withdrawn (`withdrawn`
    /// event, actor the bottle) and the task marked cancelled; a task already terminal is
    /// left as it is. `None` when it is not this bottle's task (as [`Store::read_task`]).
    #[instrument(skip(self), err)]
    pub async fn cancel_task(
        &self,
        bottle_id: BottleId,
        id: &str,
    ) -> StoreResult<Option<TaskRead>> {
        let mut w = self.write().await?;
        let now = Timestamp::now();
        live_generation(w.conn(), bottle_id).await?;
        let Some((mut task, mut proposal)) = readable(w.conn(), bottle_id, id, &now).await? else {
            return Ok(None);
        };
        if task.cancelled_at.is_none()
            && proposal.status == Status::Pending
            && proposal.archived_at.is_none()
        {
            proposal = withdraw_in(w.conn(), bottle_id, id, &now).await?;
            sqlx::query("UPDATE tasks SET cancelled_at = $1 WHERE proposal_id = $2")
                .bind(now.as_str())
                .bind(id)
                .execute(w.conn())
                .await?;
            task.cancelled_at = Some(now.clone());
            tracing::info!(bottle = %proposal.bottle, proposal = %id, "task cancelled; proposal withdrawn");
        }
        w.commit().await?;
        Ok(Some(TaskRead {
            task,
            proposal,
            delivered_now: false,
        }))
    }
}

/// A decided or expired proposal whose outcome no one has taken yet.
fn undelivered_outcome(task: &Task, p: &Proposal) -> bool {
    task.cancelled_at.is_none() && p.archived_at.is_none() && p.status != Status::Pending
}

/// The bottle's task `id` with its proposal, unless it is someone else's or its lifetime is
/// over with nothing left to deliver.
async fn readable(
    conn: &mut AnyConnection,
    bottle_id: BottleId,
    id: &str,
    now: &Timestamp,
) -> StoreResult<Option<(Task, Proposal)>> {
    let Some(task) = task_of(conn, bottle_id, id).await? else {
        return Ok(None);
    };
    let Some(p) = load_proposal(conn, id, now).await? else {
        return Ok(None);
    };
    let over = task.readable_until.as_ref().is_some_and(|u| u < now);
    if over && !undelivered_outcome(&task, &p) {
        return Ok(None);
    }
    Ok(Some((task, p)))
}
