//! A fleet: two real servers with different `--host-id`s on one PostgreSQL database, the
//! same bottle addresses on both. Agents on both propose; one operator view lists both
//! hosts and decides from each; every agent gets only its own decision, woken through
//! `LISTEN`/`NOTIFY`; and killing a server's notification connection falls back to reading
//! the feed until the listener is back.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::Connection;
use supervise_store::{Actor, StatusFilter, Store, StoreOptions, Verdict};

use crate::harness::*;

/// Waits (bounded) until `what` appears in the server's log `n` times.
async fn logged(server: &Server, what: &str, n: usize) {
    let start = Instant::now();
    while server.log().matches(what).count() < n {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{what:?} not logged {n} times:\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Proposes `host` from `source` on `server` (a call that waits), decides it from the
/// operator's store with `verdict`, and returns the answer and how long after the decision
/// it came.
async fn propose_and_decide(
    server: &Server,
    operator: &Store,
    source: &'static str,
    host: &str,
    verdict: Verdict,
) -> (rmcp::model::CallToolResult, Duration, String) {
    let client = mcp_from(server, source, rmcp::model::ProtocolVersion::V_2025_11_25).await;
    let before: Vec<String> = operator
        .list(None, StatusFilter::Pending)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id.into())
        .collect();
    let args = json!({"host": host, "justification": "fleet test"});
    let call = tokio::spawn(async move { call(&client, "propose-egress", args).await });
    let id = loop {
        let now = wait_pending(operator, before.len() + 1).await;
        if let Some(id) = now.into_iter().find(|id| !before.contains(id)) {
            break id;
        }
    };
    let decided = Instant::now();
    operator
        .decide(&id, verdict, &Actor::cli("olivia"), Some("fleet"), None)
        .await
        .unwrap();
    let r = call.await.unwrap();
    (r, decided.elapsed(), id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hosts_one_queue_woken_by_notify() {
    install_crypto();
    let Some(cluster) = supervise_testpg::cluster() else {
        return;
    };
    let url = cluster.fresh_database().await;
    let db = PathBuf::from(&url);
    let a = Server::start_on(
        tempfile::tempdir().unwrap(),
        db.clone(),
        &["--host-id", "host-a", "--grace", "30"],
    );
    let b = Server::start_on(
        tempfile::tempdir().unwrap(),
        db.clone(),
        &["--host-id", "host-b", "--grace", "30"],
    );
    logged(&a, "change notifications live", 1).await;
    logged(&b, "change notifications live", 1).await;
    // The operator's view: a store of a third host sees every host's queue.
    let operator = Store::open(
        &db,
        StoreOptions {
            create: false,
            host: Some("ops-desk".into()),
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap();

    // The same address (alpha = 127.0.0.1) on both hosts, the same change asked for.
    let (ra, wake_a, id_a) =
        propose_and_decide(&a, &operator, ALPHA, "same.example", Verdict::Approve).await;
    let (rb, wake_b, id_b) =
        propose_and_decide(&b, &operator, ALPHA, "same.example", Verdict::Reject).await;
    assert_eq!(
        (status(&ra), proposal_id(&ra)),
        ("approved", id_a.clone()),
        "{}",
        text(&ra)
    );
    assert_eq!(
        (status(&rb), proposal_id(&rb)),
        ("rejected", id_b.clone()),
        "{}",
        text(&rb)
    );
    assert!(
        wake_a < Duration::from_secs(1),
        "host-a woke {wake_a:?} after the decision"
    );
    assert!(
        wake_b < Duration::from_secs(1),
        "host-b woke {wake_b:?} after the decision"
    );
    logged(&a, "change feed woken by a notification", 1).await;

    let all = operator.list(None, StatusFilter::All).await.unwrap();
    let mut hosts: Vec<(&str, &str)> = all
        .iter()
        .map(|p| (p.host.as_str(), p.bottle.as_str()))
        .collect();
    hosts.sort();
    assert_eq!(hosts, [("host-a", "alpha"), ("host-b", "alpha")]);
    let only_b = operator
        .list_on(Some("host-b"), None, StatusFilter::All)
        .await
        .unwrap();
    assert_eq!(only_b.len(), 1);
    assert_eq!(only_b[0].id, id_b);
    // Each agent sees only its own host's proposals: host-b's alpha cannot read host-a's.
    let on_b = mcp_from(&b, ALPHA, rmcp::model::ProtocolVersion::V_2025_11_25).await;
    let r = call(&on_b, "check-proposal", json!({"proposal_id": id_a})).await;
    assert_eq!(status(&r), "unknown");

    // Kill host-a's notification connection: it falls back to reading the feed, the next
    // decision still reaches its waiting call, and the listener comes back by itself.
    let mut admin = sqlx::PgConnection::connect(&url).await.unwrap();
    let killed: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE application_name = 'supervise-listen host-a'",
    )
    .fetch_all(&mut admin)
    .await
    .unwrap();
    assert_eq!(killed, [true], "one listener connection for host-a");
    logged(&a, "change notifications lost", 1).await;
    let (r, _, id) =
        propose_and_decide(&a, &operator, BETA, "after.example", Verdict::Approve).await;
    assert_eq!(
        (status(&r), proposal_id(&r)),
        ("approved", id),
        "{}",
        text(&r)
    );
    logged(&a, "change notifications live", 2).await;
    let woken = a
        .log()
        .matches("change feed woken by a notification")
        .count();
    let (r, wake, id) =
        propose_and_decide(&a, &operator, ALPHA, "recovered.example", Verdict::Approve).await;
    assert_eq!(
        (status(&r), proposal_id(&r)),
        ("approved", id),
        "{}",
        text(&r)
    );
    assert!(
        wake < Duration::from_secs(1),
        "after recovery woke {wake:?} after the decision"
    );
    logged(&a, "change feed woken by a notification", woken + 1).await;
    // Host-b's listener was never touched.
    assert_eq!(b.log().matches("change notifications lost").count(), 0);
}
