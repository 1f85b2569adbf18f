//! The hash chain in the store: rows written before the chain are hashed when a chaining
//! build first opens the database, and a writer in another process never breaks it.

use supervise_store::{Actor, Backend, Verdict};

use crate::common::{TestDb, bottle, created, egress};

/// The hashing at open, on a database whose rows have no hash (as before the chain's
/// migration): the same chain, from the same genesis, as the rows had when written.
async fn rows_older_than_the_chain_are_hashed_at_open(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "10.0.0.2").await;
    created(&store, egress(&b, "a.example")).await;
    let head = store.trail_head().await.unwrap();
    store.close().await;

    let mut raw = db.raw().await;
    let (unlock, relock) = match db.backend {
        Backend::Sqlite => (
            "INSERT INTO trail_unlock (id) VALUES (1)",
            "DELETE FROM trail_unlock",
        ),
        Backend::Postgres => (
            "SET LOCAL supervise.trail_unlock = 'on'",
            "SET LOCAL supervise.trail_unlock = 'off'",
        ),
    };
    for sql in [
        "BEGIN",
        unlock,
        "UPDATE events SET hash = NULL",
        relock,
        "COMMIT",
    ] {
        sqlx::query(sql).execute(&mut raw).await.unwrap();
    }
    let unhashed: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM events WHERE hash IS NULL")
        .fetch_one(&mut raw)
        .await
        .unwrap();
    assert_eq!(unhashed, 2);

    let store = db.open().await;
    let check = store.verify_trail(Some(&head)).await.unwrap();
    assert!(check.ok(), "{check:?}");
    assert_eq!(check.head, head);
    assert_eq!(check.events, 2);
}
on_both!(rows_older_than_the_chain_are_hashed_at_open);

const CHILD_ENV: &str = "SUPERVISE_CHAIN_CHILD_DB";

#[tokio::test]
#[ignore = "run by a_writer_in_another_process_keeps_one_chain as a child process"]
async fn child_writer() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let store = crate::common::open_with(path.as_ref(), Default::default()).await;
    let b = bottle(&store, "child", "10.0.0.9").await;
    created(&store, egress(&b, "child.example")).await;
    store.close().await;
}

/// A writer in another process appends between this process's writes: this process's
/// idea of the tail is stale, its next insert writes nothing, reads the tail and appends
/// after the other's rows, so the chain stays one.
#[tokio::test]
async fn a_writer_in_another_process_keeps_one_chain() {
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "demo", "10.0.0.2").await;
    created(&store, egress(&b, "before.example")).await;
    let status = crate::common::child_test("chain::child_writer", CHILD_ENV, &db)
        .status()
        .unwrap();
    assert!(status.success());
    created(&store, egress(&b, "after.example")).await;
    let check = store.verify_trail(None).await.unwrap();
    assert!(check.ok(), "{check:?}");
    assert_eq!(check.events, 5);
}

/// The cross-checks, through the same reader as the chain on each backend: a proposal row
/// whose decision no longer says what its `approved` event says, and a grant back in force
/// although the trail revoked it, are each named while the chain itself still holds.
async fn rows_that_disagree_with_the_trail_are_named(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "10.0.0.2").await;
    let op = Actor::cli("op");
    let kept = created(&store, egress(&b, "kept.example")).await;
    store
        .decide(&kept, Verdict::Approve, &op, None, None)
        .await
        .unwrap();
    let p = created(&store, egress(&b, "a.example")).await;
    let decided = store
        .decide(&p, Verdict::Approve, &op, None, None)
        .await
        .unwrap();
    let grant = decided.decision.unwrap().grant_id.unwrap().to_string();
    store.revoke(&grant, &op).await.unwrap();
    let check = store.verify_trail(None).await.unwrap();
    assert!(check.ok(), "{check:?}");

    let mut raw = db.raw().await;
    sqlx::query(
        "UPDATE proposals SET decision_change = '{\"host\":\"b.example\",\"port\":443}' \
         WHERE id = $1",
    )
    .bind(&p)
    .execute(&mut raw)
    .await
    .unwrap();
    sqlx::query("UPDATE grants SET ended_at = NULL, end_reason = NULL WHERE id = $1")
        .bind(&grant)
        .execute(&mut raw)
        .await
        .unwrap();
    let check = store.verify_trail(None).await.unwrap();
    assert_eq!(check.broken, None, "{check:?}");
    assert!(!check.ok());
    assert_eq!(
        check.mismatches,
        [
            format!("proposal {p} does not say what its decision event says"),
            format!("grant {grant} is in force although the trail ended it"),
        ]
    );
}
on_both!(rows_that_disagree_with_the_trail_are_named);
