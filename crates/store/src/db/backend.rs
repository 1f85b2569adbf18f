//! The two backends behind one [`Store`](super::Store): where a database is ([`Location`]),
//! which engine it runs on ([`Backend`]), and the few statements that differ between
//! them. Every query is written once, with `$N` placeholders (SQLite reads them
//! positionally, PostgreSQL natively), and runs through sqlx's `Any` driver; only the
//! connection set-up, the statement that takes the write lock, the JSON field accessor and
//! the classification of errors are per backend, and they are all here.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyConnection, AnyPool, Connection, Executor};

use super::StoreOptions;
use crate::error::{StoreError, StoreResult};

/// Which database engine a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// One file on one host (the embedded default).
    Sqlite,
    /// A PostgreSQL database shared by many hosts.
    Postgres,
}

/// Where the database is: a file (SQLite) or a `postgres://` URL (PostgreSQL). `--db` and
/// `SUPERVISE_DB` take either; [`Location::parse`] tells them apart by the URL scheme.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    File(PathBuf),
    Postgres(String),
}

impl Location {
    /// A `postgres://` or `postgresql://` URL is PostgreSQL; anything else is a file path.
    pub fn parse(text: impl AsRef<Path>) -> Location {
        let path = text.as_ref();
        match path.to_str() {
            Some(s) if s.starts_with("postgres://") || s.starts_with("postgresql://") => {
                Location::Postgres(s.to_string())
            }
            _ => Location::File(path.to_path_buf()),
        }
    }

    pub fn backend(&self) -> Backend {
        match self {
            Location::File(_) => Backend::Sqlite,
            Location::Postgres(_) => Backend::Postgres,
        }
    }

    /// Whether the location carries a password: a URL's `user:password@` or a `password=`
    /// query parameter. Such a location belongs in the environment or a `--db-file`, never
    /// in a command line, a hook or a file others can read.
    pub fn has_password(&self) -> bool {
        match self {
            Location::File(_) => false,
            Location::Postgres(url) => redact(url) != *url,
        }
    }

    /// The location as given (a URL keeps its password): what reopening it needs.
    pub fn as_path(&self) -> &Path {
        match self {
            Location::File(p) => p,
            Location::Postgres(url) => Path::new(url.as_str()),
        }
    }
}

/// Shows a file's path, or a URL without its password (for logs and messages).
impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// `postgres://user:secret@host/db?password=secret` → `postgres://user:***@host/db?password=***`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|param| match param.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                    _ => param.to_string(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// The key of the one advisory lock every PostgreSQL write transaction takes first
/// (`pg_advisory_xact_lock`, released at COMMIT or ROLLBACK): ASCII "supervis".
pub(super) const WRITE_LOCK_KEY: i64 = 0x7375_7065_7276_6973;
// `begin_write` spells the key out (a statement is a `&'static str`): keep them equal.
const _: () = assert!(WRITE_LOCK_KEY == 8_319_679_467_651_230_067);

/// The first half of the two-key advisory lock a server holds on its host id
/// (`pg_try_advisory_lock(int, int)`, a key space apart from the write lock's): "sv".
pub(super) const HOST_LOCK_CLASS: i32 = 0x7376;

