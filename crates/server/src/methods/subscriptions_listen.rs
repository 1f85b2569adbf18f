//! `subscriptions/listen` (2026-07-28) with `notifications.taskIds` (tasks extension): an SSE
//! stream that sends `notifications/tasks`, the full task, when one of the caller's own
//! tasks named there changes state. Ids of other bottles' tasks and unknown ids are ignored,
//! so the stream tells nothing about them. A stream takes a place in the wait budget like a
//! waiting call, and ends with the request's result once every task it watches is terminal,
//! or at shutdown. It is answered as a stream, so `rpc.rs` calls [`open`] itself.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use supervise_protocol::{
    ErrorCode, ErrorObject, Implementation, ListenParams, ProtocolVersion, RequestId, Response,
    TaskStatus, methods, modern_result, parse_params, task_notification,
};
use supervise_store::{BottleId, Store};
use tokio::sync::{broadcast, mpsc};

use super::ctx::Ctx;
use crate::body::sse_event;
use crate::budget::{Full, WaitPermit};
use crate::metrics::{Held, Refusal};
use crate::shutdown::Shutdown;
use crate::task;
use crate::task_feed::TaskChange;

/// SSE frames buffered for a slow reader before the producer waits.
const FRAMES: usize = 16;

/// The most task ids one stream may name (SPEC "Tasks"): what a stream keeps is bounded by
/// what it watches, and a request naming more is refused rather than trimmed.
const MAX_TASK_IDS: usize = 64;

/// Opens the stream for request `id`, or refuses it: without the tasks extension declared
/// (-32021 when it names `taskIds`; otherwise the method is unknown, as before the
/// extension), without `taskIds` or with more than [`MAX_TASK_IDS`] of them (-32602), or past
/// the wait budget (-32600).
pub(crate) async fn open(
    ctx: &Ctx<'_>,
    params: Option<&Value>,
    id: RequestId,
) -> Result<mpsc::Receiver<Bytes>, ErrorObject> {
    let names_tasks = params
        .and_then(|p| p.get("notifications"))
        .and_then(|n| n.get("taskIds"))
        .is_some();
    if !ctx.declares_tasks() && !names_tasks {
        return Err(ErrorObject::method_not_found(methods::SUBSCRIPTIONS_LISTEN));
    }
    ctx.require_tasks()?;
    let params: ListenParams = parse_params(methods::SUBSCRIPTIONS_LISTEN, params)?;
    let ids = params.notifications.task_ids.unwrap_or_default();
    if ids.is_empty() {
        return Err(ErrorObject::invalid_params(
            "notifications.taskIds names no task: this server sends only notifications/tasks",
        ));
    }
    if ids.len() > MAX_TASK_IDS {
        return Err(ErrorObject::invalid_params(format!(
            "notifications.taskIds names {} tasks; a stream watches at most {MAX_TASK_IDS}: \
             open another stream for the rest",
            ids.len()
        )));
    }
    let permit = ctx.app.budget.try_acquire(ctx.bottle.id).map_err(|full| {
        ctx.app.metrics.refused(Refusal::WaitCap);
        let limit = match full {
            Full::Server(n) => format!("the server's limit of {n} (--max-waiting)"),
            Full::Bottle(n) => format!("this bottle's limit of {n} (--max-waiting-per-bottle)"),
        };
        ErrorObject::new(
            ErrorCode::INVALID_REQUEST,
            format!(
                "too many waiting calls and streams: {limit} is reached; poll tasks/get \
                 instead, at the task's pollIntervalMs"
            ),
        )
    })?;
    // Subscribe before the first read, so no change between the two is missed.
    let changes = ctx.app.task_feed.subscribe();
    let (tx, rx) = mpsc::channel(FRAMES);
    let stream = Stream {
        store: ctx.app.store.clone(),
        bottle_id: ctx.bottle.id,
        poll: ctx.app.config.task_poll_interval,
        version: ctx.version,
        server_info: ctx.app.server_info.clone(),
        id,
        watched: ids.into_iter().map(|id| (id, None)).collect(),
        tx,
        _permit: permit,
        _counted: ctx.app.metrics.streaming(),
    };
    tokio::spawn(stream.run(changes, ctx.app.shutdown.clone()));
    Ok(rx)
}

/// One open stream: what it watches and where it writes.
struct Stream {
    store: Store,
    bottle_id: BottleId,
    poll: Duration,
    version: ProtocolVersion,
    server_info: Implementation,
    id: RequestId,
    /// Task id → the status last sent (`None`: nothing sent yet).
    watched: HashMap<String, Option<TaskStatus>>,
    tx: mpsc::Sender<Bytes>,
    /// The stream's place in the wait budget, given back when it ends.
    _permit: WaitPermit,
    /// Its place on the `supervise_task_streams` gauge.
    _counted: Held,
}

impl Stream {
    async fn run(mut self, mut changes: broadcast::Receiver<TaskChange>, shutdown: Shutdown) {
        let all: Vec<String> = self.watched.keys().cloned().collect();
        let mut open = self.read(&all, true).await;
        drop(all);
        // Ids that are not this bottle's tasks, and tasks already over, are gone: keep only
        // the room the rest need.
        self.watched.shrink_to_fit();
        while open && !self.watched.is_empty() {
            let change = tokio::select! {
                () = shutdown.started() => break,
                () = self.tx.closed() => return,
                c = changes.recv() => c,
            };
            let mut ids: Vec<String> = match change {
                Ok(TaskChange::Events(events)) => events
                    .iter()
                    .filter(|e| e.bottle_id == Some(self.bottle_id))
                    .filter_map(|e| e.proposal_id.as_ref())
                    .filter(|id| self.watched.contains_key(id.as_str()))
                    .map(|id| id.as_str().to_owned())
                    .collect(),
                Ok(TaskChange::ReadAgain) | Err(broadcast::error::RecvError::Lagged(_)) => {
                    self.watched.keys().cloned().collect()
                }
                Err(broadcast::error::RecvError::Closed) => break,
            };
            ids.sort_unstable();
            ids.dedup();
            if !ids.is_empty() {
                open = self.read(&ids, false).await;
            }
        }
        if open {
            let result = modern_result(json!({}), &self.server_info);
            let end = serde_json::to_value(Response::result(self.id.clone(), result))
                .expect("responses serialise");
            let _ = self.tx.send(sse_event(&end)).await;
        }
    }

    /// Reads the tasks `ids` (in one store call) and sends a notification for each whose
    /// status changed (on the first read, only for those already terminal); a terminal task
    /// is no longer watched, nor is an id that is not this bottle's task. False once the
    /// client is gone.
    async fn read(&mut self, ids: &[String], first: bool) -> bool {
        let reads = match self.store.read_tasks(self.bottle_id, ids).await {
            Ok(reads) => reads,
            Err(e) => {
                tracing::warn!(error = %e, "a task stream could not read its tasks; it reads again on the next change");
                return true;
            }
        };
        for (id, read) in ids.iter().zip(reads) {
            let Some(read) = read else {
                self.watched.remove(id);
                continue;
            };
            let detailed = task::detailed(self.poll, &read, self.version);
            let status = detailed.task.status;
            let last = self.watched.get(id).copied().flatten();
            let tell = if first {
                status.is_terminal()
            } else {
                last != Some(status)
            };
            if tell {
                let frame = sse_event(&task_notification(&detailed));
                if self.tx.send(frame).await.is_err() {
                    return false;
                }
            }
            if status.is_terminal() {
                self.watched.remove(id);
            } else {
                self.watched.insert(id.clone(), Some(status));
            }
        }
        true
    }
}
