//! Bottles belong to a host: two hosts on one database reuse slugs and addresses, each
//! attributes and registers only its own, one operator view lists and decides them all.

use supervise_store::{
    Actor, Delivery, StatusFilter, Store, StoreError, StoreOptions, Verdict, default_host,
};

use crate::common::*;

async fn on_host(db: &TestDb, host: &str) -> Store {
    Store::open(
        &db.path,
        StoreOptions {
            host: Some(host.into()),
            ..StoreOptions::default()
        },
    )
    .await
    .expect("open store")
}

async fn two_hosts_share_one_queue(db: TestDb) {
    let a = on_host(&db, "host-a").await;
    let b = on_host(&db, "host-b").await;
    assert_eq!((a.host(), b.host()), ("host-a", "host-b"));
    // The same slug and the same address on both hosts.
    let ba = bottle(&a, "demo", "10.0.0.2").await;
    let bb = bottle(&b, "demo", "10.0.0.2").await;
    assert_ne!(ba.id, bb.id);
    assert_eq!((ba.host.as_str(), bb.host.as_str()), ("host-a", "host-b"));
    assert!(matches!(
        a.add_bottle("demo", "10.0.0.3".parse().unwrap(), &Actor::cli("op"))
            .await,
        Err(StoreError::BottleExists(_))
    ));
    // Each server attributes the address to its own host's bottle only.
    let ip = "10.0.0.2".parse().unwrap();
    assert_eq!(a.bottle_for_ip(ip).await.unwrap().unwrap().id, ba.id);
    assert_eq!(b.bottle_for_ip(ip).await.unwrap().unwrap().id, bb.id);
    assert_eq!(a.list_bottles().await.unwrap(), vec![ba.clone()]);

    let pa = created(&a, egress(&ba, "same.example")).await;
    let pb = created(&b, egress(&bb, "same.example")).await;
    assert_ne!(pa, pb, "the same change on two hosts is two proposals");

    // One operator view: every host, or one, by --host or HOST/SLUG.
    let all = a.list(None, StatusFilter::Pending).await.unwrap();
    let hosts: Vec<_> = all
        .iter()
        .map(|p| (p.host.as_str(), p.bottle.as_str()))
        .collect();
    assert_eq!(hosts, [("host-a", "demo"), ("host-b", "demo")]);
    let only_b = a
        .list_on(Some("host-b"), None, StatusFilter::Pending)
        .await
        .unwrap();
    assert_eq!(only_b.len(), 1);
    assert_eq!(only_b[0].id, pb);
    let by_name = a
        .list(Some("host-a/demo"), StatusFilter::Pending)
        .await
        .unwrap();
    assert_eq!(by_name.len(), 1);
    assert_eq!(by_name[0].id, pa);
    assert!(matches!(
        a.list_on(Some("host-c"), None, StatusFilter::All).await,
        Err(StoreError::Invalid { .. })
    ));
    assert!(matches!(
        a.list(Some("host-a/nope"), StatusFilter::All).await,
        Err(StoreError::BottleNotFound(_))
    ));

    // A CLI on host A decides host B's proposal; only B's bottle receives it.
    a.decide(&pb, Verdict::Approve, &Actor::cli("op"), None, None)
        .await
        .unwrap();
    assert!(matches!(
        a.take_decision(ba.id, &pb).await.unwrap(),
        Delivery::Unknown
    ));
    assert!(matches!(
        b.take_decision(bb.id, &pb).await.unwrap(),
        Delivery::Decided(_)
    ));
    assert!(matches!(
        a.take_decision(ba.id, &pa).await.unwrap(),
        Delivery::Pending(_)
    ));

    let trail = a.audit_on(Some("host-b"), None).await.unwrap();
    assert!(
        trail
            .iter()
            .all(|e| e.host.as_deref().is_none_or(|h| h == "host-b"))
    );
    assert!(
        trail
            .iter()
            .any(|e| e.proposal_id.as_ref().is_some_and(|id| *id == pb))
    );
    assert!(
        !trail
            .iter()
            .any(|e| e.proposal_id.as_ref().is_some_and(|id| *id == pa))
    );
    // Each host's policy is its own.
    assert_eq!(b.grants_in_force("demo").await.unwrap().len(), 1);
    assert!(a.grants_in_force("demo").await.unwrap().is_empty());
    assert_eq!(a.grants_in_force("host-b/demo").await.unwrap().len(), 1);
}
on_both!(two_hosts_share_one_queue);

/// A SQLite file records the host that first opened it; later stores default to it, so a
/// renamed machine keeps its bottles, and an explicit --host-id still wins.
#[tokio::test]
async fn a_sqlite_file_keeps_its_host() {
    let db = TestDb::new();
    let first = db.open().await;
    assert_eq!(first.host(), default_host());
    let b = bottle(&first, "demo", "127.0.0.1").await;
    assert_eq!(b.host, default_host());
    first.close().await;
    let other = on_host(&db, "elsewhere").await;
    assert!(other.bottle("demo").await.unwrap().is_none());
    assert_eq!(db.open().await.host(), default_host());
    assert!(matches!(
        Store::open(
            &db.path,
            StoreOptions {
                host: Some("a/b".into()),
                ..StoreOptions::default()
            }
        )
        .await,
        Err(StoreError::Invalid { .. })
    ));
}

/// One server per host: a second claim on the same host id is refused (SQLite: per file;
/// PostgreSQL: per host id, so another host's server claims beside it).
async fn one_server_per_host(db: TestDb) {
    let a = on_host(&db, "host-a").await;
    let claim = a.claim_server().await.expect("the first claim");
    let again = on_host(&db, "host-a").await;
    assert!(matches!(
        again.claim_server().await,
        Err(StoreError::AlreadyServed { .. })
    ));
    if db.backend == supervise_store::Backend::Postgres {
        let b = on_host(&db, "host-b").await;
        let _other = b
            .claim_server()
            .await
            .expect("another host claims beside it");
    }
    drop(claim);
    // The lock goes with the claim's connection (PostgreSQL ends the session a moment
    // after the socket closes): the host can be claimed again.
    let mut tries = 0;
    let _again = loop {
        match again.claim_server().await {
            Ok(c) => break c,
            Err(StoreError::AlreadyServed { .. }) if tries < 100 => {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            Err(e) => panic!("{e}"),
        }
    };
}
on_both!(one_server_per_host);