impl Backend {
    /// Starts a write transaction holding the write lock from its first statement. SQLite:
    /// `BEGIN IMMEDIATE`. PostgreSQL: `BEGIN`, then the transaction-scoped advisory lock,
    /// so writers across every host run one at a time (as on SQLite) and commit in the
    /// order they took the lock.
    pub(super) fn begin_write(self) -> &'static str {
        match self {
            Backend::Sqlite => "BEGIN IMMEDIATE",
            Backend::Postgres => "BEGIN; SELECT pg_advisory_xact_lock(8319679467651230067)",
        }
    }

    /// Lets rows leave the trail (and rows older than the chain be hashed) until
    /// [`Backend::relock_trail`] or the end of the transaction: the append-only triggers
    /// consult it. Only `audit archive` and the hashing at open run it.
    pub(super) fn unlock_trail(self) -> &'static str {
        match self {
            Backend::Sqlite => "INSERT INTO trail_unlock (id) VALUES (1)",
            Backend::Postgres => "SET LOCAL supervise.trail_unlock = 'on'",
        }
    }

    /// Puts the append-only triggers back in force, before the transaction commits.
    pub(super) fn relock_trail(self) -> &'static str {
        match self {
            Backend::Sqlite => "DELETE FROM trail_unlock",
            Backend::Postgres => "SET LOCAL supervise.trail_unlock = 'off'",
        }
    }

    /// Starts a read transaction: one snapshot for all its statements.
    pub(super) fn begin_read(self) -> &'static str {
        match self {
            Backend::Sqlite => "BEGIN",
            Backend::Postgres => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
        }
    }

    /// A text field of a JSON text column, e.g. `json_text(Backend::Sqlite, "g.change", "remote")`.
    pub(super) fn json_text(self, column: &str, field: &str) -> String {
        match self {
            Backend::Sqlite => format!("json_extract({column}, '$.{field}')"),
            Backend::Postgres => format!("(({column})::jsonb ->> '{field}')"),
        }
    }
}

/// Registers sqlx's `Any` drivers (SQLite and PostgreSQL), once per process.
fn install_drivers() {
    static ONCE: Once = Once::new();
    ONCE.call_once(sqlx::any::install_default_drivers);
}

