//! Deciding what is already allowed: a second approval of the same bottle and change keeps
//! the grant in force and moves its end to the later of the two, and the proposal names it;
//! `grant_allowing` finds the grant that covers an asked change.

use std::time::Duration;

use crate::common::*;
use serde_json::json;
use supervise_store::{Actor, Kind, NewProposal, Proposed, Verdict};

async fn file(store: &supervise_store::Store, p: NewProposal) -> String {
    match store.propose(p).await.unwrap() {
        Proposed::Created(p) => p.id.to_string(),
        other => panic!("expected a new proposal, got {other:?}"),
    }
}

#[tokio::test]
async fn approving_the_same_change_twice_keeps_one_grant_and_the_later_end() {
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "demo", "10.0.0.2").await;
    let op = Actor::cli("op");
    let first = file(&store, egress(&b, "pypi.org")).await;
    let one = store
        .decide(
            &first,
            Verdict::Approve,
            &op,
            None,
            Some(Duration::from_secs(60)),
        )
        .await
        .unwrap();
    let kept = one.decision.unwrap().grant_id.unwrap();
    // A second proposal of the same change (filed before the first was decided, or by
    // another path) approved for longer: the same grant, ending later.
    let second = file(
        &store,
        NewProposal {
            justification: "again".into(),
            ..egress(&b, "pypi.org")
        },
    )
    .await;
    let two = store
        .decide(
            &second,
            Verdict::Approve,
            &op,
            None,
            Some(Duration::from_secs(7200)),
        )
        .await
        .unwrap();
    let d = two.decision.unwrap();
    assert_eq!(d.grant_id.as_ref(), Some(&kept));
    let grants = store.grants_in_force("demo").await.unwrap();
    assert_eq!(grants.len(), 1, "{grants:?}");
    let end = grants[0].expires_at.clone().unwrap();
    assert!(end.as_str() > supervise_store::Timestamp::after(Duration::from_secs(3600)).as_str());
    assert_eq!(d.grant_expires_at, Some(end.clone()));

    // A shorter third approval leaves the later end alone.
    let third = file(
        &store,
        NewProposal {
            justification: "third".into(),
            ..egress(&b, "pypi.org")
        },
    )
    .await;
    store
        .decide(
            &third,
            Verdict::Approve,
            &op,
            None,
            Some(Duration::from_secs(60)),
        )
        .await
        .unwrap();
    let grants = store.grants_in_force("demo").await.unwrap();
    assert_eq!((grants.len(), grants[0].expires_at.clone()), (1, Some(end)));
}

#[tokio::test]
async fn grant_allowing_finds_the_covering_grant_and_nothing_else() {
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "demo", "10.0.0.2").await;
    let op = Actor::cli("op");
    let id = file(
        &store,
        NewProposal {
            change: json!({"host": "*.example.com", "port": 443}),
            ..egress(&b, "x")
        },
    )
    .await;
    store
        .decide(&id, Verdict::Approve, &op, None, None)
        .await
        .unwrap();
    let asked = |host: &str, port: u16| json!({"host": host, "port": port});
    let found = store
        .grant_allowing(b.id, Kind::Egress, &asked("API.example.com", 443))
        .await
        .unwrap();
    assert!(found.is_some());
    for (host, port) in [
        ("example.com", 443),
        ("api.example.com", 80),
        ("other.org", 443),
    ] {
        assert!(
            store
                .grant_allowing(b.id, Kind::Egress, &asked(host, port))
                .await
                .unwrap()
                .is_none(),
            "{host}:{port}"
        );
    }
    let push = file(
        &store,
        NewProposal {
            change: json!({"remote": "origin", "ref": "agent/*"}),
            ..git_push(&b, "x")
        },
    )
    .await;
    store
        .decide(&push, Verdict::Approve, &op, None, None)
        .await
        .unwrap();
    let allowed = |r: &str| json!({"remote": "origin", "ref": r});
    assert!(
        store
            .grant_allowing(b.id, Kind::GitPush, &allowed("refs/heads/agent/x"))
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .grant_allowing(b.id, Kind::GitPush, &allowed("main"))
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn the_proxy_files_no_observed_proposal_for_a_change_revoked_within_the_cooldown() {
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "demo", "10.0.0.2").await;
    let op = Actor::cli("op");
    let id = file(&store, egress(&b, "pypi.org")).await;
    let p = store
        .decide(&id, Verdict::Approve, &op, None, None)
        .await
        .unwrap();
    let grant = p.decision.unwrap().grant_id.unwrap();
    store.revoke(grant.as_str(), &op).await.unwrap();
    let filed = store.propose_observed(&b, "pypi.org", 443).await.unwrap();
    assert!(filed.is_none(), "{filed:?}");
    // Another destination is filed as before.
    let other = store.propose_observed(&b, "crates.io", 443).await.unwrap();
    assert!(other.is_some());
}
