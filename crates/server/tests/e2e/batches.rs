//! JSON-RPC batches (2025-03-26, the revision without an `MCP-Protocol-Version` header):
//! what one batch may cost the server, and that its items wait their grace windows together.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use supervise_protocol::MAX_BATCH_LEN;

use crate::harness::*;

/// POSTs `body` from `source` in 2025-03-26 (no protocol-version header); returns the
/// status and the raw answer.
async fn post_raw(server: &Server, body: impl Into<reqwest::Body>) -> (u16, Vec<u8>) {
    let resp = http_from(ALPHA)
        .post(server.url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body)
        .send()
        .await
        .expect("send");
    let status = resp.status().as_u16();
    (status, resp.bytes().await.expect("body").to_vec())
}

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(bytes)))
}

/// The server's resident set, from `/proc/<pid>/status`, in KiB.
pub(crate) fn rss_kib(server: &Server) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid()))
        .expect("read /proc/<pid>/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/<pid>/status")
}

fn ping(id: usize) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

fn propose(id: usize, host: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "propose-egress",
        "arguments": {"host": host, "justification": "batched"}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_megabyte_of_ones_gets_one_small_error_and_costs_little_memory() {
    let server = Server::start(&["--grace", "0"]);
    // Warm up: the first request pays for the runtime's and the store's first allocations.
    let (status, _) = post_raw(&server, ping(0).to_string()).await;
    assert_eq!(status, 200);
    let before = rss_kib(&server);
    let items = 512 * 1024 - 1;
    let body = format!("[{}1]", "1,".repeat(items - 1));
    assert!(body.len() <= 1024 * 1024);
    for _ in 0..2 {
        let (status, answer) = post_raw(&server, body.clone()).await;
        assert_eq!(status, 400);
        assert!(answer.len() < 1024, "{} bytes of answer", answer.len());
        let answer = json_of(&answer);
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert_eq!(answer["id"], Value::Null);
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("at most {MAX_BATCH_LEN} messages")),
            "{message}"
        );
    }
    let after = rss_kib(&server);
    let grown = after.saturating_sub(before);
    assert!(
        grown < 64 * 1024,
        "RSS grew by {grown} KiB ({before} -> {after} KiB)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_past_the_limit_is_one_error_and_runs_nothing() {
    let server = Server::start(&["--grace", "0"]);
    let mut items: Vec<Value> = (1..=MAX_BATCH_LEN).map(ping).collect();
    items.push(propose(MAX_BATCH_LEN + 1, "too-long.example"));
    let (status, answer) = post_raw(&server, Value::Array(items).to_string()).await;
    assert_eq!(status, 400);
    let answer = json_of(&answer);
    assert!(answer.is_object(), "one error, not one per item: {answer}");
    assert_eq!(answer["error"]["code"], -32600);
    assert_eq!(
        answer["error"]["message"],
        format!(
            "Invalid Request: a batch may hold at most {MAX_BATCH_LEN} messages and this one has {}; send fewer messages per request",
            MAX_BATCH_LEN + 1
        )
    );
    let store = server.store().await;
    let filed = store
        .list(None, supervise_store::StatusFilter::All)
        .await
        .unwrap();
    assert!(filed.is_empty(), "nothing runs: {filed:?}");

    // At the limit, every item is answered.
    let items: Vec<Value> = (1..=MAX_BATCH_LEN).map(ping).collect();
    let (status, answer) = post_raw(&server, Value::Array(items).to_string()).await;
    assert_eq!(status, 200);
    assert_eq!(json_of(&answer).as_array().unwrap().len(), MAX_BATCH_LEN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_garbage_gets_one_error() {
    let server = Server::start(&["--grace", "0"]);
    let (status, answer) = post_raw(&server, r#"[1, "x", null, {"jsonrpc": "1.0"}]"#).await;
    assert_eq!(status, 400);
    let answer = json_of(&answer);
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer["id"], Value::Null);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("none of the 4 items"),
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_proposals_waits_one_grace_window_not_one_each() {
    let server = Server::start(&["--grace", "2"]);
    let hosts = ["a.example", "b.example", "c.example", "d.example"];
    let items: Vec<Value> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| propose(i + 1, h))
        .collect();
    let started = Instant::now();
    let (status, answer) = post_raw(&server, Value::Array(items).to_string()).await;
    let took = started.elapsed();
    assert_eq!(status, 200);
    assert!(
        took < Duration::from_secs(4),
        "4 items under --grace 2 took {took:?}"
    );
    let answer = json_of(&answer);
    let answers = answer.as_array().expect("an array");
    assert_eq!(answers.len(), 4);
    for (i, (a, host)) in answers.iter().zip(hosts).enumerate() {
        assert_eq!(a["id"], i + 1, "answers keep the items' order: {answer}");
        // 2025-03-26 has no structuredContent: the status is in the text.
        let text = a["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(
            text.contains(&format!("(egress to {host}:443) is pending")),
            "{a}"
        );
    }
    let store = server.store().await;
    assert_eq!(wait_pending(&store, 4).await.len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_mixed_batch_is_answered_item_by_item() {
    let server = Server::start(&["--grace", "0"]);
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "two", "method": "tools/list"},
        {"jsonrpc": "1.0", "id": 3, "method": "ping"},
    ]);
    let (status, answer) = post_raw(&server, batch.to_string()).await;
    assert_eq!(status, 200);
    let answer = json_of(&answer);
    let answers = answer.as_array().expect("an array");
    assert_eq!(answers.len(), 3, "{answer}");
    assert_eq!(answers[0], json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    assert_eq!(answers[1]["id"], "two");
    assert_eq!(answers[1]["result"]["tools"].as_array().unwrap().len(), 5);
    assert_eq!(answers[2]["id"], 3);
    assert_eq!(answers[2]["error"]["code"], -32600);
    // Only notifications: accepted, no body.
    let (status, answer) = post_raw(
        &server,
        r#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#,
    )
    .await;
    assert_eq!((status, answer.len()), (202, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_past_the_cap_leaves_out_the_last_items_with_a_short_error() {
    let server = Server::start(&["--grace", "0"]);
    // 32 tools/list calls with ~32 KiB ids: the body fits in 1 MiB, the ids alone come back
    // at almost 1 MiB, and the tool lists push the answer past it.
    let id = |i: usize| format!("{i:02}{}", "x".repeat(32 * 1024 - 100));
    let items: Vec<Value> = (0..MAX_BATCH_LEN)
        .map(|i| json!({"jsonrpc": "2.0", "id": id(i), "method": "tools/list"}))
        .collect();
    let body = Value::Array(items).to_string();
    assert!(body.len() <= 1024 * 1024, "{} bytes", body.len());
    let (status, answer) = post_raw(&server, body).await;
    assert_eq!(status, 200);
    // At most the cap, plus the left-out errors (each ~200 bytes and its echoed id).
    let answers = json_of(&answer);
    let answers = answers.as_array().expect("an array");
    assert_eq!(answers.len(), MAX_BATCH_LEN);
    let left_out = answers.iter().filter(|a| a.get("error").is_some()).count();
    assert!(left_out > 0, "nothing was left out");
    assert!(left_out < MAX_BATCH_LEN, "everything was left out");
    assert!(answer.len() <= 1024 * 1024 + left_out * (32 * 1024 + 300));
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a["id"], id(i), "answers keep the items' order");
        if i < MAX_BATCH_LEN - left_out {
            assert_eq!(a["result"]["tools"].as_array().unwrap().len(), 5);
        } else {
            assert_eq!(a["error"]["code"], -32600);
            let message = a["error"]["message"].as_str().unwrap();
            assert!(message.contains("send it on its own"), "{message}");
        }
    }
}
