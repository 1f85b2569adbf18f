//! Proposals that need the approvals of several distinct operators: approvals accumulate
//! (`approval-added`), the last one needed decides, a modify starts the count again, one
//! reject ends it, one operator counts once whatever surface it uses, and racing approvals
//! from separate stores decide and deliver exactly once.

use serde_json::json;
use supervise_store::{
    Actor, Delivery, EventKind, NewProposal, Proposal, Role, Status, Store, StoreError, Verdict,
    Via,
};

use crate::common::*;

/// An egress proposal that needs `n` approvals.
fn needing(item: NewProposal, n: u32) -> NewProposal {
    NewProposal {
        quorum: Some(n),
        ..item
    }
}

async fn approve(store: &Store, id: &str, who: &str) -> Result<Proposal, StoreError> {
    store
        .decide(id, Verdict::Approve, &Actor::cli(who), None, None)
        .await
}

/// The events of `id` of the given kinds, in order, as (event, actor, note).
async fn trail(store: &Store, id: &str) -> Vec<(EventKind, String, Option<String>)> {
    let (_, history) = store.show(id).await.unwrap();
    history
        .into_iter()
        .filter(|e| e.event != EventKind::Proposed)
        .map(|e| (e.event, e.actor, e.note))
        .collect()
}

async fn two_of_two_by_two_operators_approves_and_delivers_once(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let id = created(&store, needing(egress(&b, "pypi.org"), 2)).await;
    let (p, _) = store.show(&id).await.unwrap();
    assert_eq!((p.quorum.needed, p.quorum.given), (2, 0));

    let first = approve(&store, &id, "alice").await.unwrap();
    assert_eq!(first.status, Status::Pending);
    assert_eq!((first.quorum.needed, first.quorum.given), (2, 1));
    assert!(first.decision.is_none());
    assert_eq!(counts(&db).await["grants"], 0);
    assert!(matches!(
        store.take_decision(b.id, &id).await.unwrap(),
        Delivery::Pending(_)
    ));

    let last = approve(&store, &id, "bob").await.unwrap();
    assert_eq!(last.status, Status::Approved);
    assert_eq!(last.quorum.given, 2);
    let decision = last.decision.as_ref().unwrap();
    assert_eq!(decision.decided_by, "bob");
    assert_eq!(decision.change.as_ref(), Some(&last.change));
    assert!(decision.grant_id.is_some());
    assert_eq!(
        trail(&store, &id).await,
        vec![
            (
                EventKind::ApprovalAdded,
                "operator:alice".into(),
                Some("1 of 2".into())
            ),
            (
                EventKind::ApprovalAdded,
                "operator:bob".into(),
                Some("2 of 2".into())
            ),
            (EventKind::Approved, "operator:bob".into(), None),
        ]
    );
    assert!(matches!(
        store.take_decision(b.id, &id).await.unwrap(),
        Delivery::Decided(_)
    ));
    assert_eq!(
        store.take_decision(b.id, &id).await.unwrap(),
        Delivery::Unknown
    );
    let c = counts(&db).await;
    assert_eq!(c["grants"], 1);
}
on_both!(two_of_two_by_two_operators_approves_and_delivers_once);

async fn the_same_operator_approving_twice_counts_once(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let id = created(&store, needing(egress(&b, "pypi.org"), 2)).await;
    approve(&store, &id, "alice").await.unwrap();
    let before = counts(&db).await;
    match approve(&store, &id, "alice").await {
        Err(StoreError::AlreadyApproved {
            operator,
            given,
            needed,
            ..
        }) => assert_eq!((operator.as_str(), given, needed), ("alice", 1, 2)),
        other => panic!("expected AlreadyApproved, got {other:?}"),
    }
    assert_eq!(counts(&db).await, before, "a repeat writes nothing");
    let (p, _) = store.show(&id).await.unwrap();
    assert_eq!((p.status, p.quorum.given), (Status::Pending, 1));
}
on_both!(the_same_operator_approving_twice_counts_once);

async fn one_operator_counts_once_across_cli_and_console(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let (alice, _) = store
        .add_operator("alice", Role::Approver, &[], &Actor::cli("root"))
        .await
        .unwrap();
    let id = created(&store, needing(egress(&b, "pypi.org"), 2)).await;
    store
        .decide(&id, Verdict::Approve, &Actor::console(&alice), None, None)
        .await
        .unwrap();
    let refused = approve(&store, &id, "alice").await;
    assert!(
        matches!(refused, Err(StoreError::AlreadyApproved { .. })),
        "{refused:?}"
    );
    let (p, history) = store.show(&id).await.unwrap();
    assert_eq!((p.status, p.quorum.given), (Status::Pending, 1));
    let added: Vec<_> = history
        .iter()
        .filter(|e| e.event == EventKind::ApprovalAdded)
        .collect();
    assert_eq!(added.len(), 1);
    assert_eq!(added[0].via, Some(Via::Console));
}
on_both!(one_operator_counts_once_across_cli_and_console);

