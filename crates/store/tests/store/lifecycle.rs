//! Story tests: a proposal's whole life through the store's public API, on a real file.

use std::time::Duration;

use crate::common::*;
use serde_json::json;
use supervise_store::{
    Actor, Delivery, EndReason, EventKind, Flag, ProposalLimits, Proposed, Status, StatusFilter,
    StoreError, Verdict,
};

#[tokio::test]
async fn propose_repeat_approve_deliver_once() {
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;

    let first = store.propose(egress(&b, "Example.COM.")).await.unwrap();
    let Proposed::Created(p) = first else {
        panic!("{first:?}")
    };
    assert_eq!(p.change, json!({"host": "example.com", "port": 443}));
    assert_eq!(p.status, Status::Pending);
    assert_eq!(p.hits, 1);
    assert!(p.expires_at.is_some(), "default TTL gives an expiry");

    // Same change, other words and spelling: the same proposal, one more hit.
    let mut again = egress(&b, "example.com");
    again.justification = "still need it".into();
    let Proposed::Repeated(r) = store.propose(again).await.unwrap() else {
        panic!()
    };
    assert_eq!(r.id, p.id);
    assert_eq!(r.hits, 2);
    assert_eq!(counts(&db.path).await["proposals"], 1);

    assert!(matches!(
        store.take_decision(b.id, &p.id).await.unwrap(),
        Delivery::Pending(_)
    ));

    let decided = store
        .decide(
            &p.id,
            Verdict::Approve,
            &Actor::cli("alice"),
            Some("ok for the build"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(decided.status, Status::Approved);
    let d = decided.decision.as_ref().unwrap();
    assert_eq!(d.decided_by, "alice");
    assert_eq!(d.note.as_deref(), Some("ok for the build"));
    assert_eq!(d.change, Some(json!({"host": "example.com", "port": 443})));

    let grants = store.grants_in_force("demo").await.unwrap();
    assert_eq!(grants.len(), 1);
    assert_eq!(grants[0].proposal_id, p.id);
    assert_eq!(grants[0].expires_at, None);

    let Delivery::Decided(got) = store.take_decision(b.id, &p.id).await.unwrap() else {
        panic!("first poll delivers")
    };
    assert_eq!(got.status, Status::Approved);
    assert!(got.archived_at.is_some());
    assert_eq!(
        store.take_decision(b.id, &p.id).await.unwrap(),
        Delivery::Unknown,
        "second poll finds nothing"
    );

    let (shown, history) = store.show(&p.id[..13]).await.unwrap();
    assert_eq!(shown.id, p.id);
    let names: Vec<_> = history.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(names, ["proposed", "repeated", "approved", "delivered"]);
    assert_eq!(history[2].actor, "operator:alice");
    assert_eq!(history[3].actor, "bottle:demo");

    // Deciding again is refused and names who decided.
    let before = counts(&db.path).await;
    match store
        .decide(&p.id, Verdict::Reject, &Actor::cli("bob"), None, None)
        .await
    {
        Err(StoreError::NotPending {
            status, decided_by, ..
        }) => {
            assert_eq!(status, Status::Approved);
            assert_eq!(decided_by.as_deref(), Some("alice"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(counts(&db.path).await, before);
}

#[tokio::test]
async fn modify_merges_validates_and_flags_widening() {
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let id = created(&store, egress(&b, "api.example.com")).await;

    let before = counts(&db.path).await;
    let bad = json!({"port": 70000}).as_object().unwrap().clone();
    match store
        .decide(&id, Verdict::Modify(bad), &Actor::cli("alice"), None, None)
        .await
    {
        Err(StoreError::Invalid { field, .. }) => assert_eq!(field, "port"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        counts(&db.path).await,
        before,
        "invalid modify changes nothing"
    );

    let patch = json!({"host": "*.example.com"})
        .as_object()
        .unwrap()
        .clone();
    let p = store
        .decide(
            &id,
            Verdict::Modify(patch),
            &Actor::cli("alice"),
            None,
            Some(Duration::from_secs(3600)),
        )
        .await
        .unwrap();
    assert_eq!(p.status, Status::Modified);
    assert_eq!(
        p.decision.unwrap().change,
        Some(json!({"host": "*.example.com", "port": 443}))
    );
    assert_eq!(p.flags, vec![Flag::WildcardHost, Flag::Widened]);
    let grants = store.grants_in_force("demo").await.unwrap();
    assert_eq!(
        grants[0].change,
        json!({"host": "*.example.com", "port": 443})
    );
    assert!(grants[0].expires_at.is_some());
}

#[tokio::test]
async fn reject_then_cooldown_answers_at_once() {
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let id = created(&store, egress(&b, "evil.example")).await;
    store
        .decide(
            &id,
            Verdict::Reject,
            &Actor::cli("alice"),
            Some("not for this task"),
            None,
        )
        .await
        .unwrap();
    assert!(
        store.grants_in_force("demo").await.unwrap().is_empty(),
        "rejects grant nothing"
    );

    let Proposed::AutoRejected(p) = store.propose(egress(&b, "evil.example")).await.unwrap() else {
        panic!("cooldown should answer with the rejection")
    };
    assert_eq!(p.id, id);
    assert_eq!(p.hits, 2);
    assert_eq!(
        p.decision.unwrap().note.as_deref(),
        Some("not for this task")
    );
    let c = counts(&db.path).await;
    assert_eq!(c["proposals"], 1);
    assert_eq!(c["pending"], 0);

    // Without a cooldown the same change is queued again.
    let no_cooldown = db
        .open_limits(ProposalLimits {
            reject_cooldown: None,
            ..ProposalLimits::default()
        })
        .await;
    assert!(matches!(
        no_cooldown
            .propose(egress(&b, "evil.example"))
            .await
            .unwrap(),
        Proposed::Created(_)
    ));
}

#[tokio::test]
async fn bottles_are_isolated() {
    let db = TestDb::new();
    let store = db.open().await;
    let a = bottle(&store, "alpha", "127.0.0.2").await;
    let b = bottle(&store, "beta", "127.0.0.3").await;
    let id = created(&store, egress(&a, "a.example")).await;
    store
        .decide(&id, Verdict::Approve, &Actor::cli("op"), None, None)
        .await
        .unwrap();

    assert_eq!(
        store.take_decision(b.id, &id).await.unwrap(),
        Delivery::Unknown
    );
    assert!(matches!(
        store.withdraw(b.id, &id).await,
        Err(StoreError::ProposalNotFound(_))
    ));
    assert!(store.open_proposals(b.id).await.unwrap().is_empty());
    assert_eq!(store.open_proposals(a.id).await.unwrap().len(), 1);
    // The same change from another bottle is its own proposal.
    assert!(matches!(
        store.propose(egress(&b, "a.example")).await.unwrap(),
        Proposed::Created(_)
    ));
    assert!(matches!(
        store.take_decision(a.id, &id).await.unwrap(),
        Delivery::Decided(_)
    ));
}

#[tokio::test]
async fn withdraw_archives_and_refuses_decided() {
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let id = created(&store, git_push(&b, "feature/x")).await;
    let p = store.withdraw(b.id, &id).await.unwrap();
    assert_eq!(p.status, Status::Withdrawn);
    assert_eq!(
        p.change,
        json!({"remote": "origin", "ref": "refs/heads/feature/x"})
    );
    assert_eq!(
        store.take_decision(b.id, &id).await.unwrap(),
        Delivery::Unknown
    );
    assert!(matches!(
        store
            .decide(&id, Verdict::Approve, &Actor::cli("op"), None, None)
            .await,
        Err(StoreError::NotPending {
            status: Status::Withdrawn,
            ..
        })
    ));

    let id2 = created(&store, git_push(&b, "feature/y")).await;
    store
        .decide(&id2, Verdict::Reject, &Actor::cli("op"), None, None)
        .await
        .unwrap();
    assert!(matches!(
        store.withdraw(b.id, &id2).await,
        Err(StoreError::NotPending {
            status: Status::Rejected,
            ..
        })
    ));
}

#[tokio::test]
async fn proposals_expire_on_read_and_by_sweep() {
    let db = TestDb::new();
    let store = db
        .open_limits(ProposalLimits {
            proposal_ttl: Some(Duration::from_secs(1)),
            ..ProposalLimits::default()
        })
        .await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let polled = created(&store, egress(&b, "a.example")).await;
    let swept = created(&store, egress(&b, "b.example")).await;
    assert_eq!(
        store.list(None, StatusFilter::Pending).await.unwrap().len(),
        2
    );
    tokio::time::sleep(Duration::from_millis(1200)).await;

    // Read-side expiry: no sweep has run, yet nothing looks alive.
    assert!(
        store
            .list(None, StatusFilter::Pending)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.list(None, StatusFilter::Expired).await.unwrap().len(),
        2
    );
    assert!(matches!(
        store
            .decide(&polled, Verdict::Approve, &Actor::cli("op"), None, None)
            .await,
        Err(StoreError::NotPending {
            status: Status::Expired,
            ..
        })
    ));
    let Delivery::Expired(p) = store.take_decision(b.id, &polled).await.unwrap() else {
        panic!("expired proposal reads as expired")
    };
    assert_eq!(p.status, Status::Expired);
    assert_eq!(
        store.take_decision(b.id, &polled).await.unwrap(),
        Delivery::Unknown
    );

    let s = store.sweep().await.unwrap();
    assert_eq!(s.expired_proposals, 1);
    let (shown, history) = store.show(&swept).await.unwrap();
    assert_eq!(shown.status, Status::Expired);
    assert_eq!(history.last().unwrap().event, EventKind::Expired);
    assert_eq!(history.last().unwrap().actor, "system");
    assert_eq!(store.sweep().await.unwrap().expired_proposals, 0);

    // An identical change after expiry is a new proposal, not a repeat of a dead one.
    assert!(matches!(
        store.propose(egress(&b, "b.example")).await.unwrap(),
        Proposed::Created(_)
    ));
}

#[tokio::test]
async fn grants_expire_and_revoke() {
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let short = created(&store, egress(&b, "short.example")).await;
    let long = created(&store, egress(&b, "long.example")).await;
    store
        .decide(
            &short,
            Verdict::Approve,
            &Actor::cli("op"),
            None,
            Some(Duration::from_secs(1)),
        )
        .await
        .unwrap();
    store
        .decide(&long, Verdict::Approve, &Actor::cli("op"), None, None)
        .await
        .unwrap();
    assert_eq!(store.grants_in_force("demo").await.unwrap().len(), 2);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let live = store.grants_in_force("demo").await.unwrap();
    assert_eq!(
        live.len(),
        1,
        "expired grant is out of policy before any sweep"
    );
    assert_eq!(live[0].proposal_id, long);
    assert_eq!(store.sweep().await.unwrap().expired_grants, 1);
    let audit = store.audit(Some("demo")).await.unwrap();
    assert!(
        audit.iter().any(|e| e.event == EventKind::GrantExpired
            && e.proposal_id.as_deref() == Some(short.as_str()))
    );

    let g = store.revoke(&live[0].id, &Actor::cli("bob")).await.unwrap();
    assert_eq!(g.end_reason, Some(EndReason::Revoked));
    assert!(store.grants_in_force("demo").await.unwrap().is_empty());
    assert!(matches!(
        store.revoke(&live[0].id, &Actor::cli("bob")).await,
        Err(StoreError::GrantEnded { .. })
    ));
    assert!(matches!(
        store.revoke("no-such-grant", &Actor::cli("bob")).await,
        Err(StoreError::GrantNotFound(_))
    ));
}

#[tokio::test]
async fn pending_cap_per_bottle() {
    let db = TestDb::new();
    let store = db
        .open_limits(ProposalLimits {
            max_pending_per_bottle: Some(2),
            ..ProposalLimits::default()
        })
        .await;
    let a = bottle(&store, "alpha", "127.0.0.2").await;
    let b = bottle(&store, "beta", "127.0.0.3").await;
    created(&store, egress(&a, "one.example")).await;
    created(&store, egress(&a, "two.example")).await;
    let before = counts(&db.path).await;
    match store.propose(egress(&a, "three.example")).await {
        Err(StoreError::PendingCapReached { slug, limit }) => {
            assert_eq!((slug.as_str(), limit), ("alpha", 2));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(counts(&db.path).await, before, "a refusal writes nothing");
    // Repeats are not new work; other bottles are unaffected.
    assert!(matches!(
        store.propose(egress(&a, "one.example")).await.unwrap(),
        Proposed::Repeated(_)
    ));
    created(&store, egress(&b, "three.example")).await;
}

#[tokio::test]
async fn removed_bottle_is_a_new_bottle_when_added_again() {
    let db = TestDb::new();
    let store = db.open().await;
    let old = bottle(&store, "demo", "127.0.0.1").await;
    let pending = created(&store, egress(&old, "a.example")).await;
    let granted = created(&store, egress(&old, "b.example")).await;
    store
        .decide(&granted, Verdict::Approve, &Actor::cli("op"), None, None)
        .await
        .unwrap();

    store
        .remove_bottle("demo", &Actor::cli("op"))
        .await
        .unwrap();
    assert!(
        store
            .bottle_for_ip("127.0.0.1".parse().unwrap())
            .await
            .unwrap()
            .is_none()
    );
    let (p, _) = store.show(&pending).await.unwrap();
    assert_eq!(p.status, Status::Withdrawn);
    assert!(matches!(
        store.grants_in_force("demo").await,
        Err(StoreError::BottleNotFound(_))
    ));

    let new = bottle(&store, "demo", "127.0.0.1").await;
    assert_ne!(new.id, old.id);
    assert_eq!(
        store
            .bottle_for_ip("127.0.0.1".parse().unwrap())
            .await
            .unwrap()
            .unwrap()
            .id,
        new.id
    );
    assert!(
        store.grants_in_force("demo").await.unwrap().is_empty(),
        "grants died with the old bottle"
    );
    assert!(store.open_proposals(new.id).await.unwrap().is_empty());
    assert_eq!(
        store.take_decision(new.id, &granted).await.unwrap(),
        Delivery::Unknown
    );
    // The old generation itself, as a stale attribution would present it, is refused by
    // every agent-side method: its approved, undelivered decision stays untaken.
    assert!(matches!(
        store.take_decision(old.id, &granted).await,
        Err(StoreError::BottleGone(id)) if id == old.id
    ));
    assert!(matches!(
        store.open_proposals(old.id).await,
        Err(StoreError::BottleGone(_))
    ));
    assert!(matches!(
        store.withdraw(old.id, &pending).await,
        Err(StoreError::BottleGone(_))
    ));
    assert!(matches!(
        store.propose(egress(&old, "c.example")).await,
        Err(StoreError::BottleGone(_))
    ));
    assert!(matches!(
        store
            .take_decisions(&[(old.id, granted.clone())])
            .await
            .unwrap()[..],
        [Err(StoreError::BottleGone(_))]
    ));
    let audit: Vec<_> = store
        .audit(Some("demo"))
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.event)
        .collect();
    for want in [
        EventKind::BottleAdded,
        EventKind::Withdrawn,
        EventKind::GrantRevoked,
        EventKind::BottleRemoved,
    ] {
        assert!(audit.contains(&want), "{want} in {audit:?}");
    }
}

#[tokio::test]
async fn register_bottle_adds_moves_and_refuses_taken_addresses() {
    use supervise_store::Registered;
    let db = TestDb::new();
    let store = db.open().await;
    let ip = |s: &str| s.parse().unwrap();
    let (a, r) = store
        .register_bottle("demo", ip("127.0.0.1"))
        .await
        .unwrap();
    assert_eq!(r, Registered::Added);
    let (a2, r) = store
        .register_bottle("demo", ip("127.0.0.1"))
        .await
        .unwrap();
    assert_eq!((a2.id, r), (a.id, Registered::Unchanged));
    let (a3, r) = store
        .register_bottle("demo", ip("127.0.0.5"))
        .await
        .unwrap();
    assert_eq!((a3.id, r), (a.id, Registered::Updated));
    assert!(matches!(
        store.register_bottle("other", ip("127.0.0.5")).await,
        Err(StoreError::IpTaken { .. })
    ));
    // A dual-stack socket's mapped address finds the IPv4 bottle.
    let mapped = store.bottle_for_ip(ip("::ffff:127.0.0.5")).await.unwrap();
    assert_eq!(mapped.unwrap().slug, "demo");
}

#[tokio::test]
async fn change_feed_and_views() {
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let start = store.last_seq().await.unwrap();
    let id = created(&store, egress(&b, "a.example")).await;
    let mid = store.last_seq().await.unwrap();
    assert!(mid > start);
    store
        .decide(&id, Verdict::Approve, &Actor::cli("op"), None, None)
        .await
        .unwrap();
    let after_mid = store.events_after(mid, 100).await.unwrap();
    assert_eq!(after_mid.len(), 1);
    assert_eq!(after_mid[0].event, EventKind::Approved);
    assert_eq!(after_mid[0].proposal_id.as_deref(), Some(id.as_str()));
    assert!(
        store
            .events_after(store.last_seq().await.unwrap(), 100)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.events_after(start, 1).await.unwrap().len(),
        1,
        "limit holds"
    );

    // The views an auditor reads with sqlite3.
    use sqlx::Connection;
    let mut conn =
        sqlx::sqlite::SqliteConnection::connect(&format!("sqlite://{}", db.path.display()))
            .await
            .unwrap();
    let other = created(&store, egress(&b, "b.example")).await;
    let pending: Vec<(String, String)> = sqlx::query_as("SELECT id, bottle FROM pending_proposals")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    assert_eq!(pending, vec![(other.clone(), "demo".to_string())]);
    let approved: Vec<String> = sqlx::query_scalar(
        "SELECT proposal_id FROM audit_log WHERE event = 'approved' AND actor = 'operator:op'",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert_eq!(approved, vec![id]);
    let in_force: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM grants_in_force WHERE bottle = 'demo'")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(in_force, 1);
    // Normal operation never deletes, and the trail cannot be rewritten by accident.
    assert!(
        sqlx::query("DELETE FROM events")
            .execute(&mut conn)
            .await
            .is_err()
    );
    assert!(
        sqlx::query("DELETE FROM proposals")
            .execute(&mut conn)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn decisions_name_their_grant_and_ids_abbreviate() {
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let a = created(&store, egress(&b, "a.example")).await;
    let r = created(&store, egress(&b, "r.example")).await;
    let approved = store
        .decide(&a, Verdict::Approve, &Actor::cli("op"), None, None)
        .await
        .unwrap();
    let grant_id = approved
        .decision
        .unwrap()
        .grant_id
        .expect("approve records a grant");
    assert_eq!(store.grants_in_force("demo").await.unwrap()[0].id, grant_id);
    let rejected = store
        .decide(&r, Verdict::Reject, &Actor::cli("op"), None, None)
        .await
        .unwrap();
    assert_eq!(rejected.decision.unwrap().grant_id, None);

    let lens = store
        .unique_prefix_lens(&[a.clone(), r.clone()], 13)
        .await
        .unwrap();
    for (id, len) in [&a, &r].iter().zip(&lens) {
        assert!(*len >= 13);
        let (shown, _) = store.show(&id[..*len]).await.unwrap();
        assert_eq!(&shown.id, *id, "the abbreviation resolves back");
    }
    let shared = a.bytes().zip(r.bytes()).take_while(|(x, y)| x == y).count();
    assert_eq!(lens[0], (shared + 1).max(13));

    assert!(matches!(
        store.audit(Some("nobody")).await,
        Err(StoreError::BottleNotFound(_))
    ));
}
