//! Another process holding the write lock past the busy timeout: calls fail with a clear,
//! retryable error, write nothing, and work again once the lock is released.

use std::time::{Duration, Instant};

use crate::common::*;
use supervise_store::{
    Actor, ProposalLimits, Role, SignInRefusal, Store, StoreError, StoreOptions, Verdict,
};

async fn busy_database_is_retryable_and_recovers(db: TestDb) {
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
    let before = counts(&db).await;

    // The "other process": a raw connection holding the write lock (SQLite: BEGIN
    // IMMEDIATE; PostgreSQL: the writers' advisory lock, as another host's server would).
    let mut holder = db.raw().await;
    sqlx::raw_sql(take_write_lock(db.backend))
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
    // Reads still work under a writer (WAL; MVCC).
    assert_eq!(store.list(None, Default::default()).await.unwrap().len(), 1);
    assert!(matches!(
        store.take_decision(b.id, &id).await.unwrap(),
        supervise_store::Delivery::Pending(_)
    ));

    sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();
    assert_eq!(counts(&db).await, before, "nothing half-written");
    created(&store, egress(&b, "b.example")).await;
    store
        .decide(&id, Verdict::Approve, &Actor::cli("op"), None, None)
        .await
        .unwrap();
}
on_both!(busy_database_is_retryable_and_recovers);

/// A write that finds the lock held waits for it, and gets it once the holder commits
/// within the busy timeout: the proposal is filed, not refused, and exactly once.
async fn a_write_waits_for_a_lock_released_within_the_busy_timeout(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    created(&store, egress(&b, "a.example")).await;

    let mut holder = db.raw().await;
    for round in 0..5 {
        sqlx::raw_sql(take_write_lock(db.backend))
            .execute(&mut holder)
            .await
            .unwrap();
        let release = async {
            tokio::time::sleep(Duration::from_millis(40 + 30 * round)).await;
            sqlx::query("COMMIT").execute(&mut holder).await.unwrap();
        };
        let host = format!("r{round}.example");
        let (filed, ()) = tokio::join!(store.propose(egress(&b, &host)), release);
        assert!(
            matches!(filed, Ok(supervise_store::Proposed::Created(_))),
            "round {round}: {filed:?}"
        );
    }
    assert_eq!(
        store.open_proposals(b.id).await.unwrap().len(),
        6,
        "each waiting write filed once"
    );
}
on_both!(a_write_waits_for_a_lock_released_within_the_busy_timeout);

/// A sign-in with a link that does not work (unknown, spent, expired) is refused from a
/// read: it never waits for the write lock, so a flood of guesses slows no writer. A good
/// link still needs the lock.
async fn a_failed_sign_in_takes_no_write_lock(db: TestDb) {
    let setup = db.open().await;
    let (_, spent) = setup
        .add_operator("ann", Role::Viewer, &[], &Actor::cli("root"))
        .await
        .unwrap();
    setup.sign_in(spent.secret.expose()).await.unwrap();
    let expired = setup
        .operator_link("ann", &Actor::cli("root"))
        .await
        .unwrap();
    let mut conn = db.raw().await;
    sqlx::query(
        "UPDATE sign_in_links SET expires_at = '2026-01-01T00:00:00.000Z' WHERE spent_at IS NULL",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    drop(conn);
    let good = setup
        .operator_link("ann", &Actor::cli("root"))
        .await
        .unwrap();
    setup.close().await;

    let store = Store::open(
        &db.path,
        StoreOptions {
            busy_timeout: Duration::from_millis(300),
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap();
    let mut holder = db.raw().await;
    sqlx::raw_sql(take_write_lock(db.backend))
        .execute(&mut holder)
        .await
        .unwrap();
    for (secret, why) in [
        ("no-such-link", SignInRefusal::Unknown),
        (spent.secret.expose(), SignInRefusal::Spent),
        (expired.secret.expose(), SignInRefusal::Expired),
    ] {
        let r = store.sign_in(secret).await;
        assert!(
            matches!(&r, Err(StoreError::SignInRefused(w)) if *w == why),
            "{why:?}: {r:?}"
        );
    }
    assert!(matches!(
        store.sign_in(good.secret.expose()).await,
        Err(StoreError::Busy)
    ));
    sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();
    store.sign_in(good.secret.expose()).await.unwrap();
}
on_both!(a_failed_sign_in_takes_no_write_lock);
