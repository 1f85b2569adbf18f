//! The database's schema: probing an existing database without touching it, and running
//! the embedded migrations, one folder per backend: the workspace's `migrations/sqlite/`
//! and `migrations/postgres/`.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{AnyPool, Connection, PgConnection};

use super::backend::{Backend, Location};
use crate::error::{StoreError, StoreResult};

static SQLITE: Migrator = sqlx::migrate!("../../migrations/sqlite");
static POSTGRES: Migrator = sqlx::migrate!("../../migrations/postgres");

fn migrator(backend: Backend) -> &'static Migrator {
    match backend {
        Backend::Sqlite => &SQLITE,
        Backend::Postgres => &POSTGRES,
    }
}

/// Applies the migrations this build knows. SQLite's migrator takes no lock, so another
/// process may be migrating the same file at the same moment: a migration that fails
/// because the other process applied it first is not an error. Each retry starts after
/// whatever the other process has committed, until the schema is current or a retry fails
/// with the schema still behind. (PostgreSQL's migrator holds an advisory lock while it
/// runs, so there the first attempt waits for the other process instead.)
pub(super) async fn migrate(pool: &AnyPool, backend: Backend) -> StoreResult<()> {
    const ATTEMPTS: usize = 20;
    let mut attempt = 0;
    let migrator = migrator(backend);
    loop {
        let Err(err) = migrator.run(pool).await else {
            return Ok(());
        };
        let applied: Option<i64> =
            sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success")
                .fetch_one(pool)
                .await
                .unwrap_or(None);
        if applied == Some(known_version(backend)) {
            return Ok(());
        }
        attempt += 1;
        if attempt == ATTEMPTS {
            return Err(err.into());
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}

/// The highest migration version this build knows for a backend.
fn known_version(backend: Backend) -> i64 {
    migrator(backend)
        .iter()
        .map(|m| m.version)
        .max()
        .unwrap_or(0)
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
        judge(app.as_deref(), version, Backend::Sqlite, not_ours)
    };
    let _ = conn.close().await;
    result
}

/// Looks at a PostgreSQL database without changing it: it must have no tables in its
/// schema (then, with `create`, it is given one; a read command refuses it as
/// [`StoreError::Missing`]), or be a supervise database no newer than this build.
pub(super) async fn probe_postgres(
    location: &Location,
    url: &str,
    create: bool,
) -> StoreResult<()> {
    let shown = PathBuf::from(location.to_string());
    let mut conn = PgConnection::connect(url).await?;
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables \
         WHERE table_schema = current_schema()",
    )
    .fetch_all(&mut conn)
    .await?;
    let has = |name: &str| tables.iter().any(|t| t == name);
    let result = if tables.is_empty() || (tables.len() == 1 && has("_sqlx_migrations")) {
        // Empty, or another process's first migration is in flight (the migrator's
        // advisory lock makes this one wait for it).
        if create {
            Ok(())
        } else {
            Err(StoreError::Missing(shown))
        }
    } else if !has("meta") || !has("_sqlx_migrations") {
        Err(StoreError::NotSupervise(shown))
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
        judge(app.as_deref(), version, Backend::Postgres, || {
            StoreError::NotSupervise(shown)
        })
    };
    let _ = conn.close().await;
    result
}

/// What a database's `meta.application` and newest migration say, on either backend: a
/// supervise database no newer than this build is fine; a newer one is refused as
/// [`StoreError::SchemaTooNew`], anything else with `not_ours`.
fn judge(
    app: Option<&str>,
    version: Option<i64>,
    backend: Backend,
    not_ours: impl FnOnce() -> StoreError,
) -> StoreResult<()> {
    let known = known_version(backend);
    match (app, version) {
        (Some("supervise"), Some(v)) if v > known => {
            Err(StoreError::SchemaTooNew { found: v, known })
        }
        (Some("supervise"), _) => Ok(()),
        _ => Err(not_ours()),
    }
}

/// Checks a host id: 1-253 characters of ASCII letters, digits, `.`, `_` and `-` (a
/// hostname's; never `/`, which separates it from a slug in `HOST/SLUG`).
pub(super) fn validate_host(host: &str) -> StoreResult<()> {
    let ok = !host.is_empty()
        && host.len() <= 253
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(StoreError::Invalid {
            field: "host".into(),
            message: format!(
                "{host:?} must be 1-253 characters of letters, digits, '.', '_' and '-'"
            ),
        })
    }
}

/// The store's host id: `explicit`, else (PostgreSQL) the hostname or (SQLite) the file's
/// `meta.host`. A SQLite file without one records it now (`explicit` or the hostname), in
/// one write transaction that also gives it the bottles from before hosts (host '').
pub(super) async fn settle_host(
    pool: &AnyPool,
    backend: Backend,
    explicit: Option<&str>,
) -> StoreResult<String> {
    if let Some(h) = explicit {
        validate_host(h)?;
    }
    let fallback = || {
        explicit
            .map(str::to_string)
            .unwrap_or_else(super::default_host)
    };
    if backend == Backend::Postgres {
        return Ok(fallback());
    }
    let read = || sqlx::query_scalar::<_, String>("SELECT value FROM meta WHERE key = 'host'");
    let recorded = match read().fetch_optional(pool).await? {
        Some(h) => h,
        None => {
            let mut conn = pool.acquire().await?;
            sqlx::raw_sql(backend.begin_write())
                .execute(&mut *conn)
                .await?;
            let done = async {
                sqlx::query("INSERT INTO meta (key, value) VALUES ('host', $1) ON CONFLICT (key) DO NOTHING")
                    .bind(fallback())
                    .execute(&mut *conn)
                    .await?;
                sqlx::query(
                    "UPDATE bottles SET host = (SELECT value FROM meta WHERE key = 'host') \
                     WHERE host = ''",
                )
                .execute(&mut *conn)
                .await?;
                let h = read().fetch_one(&mut *conn).await?;
                sqlx::query("COMMIT").execute(&mut *conn).await?;
                Ok::<_, sqlx::Error>(h)
            }
            .await;
            match done {
                Ok(h) => h,
                Err(e) => {
                    let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
                    return Err(e.into());
                }
            }
        }
    };
    Ok(explicit.map(str::to_string).unwrap_or(recorded))
}
