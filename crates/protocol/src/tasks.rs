//! The 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`): the task a tool call
//! may return instead of its result, `tasks/get` / `tasks/cancel` / `tasks/update` params,
//! `subscriptions/listen` params and the `notifications/tasks` notification.
//!
//! Wire names follow the extension: `ttlMs` (an integer or `null`, always sent),
//! `pollIntervalMs`, a flat `CreateTaskResult` (`resultType: "task"` beside the task's
//! members), and a `DetailedTask` that carries `result` once `completed` and `error` once
//! `failed`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::modern::ResultType;

/// The extension's identifier, in `capabilities.extensions` and `clientCapabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// A task's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskStatus {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl TaskStatus {
    /// Completed, failed or cancelled: the task will not change again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// The members every task carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Task {
    pub task_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub last_updated_at: String,
    /// How long after `createdAt` the task stays readable; `null`: unlimited.
    pub ttl_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
}

impl Task {
    /// A task with no status message, no time limit and no poll interval.
    pub fn new(
        task_id: impl Into<String>,
        status: TaskStatus,
        created_at: impl Into<String>,
        last_updated_at: impl Into<String>,
    ) -> Self {
        Self {
            task_id: task_id.into(),
            status,
            status_message: None,
            created_at: created_at.into(),
            last_updated_at: last_updated_at.into(),
            ttl_ms: None,
            poll_interval_ms: None,
        }
    }
}

/// A tool call's answer when the server made it a task: `resultType: "task"` and the task's
/// members, flat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateTaskResult {
    pub result_type: ResultType,
    #[serde(flatten)]
    pub task: Task,
}

impl CreateTaskResult {
    pub fn new(task: Task) -> Self {
        Self {
            result_type: ResultType::Task,
            task,
        }
    }
}

/// A task with its outcome: what `tasks/get` returns and `notifications/tasks` carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DetailedTask {
    #[serde(flatten)]
    pub task: Task,
    /// The tool result, once `completed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The JSON-RPC error, once `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

impl DetailedTask {
    pub fn new(task: Task, result: Option<Value>) -> Self {
        Self {
            task,
            result,
            error: None,
        }
    }
}

/// `tasks/get` and `tasks/cancel` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TaskIdParams {
    pub task_id: String,
    /// `_meta` and anything else, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `tasks/update` params: answers to a task's input requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UpdateTaskParams {
    pub task_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<Map<String, Value>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `subscriptions/listen` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListenParams {
    pub notifications: ListenFilter,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What a `subscriptions/listen` stream opts in to; only `taskIds` is served here, the
/// rest is kept as sent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListenFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<String>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The `notifications/tasks` notification for `task`, as a JSON-RPC message.
pub fn task_notification(task: &DetailedTask) -> Value {
    serde_json::json!({
        "jsonrpc": "2.0",
        "method": crate::methods::NOTIFICATIONS_TASKS,
        "params": task,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ttl_ms_is_sent_as_null_when_unlimited() {
        let t = Task::new("p1", TaskStatus::Working, "a", "b");
        let v = serde_json::to_value(CreateTaskResult::new(t)).unwrap();
        assert_eq!(v["ttlMs"], Value::Null);
        assert!(v.as_object().unwrap().contains_key("ttlMs"));
        assert_eq!(v["resultType"], "task");
        assert!(v.get("pollIntervalMs").is_none());
    }

    #[test]
    fn statuses_are_snake_case_and_terminal_ones_known() {
        assert_eq!(json!(TaskStatus::InputRequired), json!("input_required"));
        assert!(TaskStatus::Cancelled.is_terminal());
        assert!(!TaskStatus::Working.is_terminal());
    }
}
