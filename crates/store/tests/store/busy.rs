//! Another process holding the write lock past the busy timeout: calls fail with a clear,
//! retryable error, write nothing, and work again once the lock is released.

use std::time::{Duration, Instant};

use crate::common::*;
use sqlx::Connection;
use supervise_store::{Actor, ProposalLimits, Store, StoreError, StoreOptions, Verdict};

#[tokio::test]
async fn busy_database_is_retryable_and_recovers() {
    let db = TestDb::new();
    let setup = db.open().await;
    let b = bottle(&setup, "demo", "127.0.0.1").await;
    let id = created(&setup, egress(&b, "a.example")).await;
    setup.close().await;

    let store = Store::open(
        &db.path,
        StoreOptions {
            busy_timeout: Duration::from_millis(300),
            limits: ProposalLimits::default(),
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap();
    let before = counts(&db.path).await;

    // The "other process": a raw connection holding BEGIN IMMEDIATE.
    let mut holder =
        sqlx::sqlite::SqliteConnection::connect(&format!("sqlite://{}", db.path.display()))
            .await
            .unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut holder)
        .await
        .unwrap();

    let started = Instant::now();
    let r = store.propose(egress(&b, "b.example")).await;
    assert!(matches!(r, Err(StoreError::Busy)), "{r:?}");
    assert!(r.unwrap_err().is_retryable());
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "bounded by the busy timeout"
    );
    assert!(matches!(
        store
            .decide(&id, Verdict::Approve, &Actor::cli("op"), None, None)
            .await,
        Err(StoreError::Busy)
    ));
    // Reads still work under a writer (WAL).
    assert_eq!(store.list(None, Default::default()).await.unwrap().len(), 1);
    assert!(matches!(
        store.take_decision(b.id, &id).await.unwrap(),
        supervise_store::Delivery::Pending(_)
    ));

    sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();
    assert_eq!(counts(&db.path).await, before, "nothing half-written");
    created(&store, egress(&b, "b.example")).await;
    store
        .decide(&id, Verdict::Approve, &Actor::cli("op"), None, None)
        .await
        .unwrap();
}
