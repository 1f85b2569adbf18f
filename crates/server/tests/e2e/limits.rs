//! What one bottle can hold, and the numbers a task gives: the open-file limit and the wait
//! caps sized from it (a bottle opening listen streams until refused leaves room for other
//! bottles and the health check), the task-id cap of a stream, and a task's `ttlMs`.

use std::time::Duration;

use futures_util::future::join_all;
use serde_json::{Value, json};

use crate::harness::*;
use crate::tasks::{listen, meta, next_message, raw_task, rpc};

/// A third bottle, for the tests that need two besides the health checker's address.
const GAMMA: &str = "127.0.0.3";

/// The soft and hard open-file limits of process `pid`.
fn open_file_limits(pid: u32) -> (u64, u64) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("read limits");
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("a Max open files line");
    let numbers: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (numbers[0], numbers[1])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_raises_its_open_file_limit_to_the_hard_one() {
    let server = Server::start_with_open_files(512, 4096, &["--grace", "0"]);
    assert_eq!(open_file_limits(server.pid()), (4096, 4096));
    assert!(
        server.log().contains("open-file limit raised"),
        "{}",
        server.log()
    );
}

/// A `subscriptions/listen` request for `ids` on `client`, or `None` when the server did not
/// answer within 2 s.
async fn try_listen(
    client: &reqwest::Client,
    server: &Server,
    ids: &[&str],
) -> Option<reqwest::Response> {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": {
        "notifications": {"taskIds": ids}, "_meta": meta(true)}});
    let send = client
        .post(server.url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(body.to_string())
        .send();
    match tokio::time::timeout(Duration::from_secs(2), send).await {
        Ok(Ok(resp)) => Some(resp),
        Ok(Err(_)) | Err(_) => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_bottle_at_its_stream_cap_never_shuts_out_another_bottle_or_the_health_check() {
    // The limit a service manager gives by default, with no room to raise it.
    let server = Server::start_with_open_files(
        1024,
        1024,
        &["--grace", "0", "--bottle", &format!("gamma={GAMMA}")],
    );
    let id = raw_task(&server, BETA, "streams.example").await;
    let beta = http_from(BETA);
    let mut streams = Vec::new();
    // Beta opens streams until it is refused, or the server stops answering.
    let refusal = loop {
        assert!(
            streams.len() < 2_000,
            "2000 streams and never refused:\n{}",
            server.log()
        );
        match try_listen(&beta, &server, &[&id]).await {
            Some(resp) if resp.status() == 200 => streams.push(resp),
            Some(resp) => break Some((resp.status().as_u16(), resp.json::<Value>().await)),
            None => break None,
        }
    };

    // Another bottle files a proposal, and a monitor reads the health, each within 2 s.
    let propose = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "propose-egress",
        "arguments": {"host": "other.example", "justification": "its own work"}}});
    let other = tokio::time::timeout(
        Duration::from_secs(2),
        post(&server, GAMMA, &[], propose.to_string()),
    )
    .await;
    let (status, body, _) = other.expect("another bottle's proposal answers within 2 s");
    assert_eq!(status, 200, "{body:?}");
    let body = body.expect("a JSON answer");
    let answer = body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(answer.contains("is pending"), "{body}");
    let health = tokio::time::timeout(
        Duration::from_secs(2),
        http_from(ALPHA)
            .get(format!("http://{}/healthz", server.addr))
            .send(),
    )
    .await
    .expect("/healthz answers within 2 s")
    .expect("/healthz");
    assert_eq!(health.status(), 200);

    // Beta was refused by its cap, with a JSON-RPC error that names it, not left unanswered.
    let (status, refusal) = refusal.expect("the server refused beta's stream, in time");
    let refusal = refusal.expect("a JSON refusal");
    assert_eq!(status, 400, "{refusal}");
    assert_eq!(refusal["error"]["code"], -32600, "{refusal}");
    assert!(
        refusal["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-waiting-per-bottle"),
        "{refusal}"
    );
    assert!(streams.len() > 1, "{} streams", streams.len());
    // Gamma has places of its own.
    let theirs = raw_task(&server, GAMMA, "gamma-stream.example").await;
    assert_eq!(listen(&server, GAMMA, &[&theirs]).await.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_stream_names_at_most_64_task_ids() {
    let server = Server::start(&["--grace", "0"]);
    let id = raw_task(&server, ALPHA, "many-ids.example").await;
    let unknown: Vec<String> = (0..64)
        .map(|i| format!("019ad1e2-0000-7000-8000-{i:012}"))
        .collect();
    let mut too_many: Vec<&str> = unknown.iter().map(String::as_str).collect();
    too_many.push(&id);
    assert_eq!(too_many.len(), 65);
    let refused = listen(&server, ALPHA, &too_many).await;
    assert_eq!(refused.status(), 400);
    let refused: Value = refused.json().await.unwrap();
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"].as_str().unwrap().contains("64"),
        "{refused}"
    );

    // 64 ids, one of them its own task: the stream opens and hears that task.
    let at_cap = &too_many[1..];
    assert_eq!(at_cap.len(), 64);
    let mut stream = listen(&server, ALPHA, at_cap).await;
    assert_eq!(stream.status(), 200);
    let (status, cancelled) = rpc(
        &server,
        ALPHA,
        "tasks/cancel",
        Some(&id),
        json!({"taskId": id}),
        true,
    )
    .await;
    assert_eq!(status, 200, "{cancelled}");
    let mut buf = String::new();
    let n = next_message(&mut stream, &mut buf, Duration::from_secs(5))
        .await
        .expect("a notification");
    assert_eq!(n["params"]["taskId"], id.as_str(), "{n}");
    assert_eq!(n["params"]["status"], "cancelled", "{n}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_ttl_is_exactly_the_time_until_its_proposal_expires() {
    let ttl: u64 = 3_600_000;
    let server = Server::start(&["--grace", "0", "--proposal-ttl", "1h"]);
    // Filed together, so they share group commits: one clock reading must serve each row.
    // One client, so every request is on the wire at once.
    let client = http_from(ALPHA);
    let tasks = join_all((0..60).map(|i| {
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
            "name": "propose-egress",
            "arguments": {"host": format!("ttl-{i}.example"), "justification": "j"},
            "_meta": meta(true)}});
        let send = client
            .post(server.url())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "propose-egress")
            .body(body.to_string())
            .send();
        async move {
            let resp = send.await.expect("send");
            let status = resp.status().as_u16();
            (status, resp.json::<Value>().await.expect("a JSON answer"))
        }
    }))
    .await;
    let store = server.store().await;
    for (status, body) in tasks {
        assert_eq!(status, 200, "{body}");
        let task = &body["result"];
        assert_eq!(task["resultType"], "task", "{body}");
        let ttl_ms = task["ttlMs"].as_u64().expect("a ttlMs");
        assert!(ttl_ms <= ttl, "ttlMs {ttl_ms} is more than the TTL {ttl}");
        let id = task["taskId"].as_str().unwrap();
        let (p, _) = store.show(id).await.expect("the proposal");
        assert_eq!(task["createdAt"], p.created_at.as_str(), "{body}");
        let expires = p.expires_at.expect("a proposal with a TTL expires");
        assert_eq!(
            p.created_at.plus(Duration::from_millis(ttl_ms)),
            expires,
            "createdAt + ttlMs is the proposal's expiry"
        );
        assert_eq!(ttl_ms, ttl, "a new proposal's task lives exactly the TTL");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_outlives_running_out_of_descriptors() {
    let server = Server::start_with_open_files(256, 256, &["--grace", "0"]);
    // Idle connections past the limit: the kernel queues them; the server cannot accept.
    let mut idle = Vec::new();
    for _ in 0..400 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{BETA}:0").parse().unwrap()).unwrap();
        idle.push(socket.connect(server.addr).await.expect("connect"));
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !server.log().contains("accept failed") {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never ran out:\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(idle);
    // Once they are gone, it serves again.
    let health = tokio::time::timeout(
        Duration::from_secs(10),
        http_from(ALPHA)
            .get(format!("http://{}/healthz", server.addr))
            .send(),
    )
    .await
    .expect("/healthz answers once the connections are gone")
    .expect("/healthz");
    assert_eq!(health.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_streams_at_the_id_cap_cost_little_memory() {
    use std::io::{Read, Write};
    let server = Server::start(&["--grace", "0"]);
    let id = raw_task(&server, ALPHA, "memory.example").await;
    // The most a request can carry: 64 ids (one of them its own task) in a 1 MiB body.
    let mut ids = vec![id];
    ids.extend((1..64).map(|i| format!("{i:0>16000}")));
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": {
        "notifications": {"taskIds": ids}, "_meta": meta(true)}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
        server.addr,
        body.len()
    );
    let before = crate::batches::rss_kib(&server);
    let addr = server.addr;
    let streams = tokio::task::spawn_blocking(move || {
        (0..100)
            .map(|_| {
                let mut s = std::net::TcpStream::connect(addr).expect("connect");
                s.write_all(request.as_bytes()).expect("send");
                let mut head = [0u8; 12];
                s.read_exact(&mut head).expect("an answer");
                assert_eq!(&head, b"HTTP/1.1 200");
                s
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let grown = crate::batches::rss_kib(&server).saturating_sub(before);
    assert!(
        grown < 64 * 1024,
        "100 streams took {grown} KiB (over 64 MiB)"
    );
    drop(streams);
}
