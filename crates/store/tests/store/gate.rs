//! The git gate's decision in the store: a push is all or nothing, an approval covers
//! exactly its (ref, old, new) while its grant is in force and is used once, and a used
//! approval leaves the policy.

use serde_json::{Value, json};
use supervise_store::{Actor, GateRef, RefUpdate, Store, Verdict};

use crate::common::*;

const ZERO: &str = "0000000000000000000000000000000000000000";

fn update(reference: &str, new: char) -> RefUpdate {
    RefUpdate {
        reference: reference.into(),
        old: ZERO.into(),
        new: new.to_string().repeat(40),
        summary: json!({"commits": 1, "subjects": ["work"], "files_changed": 1,
            "insertions": 1, "deletions": 0, "force": false, "delete": false, "create": true}),
        justification: "work".into(),
        diff: None,
    }
}

async fn push(store: &Store, updates: Vec<RefUpdate>) -> supervise_store::GateVerdict {
    store.gate_push("demo", "origin", updates).await.unwrap()
}

fn filed_id(r: &GateRef) -> String {
    match r {
        GateRef::Proposed(p) => p.proposal().id.to_string(),
        other => panic!("expected a proposal, got {other:?}"),
    }
}

async fn a_push_is_all_or_nothing_and_an_approval_is_used_once(db: TestDb) {
    let store = db.open().await;
    bottle(&store, "demo", "127.0.0.1").await;
    let first = push(&store, vec![update("refs/heads/a", 'a')]).await;
    assert!(!first.accepted);
    let id = filed_id(&first.refs[0]);
    store
        .decide(&id, Verdict::Approve, &Actor::cli("op"), None, None)
        .await
        .unwrap();
    assert_eq!(store.grants_in_force("demo").await.unwrap().len(), 1);

    // With an uncovered update beside it, the approval is reported but not used.
    let both = push(
        &store,
        vec![update("refs/heads/a", 'a'), update("refs/heads/b", 'b')],
    )
    .await;
    assert!(!both.accepted);
    assert!(matches!(both.refs[0], GateRef::Approved(_)));
    filed_id(&both.refs[1]);

    // Another commit on the same ref is not covered.
    let other = push(&store, vec![update("refs/heads/a", 'c')]).await;
    assert!(!other.accepted);

    let alone = push(&store, vec![update("refs/heads/a", 'a')]).await;
    assert!(alone.accepted, "{alone:?}");
    assert!(
        store.grants_in_force("demo").await.unwrap().is_empty(),
        "a used approval is no longer in force"
    );
    let (p, events) = store.show(&id).await.unwrap();
    assert!(p.archived_at.is_some());
    let used: Vec<_> = events
        .iter()
        .filter(|e| e.event.as_str() == "delivered" && e.actor == "system:gate")
        .collect();
    assert_eq!(used.len(), 1);
    assert!(
        !push(&store, vec![update("refs/heads/a", 'a')])
            .await
            .accepted
    );
}
on_both!(a_push_is_all_or_nothing_and_an_approval_is_used_once);

async fn a_revoked_approval_covers_nothing(db: TestDb) {
    let store = db.open().await;
    bottle(&store, "demo", "127.0.0.1").await;
    let id = filed_id(&push(&store, vec![update("refs/heads/a", 'a')]).await.refs[0]);
    let p = store
        .decide(&id, Verdict::Approve, &Actor::cli("op"), None, None)
        .await
        .unwrap();
    let grant = p.decision.unwrap().grant_id.unwrap();
    store
        .revoke(grant.as_str(), &Actor::cli("op"))
        .await
        .unwrap();
    assert!(
        !push(&store, vec![update("refs/heads/a", 'a')])
            .await
            .accepted
    );
}
on_both!(a_revoked_approval_covers_nothing);

async fn a_standing_grant_covers_its_namespace_for_fast_forwards_only(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let mut standing = git_push(&b, "agent/*");
    standing.change = json!({"remote": "origin", "ref": "agent/*"});
    let id = created(&store, standing).await;
    store
        .decide(&id, Verdict::Approve, &Actor::cli("op"), None, None)
        .await
        .unwrap();
    let ok = push(&store, vec![update("refs/heads/agent/x", 'a')]).await;
    assert!(ok.accepted);
    assert!(matches!(ok.refs[0], GateRef::Granted(_)));
    assert!(
        !push(&store, vec![update("refs/heads/agents", 'a')])
            .await
            .accepted
    );
    let mut force = update("refs/heads/agent/x", 'b');
    force.old = "a".repeat(40);
    force.summary["create"] = Value::Bool(false);
    force.summary["force"] = Value::Bool(true);
    let refused = push(&store, vec![force]).await;
    assert!(!refused.accepted);
    let p = store.show(&filed_id(&refused.refs[0])).await.unwrap().0;
    assert_eq!(
        p.flags.iter().map(|f| f.as_str()).collect::<Vec<_>>(),
        ["force-push"]
    );
}
on_both!(a_standing_grant_covers_its_namespace_for_fast_forwards_only);

async fn an_invalid_update_refuses_the_push_and_writes_nothing(db: TestDb) {
    let store = db.open().await;
    bottle(&store, "demo", "127.0.0.1").await;
    let mut bad = update("refs/heads/a", 'a');
    bad.summary["create"] = Value::Bool(false);
    let err = store
        .gate_push("demo", "origin", vec![update("refs/heads/b", 'b'), bad])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("summary"), "{err}");
    assert!(
        store
            .list(None, Default::default())
            .await
            .unwrap()
            .is_empty()
    );
}
on_both!(an_invalid_update_refuses_the_push_and_writes_nothing);
