//! Proposals as tasks (the 2026-07-28 tasks extension): rmcp's client with the extension
//! declared for the story (task → operator decides with the real `supervise` binary →
//! `tasks/get`), raw HTTP for isolation, the wire details and the `subscriptions/listen`
//! stream (rmcp's subscription filter has no `taskIds` yet).

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, Implementation, ProtocolVersion, TaskPayload, TaskStatus,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};

use crate::harness::*;

/// The operator's CLI, built beside the server binary.
fn cli_bin() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let path = std::path::Path::new(BIN).with_file_name("supervise");
            if !path.exists() {
                let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
                let ok = Command::new(cargo)
                    .args(["build", "-p", "supervise-cli"])
                    .status()
                    .expect("cargo build")
                    .success();
                assert!(ok && path.exists(), "cannot build the supervise binary");
            }
            path
        })
        .clone()
}

/// Runs `supervise --db DB ARGS...` as its own process.
fn cli(server: &Server, args: &[&str]) -> Output {
    Command::new(cli_bin())
        .arg("--db")
        .arg(&server.db)
        .args(args)
        .env_remove("SUPERVISE_DB")
        .output()
        .expect("run supervise")
}

fn cli_ok(server: &Server, args: &[&str]) {
    let out = cli(server, args);
    assert!(
        out.status.success(),
        "supervise {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An rmcp client on the 2026-07-28 era that declares the tasks extension.
async fn tasks_client(server: &Server, source: &str) -> Client {
    let transport = StreamableHttpClientTransport::with_client(
        http_from(source),
        StreamableHttpClientTransportConfig::with_uri(server.url()),
    );
    let mut caps = ClientCapabilities::default();
    caps.extensions.get_or_insert_with(Default::default).insert(
        rmcp::model::TASKS_EXTENSION_ID.to_owned(),
        Default::default(),
    );
    ClientConfig::new(caps, Implementation::new("e2e-tasks", "1.0"))
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("discover")
}

/// Calls a proposal tool and requires a task back; returns its id.
async fn propose_task(client: &Client, host: &str) -> String {
    let args = json!({"host": host, "justification": "the build fetches from it"});
    let params = CallToolRequestParams::new("propose-egress")
        .with_arguments(args.as_object().unwrap().clone());
    match client.call_tool_once(params).await.expect("tools/call") {
        CallToolResponse::Task(t) => {
            assert_eq!(t.task.status, TaskStatus::Working);
            let msg = t.task.status_message.clone().unwrap_or_default();
            assert!(msg.contains(&t.task.task_id) && msg.contains(host), "{msg}");
            assert!(msg.contains("operator"), "{msg}");
            assert_eq!(t.task.poll_interval_ms, Some(5000));
            let ttl = t.task.ttl_ms.expect("a proposal with a TTL has a task ttl");
            assert!(
                ttl > 23 * 3_600_000 && ttl <= 24 * 3_600_000 + 1_000,
                "{ttl}"
            );
            t.task.task_id
        }
        other => panic!("expected a task, got {other:?}"),
    }
}

async fn get(client: &Client, id: &str) -> (TaskStatus, Option<Value>) {
    let t = client
        .get_task(GetTaskParams::new(id))
        .await
        .expect("tasks/get")
        .task;
    let result = match &t.payload {
        TaskPayload::Completed { result } => Some(Value::Object(result.clone())),
        _ => None,
    };
    (t.status(), result)
}

fn result_text(r: &Value) -> String {
    r["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_completes_with_the_cli_approval_and_reads_the_same_twice() {
    let server = Server::start(&["--grace", "30"]);
    let client = tasks_client(&server, ALPHA).await;
    let started = std::time::Instant::now();
    let id = propose_task(&client, "task-approve.example").await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "a task is returned without waiting out the grace window"
    );
    assert_eq!(get(&client, &id).await, (TaskStatus::Working, None));

    cli_ok(
        &server,
        &["approve", &id, "--note", "for the release build"],
    );
    let (status, result) = get(&client, &id).await;
    assert_eq!(status, TaskStatus::Completed);
    let result = result.expect("a completed task carries the tool result");
    assert_eq!(result["structuredContent"]["status"], "approved");
    assert_eq!(result["isError"], false);
    assert!(
        result_text(&result).contains("for the release build"),
        "{result}"
    );
    let (again, same) = get(&client, &id).await;
    assert_eq!(again, TaskStatus::Completed);
    assert_eq!(
        same.as_ref(),
        Some(&result),
        "a second read returns the same"
    );

    let poll = call(&client, "check-proposal", json!({"proposal_id": id})).await;
    assert_eq!(
        status_of(&poll),
        "unknown",
        "delivered to the task: check-proposal says unknown"
    );
    client.cancel().await.unwrap();
}

fn status_of(r: &rmcp::model::CallToolResult) -> String {
    status(r).to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_completes_the_task_with_is_error_and_the_note() {
    let server = Server::start(&[]);
    let client = tasks_client(&server, ALPHA).await;
    let id = propose_task(&client, "task-reject.example").await;
    cli_ok(
        &server,
        &["reject", &id, "--note", "use the internal mirror"],
    );
    let (status, result) = get(&client, &id).await;
    assert_eq!(
        status,
        TaskStatus::Completed,
        "a rejection is completed, never failed"
    );
    let result = result.unwrap();
    assert_eq!(result["isError"], true);
    assert_eq!(result["structuredContent"]["status"], "rejected");
    assert!(
        result_text(&result).contains("use the internal mirror"),
        "{result}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_task_withdraws_its_proposal_for_good() {
    let server = Server::start(&[]);
    let client = tasks_client(&server, ALPHA).await;
    let id = propose_task(&client, "task-cancel.example").await;
    client
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .expect("tasks/cancel");
    assert_eq!(get(&client, &id).await, (TaskStatus::Cancelled, None));
    // A second cancel is an empty ack that changes nothing.
    client
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .unwrap();
    assert_eq!(get(&client, &id).await.0, TaskStatus::Cancelled);

    let out = cli(&server, &["list", "--status", "all", "--json"]);
    assert!(out.status.success());
    let list: Value = serde_json::from_slice(&out.stdout).expect("list --json");
    let row = list["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} in {list}"));
    assert_eq!(row["status"], "withdrawn");
    let approve = cli(&server, &["approve", &id]);
    assert_eq!(
        approve.status.code(),
        Some(1),
        "a withdrawn proposal cannot be approved"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn withdraw_proposal_completes_the_task_as_withdrawn() {
    let server = Server::start(&[]);
    let client = tasks_client(&server, ALPHA).await;
    let id = propose_task(&client, "task-withdraw.example").await;
    let w = call(&client, "withdraw-proposal", json!({"proposal_id": id})).await;
    assert_eq!(status_of(&w), "withdrawn");
    let (status, result) = get(&client, &id).await;
    assert_eq!(status, TaskStatus::Completed);
    assert_eq!(result.unwrap()["structuredContent"]["status"], "withdrawn");
    client.cancel().await.unwrap();
}

// ---- raw HTTP: isolation and the wire details -------------------------------------------

pub(crate) fn meta(tasks: bool) -> Value {
    let caps = if tasks {
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    } else {
        json!({})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
    })
}

/// One 2026-07-28 request from `source`; `name` is the `Mcp-Name` header, if any.
pub(crate) async fn rpc(
    server: &Server,
    source: &str,
    method: &str,
    name: Option<&str>,
    mut params: Value,
    tasks: bool,
) -> (u16, Value) {
    params["_meta"] = meta(tasks);
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if let Some(n) = name {
        headers.push(("mcp-name", n));
    }
    let (status, body, _) = post(server, source, &headers, body.to_string()).await;
    (status, body.expect("a JSON body"))
}

pub(crate) async fn raw_task(server: &Server, source: &str, host: &str) -> String {
    let (status, body) = rpc(
        server,
        source,
        "tools/call",
        Some("propose-egress"),
        json!({"name": "propose-egress", "arguments": {"host": host, "justification": "j"}}),
        true,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["resultType"], "task", "{body}");
    body["result"]["taskId"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_bottles_task_reads_exactly_like_an_unknown_id() {
    let server = Server::start(&["--grace", "0"]);
    let id = raw_task(&server, ALPHA, "isolated.example").await;
    let unknown = "019ad1e2-0000-7000-8000-000000000000";
    for method in ["tasks/get", "tasks/cancel"] {
        let (s1, theirs) = rpc(&server, BETA, method, None, json!({"taskId": id}), true).await;
        let (s2, none) = rpc(
            &server,
            BETA,
            method,
            None,
            json!({"taskId": unknown}),
            true,
        )
        .await;
        assert_eq!((s1, s2), (400, 400));
        assert_eq!(theirs["error"]["code"], -32602, "{theirs}");
        let strip = |v: &Value, id: &str| v["error"]["message"].as_str().unwrap().replace(id, "ID");
        assert_eq!(strip(&theirs, &id), strip(&none, unknown), "{method}");
        assert_eq!(theirs["error"].get("data"), none["error"].get("data"));
    }
    // Beta's cancel changed nothing: alpha's task still works.
    let (_, mine) = rpc(
        &server,
        ALPHA,
        "tasks/get",
        Some(&id),
        json!({"taskId": id}),
        true,
    )
    .await;
    assert_eq!(mine["result"]["status"], "working", "{mine}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tasks_wire_rules_hold() {
    let server = Server::start(&["--grace", "0", "--task-poll-interval", "2s"]);
    let id = raw_task(&server, ALPHA, "wire.example").await;
    for method in ["tasks/list", "tasks/result"] {
        let (status, body) = rpc(&server, ALPHA, method, None, json!({"taskId": id}), true).await;
        assert_eq!(status, 404, "{body}");
        assert_eq!(body["error"]["code"], -32601, "{method}: {body}");
    }
    let (status, body) = rpc(
        &server,
        ALPHA,
        "tasks/get",
        Some("other"),
        json!({"taskId": id}),
        true,
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32020)),
        "{body}"
    );
    let (_, body) = rpc(
        &server,
        ALPHA,
        "tasks/get",
        None,
        json!({"taskId": id}),
        true,
    )
    .await;
    assert_eq!(
        body["result"]["status"], "working",
        "a missing Mcp-Name is tolerated: {body}"
    );
    assert_eq!(body["result"]["pollIntervalMs"], 2000);
    assert_eq!(body["result"]["resultType"], "complete");
    let (_, body) = rpc(
        &server,
        ALPHA,
        "tasks/update",
        Some(&id),
        json!({"taskId": id, "inputResponses": {}}),
        true,
    )
    .await;
    assert!(
        body["result"].is_object(),
        "tasks/update is acknowledged: {body}"
    );

    // Without the extension declared: a plain pending result, and -32021 on tasks methods.
    let (_, plain) = rpc(
        &server,
        ALPHA,
        "tools/call",
        Some("propose-egress"),
        json!({"name": "propose-egress", "arguments": {"host": "plain.example", "justification": "j"}}),
        false,
    )
    .await;
    assert_eq!(plain["result"]["resultType"], "complete", "{plain}");
    assert_eq!(plain["result"]["structuredContent"]["status"], "pending");
    for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let (status, body) = rpc(&server, ALPHA, method, None, json!({"taskId": id}), false).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["error"]["code"], -32021, "{method}: {body}");
    }

    // Discovery advertises the extension.
    let (_, d) = rpc(&server, ALPHA, "server/discover", None, json!({}), false).await;
    assert!(
        d["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(),
        "{d}"
    );
}

// ---- subscriptions/listen (raw HTTP: rmcp's subscription filter has no taskIds) ---------

/// Opens a `subscriptions/listen` stream from `source` for `ids`.
pub(crate) async fn listen(server: &Server, source: &str, ids: &[&str]) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": {
        "notifications": {"taskIds": ids}, "_meta": meta(true)}});
    http_from(source)
        .post(server.url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(body.to_string())
        .send()
        .await
        .expect("listen")
}

/// The next JSON-RPC message on an SSE stream (`None` once it ended), within `limit`.
pub(crate) async fn next_message(
    resp: &mut reqwest::Response,
    buf: &mut String,
    limit: std::time::Duration,
) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(end) = buf.find("\n\n") {
            let frame: String = buf.drain(..end + 2).collect();
            let data = frame
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .expect("a data line");
            return Some(serde_json::from_str(data).expect("JSON data"));
        }
        let chunk = tokio::time::timeout_at(deadline, resp.chunk())
            .await
            .expect("a message in time")
            .expect("stream readable")?;
        buf.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_stream_hears_its_own_task_within_a_second_of_a_cli_decision() {
    let server = Server::start(&["--grace", "0"]);
    let mine = raw_task(&server, ALPHA, "listen-mine.example").await;
    let theirs = raw_task(&server, BETA, "listen-theirs.example").await;
    let mut stream = listen(&server, ALPHA, &[&mine, &theirs]).await;
    assert_eq!(stream.status(), 200);
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    let mut buf = String::new();

    // Beta's task is decided first: alpha's stream hears nothing about it.
    cli_ok(&server, &["approve", &theirs]);
    let t0 = std::time::Instant::now();
    cli_ok(&server, &["approve", &mine, "--note", "heard"]);
    let decided = t0.elapsed();
    let n = next_message(&mut stream, &mut buf, std::time::Duration::from_secs(3))
        .await
        .expect("a notification");
    let heard = t0.elapsed();
    assert_eq!(n["method"], "notifications/tasks", "{n}");
    assert_eq!(
        n["params"]["taskId"],
        mine.as_str(),
        "only its own task: {n}"
    );
    assert_eq!(n["params"]["status"], "completed");
    assert_eq!(
        n["params"]["result"]["structuredContent"]["status"],
        "approved"
    );
    assert!(
        heard - decided < std::time::Duration::from_secs(1),
        "heard {:?} after the decision was committed",
        heard - decided
    );
    // Every watched task of its own is terminal: the stream ends with its result.
    let end = next_message(&mut stream, &mut buf, std::time::Duration::from_secs(3))
        .await
        .expect("the final result");
    assert_eq!(end["id"], 9, "{end}");
    assert_eq!(end["result"]["resultType"], "complete");
    // The notification delivered the decision: the task keeps it, check-proposal does not.
    let (_, again) = rpc(
        &server,
        ALPHA,
        "tasks/get",
        None,
        json!({"taskId": mine}),
        true,
    )
    .await;
    assert_eq!(again["result"]["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_streams_count_as_waiting_calls_and_end_at_shutdown() {
    let mut server = Server::start(&["--grace", "0", "--max-waiting-per-bottle", "1"]);
    let id = raw_task(&server, ALPHA, "listen-budget.example").await;
    let mut first = listen(&server, ALPHA, &[&id]).await;
    assert_eq!(first.status(), 200);
    let second = listen(&server, ALPHA, &[&id]).await;
    assert_eq!(second.status(), 400);
    let refusal: Value = second.json().await.unwrap();
    assert_eq!(refusal["error"]["code"], -32600, "{refusal}");
    // Another bottle has its own places.
    let other = raw_task(&server, BETA, "listen-budget-beta.example").await;
    assert_eq!(listen(&server, BETA, &[&other]).await.status(), 200);

    server.terminate();
    let mut buf = String::new();
    let end = next_message(&mut first, &mut buf, std::time::Duration::from_secs(5))
        .await
        .expect("a final result at shutdown");
    assert_eq!(end["id"], 9, "{end}");
    assert!(
        next_message(&mut first, &mut buf, std::time::Duration::from_secs(5))
            .await
            .is_none(),
        "the stream ends"
    );
    assert!(
        server
            .wait_exit(std::time::Duration::from_secs(10))
            .success()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_the_bottle_completes_its_listened_task_as_withdrawn() {
    let server = Server::start(&["--grace", "0"]);
    let id = raw_task(&server, ALPHA, "listen-removed.example").await;
    let mut stream = listen(&server, ALPHA, &[&id]).await;
    assert_eq!(stream.status(), 200);
    cli_ok(&server, &["bottle", "rm", "alpha"]);
    let mut buf = String::new();
    let n = next_message(&mut stream, &mut buf, std::time::Duration::from_secs(3))
        .await
        .expect("a notification");
    assert_eq!(n["params"]["taskId"], id.as_str(), "{n}");
    assert_eq!(n["params"]["status"], "completed");
    assert_eq!(
        n["params"]["result"]["structuredContent"]["status"],
        "withdrawn"
    );
    assert_eq!(n["params"]["result"]["isError"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_legacy_era_has_no_tasks() {
    let server = Server::start(&["--grace", "0"]);
    for method in [
        "tasks/get",
        "tasks/cancel",
        "tasks/list",
        "subscriptions/listen",
    ] {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"taskId": "x"}});
        let (status, body, _) = post(
            &server,
            ALPHA,
            &[("mcp-protocol-version", "2025-11-25")],
            body.to_string(),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(body.unwrap()["error"]["code"], -32601, "{method}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_already_allowed_gets_the_plain_approved_result_not_a_task() {
    let server = Server::start(&["--grace", "30"]);
    let client = tasks_client(&server, ALPHA).await;
    let id = propose_task(&client, "allowed.example").await;
    cli_ok(&server, &["approve", &id]);
    let args = json!({"host": "allowed.example", "justification": "again"});
    let params = CallToolRequestParams::new("propose-egress")
        .with_arguments(args.as_object().unwrap().clone());
    match client.call_tool_once(params).await.expect("tools/call") {
        CallToolResponse::Complete(r) => {
            let v = serde_json::to_value(&r).unwrap();
            let s = &v["structuredContent"];
            assert_eq!(s["already_allowed"], true, "{v}");
            assert_eq!(s["status"], "approved", "{v}");
            assert!(s["proposal_id"].is_null(), "{v}");
        }
        other => panic!("expected a plain result, got {other:?}"),
    }
}