async fn a_modify_replaces_the_change_and_starts_the_count_again(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let id = created(&store, needing(egress(&b, "pypi.org"), 2)).await;
    approve(&store, &id, "alice").await.unwrap();
    let patch = json!({ "port": 8443 }).as_object().unwrap().clone();
    let modified = store
        .decide(&id, Verdict::Modify(patch), &Actor::cli("bob"), None, None)
        .await
        .unwrap();
    assert_eq!(modified.status, Status::Pending);
    assert_eq!(
        modified.quorum.given, 1,
        "the modifier's approval is the first"
    );
    assert_eq!(
        modified.quorum.change,
        Some(json!({ "host": "pypi.org", "port": 8443 }))
    );
    // The modifier's approval counts for the new change: bob again is refused.
    assert!(matches!(
        approve(&store, &id, "bob").await,
        Err(StoreError::AlreadyApproved { .. })
    ));
    // alice approved the old change; her approval of the new one is the second.
    let decided = approve(&store, &id, "alice").await.unwrap();
    assert_eq!(decided.status, Status::Modified);
    let decision = decided.decision.unwrap();
    assert_eq!(decision.decided_by, "alice");
    assert_eq!(
        decision.change,
        Some(json!({ "host": "pypi.org", "port": 8443 }))
    );
    let events: Vec<_> = trail(&store, &id)
        .await
        .into_iter()
        .map(|(e, a, n)| (e, a, n.unwrap_or_default()))
        .collect();
    assert_eq!(
        events,
        vec![
            (
                EventKind::ApprovalAdded,
                "operator:alice".into(),
                "1 of 2".into()
            ),
            (
                EventKind::ApprovalAdded,
                "operator:bob".into(),
                "1 of 2 for a modified change".into()
            ),
            (
                EventKind::ApprovalAdded,
                "operator:alice".into(),
                "2 of 2".into()
            ),
            (EventKind::Modified, "operator:alice".into(), String::new()),
        ]
    );
    assert_eq!(counts(&db).await["grants"], 1);
}
on_both!(a_modify_replaces_the_change_and_starts_the_count_again);

async fn one_reject_ends_a_quorum(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let id = created(&store, needing(egress(&b, "pypi.org"), 3)).await;
    approve(&store, &id, "alice").await.unwrap();
    approve(&store, &id, "bob").await.unwrap();
    let rejected = store
        .decide(&id, Verdict::Reject, &Actor::cli("carol"), Some("no"), None)
        .await
        .unwrap();
    assert_eq!(rejected.status, Status::Rejected);
    assert!(matches!(
        approve(&store, &id, "dave").await,
        Err(StoreError::NotPending {
            status: Status::Rejected,
            ..
        })
    ));
    assert_eq!(counts(&db).await["grants"], 0);
    assert!(matches!(
        store.take_decision(b.id, &id).await.unwrap(),
        Delivery::Decided(p) if p.status == Status::Rejected
    ));
}
on_both!(one_reject_ends_a_quorum);

async fn a_quorum_of_one_decides_at_once_and_zero_is_refused(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let id = created(&store, needing(egress(&b, "one.example"), 1)).await;
    let p = approve(&store, &id, "alice").await.unwrap();
    assert_eq!(p.status, Status::Approved);
    assert!(
        trail(&store, &id)
            .await
            .iter()
            .all(|(e, _, _)| *e != EventKind::ApprovalAdded)
    );
    let refused = store.propose(needing(egress(&b, "zero.example"), 0)).await;
    assert!(
        matches!(refused, Err(StoreError::Invalid { ref field, .. }) if field == "quorum"),
        "{refused:?}"
    );
}
on_both!(a_quorum_of_one_decides_at_once_and_zero_is_refused);

