//! Every bad input gets its typed error and leaves the database exactly as it was.

use crate::common::*;
use serde_json::{Value, json};
use supervise_store::{Actor, BottleId, Kind, NewProposal, StoreError, Verdict};

fn invalid_field(r: Result<impl std::fmt::Debug, StoreError>) -> String {
    match r {
        Err(StoreError::Invalid { field, .. }) => field,
        other => panic!("expected an invalid-input error, got {other:?}"),
    }
}

async fn bad_proposals_are_refused_and_write_nothing(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    created(&store, egress(&b, "ok.example")).await;
    let before = counts(&db).await;

    let long = "x".repeat(2001);
    let cases: Vec<(Kind, Value, &str, &str)> = vec![
        (Kind::Egress, json!({"host": ""}), "ok", "host"),
        (Kind::Egress, json!({}), "ok", "host"),
        (Kind::Egress, json!({"host": 7}), "ok", "host"),
        (Kind::Egress, json!({"host": "https://a.com"}), "ok", "host"),
        (Kind::Egress, json!({"host": "a.com/x"}), "ok", "host"),
        (Kind::Egress, json!({"host": "a .com"}), "ok", "host"),
        (Kind::Egress, json!({"host": "bücher.de"}), "ok", "host"),
        (Kind::Egress, json!({"host": "*"}), "ok", "host"),
        (Kind::Egress, json!({"host": "*.com"}), "ok", "host"),
        (Kind::Egress, json!({"host": "a\u{0}.com"}), "ok", "host"),
        (
            Kind::Egress,
            json!({"host": "a.com'; DROP TABLE proposals;--"}),
            "ok",
            "host",
        ),
        (
            Kind::Egress,
            json!({"host": "a.com", "port": 0}),
            "ok",
            "port",
        ),
        (
            Kind::Egress,
            json!({"host": "a.com", "port": 70000}),
            "ok",
            "port",
        ),
        (
            Kind::Egress,
            json!({"host": "a.com", "port": "443"}),
            "ok",
            "port",
        ),
        (
            Kind::Egress,
            json!({"host": "a.com", "extra": true}),
            "ok",
            "extra",
        ),
        (Kind::Egress, json!("a.com"), "ok", "change"),
        (Kind::Egress, json!({"host": "a.com"}), "", "justification"),
        (
            Kind::Egress,
            json!({"host": "a.com"}),
            "   ",
            "justification",
        ),
        (
            Kind::Egress,
            json!({"host": "a.com"}),
            &long,
            "justification",
        ),
        (
            Kind::Egress,
            json!({"host": "a.com"}),
            "nul \u{0} here",
            "justification",
        ),
        (
            Kind::GitPush,
            json!({"ref": "refs/heads/x"}),
            "ok",
            "remote",
        ),
        (Kind::GitPush, json!({"remote": "origin"}), "ok", "ref"),
        (
            Kind::GitPush,
            json!({"remote": "origin", "ref": "refs/heads/../main"}),
            "ok",
            "ref",
        ),
        (
            Kind::GitPush,
            json!({"remote": "origin", "ref": "a b"}),
            "ok",
            "ref",
        ),
        (
            Kind::GitPush,
            json!({"remote": "or igin", "ref": "x"}),
            "ok",
            "remote",
        ),
        (
            Kind::GitPush,
            json!({"remote": "", "ref": "x"}),
            "ok",
            "remote",
        ),
        (
            Kind::GitPush,
            json!({"remote": "o", "ref": "x", "force": true}),
            "ok",
            "force",
        ),
    ];
    for (kind, change, justification, field) in cases {
        let item = NewProposal {
            bottle_id: b.id,
            kind,
            change: change.clone(),
            justification: justification.into(),
            quorum: None,
        };
        assert_eq!(invalid_field(store.propose(item).await), field, "{change}");
    }
    // A bottle that does not exist.
    let ghost = NewProposal {
        bottle_id: BottleId::from_row(9999),
        ..egress(&b, "a.com")
    };
    assert!(matches!(
        store.propose(ghost).await,
        Err(StoreError::BottleNotFound(_))
    ));
    assert_eq!(counts(&db).await, before);
}
on_both!(bad_proposals_are_refused_and_write_nothing);

async fn bad_decisions_and_registry_calls_write_nothing(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let id = created(&store, egress(&b, "ok.example")).await;
    let before = counts(&db).await;

    assert!(matches!(
        store
            .decide("0000-nope", Verdict::Approve, &Actor::cli("op"), None, None)
            .await,
        Err(StoreError::ProposalNotFound(_))
    ));
    assert!(matches!(
        store
            .decide("", Verdict::Approve, &Actor::cli("op"), None, None)
            .await,
        Err(StoreError::ProposalNotFound(_))
    ));
    let patch = |v: Value| Verdict::Modify(v.as_object().unwrap().clone());
    assert_eq!(
        invalid_field(
            store
                .decide(
                    &id,
                    patch(json!({"host": "*"})),
                    &Actor::cli("op"),
                    None,
                    None
                )
                .await
        ),
        "host"
    );
    assert_eq!(
        invalid_field(
            store
                .decide(
                    &id,
                    patch(json!({"remote": "x"})),
                    &Actor::cli("op"),
                    None,
                    None
                )
                .await
        ),
        "remote"
    );
    for slug in ["", "Demo", "-x", "a_b", &"a".repeat(64), "a b"] {
        assert_eq!(
            invalid_field(
                store
                    .add_bottle(slug, "127.0.0.9".parse().unwrap(), &Actor::cli("op"))
                    .await
            ),
            "slug"
        );
    }
    assert!(matches!(
        store
            .add_bottle("demo", "127.0.0.9".parse().unwrap(), &Actor::cli("op"))
            .await,
        Err(StoreError::BottleExists(_))
    ));
    assert!(matches!(
        store
            .add_bottle("other", "127.0.0.1".parse().unwrap(), &Actor::cli("op"))
            .await,
        Err(StoreError::IpTaken { .. })
    ));
    assert!(matches!(
        store.remove_bottle("nope", &Actor::cli("op")).await,
        Err(StoreError::BottleNotFound(_))
    ));
    assert!(matches!(
        store.withdraw(b.id, "nope").await,
        Err(StoreError::ProposalNotFound(_))
    ));
    assert!(matches!(
        store.revoke("nope", &Actor::cli("op")).await,
        Err(StoreError::GrantNotFound(_))
    ));
    assert!(matches!(
        store.list(Some("nope"), Default::default()).await,
        Err(StoreError::BottleNotFound(_))
    ));
    assert_eq!(counts(&db).await, before);
}
on_both!(bad_decisions_and_registry_calls_write_nothing);

async fn ambiguous_prefix_is_refused(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let a = created(&store, egress(&b, "a.example")).await;
    let c = created(&store, egress(&b, "c.example")).await;
    // UUIDv7 ids made in the same millisecond-ish share their first characters.
    let common: String = a
        .chars()
        .zip(c.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect();
    assert!(!common.is_empty());
    assert!(matches!(
        store.show(&common).await,
        Err(StoreError::AmbiguousId(_))
    ));
    assert_eq!(store.show(&a).await.unwrap().0.id, a);
}
on_both!(ambiguous_prefix_is_refused);
