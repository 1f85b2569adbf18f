//! Operator rules through a real MCP client: a proposal a rule decides is answered on the
//! same call, naming the rule, with the grant the rule annotates; a forbid's note reaches
//! the agent; a never-automatic address still waits for a human; a shadow rule decides
//! nothing; a quorum rule keeps the agent waiting until enough distinct operators approve.

use serde_json::json;
use supervise_store::{Actor, EventKind, StatusFilter, Store, StoreError, Verdict, Via};

use crate::harness::*;

const RULES: &str = r#"
@id("pypi") @grant("2h")
permit (principal, action == Action::"egress", resource)
when { resource.host == "pypi.org" && resource.port == 443 };

@id("no-paste") @note("paste sites leak secrets; use the internal gist server")
forbid (principal, action == Action::"egress", resource)
when { resource.host like "*paste*" };

@id("catch-all")
permit (principal, action == Action::"egress", resource)
when { resource.host like "169.254.*" };
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_answers_propose_egress_on_the_same_call_naming_the_rule() {
    // No grace window: an answer that needed a human would come back pending.
    let server = Server::start(&["--grace", "0"]);
    let client = mcp(&server).await;
    let store = server.store().await;
    store.set_rules(RULES, &Actor::cli("olivia")).await.unwrap();

    let r = call(
        &client,
        "propose-egress",
        json!({"host": "pypi.org", "justification": "install the deps"}),
    )
    .await;
    assert_eq!(status(&r), "approved", "{}", text(&r));
    assert!(!is_error(&r));
    let t = text(&r);
    assert!(t.contains("rules:pypi"), "{t}");
    let decision = &structured(&r)["decision"];
    assert_eq!(decision["decided_by"], "rules:pypi");
    let id = proposal_id(&r);
    let (p, _) = store.show(&id).await.unwrap();
    let left = p
        .decision
        .unwrap()
        .grant_expires_at
        .expect("a 2h grant")
        .seconds_until();
    assert!((7100..=7200).contains(&left), "{left}s left of a 2h grant");
    // Answered on the call: a poll has nothing more to deliver.
    let r = call(&client, "check-proposal", json!({"proposal_id": id})).await;
    assert_eq!(status(&r), "unknown");

    let r = call(
        &client,
        "propose-egress",
        json!({"host": "pastebin.com", "justification": "share a log"}),
    )
    .await;
    assert_eq!(status(&r), "rejected", "{}", text(&r));
    assert!(is_error(&r));
    let t = text(&r);
    assert!(
        t.contains("rules:no-paste") && t.contains("use the internal gist server"),
        "{t}"
    );

    // The catch-all matches the metadata service, which no rule may approve.
    let r = call(
        &client,
        "propose-egress",
        json!({"host": "169.254.169.254", "port": 80, "justification": "instance identity"}),
    )
    .await;
    assert_eq!(status(&r), "pending", "{}", text(&r));
    let pending = store.list(None, StatusFilter::Pending).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].change["host"], "169.254.169.254");
    client.cancel().await.ok();
}

/// The agent's poll of `id`: its status word.
async fn poll(client: &Client, id: &str) -> String {
    let r = call(client, "check-proposal", json!({"proposal_id": id})).await;
    status(&r).to_string()
}

/// The agent proposes egress to `host`; the answer is pending. Its id.
async fn pending(client: &Client, host: &str) -> String {
    let r = call(
        client,
        "propose-egress",
        json!({"host": host, "justification": "fetch the assets"}),
    )
    .await;
    assert_eq!(status(&r), "pending", "{}", text(&r));
    proposal_id(&r)
}

