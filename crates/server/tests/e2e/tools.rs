//! The proposal tools through a real MCP client: the day of an agent and its operator.

use std::time::{Duration, Instant};

use rmcp::model::ProtocolVersion;
use serde_json::json;
use supervise_store::{Actor, Verdict};

use crate::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_then_tools_list_shows_the_tools_with_schemas() {
    let server = Server::start(&["--grace", "0"]);
    let client = mcp(&server).await;
    let info = client.peer_info().expect("server info");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for want in [
        "propose-egress",
        "propose-git-push",
        "check-proposal",
        "list-proposals",
        "withdraw-proposal",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    let egress = tools.iter().find(|t| t.name == "propose-egress").unwrap();
    let schema = serde_json::to_value(&*egress.input_schema).unwrap();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["host", "justification"]));
    assert_eq!(schema["properties"]["port"]["default"], 443);
    for t in &tools {
        let out = t
            .output_schema
            .as_ref()
            .unwrap_or_else(|| panic!("{} has no outputSchema", t.name));
        assert_eq!(out.get("type").and_then(|v| v.as_str()), Some("object"));
    }
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grace_zero_answers_pending_then_check_delivers_the_decision_once() {
    let server = Server::start(&["--grace", "0"]);
    let client = mcp(&server).await;
    let r = call(
        &client,
        "propose-egress",
        json!({"host": "api.example.com", "justification": "fetch the API schema"}),
    )
    .await;
    assert_eq!(status(&r), "pending", "{}", text(&r));
    assert!(!is_error(&r));
    let id = proposal_id(&r);
    let t = text(&r);
    assert!(t.contains(&id) && t.contains("check-proposal"), "{t}");
    assert_eq!(structured(&r)["proposal"]["port"], 443);

    // Still undecided: check-proposal says pending and creates nothing.
    let r = call(&client, "check-proposal", json!({"proposal_id": id})).await;
    assert_eq!(status(&r), "pending");

    // The operator approves in another process (a second store on the same file).
    let store = server.store().await;
    store
        .decide(
            &id,
            Verdict::Approve,
            &Actor::cli("olivia"),
            Some("ok for today"),
            None,
        )
        .await
        .unwrap();

    let r = call(&client, "check-proposal", json!({"proposal_id": id})).await;
    assert_eq!(status(&r), "approved", "{}", text(&r));
    assert!(!is_error(&r));
    assert_eq!(structured(&r)["decision"]["decided_by"], "olivia");
    assert_eq!(
        structured(&r)["decision"]["change"]["host"],
        "api.example.com"
    );
    let t = text(&r);
    assert!(t.lines().last().unwrap().starts_with("Next: "), "{t}");
    assert!(t.contains("allowed through the proxy from now on"), "{t}");

    // Delivered once: the second poll is unknown.
    let r = call(&client, "check-proposal", json!({"proposal_id": id})).await;
    assert_eq!(status(&r), "unknown");
    assert!(is_error(&r));
    assert_eq!(
        store
            .list(None, supervise_store::StatusFilter::All)
            .await
            .unwrap()
            .len(),
        1
    );
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_path_a_decision_while_the_call_waits_comes_back_from_that_call() {
    let server = Server::start(&["--grace", "20"]);
    let client = mcp(&server).await;
    let store = server.store().await;
    let started = Instant::now();
    let call_task = tokio::spawn(async move {
        let r = call(
            &client,
            "propose-git-push",
            json!({"remote": "origin", "ref": "refs/heads/feature/x", "justification": "ship the fix"}),
        )
        .await;
        (r, Instant::now())
    });
    let id = wait_pending(&store, 1).await.remove(0);
    let decided_at = Instant::now();
    store
        .decide(&id, Verdict::Approve, &Actor::cli("olivia"), None, None)
        .await
        .unwrap();
    let (r, answered_at) = call_task.await.unwrap();
    assert_eq!(status(&r), "approved", "{}", text(&r));
    assert_eq!(proposal_id(&r), id);
    let latency = answered_at.duration_since(decided_at);
    assert!(
        latency < Duration::from_secs(1),
        "answered {latency:?} after the decision"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // The fast path archived it: a poll now finds nothing.
    let client = mcp(&server).await;
    let r = call(&client, "check-proposal", json!({"proposal_id": id})).await;
    assert_eq!(status(&r), "unknown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_waiting_on_the_same_proposal_receives_the_decision() {
    let server = Server::start(&["--grace", "20"]);
    let store = server.store().await;
    let mut calls = Vec::new();
    for _ in 0..3 {
        let client = mcp(&server).await;
        calls.push(tokio::spawn(async move {
            call(
                &client,
                "propose-egress",
                json!({"host": "pypi.org", "justification": "install deps"}),
            )
            .await
        }));
    }
    let id = wait_pending(&store, 1).await.remove(0);
    // Let all three register as repeats of the one proposal.
    let start = Instant::now();
    while store.show(&id).await.unwrap().0.hits < 3 {
        assert!(start.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    store
        .decide(
            &id,
            Verdict::Reject,
            &Actor::cli("olivia"),
            Some("use the mirror"),
            None,
        )
        .await
        .unwrap();
    for c in calls {
        let r = c.await.unwrap();
        assert_eq!(proposal_id(&r), id);
        assert_eq!(status(&r), "rejected", "{}", text(&r));
        assert!(is_error(&r));
        assert!(text(&r).contains("use the mirror"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_and_unknown_are_errors_and_modified_returns_the_operators_change() {
    let server = Server::start(&["--grace", "0"]);
    let client = mcp(&server).await;
    let store = server.store().await;

    let r = call(
        &client,
        "propose-egress",
        json!({"host": "evil.example", "justification": "x"}),
    )
    .await;
    let rejected_id = proposal_id(&r);
    store
        .decide(
            &rejected_id,
            Verdict::Reject,
            &Actor::cli("olivia"),
            Some("not needed for this task"),
            None,
        )
        .await
        .unwrap();
    let r = call(
        &client,
        "check-proposal",
        json!({"proposal_id": rejected_id}),
    )
    .await;
    assert_eq!(status(&r), "rejected");
    assert!(is_error(&r));
    let t = text(&r);
    assert!(
        t.contains("not needed for this task") && t.contains("do not retry"),
        "{t}"
    );
    assert!(structured(&r)["decision"]["change"].is_null());

    // Within the cooldown the same change is rejected at once, with the earlier id.
    let r = call(
        &client,
        "propose-egress",
        json!({"host": "EVIL.example.", "port": 443, "justification": "again"}),
    )
    .await;
    assert_eq!(status(&r), "rejected");
    assert!(is_error(&r));
    assert_eq!(proposal_id(&r), rejected_id);

    let r = call(
        &client,
        "propose-egress",
        json!({"host": "db.example.com", "port": 5432, "justification": "run migrations"}),
    )
    .await;
    let id = proposal_id(&r);
    let mut patch = serde_json::Map::new();
    patch.insert("port".into(), json!(6432));
    store
        .decide(
            &id,
            Verdict::Modify(patch),
            &Actor::cli("olivia"),
            Some("use the pooler"),
            None,
        )
        .await
        .unwrap();
    let r = call(&client, "check-proposal", json!({"proposal_id": id})).await;
    assert_eq!(status(&r), "modified", "{}", text(&r));
    assert!(!is_error(&r));
    assert_eq!(
        structured(&r)["decision"]["change"],
        json!({"host": "db.example.com", "port": 6432})
    );
    assert_eq!(structured(&r)["proposal"]["port"], 5432);
    assert!(text(&r).contains("db.example.com:6432"), "{}", text(&r));

    let r = call(
        &client,
        "check-proposal",
        json!({"proposal_id": "0190aaaa-0000-7000-8000-000000000000"}),
    )
    .await;
    assert_eq!(status(&r), "unknown");
    assert!(is_error(&r));
    assert!(text(&r).contains("Next: "));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bottle_sees_only_its_own_proposals() {
    let server = Server::start(&["--grace", "0"]);
    let alpha = mcp_from(&server, ALPHA, ProtocolVersion::V_2025_06_18).await;
    let beta = mcp_from(&server, BETA, ProtocolVersion::V_2025_06_18).await;
    let r = call(
        &alpha,
        "propose-egress",
        json!({"host": "alpha.example", "justification": "mine"}),
    )
    .await;
    let id = proposal_id(&r);
    server
        .store()
        .await
        .decide(&id, Verdict::Approve, &Actor::cli("olivia"), None, None)
        .await
        .unwrap();

    let r = call(&beta, "list-proposals", json!({})).await;
    assert_eq!(structured(&r)["proposals"], json!([]), "{}", text(&r));
    for tool in ["check-proposal", "withdraw-proposal"] {
        let r = call(&beta, tool, json!({"proposal_id": id})).await;
        assert_eq!(status(&r), "unknown", "{tool}: {}", text(&r));
        assert!(is_error(&r));
    }
    // Beta's poll did not consume alpha's decision.
    let r = call(&alpha, "list-proposals", json!({})).await;
    let items = structured(&r)["proposals"].as_array().unwrap().clone();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["proposal_id"], id.as_str());
    assert_eq!(items[0]["status"], "approved");
    assert_eq!(items[0]["hits"], 1);
    assert!(items[0]["created_at"].is_string());
    let r = call(&alpha, "check-proposal", json!({"proposal_id": id})).await;
    assert_eq!(status(&r), "approved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_reproposal_returns_the_same_id_and_bad_arguments_name_the_field() {
    let server = Server::start(&["--grace", "0"]);
    let client = mcp(&server).await;
    let a = call(
        &client,
        "propose-egress",
        json!({"host": "Files.Example.COM.", "justification": "first"}),
    )
    .await;
    let b = call(
        &client,
        "propose-egress",
        json!({"host": "files.example.com", "port": 443, "justification": "second wording"}),
    )
    .await;
    assert_eq!(proposal_id(&a), proposal_id(&b));
    assert_eq!(status(&b), "pending");
    let list = call(&client, "list-proposals", json!({})).await;
    let items = structured(&list)["proposals"].as_array().unwrap().clone();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["hits"], 2);

    let cases = [
        (
            "propose-egress",
            json!({"host": "x.example", "port": 70000, "justification": "j"}),
            "port",
        ),
        (
            "propose-egress",
            json!({"host": "x.example"}),
            "justification",
        ),
        ("propose-egress", json!({"justification": "j"}), "host"),
        (
            "propose-egress",
            json!({"host": "http://x.example/path", "justification": "j"}),
            "host",
        ),
        (
            "propose-egress",
            json!({"host": "x.example", "justification": "j", "protocol": "https"}),
            "protocol",
        ),
        (
            "propose-egress",
            json!({"host": "x.example", "justification": "   "}),
            "justification",
        ),
        (
            "propose-git-push",
            json!({"remote": "origin", "justification": "j"}),
            "ref",
        ),
        ("check-proposal", json!({}), "proposal_id"),
    ];
    for (tool, args, field) in cases {
        let r = call(&client, tool, args.clone()).await;
        assert_eq!(status(&r), "refused", "{tool} {args}: {}", text(&r));
        assert!(is_error(&r));
        assert_eq!(
            structured(&r)["field"],
            field,
            "{tool} {args}: {}",
            text(&r)
        );
        assert!(text(&r).contains(field));
        assert!(text(&r).lines().last().unwrap().starts_with("Next: "));
    }
    // Nothing refused was queued.
    let list = call(&client, "list-proposals", json!({})).await;
    assert_eq!(structured(&list)["proposals"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn withdraw_takes_back_an_undecided_proposal() {
    let server = Server::start(&["--grace", "0"]);
    let client = mcp(&server).await;
    let r = call(
        &client,
        "propose-egress",
        json!({"host": "tmp.example", "justification": "maybe"}),
    )
    .await;
    let id = proposal_id(&r);
    let r = call(&client, "withdraw-proposal", json!({"proposal_id": id})).await;
    assert_eq!(status(&r), "withdrawn");
    assert!(is_error(&r));
    let r = call(&client, "check-proposal", json!({"proposal_id": id})).await;
    assert_eq!(status(&r), "unknown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pending_cap_refuses_more_proposals() {
    let server = Server::start(&["--grace", "0", "--max-pending-per-bottle", "1"]);
    let client = mcp(&server).await;
    call(
        &client,
        "propose-egress",
        json!({"host": "one.example", "justification": "j"}),
    )
    .await;
    let r = call(
        &client,
        "propose-egress",
        json!({"host": "two.example", "justification": "j"}),
    )
    .await;
    assert_eq!(status(&r), "refused", "{}", text(&r));
    assert!(is_error(&r));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_protocol_revision_initializes_and_calls_a_tool() {
    let server = Server::start(&["--grace", "0"]);
    for version in [
        ProtocolVersion::V_2025_03_26,
        ProtocolVersion::V_2025_06_18,
        ProtocolVersion::V_2025_11_25,
    ] {
        let client = mcp_from(&server, ALPHA, version.clone()).await;
        assert_eq!(client.peer_info().unwrap().protocol_version, version);
        let r = call(&client, "list-proposals", json!({})).await;
        assert!(!is_error(&r), "{version}");
        assert!(text(&r).contains("Next: "));
        // structuredContent exists from 2025-06-18 on.
        assert_eq!(
            r.structured_content.is_some(),
            version != ProtocolVersion::V_2025_03_26,
            "{version}"
        );
        client.cancel().await.ok();
    }
    // 2026-07-28: no handshake; server/discover, then _meta and headers on every request.
    let client = mcp_modern_from(&server, ALPHA).await;
    assert_eq!(
        client.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2026_07_28
    );
    let tools = client.list_all_tools().await.expect("modern tools/list");
    assert_eq!(tools.len(), 5);
    let r = call(
        &client,
        "propose-egress",
        json!({"host": "modern.example", "justification": "j"}),
    )
    .await;
    assert_eq!(status(&r), "pending");
    let r = call(
        &client,
        "check-proposal",
        json!({"proposal_id": proposal_id(&r)}),
    )
    .await;
    assert_eq!(status(&r), "pending");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_waiters_each_answer_with_their_own_decision_while_waiting() {
    const N: usize = 24;
    let server = Server::start(&["--grace", "30"]);
    let store = server.store().await;
    // rmcp runs at most 16 requests at once per client: use a few.
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(std::sync::Arc::new(mcp(&server).await));
    }
    let mut calls = std::collections::HashMap::new();
    for i in 0..N {
        let client = clients[i % clients.len()].clone();
        let host = format!("h{i}.example");
        calls.insert(
            host.clone(),
            tokio::spawn(async move {
                let r = call(
                    &client,
                    "propose-egress",
                    json!({"host": host, "justification": "j"}),
                )
                .await;
                (r, Instant::now())
            }),
        );
    }
    let pending = {
        wait_pending(&store, N).await;
        store
            .list(None, supervise_store::StatusFilter::Pending)
            .await
            .unwrap()
    };
    let mut latencies = Vec::new();
    for p in pending {
        let host = p.change["host"].as_str().unwrap().to_owned();
        let decided = Instant::now();
        store
            .decide(&p.id, Verdict::Approve, &Actor::cli("olivia"), None, None)
            .await
            .unwrap();
        let (r, answered) = calls.remove(&host).unwrap().await.unwrap();
        assert_eq!(status(&r), "approved");
        assert_eq!(proposal_id(&r), p.id);
        latencies.push(answered.duration_since(decided));
    }
    // Each call answered `approved` with its own proposal inside its 30 s window: a
    // watcher that did not wake waiters would have left them to answer `pending` when the
    // window closed. How fast is the bench's to measure (`wake`, docs/PERFORMANCE.md), not a
    // test's: the latencies are printed, never asserted.
    latencies.sort();
    eprintln!(
        "decision-to-answer latency: median {:?}, max {:?}",
        latencies[N / 2],
        latencies[N - 1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn propose_egress_takes_methods_and_a_path_prefix() {
    let server = Server::start(&["--grace", "0"]);
    let client = mcp(&server).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let egress = tools.iter().find(|t| t.name == "propose-egress").unwrap();
    let schema = serde_json::to_value(&*egress.input_schema).unwrap();
    assert_eq!(schema["properties"]["methods"]["type"], "array");
    assert_eq!(schema["properties"]["path_prefix"]["type"], "string");
    let r = call(
        &client,
        "propose-egress",
        json!({"host": "pypi.org", "methods": ["get", "HEAD"], "path_prefix": "/simple/./x/..",
               "justification": "read the package index"}),
    )
    .await;
    assert_eq!(status(&r), "pending", "{}", text(&r));
    let proposal = &structured(&r)["proposal"];
    assert_eq!(proposal["methods"], json!(["GET", "HEAD"]));
    assert_eq!(proposal["path_prefix"], "/simple/");
    let r = call(
        &client,
        "propose-egress",
        json!({"host": "pypi.org", "path_prefix": "/a%2fb", "justification": "x"}),
    )
    .await;
    assert_eq!(status(&r), "refused", "{}", text(&r));
    assert_eq!(structured(&r)["field"], "path_prefix");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asking_for_what_a_grant_already_allows_is_answered_at_once_and_queues_nothing() {
    let server = Server::start(&["--grace", "0"]);
    let client = mcp(&server).await;
    let r = call(
        &client,
        "propose-egress",
        json!({"host": "*.example.com", "justification": "the docs"}),
    )
    .await;
    let id = proposal_id(&r);
    let store = server.store().await;
    let decided = store
        .decide(
            &id,
            Verdict::Approve,
            &Actor::cli("olivia"),
            None,
            Some(Duration::from_secs(3600)),
        )
        .await
        .unwrap();
    let grant = decided.decision.unwrap().grant_id.unwrap();

    let started = Instant::now();
    let r = call(
        &client,
        "propose-egress",
        json!({"host": "api.example.com", "port": 443, "justification": "the API"}),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(status(&r), "approved", "{}", text(&r));
    assert!(!is_error(&r));
    let s = structured(&r);
    assert_eq!(s["already_allowed"], true);
    assert_eq!(s["grant_id"], grant.as_str());
    assert!(s["proposal_id"].is_null(), "{s}");
    let t = text(&r);
    assert!(t.contains(grant.as_str()) && t.contains("until 20"), "{t}");
    assert_eq!(
        store
            .list(None, supervise_store::StatusFilter::All)
            .await
            .unwrap()
            .len(),
        1,
        "nothing queued"
    );
    // Another port is not covered: filed as usual.
    let r = call(
        &client,
        "propose-egress",
        json!({"host": "api.example.com", "port": 8443, "justification": "the API"}),
    )
    .await;
    assert_eq!(status(&r), "pending", "{}", text(&r));
}