/// Two stores on one database (as two processes), each approving as its own operator while
/// a third polls: exactly one `approved`, exactly one delivery, every round.
async fn racing_approvals_of_distinct_operators_decide_and_deliver_once(db: TestDb) {
    let (one, other) = (db.open().await, db.open().await);
    let b = bottle(&one, "demo", "127.0.0.1").await;
    for round in 0..10 {
        let id = created(&one, needing(egress(&b, &format!("r{round}.example")), 2)).await;
        let racers = [(one.clone(), "alice"), (other.clone(), "bob")].map(|(s, who)| {
            let id = id.clone();
            tokio::spawn(async move { approve(&s, &id, who).await })
        });
        let poller = {
            let (s, id) = (other.clone(), id.clone());
            tokio::spawn(async move {
                loop {
                    match s.take_decision(b.id, &id).await.unwrap() {
                        Delivery::Pending(_) => tokio::task::yield_now().await,
                        d => return d,
                    }
                }
            })
        };
        let mut statuses = Vec::new();
        for r in racers {
            statuses.push(r.await.unwrap().expect("both approvals count").status);
        }
        statuses.sort_by_key(|s| s.as_str());
        assert_eq!(
            statuses,
            vec![Status::Approved, Status::Pending],
            "round {round}"
        );
        assert!(matches!(poller.await.unwrap(), Delivery::Decided(_)));
        assert_eq!(
            one.take_decision(b.id, &id).await.unwrap(),
            Delivery::Unknown
        );
        let (_, history) = one.show(&id).await.unwrap();
        let n = |k: EventKind| history.iter().filter(|e| e.event == k).count();
        assert_eq!(
            (
                n(EventKind::ApprovalAdded),
                n(EventKind::Approved),
                n(EventKind::Delivered)
            ),
            (2, 1, 1),
            "round {round}"
        );
    }
    assert_eq!(counts(&db).await["grants"], 10);
}
on_both!(
    racing_approvals_of_distinct_operators_decide_and_deliver_once,
    flavor = "multi_thread",
    worker_threads = 4
);

/// Two approvals and a reject at once from three stores: the proposal ends either rejected
/// (no grant) or approved by both approvals, with exactly one decision event.
async fn two_approvals_racing_a_reject_decide_once(db: TestDb) {
    let stores = [db.open().await, db.open().await, db.open().await];
    let b = bottle(&stores[0], "demo", "127.0.0.1").await;
    for round in 0..10 {
        let id = created(
            &stores[0],
            needing(egress(&b, &format!("x{round}.example")), 2),
        )
        .await;
        let tasks: Vec<_> = [
            ("alice", Verdict::Approve),
            ("bob", Verdict::Approve),
            ("carol", Verdict::Reject),
        ]
        .into_iter()
        .zip(stores.iter().cloned())
        .map(|((who, v), s)| {
            let id = id.clone();
            tokio::spawn(async move { s.decide(&id, v, &Actor::cli(who), None, None).await })
        })
        .collect();
        let mut results = Vec::new();
        for t in tasks {
            results.push(t.await.unwrap());
        }
        let (p, history) = stores[1].show(&id).await.unwrap();
        let n = |k: EventKind| history.iter().filter(|e| e.event == k).count();
        assert_eq!(
            n(EventKind::Approved) + n(EventKind::Rejected),
            1,
            "round {round}"
        );
        match p.status {
            Status::Approved => {
                assert!(matches!(results[2], Err(StoreError::NotPending { .. })));
                assert_eq!(n(EventKind::ApprovalAdded), 2);
            }
            Status::Rejected => {
                assert!(results[2].is_ok());
                assert!(p.decision.unwrap().grant_id.is_none());
            }
            other => panic!("round {round}: ended {other}"),
        }
        assert!(matches!(
            stores[2].take_decision(b.id, &id).await.unwrap(),
            Delivery::Decided(_)
        ));
        assert_eq!(
            stores[0].take_decision(b.id, &id).await.unwrap(),
            Delivery::Unknown
        );
    }
}
on_both!(
    two_approvals_racing_a_reject_decide_once,
    flavor = "multi_thread",
    worker_threads = 4
);

/// An approval is history: another process can neither edit nor delete one.
async fn approvals_can_be_neither_edited_nor_deleted(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let id = created(&store, needing(egress(&b, "pypi.org"), 2)).await;
    approve(&store, &id, "alice").await.unwrap();
    let mut raw = db.raw().await;
    for sql in [
        "DELETE FROM approvals",
        "UPDATE approvals SET operator = 'mallory'",
    ] {
        let refused = sqlx::query(sql).execute(&mut raw).await;
        assert!(
            refused
                .unwrap_err()
                .to_string()
                .contains("approvals are kept for audit"),
            "{sql}"
        );
    }
    let (p, _) = store.show(&id).await.unwrap();
    assert_eq!(p.quorum.given, 1);
}
on_both!(approvals_can_be_neither_edited_nor_deleted);
