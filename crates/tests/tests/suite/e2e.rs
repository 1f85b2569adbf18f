//! Stories across both binaries: an agent talks MCP to `supervise-server`, an operator
//! answers with `supervise`, on one database file.

use serde_json::json;
use supervise_tests::{Server, cli, structured, text};

/// A proposal filed through the server with grace 0 is answered `pending`; the
/// operator approves it with the CLI; the agent's `check-proposal` then returns the
/// decision and the operator's note, and a second poll finds it archived.
#[test]
fn approved_through_the_cli_then_polled_by_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("supervise.db");
    let server = Server::start(&db, &["--grace", "0", "--bottle", "demo=127.0.0.1"]);
    let mut agent = server.mcp();
    agent.initialize();

    let answer = agent.call_tool(
        "propose-egress",
        json!({"host": "api.example.com", "justification": "fetch the release notes"}),
    );
    let facts = structured(&answer);
    assert_eq!(facts["status"], "pending", "{answer}");
    let id = facts["proposal_id"]
        .as_str()
        .expect("a proposal_id")
        .to_string();
    assert!(
        text(&answer).contains(&id) && text(&answer).contains("check-proposal"),
        "{answer}"
    );

    // The operator sees it and approves it, with a note.
    let list = cli(&db, "alice", &["list", "--json"]);
    assert!(list.status.success(), "{list:?}");
    let doc: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(doc["proposals"][0]["id"], id.as_str());
    assert_eq!(doc["proposals"][0]["bottle"], "demo");
    let approve = cli(
        &db,
        "alice",
        &["approve", &id, "--note", "ok for the release"],
    );
    assert!(approve.status.success(), "{approve:?}");

    let answer = agent.call_tool("check-proposal", json!({"proposal_id": id}));
    let facts = structured(&answer);
    assert_eq!(facts["status"], "approved", "{answer}");
    assert_eq!(facts["proposal_id"], id.as_str());
    assert_eq!(facts["decision"]["note"], "ok for the release");
    assert_eq!(facts["decision"]["decided_by"], "alice");
    assert_eq!(
        facts["decision"]["change"],
        json!({"host": "api.example.com", "port": 443})
    );
    assert_ne!(answer["isError"], true, "{answer}");
    assert!(text(&answer).contains("ok for the release"), "{answer}");

    // Delivered exactly once: the next poll finds nothing, and the CLI shows it archived.
    let again = agent.call_tool("check-proposal", json!({"proposal_id": id}));
    assert_eq!(structured(&again)["status"], "unknown", "{again}");
    assert_eq!(again["isError"], true);
    let shown = cli(&db, "alice", &["show", &id, "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert!(doc["archived_at"].is_string(), "{doc}");
    drop(server);
}

/// SPEC: "A waiting tool call returns promptly (well under a second) after a CLI decision
/// in another process." The agent's call waits in the grace window; the operator rejects
/// from the CLI; the call answers with the rejection and the note.
#[test]
fn a_waiting_call_returns_promptly_after_a_cli_decision() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("supervise.db");
    let server = Server::start(&db, &["--grace", "30", "--bottle", "demo=127.0.0.1"]);
    let mut agent = server.mcp();
    agent.initialize();
    let call = std::thread::spawn(move || {
        let answer = agent.call_tool(
            "propose-git-push",
            json!({"remote": "origin", "ref": "refs/heads/main", "justification": "hotfix"}),
        );
        (answer, Instant::now())
    });

    // Wait until the proposal is queued, then decide it.
    let deadline = Instant::now() + Duration::from_secs(20);
    let id = loop {
        let out = cli(&db, "carol", &["list", "--json"]);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if let Some(id) = doc["proposals"][0]["id"].as_str() {
            assert_eq!(doc["proposals"][0]["flags"], json!(["default-branch"]));
            break id.to_string();
        }
        assert!(Instant::now() < deadline, "the proposal never showed up");
        std::thread::sleep(Duration::from_millis(50));
    };
    let reject = cli(
        &db,
        "carol",
        &["reject", &id, "--note", "open a pull request"],
    );
    assert!(reject.status.success(), "{reject:?}");
    let decided = Instant::now();

    let (answer, answered) = call.join().unwrap();
    let latency = answered.duration_since(decided);
    assert!(
        latency < Duration::from_secs(1),
        "answered {latency:?} after the decision"
    );
    let facts = structured(&answer);
    assert_eq!(facts["status"], "rejected", "{answer}");
    assert_eq!(facts["proposal_id"], id.as_str());
    assert_eq!(facts["decision"]["note"], "open a pull request");
    assert_eq!(answer["isError"], true);
    drop(server);
}
