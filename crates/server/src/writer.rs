//! The one writer of proposals: concurrent `propose-*` calls are queued to a single task,
//! which files whatever has accumulated in one transaction (`Store::propose_many`, a group
//! commit) and answers each caller only after that transaction committed. It outlives the
//! start of shutdown, so requests still in flight are filed, and stops once it is drained.

use supervise_store::{NewProposal, Proposed, Store, StoreError, StoreResult, Task};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::shutdown::Shutdown;

/// Proposals filed in one transaction at most.
const MAX_BATCH: usize = 64;
/// Calls queued before callers wait for room.
const QUEUE: usize = 1024;

struct Job {
    item: NewProposal,
    /// The call asked for a task: it is opened in the same transaction.
    as_task: bool,
    reply: oneshot::Sender<StoreResult<(Proposed, Option<Task>)>>,
}

/// The handle request handlers use.
#[derive(Debug, Clone)]
pub(crate) struct Writer {
    /// Bounded, so a burst of calls waits for room instead of growing memory; one receiver,
    /// so one task owns the write transaction.
    tx: mpsc::Sender<Job>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job").field("item", &self.item).finish()
    }
}

impl Writer {
    /// Starts the writer task on `store`. Once `shutdown` is drained (or every handle is
    /// dropped) it files what is queued, refuses more and ends.
    pub(crate) fn spawn(store: Store, shutdown: Shutdown) -> (Writer, JoinHandle<()>) {
        let (tx, rx) = mpsc::channel(QUEUE);
        (Writer { tx }, tokio::spawn(run(store, rx, shutdown)))
    }

    /// Files one proposal; returns once it is durable (or refused).
    pub(crate) async fn propose(&self, item: NewProposal) -> StoreResult<Proposed> {
        self.file(item, false).await.map(|(p, _)| p)
    }

    /// [`Writer::propose`] for a call that asked for a task: an undecided proposal comes
    /// back with its task, opened in the same transaction.
    pub(crate) async fn propose_task(
        &self,
        item: NewProposal,
    ) -> StoreResult<(Proposed, Option<Task>)> {
        self.file(item, true).await
    }

    async fn file(
        &self,
        item: NewProposal,
        as_task: bool,
    ) -> StoreResult<(Proposed, Option<Task>)> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Job {
                item,
                as_task,
                reply,
            })
            .await
            .map_err(|_| StoreError::Database("the server is shutting down".into()))?;
        answer
            .await
            .map_err(|_| StoreError::Database("the proposal writer stopped".into()))?
    }
}

async fn run(store: Store, mut rx: mpsc::Receiver<Job>, shutdown: Shutdown) {
    let drained = shutdown.drained();
    tokio::pin!(drained);
    let mut closed = false;
    loop {
        let first = tokio::select! {
            biased;
            job = rx.recv() => job,
            () = &mut drained, if !closed => {
                // Jobs already queued are still received, then `recv` ends the loop.
                rx.close();
                closed = true;
                continue;
            }
        };
        let Some(first) = first else { return };
        let mut jobs = vec![first];
        while jobs.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        let (items, replies): (Vec<_>, Vec<_>) = jobs
            .into_iter()
            .map(|j| ((j.item, j.as_task), j.reply))
            .unzip();
        let n = items.len();
        match store.propose_many_as(items).await {
            Ok(results) => {
                tracing::debug!(batch = n, "proposals filed in one transaction");
                for (reply, result) in replies.into_iter().zip(results) {
                    // A caller that went away loses nothing: the proposal is filed.
                    let _ = reply.send(result);
                }
            }
            Err(e) => {
                tracing::warn!(batch = n, error = %e, "filing proposals failed; nothing was written");
                for reply in replies {
                    let _ = reply.send(Err(same_error(&e)));
                }
            }
        }
    }
}

/// A copy of a batch-wide error for each caller (the store's error is not `Clone`).
fn same_error(e: &StoreError) -> StoreError {
    match e {
        StoreError::Busy => StoreError::Busy,
        other => StoreError::Database(other.to_string()),
    }
}
