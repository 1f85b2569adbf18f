//! The reject cooldown a host's server records (`Store::record_limits`) is the one the
//! other processes of that host apply when they follow it (`StoreOptions::server_limits`):
//! per host on a shared database, off (0) round-trips as off, a restarted server's record
//! replaces the last, and a host whose server recorded nothing keeps the built-in default.

use std::time::Duration;

use supervise_store::{Actor, ProposalLimits, Proposed, Store, StoreOptions, Verdict};

use crate::common::*;

async fn open_on(db: &TestDb, host: &str, cooldown: Option<Duration>, follow: bool) -> Store {
    Store::open(
        &db.path,
        StoreOptions {
            host: Some(host.into()),
            limits: ProposalLimits {
                reject_cooldown: cooldown,
                ..ProposalLimits::default()
            },
            server_limits: follow,
            ..StoreOptions::default()
        },
    )
    .await
    .expect("open store")
}

/// Files `host` for a fresh bottle of `store`, rejects it, and files it again: whether the
/// second filing was answered by the cooldown.
async fn refiled_is_held_back(store: &Store, slug: &str, ip: &str) -> bool {
    let b = bottle(store, slug, ip).await;
    let id = created(store, egress(&b, "again.example")).await;
    store
        .decide(&id, Verdict::Reject, &Actor::cli("op"), None, None)
        .await
        .unwrap();
    match store.propose(egress(&b, "again.example")).await.unwrap() {
        Proposed::AutoRejected(p) => {
            assert_eq!(p.id.to_string(), id);
            true
        }
        Proposed::Created(_) => false,
        other => panic!("unexpected {other:?}"),
    }
}

async fn each_host_follows_its_own_server(db: TestDb) {
    let hour = Duration::from_secs(3600);
    // Two hosts' servers on one database: A without a cooldown, B with an hour.
    let server_a = open_on(&db, "host-a", None, false).await;
    server_a.record_limits().await.unwrap();
    let server_b = open_on(&db, "host-b", Some(hour), false).await;
    server_b.record_limits().await.unwrap();

    // Helpers opened with the built-in limits, following their host's server.
    let default = ProposalLimits::default().reject_cooldown;
    let helper_a = open_on(&db, "host-a", default, true).await;
    let helper_b = open_on(&db, "host-b", None, true).await;
    let helper_c = open_on(&db, "host-c", default, true).await;
    assert_eq!(
        helper_a.recorded_reject_cooldown().await.unwrap(),
        Some(None)
    );
    assert_eq!(
        helper_b.recorded_reject_cooldown().await.unwrap(),
        Some(Some(hour))
    );
    assert_eq!(helper_c.recorded_reject_cooldown().await.unwrap(), None);

    assert!(
        !refiled_is_held_back(&helper_a, "a1", "10.0.0.2").await,
        "host A's server runs without a cooldown"
    );
    assert!(
        refiled_is_held_back(&helper_b, "b1", "10.0.0.2").await,
        "host B's server holds a rejection back for an hour, whatever the helper's own limit"
    );
    assert!(
        refiled_is_held_back(&helper_c, "c1", "10.0.0.2").await,
        "no server recorded for host C: the built-in default"
    );
    // A store that does not follow keeps its own limits.
    let own = open_on(&db, "host-a", default, false).await;
    assert!(refiled_is_held_back(&own, "a2", "10.0.0.3").await);

    // Host A's server restarts with an hour: its record replaces the last, and the
    // helper already open applies it at its next filing.
    let restarted = open_on(&db, "host-a", Some(hour), false).await;
    restarted.record_limits().await.unwrap();
    assert_eq!(
        helper_a.recorded_reject_cooldown().await.unwrap(),
        Some(Some(hour))
    );
    assert!(refiled_is_held_back(&helper_a, "a3", "10.0.0.4").await);
    for s in [
        server_a, server_b, helper_a, helper_b, helper_c, own, restarted,
    ] {
        s.close().await;
    }
}

on_both!(each_host_follows_its_own_server);