async fn decide(store: &Store, id: &str, verdict: Verdict, who: &str) -> Result<(), StoreError> {
    store
        .decide(id, verdict, &Actor::cli(who), None, None)
        .await
        .map(drop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shadow_rule_leaves_the_agent_waiting_and_records_rule_matched() {
    let server = Server::start(&["--grace", "0"]);
    let client = mcp(&server).await;
    let store = server.store().await;
    let rules = r#"
@id("watch-github") @mode("shadow")
permit (principal, action == Action::"egress", resource)
when { resource.host == "api.github.com" };
"#;
    store.set_rules(rules, &Actor::cli("olivia")).await.unwrap();

    let r = call(
        &client,
        "propose-egress",
        json!({"host": "api.github.com", "justification": "read the release notes"}),
    )
    .await;
    assert_eq!(status(&r), "pending", "{}", text(&r));
    assert!(!text(&r).contains("watch-github"), "{}", text(&r));
    let id = proposal_id(&r);
    assert_eq!(poll(&client, &id).await, "pending");

    let (p, events) = store.show(&id).await.unwrap();
    assert!(p.decision.is_none());
    let matched: Vec<_> = events
        .iter()
        .filter(|e| e.event == EventKind::RuleMatched)
        .collect();
    assert_eq!(matched.len(), 1, "{events:?}");
    assert_eq!(matched[0].actor, "rules:watch-github");
    assert_eq!(matched[0].via, Some(Via::Rules));
    let note = matched[0].note.as_deref().unwrap();
    assert!(note.starts_with("shadow: would approve"), "{note}");
    // A human still decides, and the agent's poll delivers that.
    decide(&store, &id, Verdict::Approve, "olivia")
        .await
        .unwrap();
    assert_eq!(poll(&client, &id).await, "approved");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quorum_of_two_needs_two_distinct_operators_restarts_on_modify_and_ends_on_reject() {
    let server = Server::start(&["--grace", "0"]);
    let client = mcp(&server).await;
    let store = server.store().await;
    let rules = r#"
@id("two-for-cdn") @quorum("2")
permit (principal, action == Action::"egress", resource)
when { resource.host like "*.cdn.example" };
"#;
    store.set_rules(rules, &Actor::cli("olivia")).await.unwrap();

    // Two distinct operators: the first approval leaves the agent waiting, the same
    // operator again counts nothing, a second operator's approval decides.
    let id = pending(&client, "img.cdn.example").await;
    assert_eq!(poll(&client, &id).await, "pending");
    decide(&store, &id, Verdict::Approve, "alice")
        .await
        .unwrap();
    assert_eq!(poll(&client, &id).await, "pending");
    assert!(matches!(
        decide(&store, &id, Verdict::Approve, "alice").await,
        Err(StoreError::AlreadyApproved {
            given: 1,
            needed: 2,
            ..
        })
    ));
    assert_eq!(poll(&client, &id).await, "pending");
    let (p, _) = store.show(&id).await.unwrap();
    assert_eq!((p.quorum.given, p.quorum.needed), (1, 2));
    decide(&store, &id, Verdict::Approve, "bob").await.unwrap();
    let r = call(&client, "check-proposal", json!({"proposal_id": id})).await;
    assert_eq!(status(&r), "approved", "{}", text(&r));
    assert_eq!(structured(&r)["decision"]["decided_by"], "bob");

    // A modify starts the count again with the modifier's approval: the modifier again
    // counts nothing, the operator who approved the old change counts for the new one.
    let id = pending(&client, "fonts.cdn.example").await;
    decide(&store, &id, Verdict::Approve, "alice")
        .await
        .unwrap();
    let patch = json!({"port": 8443}).as_object().unwrap().clone();
    decide(&store, &id, Verdict::Modify(patch), "bob")
        .await
        .unwrap();
    assert_eq!(poll(&client, &id).await, "pending");
    assert!(matches!(
        decide(&store, &id, Verdict::Approve, "bob").await,
        Err(StoreError::AlreadyApproved { given: 1, .. })
    ));
    assert_eq!(poll(&client, &id).await, "pending");
    decide(&store, &id, Verdict::Approve, "alice")
        .await
        .unwrap();
    let r = call(&client, "check-proposal", json!({"proposal_id": id})).await;
    assert_eq!(status(&r), "modified", "{}", text(&r));
    assert_eq!(structured(&r)["decision"]["change"]["port"], 8443);

    // One reject ends it, whatever approvals came before.
    let id = pending(&client, "js.cdn.example").await;
    decide(&store, &id, Verdict::Approve, "alice")
        .await
        .unwrap();
    decide(&store, &id, Verdict::Reject, "bob").await.unwrap();
    let r = call(&client, "check-proposal", json!({"proposal_id": id})).await;
    assert_eq!(status(&r), "rejected", "{}", text(&r));
    assert!(is_error(&r));
    assert!(
        decide(&store, &id, Verdict::Approve, "carol")
            .await
            .is_err(),
        "a rejected proposal takes no more approvals"
    );
    client.cancel().await.ok();
}