/// A file path as a `sqlite:` URL that names exactly that path: every byte but letters,
/// digits and `._-` is percent-encoded, `/` included, so the URL has an opaque path that no
/// URL parser normalises (`a/../b` stays `a/../b`); sqlx decodes it back to the path.
fn sqlite_url(path: &Path, create: bool) -> String {
    let mut url = String::from("sqlite:");
    for b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"._-".contains(b) {
            url.push(*b as char);
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url.push_str(if create { "?mode=rwc" } else { "?mode=rw" });
    url
}

/// What every connection runs as it opens. SQLite: WAL, `synchronous` FULL (or NORMAL),
/// foreign keys, and the busy timeout. PostgreSQL: `lock_timeout` bounds how long a writer
/// waits for the write lock (then [`StoreError::Busy`], as SQLite's busy timeout does), and
/// times are never read in a session time zone (they are text).
fn setup_sql(backend: Backend, busy_ms: u128, durable: bool) -> String {
    match backend {
        Backend::Sqlite => format!(
            "PRAGMA busy_timeout = {busy_ms}; PRAGMA journal_mode = WAL; \
             PRAGMA synchronous = {}; PRAGMA foreign_keys = ON",
            if durable { "FULL" } else { "NORMAL" }
        ),
        Backend::Postgres => {
            format!("SET lock_timeout = {busy_ms}; SET client_min_messages = warning")
        }
    }
}

fn connect_options(location: &Location, options: &StoreOptions) -> StoreResult<AnyConnectOptions> {
    install_drivers();
    let url = match location {
        Location::File(path) => sqlite_url(path, options.create),
        Location::Postgres(url) => url.clone(),
    };
    url.parse().map_err(StoreError::from)
}

/// Opens the pool of reading connections (and the migrations' and claims' ones), each set
/// up by [`setup_sql`]. Write transactions run on [`connect_writer`]'s connection.
pub(super) async fn connect(location: &Location, options: &StoreOptions) -> StoreResult<AnyPool> {
    let connect = connect_options(location, options)?;
    let busy_ms = options.busy_timeout.as_millis();
    let durable = options.durable;
    let backend = location.backend();
    let pool = AnyPoolOptions::new()
        .max_connections(options.max_connections.max(1))
        .min_connections(1)
        .acquire_timeout(options.busy_timeout + Duration::from_secs(5))
        .after_connect(move |conn, _meta| {
            Box::pin(async move {
                conn.execute(sqlx::AssertSqlSafe(setup_sql(backend, busy_ms, durable)))
                    .await?;
                Ok(())
            })
        })
        .connect_with(connect)
        .await?;
    Ok(pool)
}

/// Opens this process's writer connection, outside the pool: every write transaction runs
/// on it, one at a time, so its prepared statements stay cached and no write waits for a
/// pooled connection. On SQLite its busy timeout is 0: [`Store::write`](super::Store)
/// retries `BEGIN IMMEDIATE` itself, every 200 µs at first, up to the store's busy timeout,
/// where SQLite's own handler would sleep in growing steps (1, 2, 5, … 100 ms) and miss
/// the short gaps between another process's back-to-back commits.
pub(super) async fn connect_writer(
    location: &Location,
    options: &StoreOptions,
) -> StoreResult<AnyConnection> {
    let connect = connect_options(location, options)?;
    let backend = location.backend();
    let busy_ms = match backend {
        Backend::Sqlite => 0,
        Backend::Postgres => options.busy_timeout.as_millis(),
    };
    let mut conn = AnyConnection::connect_with(&connect).await?;
    conn.execute(sqlx::AssertSqlSafe(setup_sql(
        backend,
        busy_ms,
        options.durable,
    )))
    .await?;
    Ok(conn)
}

/// The typed error for a failed statement. A PostgreSQL error carries a five-character
/// SQLSTATE, a SQLite one its numeric (extended) result code.
pub(super) fn classify(location: &Location, e: sqlx::Error) -> StoreError {
    if let sqlx::Error::Database(db) = &e
        && let Some(code) = db.code()
    {
        match location {
            Location::File(path) => {
                let code = code.parse::<i32>().unwrap_or(0);
                match code & 0xff {
                    13 => return StoreError::DiskFull(path.clone()),
                    8 => return StoreError::ReadOnly(path.clone()),
                    _ => {}
                }
            }
            Location::Postgres(_) => {
                let path = PathBuf::from(location.to_string());
                match &*code {
                    "53100" => return StoreError::DiskFull(path),
                    "25006" => return StoreError::ReadOnly(path),
                    _ => {}
                }
            }
        }
    }
    StoreError::from(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_postgres_and_anything_else_a_file() {
        assert_eq!(
            Location::parse("postgres://u@h/db").backend(),
            Backend::Postgres
        );
        assert_eq!(
            Location::parse("postgresql://h/db").backend(),
            Backend::Postgres
        );
        assert_eq!(Location::parse("./supervise.db").backend(), Backend::Sqlite);
        assert_eq!(
            Location::parse("postgres.db"),
            Location::File("postgres.db".into())
        );
    }

    #[test]
    fn a_password_is_never_shown() {
        let l = Location::parse("postgres://sv:hunter2@db.internal:5432/supervise?sslmode=require");
        assert_eq!(
            l.to_string(),
            "postgres://sv:***@db.internal:5432/supervise?sslmode=require"
        );
        assert_eq!(
            Location::parse("postgres://sv@h/db").to_string(),
            "postgres://sv@h/db"
        );
        assert_eq!(
            Location::parse("postgres://sv@h/db?sslmode=require&password=hunter2").to_string(),
            "postgres://sv@h/db?sslmode=require&password=***"
        );
    }

    #[test]
    fn a_password_in_a_url_is_recognised() {
        for url in [
            "postgres://sv:hunter2@h/db",
            "postgresql://sv:@h/db",
            "postgres://sv@h/db?password=hunter2",
            "postgres://h/db?sslmode=require&PASSWORD=x",
        ] {
            assert!(Location::parse(url).has_password(), "{url}");
        }
        for location in [
            "postgres://sv@h/db",
            "postgres://h/db?sslmode=require",
            "/srv/a:b@c.db",
        ] {
            assert!(!Location::parse(location).has_password(), "{location}");
        }
    }

    #[test]
    fn the_write_lock_statement_names_the_key() {
        assert!(
            Backend::Postgres
                .begin_write()
                .ends_with(&format!("({WRITE_LOCK_KEY})"))
        );
    }

    #[test]
    fn a_path_becomes_a_url_sqlite_reads_back() {
        assert_eq!(
            sqlite_url(Path::new("/a b/../x?.db"), true),
            "sqlite:%2Fa%20b%2F..%2Fx%3F.db?mode=rwc"
        );
        let url: AnyConnectOptions = sqlite_url(Path::new("d/../x?.db"), false).parse().unwrap();
        assert_eq!(url.database_url.as_str(), "sqlite:d%2F..%2Fx%3F.db?mode=rw");
    }
}
