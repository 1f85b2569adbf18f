//! A proposal that needs two approvals, through the API and the console: each answer
//! carries the count, the queue and the proposal page show "1 of 2 approvals", and an
//! operator counts once whether it approves with its API token, its console session or
//! the CLI's `--as`.

use reqwest::Method;
use serde_json::json;
use supervise_store::{Actor, Kind, NewProposal, Proposal, Role, StoreError, Verdict};

use crate::harness::{Console, api};

async fn needing_two(c: &Console) -> Proposal {
    let bottle = c.store.bottle("demo").await.unwrap().unwrap();
    c.store
        .propose(NewProposal {
            bottle_id: bottle.id,
            kind: Kind::Egress,
            change: json!({"host": "pypi.org", "port": 443}),
            justification: "packages".into(),
            quorum: Some(2),
        })
        .await
        .unwrap()
        .into_proposal()
}

#[tokio::test]
async fn the_count_shows_everywhere_and_an_operator_counts_once_on_every_surface() {
    let c = Console::start().await;
    c.bottle("demo", "127.0.0.2").await;
    let link = c.operator("alice", Role::Approver, &[]).await;
    c.operator("bob", Role::Approver, &[]).await;
    let (alice, bob) = (c.token("alice").await, c.token("bob").await);
    let p = needing_two(&c).await;
    let approve = format!("/proposals/{}/approve", p.id);

    let (s, doc) = api(&c, Method::POST, &approve, Some(&alice), None).await;
    assert_eq!(s, 200, "{doc}");
    assert_eq!(doc["status"], "pending");
    assert_eq!(
        doc["quorum"],
        json!({"needed": 2, "given": 1, "change": null})
    );

    // alice again: by token, in the console, on the CLI. Each refused, none counted.
    let (s, body) = api(&c, Method::POST, &approve, Some(&alice), None).await;
    assert_eq!(s, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("already approved"),
        "{body}"
    );
    let browser = c.sign_in(&link).await;
    let (s, page) = browser.post(&approve, &[]).await;
    assert_eq!(s, 409, "{page}");
    assert!(page.contains("already approved"), "{page}");
    let cli = c
        .store
        .decide(&p.id, Verdict::Approve, &Actor::cli("alice"), None, None)
        .await;
    assert!(
        matches!(cli, Err(StoreError::AlreadyApproved { .. })),
        "{cli:?}"
    );

    let (s, shown) = api(
        &c,
        Method::GET,
        &format!("/proposals/{}", p.id),
        Some(&bob),
        None,
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(shown["proposal"]["quorum"]["given"], 1);
    let added: Vec<_> = shown["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "approval-added")
        .collect();
    assert_eq!(added.len(), 1);
    assert_eq!(added[0]["actor"], "operator:alice");
    assert_eq!(added[0]["via"], "console");
    assert_eq!(added[0]["note"], "1 of 2");

    let (_, queue) = browser.get("/").await;
    assert!(queue.contains("1 of 2 approvals"), "{queue}");
    let (_, page) = browser.get(&format!("/proposals/{}", p.id)).await;
    assert!(
        page.contains(r#"<dd id="approvals">1 of 2 approvals</dd>"#),
        "{page}"
    );

    let (s, doc) = api(&c, Method::POST, &approve, Some(&bob), None).await;
    assert_eq!(s, 200, "{doc}");
    assert_eq!(doc["status"], "approved");
    assert_eq!(doc["decision"]["decided_by"], "bob");
    assert_eq!(doc["quorum"]["given"], 2);
    c.stop().await;
}

#[tokio::test]
async fn the_api_document_describes_the_count() {
    let c = Console::start().await;
    let (s, doc) = api(&c, Method::GET, "/openapi.json", None, None).await;
    assert_eq!(s, 200);
    let schema = &doc["components"]["schemas"];
    assert!(
        schema["ProposalDoc"]["properties"]["quorum"].is_object(),
        "{schema}"
    );
    for field in ["needed", "given", "change"] {
        assert!(
            schema["QuorumDoc"]["properties"][field].is_object(),
            "QuorumDoc.{field}: {schema}"
        );
    }
    c.stop().await;
}
