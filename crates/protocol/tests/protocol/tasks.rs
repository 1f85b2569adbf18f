//! The tasks extension's wire shapes (2026-07-28, `io.modelcontextprotocol/tasks`), after
//! SEP-2663's examples: decoded and re-encoded like the other golden fixtures.

use serde_json::json;
use supervise_protocol::{Incoming, methods, parse_message, parse_params};

use crate::golden::{fixture, request, round_trip};

#[test]
fn create_task_result_is_flat_with_result_type_task() {
    use supervise_protocol::{CreateTaskResult, TaskStatus};
    let v = fixture(
        r#"{"resultType": "task", "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
            "status": "working", "statusMessage": "The operation is now in progress.",
            "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:30:00Z",
            "ttlMs": 60000, "pollIntervalMs": 5000}"#,
    );
    let r: CreateTaskResult = round_trip(&v);
    assert_eq!(r.task.status, TaskStatus::Working);
    assert_eq!(r.task.ttl_ms, Some(60000));
    let unlimited = fixture(
        r#"{"resultType": "task", "taskId": "t", "status": "working",
            "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:30:00Z",
            "ttlMs": null}"#,
    );
    let r: CreateTaskResult = round_trip(&unlimited);
    assert_eq!(r.task.ttl_ms, None);
}

#[test]
fn detailed_task_carries_the_tool_result_once_completed() {
    use supervise_protocol::{DetailedTask, TaskStatus};
    let v = fixture(
        r#"{"taskId": "786512e2", "status": "completed",
            "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:50:00Z",
            "ttlMs": 60000, "pollIntervalMs": 5000,
            "result": {"content": [{"type": "text", "text": "rejected"}], "isError": true}}"#,
    );
    let t: DetailedTask = round_trip(&v);
    assert_eq!(t.task.status, TaskStatus::Completed);
    assert_eq!(t.result.unwrap()["isError"], true);
    let cancelled = fixture(
        r#"{"taskId": "786512e2", "status": "cancelled",
            "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:50:00Z",
            "ttlMs": null}"#,
    );
    let t: DetailedTask = round_trip(&cancelled);
    assert!(t.task.status.is_terminal() && t.result.is_none());
}

#[test]
fn tasks_requests_and_listen_params_decode() {
    use supervise_protocol::{ListenParams, TaskIdParams, UpdateTaskParams};
    let (method, params) = request(
        r#"{"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {
            "taskId": "786512e2", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}"#,
    );
    assert_eq!(method, methods::TASKS_GET);
    let p: TaskIdParams = parse_params(methods::TASKS_GET, params.as_ref()).unwrap();
    assert_eq!(p.task_id, "786512e2");
    assert!(p.extra.contains_key("_meta"));
    let u: UpdateTaskParams = round_trip(&fixture(
        r#"{"taskId": "786512e2", "inputResponses": {"k": {"action": "accept"}}}"#,
    ));
    assert!(u.input_responses.unwrap().contains_key("k"));
    let l: ListenParams = round_trip(&fixture(
        r#"{"notifications": {"taskIds": ["a", "b"], "toolsListChanged": true}}"#,
    ));
    assert_eq!(l.notifications.task_ids.unwrap(), ["a", "b"]);
    assert!(l.notifications.extra.contains_key("toolsListChanged"));
}

#[test]
fn a_task_notification_is_a_json_rpc_notification_with_the_full_task() {
    use supervise_protocol::{DetailedTask, Task, TaskStatus, task_notification};
    let t = DetailedTask::new(
        Task::new(
            "p1",
            TaskStatus::Completed,
            "2025-11-25T10:30:00Z",
            "2025-11-25T10:31:00Z",
        ),
        Some(json!({"content": [], "isError": false})),
    );
    let n = task_notification(&t);
    assert_eq!(n["method"], "notifications/tasks");
    assert_eq!(n["params"]["taskId"], "p1");
    assert_eq!(n["params"]["status"], "completed");
    assert!(matches!(
        parse_message(n.to_string().as_bytes()),
        Ok(Incoming::Notification(_))
    ));
}
