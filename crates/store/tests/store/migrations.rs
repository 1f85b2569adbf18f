//! Opening files: a new file is created and migrated, reopening is a no-op, and a file that
//! is not ours (or is newer than us) is refused and left byte-for-byte untouched.

use crate::common::*;
use sqlx::Connection;
use supervise_store::{Store, StoreError, StoreOptions};

async fn raw(path: &std::path::Path) -> sqlx::sqlite::SqliteConnection {
    sqlx::sqlite::SqliteConnection::connect(&format!("sqlite://{}?mode=rwc", path.display()))
        .await
        .unwrap()
}

#[tokio::test]
async fn new_file_is_migrated_and_reopen_is_idempotent() {
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    created(&store, egress(&b, "a.example")).await;
    store.close().await;
    let before = counts(&db).await;
    for _ in 0..3 {
        let again = db.open().await;
        again.close().await;
    }
    assert_eq!(counts(&db).await, before);
    let mut conn = raw(&db.path).await;
    let applied: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let files = std::fs::read_dir(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../migrations/sqlite"
    ))
    .unwrap()
    .filter(|e| {
        e.as_ref()
            .unwrap()
            .path()
            .extension()
            .is_some_and(|x| x == "sql")
    })
    .count();
    assert_eq!(applied as usize, files, "each migration applied once");
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn missing_file_is_not_created_without_create() {
    let db = TestDb::new();
    let r = Store::open(
        &db.path,
        StoreOptions {
            create: false,
            ..StoreOptions::default()
        },
    )
    .await;
    assert!(matches!(r, Err(StoreError::Missing(_))), "{r:?}");
    assert!(!db.path.exists());
}

#[tokio::test]
async fn foreign_files_are_refused_untouched() {
    let db = TestDb::new();
    // Not SQLite at all.
    std::fs::write(&db.path, b"hello, I am a text file\n").unwrap();
    let r = Store::open(&db.path, StoreOptions::default()).await;
    assert!(matches!(r, Err(StoreError::NotSupervise(_))), "{r:?}");
    assert_eq!(
        std::fs::read(&db.path).unwrap(),
        b"hello, I am a text file\n"
    );

    // SQLite, but someone else's.
    let other = db.dir.path().join("other.db");
    {
        let mut conn = raw(&other).await;
        sqlx::query("CREATE TABLE notes (body TEXT)")
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
    }
    let bytes = std::fs::read(&other).unwrap();
    let r = Store::open(&other, StoreOptions::default()).await;
    assert!(matches!(r, Err(StoreError::NotSupervise(_))), "{r:?}");
    assert_eq!(std::fs::read(&other).unwrap(), bytes, "left untouched");
}

#[tokio::test]
async fn newer_schema_is_refused() {
    let db = TestDb::new();
    db.open().await.close().await;
    {
        let mut conn = raw(&db.path).await;
        sqlx::query(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES (99990101000000, 'from the future', 1, x'00', 0)",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        conn.close().await.unwrap();
    }
    let r = Store::open(&db.path, StoreOptions::default()).await;
    match r {
        Err(StoreError::SchemaTooNew { found, .. }) => assert_eq!(found, 99990101000000),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn empty_file_is_a_new_database() {
    let db = TestDb::new();
    std::fs::write(&db.path, b"").unwrap();
    let store = db.open().await;
    bottle(&store, "demo", "127.0.0.1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_opens_agree() {
    // Server and CLI starting on a fresh file at the same moment both migrate.
    let db = TestDb::new();
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let path = db.path.clone();
        tasks.push(tokio::spawn(async move {
            Store::open(&path, StoreOptions::default()).await
        }));
    }
    for t in tasks {
        let store = t.await.unwrap().expect("every opener succeeds");
        store.health().await.unwrap();
    }
    let store = db.open().await;
    bottle(&store, "demo", "127.0.0.1").await;
}

/// docs/SCHEMA.md stays true: every table and view the migrations make is documented, every
/// column of every table appears in the doc, and every example query runs.
#[tokio::test]
async fn schema_doc_matches_migrations() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/SCHEMA.md"))
        .expect("docs/SCHEMA.md");
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    created(&store, egress(&b, "a.example")).await;
    let mut conn = raw(&db.path).await;
    let objects: Vec<(String, String)> = sqlx::query_as(
        "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view') \
         AND name NOT LIKE 'sqlite_%' AND name <> '_sqlx_migrations'",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    for (kind, name) in &objects {
        assert!(
            doc.contains(&format!("`{name}`")),
            "{kind} {name} is not in docs/SCHEMA.md"
        );
        if kind == "table" {
            let columns: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "SELECT name FROM pragma_table_info('{name}')"
            )))
            .fetch_all(&mut conn)
            .await
            .unwrap();
            for c in columns {
                assert!(
                    doc.contains(&format!("`{c}`")),
                    "column {name}.{c} is not documented"
                );
            }
        }
    }
    let mut ran = 0;
    for block in doc.split("```sql\n").skip(1) {
        let query = block.split("```").next().unwrap();
        sqlx::query(sqlx::AssertSqlSafe(query.to_string()))
            .fetch_all(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("example query fails: {e}\n{query}"));
        ran += 1;
    }
    assert!(ran >= 6, "the doc's example queries were found");
}

