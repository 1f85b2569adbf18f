//! What one bottle cannot do to another, and what a restart cannot lose: a bottle flooding
//! events does not hold up another bottle's hook; hooks resume after a restart and see what
//! was written while the server was down; a re-added bottle never sees the old one's
//! decisions; a waiting call whose proposal is withdrawn (by another call, or with its
//! bottle) is told `withdrawn`.

use std::path::Path;
use std::time::{Duration, Instant};

use rmcp::model::ProtocolVersion;
use serde_json::{Value, json};
use supervise_store::{Actor, Kind, NewProposal, Verdict};

use crate::harness::{
    ALPHA, BETA, Server, call, is_error, mcp_from, proposal_id, status, structured, wait_pending,
};

const GAMMA: &str = "127.0.0.3";

/// The hook's output: one JSON document per line, as it read it on stdin.
fn hook_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON document per line"))
        .collect()
}

/// A hook that takes `secs` and then appends the document it read to `out`.
fn slow_hook(out: &Path, secs: &str) -> String {
    format!(
        "read -r doc; sleep {secs}; printf '%s\\n' \"$doc\" >> {}",
        out.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_bottle_does_not_hold_up_another_bottles_hook() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("hook.jsonl");
    let hook = slow_hook(&out, "0.2");
    let server = Server::start(&[
        "--grace",
        "0",
        "--max-pending-per-bottle",
        "0",
        "--bottle",
        &format!("gamma={GAMMA}"),
        "--on-event",
        &hook,
    ]);
    let flooder = mcp_from(&server, BETA, ProtocolVersion::V_2025_11_25).await;
    let other = mcp_from(&server, GAMMA, ProtocolVersion::V_2025_11_25).await;
    for i in 0..200 {
        let r = call(
            &flooder,
            "propose-egress",
            json!({ "host": format!("h{i}.flood.example"), "justification": "flood" }),
        )
        .await;
        assert_eq!(status(&r), "pending");
    }
    let r = call(
        &other,
        "propose-egress",
        json!({ "host": "docs.example", "justification": "read the docs" }),
    )
    .await;
    let filed = Instant::now();
    let id = proposal_id(&r);
    let flood_done_then = hook_lines(&out).len();
    let deadline = filed + Duration::from_secs(10);
    let position = loop {
        let lines = hook_lines(&out);
        if let Some(at) = lines.iter().position(|d| d["proposal_id"] == id.as_str()) {
            break at;
        }
        assert!(
            Instant::now() < deadline,
            "gamma's event not handled after 10 s; {} of beta's were",
            lines.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let took = filed.elapsed();
    eprintln!(
        "gamma's hook ran {took:?} after filing, after {position} hook runs ({flood_done_then} done when it was filed)"
    );
    // One lane per bottle, taken in turn: at most a run or two of beta's ran between.
    assert!(
        position <= flood_done_then + 3,
        "gamma's event waited for {position} runs, {flood_done_then} were done when it was filed"
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
    // Beta's own events run in order.
    let seqs: Vec<i64> = hook_lines(&out)
        .iter()
        .filter(|d| d["bottle"] == "beta")
        .map(|d| d["seq"].as_i64().unwrap())
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_resume_after_a_restart_and_see_what_was_written_while_down() {
    let hooks = tempfile::tempdir().unwrap();
    let out = hooks.path().join("hook.jsonl");
    let hook = slow_hook(&out, "0.3");
    let flags = ["--grace", "0", "--on-event", hook.as_str()];
    let server = Server::start(&flags);
    // Recorded at the first start, just after the address is logged.
    let from = {
        let store = server.store().await;
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(seq) = store.hook_position().await.unwrap() {
                break seq;
            }
            assert!(Instant::now() < deadline, "no hook position recorded");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let alpha = mcp_from(&server, ALPHA, ProtocolVersion::V_2025_11_25).await;
    for host in ["one.example", "two.example", "three.example"] {
        let r = call(
            &alpha,
            "propose-egress",
            json!({ "host": host, "justification": "work" }),
        )
        .await;
        assert_eq!(status(&r), "pending");
    }
    // Stopped while most of these still wait for their hook (0.3 s each, one at a time).
    drop(alpha);
    let dir = server.stop();
    // Written while no server runs, as the CLI would.
    let db = dir.path().join("supervise.db");
    {
        let store = supervise_store::Store::open(&db, Default::default())
            .await
            .unwrap();
        let beta = store.bottle("beta").await.unwrap().unwrap();
        let p = store
            .propose(NewProposal {
                bottle_id: beta.id,
                kind: Kind::Egress,
                change: json!({ "host": "four.example" }),
                justification: "work".into(),
                quorum: None,
            })
            .await
            .unwrap();
        store
            .decide(
                &p.proposal().id,
                Verdict::Reject,
                &Actor::cli("op"),
                Some("no"),
                None,
            )
            .await
            .unwrap();
        let pending = store.list(None, Default::default()).await.unwrap();
        store
            .decide(
                &pending[0].id,
                Verdict::Approve,
                &Actor::cli("op"),
                None,
                None,
            )
            .await
            .unwrap();
        store.close().await;
    }
    let server = Server::start_in(dir, &flags);
    let end = server.store().await.last_seq().await.unwrap();
    let want: Vec<i64> = ((from + 1)..=end).collect();
    assert!(want.len() >= 6, "3 filed, 1 filed and 2 decided while down");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let seen: Vec<i64> = hook_lines(&out)
            .iter()
            .map(|d| d["seq"].as_i64().unwrap())
            .collect();
        let missing: Vec<i64> = want.iter().copied().filter(|s| !seen.contains(s)).collect();
        if missing.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "events never handled: {missing:?} (saw {seen:?})\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let store = server.store().await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while store.hook_position().await.unwrap() != Some(end) {
        assert!(Instant::now() < deadline, "the position reaches the end");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_re_added_bottle_never_sees_the_old_ones_decisions() {
    let server = Server::start(&["--grace", "0"]);
    let store = server.store().await;
    let client = mcp_from(&server, BETA, ProtocolVersion::V_2025_11_25).await;
    let r = call(
        &client,
        "propose-egress",
        json!({ "host": "old.example", "justification": "old bottle" }),
    )
    .await;
    let id = proposal_id(&r);
    store
        .decide(&id, Verdict::Approve, &Actor::cli("op"), None, None)
        .await
        .unwrap();
    // Fresh in the attribution cache: the old generation was just served.
    let r = call(&client, "list-proposals", json!({})).await;
    assert_eq!(structured(&r)["proposals"].as_array().unwrap().len(), 1);
    store
        .remove_bottle("beta", &Actor::cli("op"))
        .await
        .unwrap();
    store
        .add_bottle("beta2", BETA.parse().unwrap(), &Actor::cli("op"))
        .await
        .unwrap();
    let r = call(&client, "check-proposal", json!({ "proposal_id": id })).await;
    assert_eq!(status(&r), "unknown", "{r:?}");
    assert!(is_error(&r));
    let r = call(&client, "list-proposals", json!({})).await;
    assert_eq!(structured(&r)["proposals"], json!([]), "{r:?}");
    // The old decision is still the old generation's, untaken.
    let (p, _) = store.show(&id).await.unwrap();
    assert!(p.archived_at.is_none());
    // The new bottle files as itself.
    let r = call(
        &client,
        "propose-egress",
        json!({ "host": "new.example", "justification": "new bottle" }),
    )
    .await;
    let (p, _) = store.show(&proposal_id(&r)).await.unwrap();
    assert_eq!(p.bottle, "beta2");

    // Removed with no successor: refused, never served as the removed bottle.
    store
        .remove_bottle("beta2", &Actor::cli("op"))
        .await
        .unwrap();
    let r = call(&client, "list-proposals", json!({})).await;
    assert_eq!(status(&r), "refused", "{r:?}");
}

/// A call from `source` waiting in its grace window; returns its task and proposal id.
async fn waiting_call(
    server: &Server,
    source: &'static str,
    host: &'static str,
) -> (tokio::task::JoinHandle<rmcp::model::CallToolResult>, String) {
    let store = server.store().await;
    let before = store.list(None, Default::default()).await.unwrap().len();
    let client = mcp_from(server, source, ProtocolVersion::V_2025_11_25).await;
    let task = tokio::spawn(async move {
        let r = call(
            &client,
            "propose-egress",
            json!({ "host": host, "justification": "wait for it" }),
        )
        .await;
        drop(client);
        r
    });
    let ids = wait_pending(&store, before + 1).await;
    let id = ids.last().unwrap().clone();
    // Let the call register as a waiter.
    tokio::time::sleep(Duration::from_millis(200)).await;
    (task, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_call_is_told_withdrawn() {
    let server = Server::start(&["--grace", "20"]);
    // Withdrawn from a second connection of the same bottle.
    let (task, id) = waiting_call(&server, ALPHA, "a.example").await;
    let second = mcp_from(&server, ALPHA, ProtocolVersion::V_2025_11_25).await;
    let started = Instant::now();
    let r = call(&second, "withdraw-proposal", json!({ "proposal_id": id })).await;
    assert_eq!(status(&r), "withdrawn");
    let r = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the waiting call answers at once")
        .unwrap();
    assert_eq!(status(&r), "withdrawn", "{r:?}");
    assert!(is_error(&r));
    assert_eq!(proposal_id(&r), id);
    assert!(started.elapsed() < Duration::from_secs(5));

    // Withdrawn because its bottle was removed.
    let (task, id) = waiting_call(&server, BETA, "b.example").await;
    server
        .store()
        .await
        .remove_bottle("beta", &Actor::cli("op"))
        .await
        .unwrap();
    let r = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the waiting call answers at once")
        .unwrap();
    assert_eq!(status(&r), "withdrawn", "{r:?}");
    assert!(is_error(&r));
    assert_eq!(proposal_id(&r), id);
}
