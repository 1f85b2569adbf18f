//! A proposal as a task of the tasks extension: the task's id is the proposal's, its state
//! follows the proposal's (undecided → `working`; decided, expired or withdrawn →
//! `completed` with the tool result [`crate::grace::outcome`] gives; cancelled by
//! `tasks/cancel` → `cancelled`), and this module turns what the store holds into the wire
//! task. The store decides what may be read (see `Store::read_task`).

use std::time::Duration;

use supervise_protocol::{CreateTaskResult, DetailedTask, ProtocolVersion, Task, TaskStatus};
use supervise_store::{Proposal, Status, Task as StoredTask, TaskRead, Timestamp};

use crate::grace;

/// The answer to a proposal call that asked for a task.
pub(crate) fn created(poll: Duration, t: &StoredTask, p: &Proposal) -> CreateTaskResult {
    CreateTaskResult::new(working(poll, t, p))
}

/// The full task, as `tasks/get` returns it and `notifications/tasks` carries it.
/// `poll` is the `pollIntervalMs` to suggest.
pub(crate) fn detailed(poll: Duration, read: &TaskRead, version: ProtocolVersion) -> DetailedTask {
    let (t, p) = (&read.task, &read.proposal);
    if let Some(at) = &t.cancelled_at {
        let mut task = base(poll, t, TaskStatus::Cancelled, at);
        task.status_message = Some(format!(
            "Cancelled: proposal {} was withdrawn before an operator decided it.",
            p.id
        ));
        return DetailedTask::new(task, None);
    }
    if p.status == Status::Pending {
        return DetailedTask::new(working(poll, t, p), None);
    }
    let updated = p
        .decision
        .as_ref()
        .map(|d| &d.decided_at)
        .or(p.archived_at.as_ref())
        .unwrap_or(&t.created_at);
    let mut task = base(poll, t, TaskStatus::Completed, updated);
    task.status_message = Some(format!("Proposal {} is {}.", p.id, p.status));
    let result = grace::outcome(p).into_result(version);
    DetailedTask::new(
        task,
        Some(serde_json::to_value(result).expect("tool results serialise")),
    )
}

fn working(poll: Duration, t: &StoredTask, p: &Proposal) -> Task {
    let mut task = base(poll, t, TaskStatus::Working, &t.created_at);
    let flags = if p.flags.is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = p.flags.iter().map(|f| f.as_str()).collect();
        format!("; flags: {}", names.join(", "))
    };
    task.status_message = Some(format!(
        "Proposal {} ({}{flags}) waits for an operator to decide it; this task completes with \
         the decision.",
        p.id,
        supervise_store::present::describe(p.kind, &p.change),
    ));
    task
}

fn base(poll: Duration, t: &StoredTask, status: TaskStatus, updated: &Timestamp) -> Task {
    let mut task = Task::new(
        t.proposal_id.as_str(),
        status,
        t.created_at.as_str(),
        updated.as_str(),
    );
    task.ttl_ms = t.readable_until.as_ref().map(|until| {
        let ms = (until.to_time() - t.created_at.to_time()).whole_milliseconds();
        u64::try_from(ms).unwrap_or(0)
    });
    task.poll_interval_ms = Some(u64::try_from(poll.as_millis()).unwrap_or(u64::MAX));
    task
}
