//! The database's schema: probing an existing file without touching it, and running the embedded migrations from the workspace's `migrations/`.

use std::path::Path;
use std::str::FromStr;

use sqlx::Connection;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqlitePool};

use crate::error::{StoreError, StoreResult};

static MIGRATOR: Migrator = sqlx::migrate!("../../migrations");

/// Applies the migrations this build knows. SQLite's migrator takes no lock, so another
/// process may be migrating the same file at the same moment: a migration that fails
/// because the other process applied it first is not an error. Each retry starts after
/// whatever the other process has committed, until the schema is current or a retry fails
/// with the schema still behind.
pub(super) async fn migrate(pool: &SqlitePool) -> StoreResult<()> {
    const ATTEMPTS: usize = 20;
    let mut attempt = 0;
    loop {
        let Err(err) = MIGRATOR.run(pool).await else {
            return Ok(());
        };
        let applied: Option<i64> =
            sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success")
                .fetch_one(pool)
                .await
                .unwrap_or(None);
        if applied == Some(known_version()) {
            return Ok(());
        }
        attempt += 1;
        if attempt == ATTEMPTS {
            return Err(err.into());
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}

/// The highest migration version this build knows.
fn known_version() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

/// Looks at an existing file without changing it: it must be empty, or a supervise
/// database no newer than this build.
pub(super) async fn probe(path: &Path) -> StoreResult<()> {
    let opts = SqliteConnectOptions::from_str("sqlite:")
        .map_err(StoreError::from)?
        .filename(path)
        .create_if_missing(false)
        .foreign_keys(false);
    let not_ours = || StoreError::NotSupervise(path.to_path_buf());
    let mut conn = match SqliteConnection::connect_with(&opts).await {
        Ok(c) => c,
        Err(_) => return Err(not_ours()),
    };
    let tables: Vec<String> =
        match sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'")
            .fetch_all(&mut conn)
            .await
        {
            Ok(t) => t,
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("26") => {
                return Err(not_ours());
            }
            Err(e) => return Err(e.into()),
        };
    // Only sqlx's bookkeeping table, still empty: another process is creating this database
    // right now (its first migration is in flight). Treat the file as new; the migrator
    // will find the work done or do it.
    let being_created = tables
        .iter()
        .all(|t| t == "_sqlx_migrations" || t == "sqlite_sequence")
        && sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM _sqlx_migrations")
            .fetch_one(&mut conn)
            .await
            .map_or(true, |n| n == 0);
    let result = if tables.is_empty() || being_created {
        Ok(())
    } else if !tables.iter().any(|t| t == "meta") || !tables.iter().any(|t| t == "_sqlx_migrations")
    {
        Err(not_ours())
    } else {
        let app: Option<String> =
            sqlx::query_scalar("SELECT value FROM meta WHERE key = 'application'")
                .fetch_optional(&mut conn)
                .await
                .unwrap_or(None);
        let version: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
            .fetch_one(&mut conn)
            .await
            .unwrap_or(None);
        match (app.as_deref(), version) {
            (Some("supervise"), Some(v)) if v > known_version() => Err(StoreError::SchemaTooNew {
                found: v,
                known: known_version(),
            }),
            (Some("supervise"), _) => Ok(()),
            _ => Err(not_ours()),
        }
    };
    let _ = conn.close().await;
    result
}
