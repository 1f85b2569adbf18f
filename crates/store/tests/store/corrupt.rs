//! A row this build cannot read is an error naming the table and the row, never a
//! plausible default: each case corrupts one cell with raw SQL, as a hand edit would.

use crate::common::*;
use sqlx::Connection;
use supervise_store::{Actor, StatusFilter, Store, StoreError};

async fn raw_sql(db: &TestDb, sql: &str) {
    let mut conn =
        sqlx::sqlite::SqliteConnection::connect(&format!("sqlite://{}", db.path.display()))
            .await
            .unwrap();
    sqlx::query("PRAGMA ignore_check_constraints = ON")
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
}

fn assert_corrupt<T: std::fmt::Debug>(
    got: Result<T, StoreError>,
    want_table: &str,
    want_id: &str,
    want_what: &str,
) {
    match got {
        Err(StoreError::Corrupt { table, id, what }) => {
            assert_eq!((table, id.as_str()), (want_table, want_id));
            assert!(what.contains(want_what), "{what:?} names {want_what:?}");
        }
        other => panic!("expected a corrupt {want_table} row, got {other:?}"),
    }
}

async fn one_proposal() -> (TestDb, Store, String) {
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let id = created(&store, egress(&b, "a.example")).await;
    (db, store, id)
}

#[tokio::test]
async fn unknown_kind_is_not_read_as_egress() {
    let (db, store, id) = one_proposal().await;
    raw_sql(
        &db,
        &format!("UPDATE proposals SET kind = 'telnet' WHERE id = '{id}'"),
    )
    .await;
    assert_corrupt(store.show(&id).await, "proposals", &id, "kind");
    assert_corrupt(
        store.list(None, StatusFilter::All).await,
        "proposals",
        &id,
        "telnet",
    );
}

#[tokio::test]
async fn unknown_status_is_not_read_as_withdrawn() {
    let (db, store, id) = one_proposal().await;
    raw_sql(
        &db,
        &format!("UPDATE proposals SET status = 'lost' WHERE id = '{id}'"),
    )
    .await;
    assert_corrupt(store.show(&id).await, "proposals", &id, "status");
}

#[tokio::test]
async fn bad_change_json_is_not_read_as_null() {
    let (db, store, id) = one_proposal().await;
    raw_sql(
        &db,
        &format!("UPDATE proposals SET change = '{{oops' WHERE id = '{id}'"),
    )
    .await;
    assert_corrupt(store.show(&id).await, "proposals", &id, "change");
}

#[tokio::test]
async fn unknown_flag_and_bad_time_are_refused() {
    let (db, store, id) = one_proposal().await;
    raw_sql(
        &db,
        &format!("UPDATE proposals SET flags = '[\"shiny\"]' WHERE id = '{id}'"),
    )
    .await;
    assert_corrupt(store.show(&id).await, "proposals", &id, "flags");
    raw_sql(
        &db,
        &format!("UPDATE proposals SET flags = '[]', created_at = 'yesterday' WHERE id = '{id}'"),
    )
    .await;
    assert_corrupt(store.show(&id).await, "proposals", &id, "created_at");
}

#[tokio::test]
async fn bad_bottle_address_is_not_read_as_unspecified() {
    let (db, store, _) = one_proposal().await;
    let b = store.bottle("demo").await.unwrap().unwrap();
    raw_sql(
        &db,
        "UPDATE bottles SET ip = 'not-an-ip' WHERE slug = 'demo'",
    )
    .await;
    assert_corrupt(
        store.list_bottles().await,
        "bottles",
        &b.id.to_string(),
        "ip",
    );
    assert_corrupt(
        store.bottle("demo").await,
        "bottles",
        &b.id.to_string(),
        "not-an-ip",
    );
}

#[tokio::test]
async fn bad_event_and_grant_rows_are_named() {
    let (db, store, id) = one_proposal().await;
    let p = store
        .decide(
            &id,
            supervise_store::Verdict::Approve,
            &Actor::cli("olivia"),
            None,
            None,
        )
        .await
        .unwrap();
    let grant = p.decision.unwrap().grant_id.unwrap();
    raw_sql(
        &db,
        &format!(
            "UPDATE grants SET end_reason = 'bored', ended_at = created_at WHERE id = '{grant}'"
        ),
    )
    .await;
    assert_corrupt(
        store.revoke(&grant, &Actor::cli("bob")).await,
        "grants",
        &grant,
        "end_reason",
    );
    raw_sql(
        &db,
        "INSERT INTO events (at, event, actor, hash) \
         VALUES ('not a time', 'bottle-added', 'system', 'hand-written')",
    )
    .await;
    let seq = store.last_seq().await.unwrap();
    assert_corrupt(store.audit(None).await, "events", &seq.to_string(), "at");
    assert_corrupt(
        store.events_after(seq - 1, 10).await,
        "events",
        &seq.to_string(),
        "time",
    );
}