#[cfg(unix)]
#[tokio::test]
async fn a_new_database_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    created(&store, egress(&b, "a.example")).await;
    let wal = db.path.with_extension("db-wal");
    for path in [&db.path, &wal] {
        let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{} is {mode:o}", path.display());
    }
}

/// PostgreSQL: an empty database is given the schema once (each migration of
/// `migrations/postgres/` applied once, however often it is opened); a read command
/// refuses an empty one; someone else's database and a newer schema are refused untouched.
#[tokio::test]
async fn postgres_schema_is_created_once_and_guarded() {
    let Some(db) = TestDb::postgres().await else {
        return;
    };
    let read_only = StoreOptions {
        create: false,
        ..StoreOptions::default()
    };
    let r = Store::open(&db.path, read_only.clone()).await;
    assert!(matches!(r, Err(StoreError::Missing(_))), "{r:?}");
    db.open().await.close().await;
    let store = db.open().await;
    bottle(&store, "demo", "127.0.0.1").await;
    store.close().await;
    Store::open(&db.path, read_only)
        .await
        .unwrap()
        .close()
        .await;
    let mut conn = db.raw().await;
    let applied: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let files = std::fs::read_dir(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../migrations/postgres"
    ))
    .unwrap()
    .filter(|e| {
        e.as_ref()
            .unwrap()
            .path()
            .extension()
            .is_some_and(|x| x == "sql")
    })
    .count();
    assert_eq!(applied as usize, files, "each migration applied once");
    // Ordering is by bytes whatever the database's collation: 'Z' < 'a' < 'é'.
    let sorted: Vec<String> = sqlx::query_scalar(
        "SELECT value FROM (VALUES ('a'), ('Z'), ('é')) AS v(value) \
         ORDER BY value COLLATE \"C\"",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert_eq!(sorted, ["Z", "a", "é"]);
    let collation: Vec<String> = sqlx::query_scalar(
        "SELECT column_name::text FROM information_schema.columns \
         WHERE table_schema = current_schema() AND data_type = 'text' \
         AND table_name IN ('bottles', 'proposals', 'grants', 'events', 'tasks', 'hook_cursors') \
         AND collation_name IS DISTINCT FROM 'C'",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert!(
        collation.is_empty(),
        "every text column compares bytes: {collation:?}"
    );
    // The trail cannot be rewritten or emptied by accident.
    for sql in [
        "UPDATE events SET note = 'x'",
        "DELETE FROM events",
        "TRUNCATE events CASCADE",
    ] {
        assert!(sqlx::query(sql).execute(&mut conn).await.is_err(), "{sql}");
    }
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (99990101000000, 'from the future', true, '\\x00', 0)",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    let r = Store::open(&db.path, StoreOptions::default()).await;
    match r {
        Err(StoreError::SchemaTooNew { found, .. }) => assert_eq!(found, 99990101000000),
        other => panic!("{other:?}"),
    }

    let other = supervise_testpg::cluster().unwrap().fresh_database().await;
    let mut conn = sqlx::AnyConnection::connect(&other).await.unwrap();
    sqlx::query("CREATE TABLE notes (body TEXT)")
        .execute(&mut conn)
        .await
        .unwrap();
    let r = Store::open(&other, StoreOptions::default()).await;
    assert!(matches!(r, Err(StoreError::NotSupervise(_))), "{r:?}");
    let tables: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema()",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(tables, 1, "left untouched");
}

/// An agent's open proposals, its pending egress and the git gate's unused approvals are
/// read through indexes that hold no archived proposal (or only approved, unused pushes),
/// so however many archived rows a bottle has, the plan never walks them.
#[tokio::test]
async fn a_bottles_live_proposals_are_read_without_its_archived_rows() {
    let db = TestDb::new();
    let store = db.open().await;
    store.close().await;
    let mut conn = raw(&db.path).await;
    let from = "SELECT p.id FROM proposals p JOIN bottles b ON b.id = p.bottle_id \
                LEFT JOIN grants g ON g.proposal_id = p.id WHERE p.bottle_id = $1";
    let queries = [
        (
            "AND p.archived_at IS NULL AND $2 = $2 ORDER BY p.created_at, p.id",
            "SEARCH p USING INDEX proposals_open (bottle_id=?)",
        ),
        (
            "AND p.kind = 'egress' AND p.status = 'pending' \
             AND (p.expires_at IS NULL OR p.expires_at > $2) ORDER BY p.created_at",
            "SEARCH p USING INDEX proposals_pending_change (bottle_id=? AND kind=?)",
        ),
        (
            "AND p.kind = 'git-push' AND p.status IN ('approved', 'modified') \
             AND p.gate_used_at IS NULL AND g.ended_at IS NULL AND $2 = $2 \
             ORDER BY p.decided_at LIMIT 1",
            "SEARCH p USING INDEX proposals_gate_unused (bottle_id=? AND kind=?)",
        ),
    ];
    for (rest, expected) in queries {
        let plan: Vec<(i64, i64, i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "EXPLAIN QUERY PLAN {from} {rest}"
        )))
        .bind(1_i64)
        .bind("2026-01-01T00:00:00Z")
        .fetch_all(&mut conn)
        .await
        .unwrap();
        let on_p: Vec<&str> = plan
            .iter()
            .map(|(_, _, _, d)| d.as_str())
            .filter(|d| d.contains(" p "))
            .collect();
        assert_eq!(on_p, [expected], "{rest}");
    }
}
