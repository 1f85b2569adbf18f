//! Direct database work beside the server, as the CLI does it: deciding through a second
//! [`Store`] on the same file, counting what the server has filed, and preloading archived
//! history with one big SQL transaction.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{AnyConnection, Connection, SqliteConnection};
use supervise_store::{Actor, Location, Store, StoreOptions, Verdict};

/// A second store on the server's file. `durable: false` for setup work nobody measures.
pub async fn open_store(db: &Path, durable: bool) -> Result<Store> {
    Store::open(
        db,
        StoreOptions {
            create: false,
            durable,
            max_connections: 2,
            ..StoreOptions::default()
        },
    )
    .await
    .with_context(|| format!("opening {}", db.display()))
}

/// Approves each id, one transaction each, as `supervise approve` would.
pub async fn approve_all(store: &Store, ids: &[String]) -> Result<()> {
    for id in ids {
        store
            .decide(id, Verdict::Approve, &Actor::cli("bench"), None, None)
            .await
            .with_context(|| format!("approving {id}"))?;
    }
    Ok(())
}

async fn raw(db: &Path, sync: SqliteSynchronous) -> Result<SqliteConnection> {
    let options = SqliteConnectOptions::new()
        .filename(db)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(sync)
        .busy_timeout(Duration::from_secs(30));
    Ok(SqliteConnection::connect_with(&options).await?)
}

/// A connection of its own to the server's database, a file or a `postgres://` URL, for
/// the read-only counts below.
async fn reader(db: &Path) -> Result<AnyConnection> {
    sqlx::any::install_default_drivers();
    let url = match Location::parse(db) {
        Location::File(path) => format!("sqlite://{}", path.display()),
        Location::Postgres(url) => url,
    };
    let mut conn = AnyConnection::connect(&url).await?;
    if !url.starts_with("postgres") {
        sqlx::raw_sql("PRAGMA busy_timeout = 30000")
            .execute(&mut conn)
            .await?;
    }
    Ok(conn)
}

/// Ids of undecided, unarchived proposals, oldest first, at most `limit`.
pub async fn pending_ids(db: &Path, limit: i64) -> Result<Vec<String>> {
    let mut conn = reader(db).await?;
    let ids: Vec<String> = sqlx::query_scalar(
        "SELECT id FROM proposals WHERE status = 'pending' AND archived_at IS NULL \
         ORDER BY created_at, id LIMIT $1",
    )
    .bind(limit)
    .fetch_all(&mut conn)
    .await?;
    conn.close().await?;
    Ok(ids)
}

/// Waits until the server has filed at least `n` undecided proposals (or `timeout`
/// passes); returns how many it saw last.
pub async fn wait_pending(db: &Path, n: i64, timeout: Duration) -> Result<i64> {
    let mut conn = reader(db).await?;
    let deadline = Instant::now() + timeout;
    loop {
        let count: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM proposals WHERE status = 'pending' AND archived_at IS NULL",
        )
        .fetch_one(&mut conn)
        .await?;
        if count >= n || Instant::now() >= deadline {
            conn.close().await?;
            return Ok(count);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Inserts `n` archived (approved and delivered) proposals spread over the existing
/// bottles, in one transaction, matching the schema in `migrations/`. Returns how long it
/// took.
pub async fn preload(db: &Path, n: u64) -> Result<Duration> {
    preload_from(db, n, "2026-01-01").await
}

/// [`preload`] with the first proposal filed at `from` (`YYYY-MM-DD[ HH:MM:SS]`, UTC), a
/// hundred a second after it.
pub async fn preload_from(db: &Path, n: u64, from: &str) -> Result<Duration> {
    anyhow::ensure!(
        matches!(Location::parse(db), Location::File(_)),
        "--preload runs on SQLite only"
    );
    let start = Instant::now();
    let mut conn = raw(db, SqliteSynchronous::Normal).await?;
    let bottles: Vec<i64> = sqlx::query_scalar("SELECT id FROM bottles ORDER BY id")
        .fetch_all(&mut conn)
        .await?;
    anyhow::ensure!(!bottles.is_empty(), "no bottles to preload proposals for");
    let list = bottles
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
    sqlx::query(
        "CREATE TEMP TABLE bench_bottles AS \
         SELECT key AS k, value AS id FROM json_each(?)",
    )
    .bind(format!("[{list}]"))
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1) \
         INSERT INTO proposals (id, bottle_id, kind, change, change_key, justification, status, \
             flags, hits, created_at, expires_at, decided_at, decided_by, decision_note, \
             decision_change, archived_at) \
         SELECT printf('00000000-0000-7000-8000-%012x', i), \
             (SELECT id FROM bench_bottles WHERE k = i % ?2), 'egress', \
             '{\"host\":\"pre' || i || '.example.com\",\"port\":443}', \
             '{\"host\":\"pre' || i || '.example.com\",\"port\":443}', \
             'preloaded history', 'approved', '[]', 1, \
             strftime('%Y-%m-%dT%H:%M:%fZ', ?3, '+' || (i / 100) || ' seconds'), \
             NULL, \
             strftime('%Y-%m-%dT%H:%M:%fZ', ?3, '+' || (i / 100 + 1) || ' seconds'), \
             'bench', NULL, \
             '{\"host\":\"pre' || i || '.example.com\",\"port\":443}', \
             strftime('%Y-%m-%dT%H:%M:%fZ', ?3, '+' || (i / 100 + 2) || ' seconds') \
         FROM n",
    )
    .bind(n as i64)
    .bind(bottles.len() as i64)
    .bind(from)
    .execute(&mut *tx)
    .await?;
    sqlx::query("DROP TABLE bench_bottles")
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut conn)
        .await?;
    conn.close().await?;
    Ok(start.elapsed())
}

/// The `decide` subcommand: approves each id in `ids_file` through a durable store, one
/// transaction each as the CLI does, printing `ID MONOTONIC_NS` after each commit; `rate`
/// decisions per second at most (0: back to back).
pub async fn decide_command(db: &Path, ids_file: &Path, rate: f64) -> Result<()> {
    use std::io::Write;
    let ids = std::fs::read_to_string(ids_file)?;
    let store = open_store(db, true).await?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let start = tokio::time::Instant::now();
    for (k, id) in ids.lines().filter(|l| !l.is_empty()).enumerate() {
        if rate > 0.0 {
            tokio::time::sleep_until(start + Duration::from_secs_f64(k as f64 / rate)).await;
        }
        store
            .decide(id, Verdict::Approve, &Actor::cli("bench"), None, None)
            .await
            .with_context(|| format!("approving {id}"))?;
        writeln!(out, "{id} {}", crate::sys::monotonic_ns())?;
    }
    out.flush()?;
    store.close().await;
    Ok(())
}
