//! Stopping and disconnecting lose nothing: SIGTERM answers waiting calls `pending` and exits
//! 0; a client that goes away leaves its proposal queued.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use supervise_store::{Actor, StatusFilter};

use crate::harness::*;

fn propose(host: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "propose-egress", "arguments": {"host": host, "justification": "j"}}})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_answers_waiting_calls_pending_and_exits_0_losing_nothing() {
    let mut server = Server::start(&["--grace", "30"]);
    let store = server.store().await;
    let mut calls = Vec::new();
    for host in ["one.example", "two.example"] {
        let url = server.url();
        let body = propose(host);
        calls.push(tokio::spawn(async move {
            let r = http_from(ALPHA)
                .post(url)
                .header("content-type", "application/json")
                .header("mcp-protocol-version", "2025-11-25")
                .body(body)
                .send()
                .await
                .expect("answered before the server exited");
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap())
        }));
    }
    let ids = wait_pending(&store, 2).await;
    store.close().await;
    let stopped = Instant::now();
    server.terminate();
    let mut answered = Vec::new();
    for c in calls {
        let (status, body) = c.await.unwrap();
        assert_eq!(status, 200);
        let sc = &body["result"]["structuredContent"];
        assert_eq!(sc["status"], "pending", "{body}");
        let text = body["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("check-proposal"));
        answered.push(sc["proposal_id"].as_str().unwrap().to_owned());
    }
    assert!(
        stopped.elapsed() < Duration::from_secs(5),
        "took {:?}",
        stopped.elapsed()
    );
    let status = server.wait_exit(Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{}", server.log());
    answered.sort();
    let mut ids = ids;
    ids.sort();
    assert_eq!(answered, ids);
    // Nothing lost: both still queued for the operator.
    let store = server.store().await;
    let pending = store.list(None, StatusFilter::Pending).await.unwrap();
    assert_eq!(pending.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_while_waiting_loses_nothing() {
    let server = Server::start(&["--grace", "30"]);
    let store = server.store().await;
    install_crypto();
    let client = reqwest::Client::builder()
        .local_address(ALPHA.parse::<std::net::IpAddr>().unwrap())
        .no_proxy()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let r = client
        .post(server.url())
        .header("content-type", "application/json")
        .body(propose("gone.example"))
        .send()
        .await;
    assert!(
        r.is_err(),
        "the grace window should outlast the client's patience"
    );
    let ids = wait_pending(&store, 1).await;
    // The server is fine, and the proposal can still be decided and polled.
    store
        .decide(
            &ids[0],
            supervise_store::Verdict::Approve,
            &Actor::cli("olivia"),
            None,
            None,
        )
        .await
        .unwrap();
    let client = mcp(&server).await;
    let r = call(&client, "check-proposal", json!({"proposal_id": ids[0]})).await;
    assert_eq!(status(&r), "approved");
}

/// How long shutdown waits for in-flight requests before it drops their connections.
fn drain_time() -> Duration {
    supervise_server::Config::default().drain_timeout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_an_idle_keep_alive_connection_and_a_waiting_call_exits_0_in_time() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut server = Server::start(&["--grace", "30"]);
    let store = server.store().await;
    // An idle keep-alive connection: one request answered, then nothing, never closed.
    let mut idle = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let req = format!(
        "GET /healthz HTTP/1.1\r\nHost: {}\r\nConnection: keep-alive\r\n\r\n",
        server.addr
    );
    idle.write_all(req.as_bytes()).await.unwrap();
    let mut buf = [0u8; 512];
    let n = idle.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    // A call in its grace window.
    let url = server.url();
    let waiting = tokio::spawn(async move {
        let r = http_from(ALPHA)
            .post(url)
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-11-25")
            .body(propose("idle.example"))
            .send()
            .await
            .expect("answered before the server exited");
        (r.status().as_u16(), r.json::<Value>().await.unwrap())
    });
    let ids = wait_pending(&store, 1).await;
    store.close().await;

    let stopped = Instant::now();
    server.terminate();
    let status = server.wait_exit(drain_time() + Duration::from_secs(1));
    let took = stopped.elapsed();
    assert_eq!(status.code(), Some(0), "{}", server.log());
    let (http, body) = waiting.await.unwrap();
    assert_eq!(http, 200);
    let sc = &body["result"]["structuredContent"];
    assert_eq!(sc["status"], "pending", "{body}");
    assert_eq!(sc["proposal_id"], ids[0].as_str(), "{body}");
    eprintln!("exited {took:?} after SIGTERM");
    drop(idle);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_a_client_that_never_reads_exits_0_within_the_drain_time() {
    let mut server = Server::start(&[]);
    let stalled = non_reading_client(server.addr, ALPHA, &tools_list_batch(32));
    // The answer has started and stops at the full socket buffers.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let stopped = Instant::now();
    server.terminate();
    let status = server.wait_exit(drain_time() + Duration::from_secs(1));
    let took = stopped.elapsed();
    assert_eq!(status.code(), Some(0), "{}", server.log());
    eprintln!("exited {took:?} after SIGTERM");
    drop(stalled);
}
