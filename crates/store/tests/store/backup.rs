//! `Store::backup`: a copy taken while another store proposes continuously opens, passes
//! `PRAGMA integrity_check` and holds rows; an existing file is never overwritten; the copy
//! is not readable by others; PostgreSQL is refused, pointing at pg_dump.

use std::os::unix::fs::MetadataExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use sqlx::{Connection, Row};
use supervise_store::{ProposalLimits, StoreError};

use crate::common::{TestDb, bottle, egress};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_write_load_is_whole_and_consistent() {
    let db = TestDb::new();
    let writer = db
        .open_limits(ProposalLimits {
            max_pending_per_bottle: None,
            ..ProposalLimits::default()
        })
        .await;
    let b = bottle(&writer, "demo", "10.0.0.2").await;
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicUsize::new(0));
    let load = {
        let (stop, written, writer) = (stop.clone(), written.clone(), writer.clone());
        tokio::spawn(async move {
            let mut n = 0usize;
            while !stop.load(Ordering::Relaxed) {
                writer
                    .propose(egress(&b, &format!("h{n}.example.org")))
                    .await
                    .expect("propose during the backup");
                n += 1;
                written.store(n, Ordering::Relaxed);
            }
        })
    };
    while written.load(Ordering::Relaxed) < 50 {
        tokio::task::yield_now().await;
    }
    // Another store, as `supervise backup` in another process opens the file.
    let reader = db.open().await;
    let copy = db.dir.path().join("copy.db");
    let size = reader.backup(&copy).await.expect("backup");
    let during = written.load(Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    load.await.unwrap();
    assert!(written.load(Ordering::Relaxed) > 50);
    assert_eq!(std::fs::metadata(&copy).unwrap().len(), size);
    assert_eq!(
        std::fs::metadata(&copy).unwrap().mode() & 0o077,
        0,
        "the copy is readable by others"
    );

    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(&format!("sqlite://{}?mode=ro", copy.display()))
        .await
        .unwrap();
    let check: String = sqlx::query("PRAGMA integrity_check")
        .fetch_one(&mut conn)
        .await
        .unwrap()
        .get(0);
    assert_eq!(check, "ok");
    let rows: i64 = sqlx::query("SELECT COUNT(*) FROM proposals")
        .fetch_one(&mut conn)
        .await
        .unwrap()
        .get(0);
    assert!(rows >= 50, "{rows} proposals in the copy");
    assert!(rows as usize <= during + 1, "{rows} > {during}");
    // Every proposal in the copy has its `proposed` event: one commit's state, not a mix.
    let orphans: i64 = sqlx::query(
        "SELECT COUNT(*) FROM proposals p WHERE NOT EXISTS \
         (SELECT 1 FROM events e WHERE e.proposal_id = p.id AND e.event = 'proposed')",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap()
    .get(0);
    assert_eq!(orphans, 0);
    conn.close().await.unwrap();
}

#[tokio::test]
async fn a_backup_never_overwrites_a_file() {
    let db = TestDb::new();
    let store = db.open().await;
    let copy = db.dir.path().join("copy.db");
    std::fs::write(&copy, b"keep me").unwrap();
    let err = store.backup(&copy).await.unwrap_err();
    assert!(matches!(err, StoreError::BackupExists(_)), "{err}");
    assert_eq!(std::fs::read(&copy).unwrap(), b"keep me");

    let link = db.dir.path().join("link.db");
    std::os::unix::fs::symlink(db.dir.path().join("elsewhere.db"), &link).unwrap();
    assert!(store.backup(&link).await.is_err());
    assert!(!db.dir.path().join("elsewhere.db").exists());
}

#[tokio::test]
async fn a_postgres_backup_points_at_pg_dump() {
    let Some(db) = TestDb::postgres().await else {
        return;
    };
    let store = db.open().await;
    let copy = db.dir.path().join("copy.db");
    let err = store.backup(&copy).await.unwrap_err();
    assert!(matches!(err, StoreError::BackupPostgres), "{err}");
    assert!(err.to_string().contains("pg_dump"));
    assert!(!copy.exists());
}
