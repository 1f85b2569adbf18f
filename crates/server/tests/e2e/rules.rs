//! Operator rules through a real MCP client: a proposal a rule decides is answered on the
//! same call, naming the rule, with the grant the rule annotates; a forbid's note reaches
//! the agent; a never-automatic address still waits for a human.

use serde_json::json;
use supervise_store::{Actor, StatusFilter};

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
