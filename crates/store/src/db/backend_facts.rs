//! What `supervise doctor` checks about a PostgreSQL server and the role a URL connects as:
//! the server's version, whether the role is a superuser, which of the schema's tables it
//! lacks a privilege on, and whether it owns them (migrations alter them). Read on a
//! connection of its own, without migrating, so a role that cannot open the store is still
//! described.

use sqlx::{Connection, PgConnection};

use super::{Location, Store};
use crate::error::StoreResult;

/// The oldest PostgreSQL the store supports (`server_version_num` form: 15.0).
pub const MIN_POSTGRES_VERSION: i32 = 150_000;

/// The privileges the store uses on every table of its schema: it reads, appends, updates
/// (decisions, grants, sessions) and deletes (archiving, expired links).
pub const TABLE_PRIVILEGES: [&str; 4] = ["SELECT", "INSERT", "UPDATE", "DELETE"];

/// A PostgreSQL server and the role the URL connects as, as the server reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendFacts {
    /// `server_version` (e.g. `15.10 (Debian 15.10-0+deb12u1)`).
    pub version: String,
    /// `server_version_num` (e.g. `150010`).
    pub version_num: i32,
    /// `current_user`.
    pub role: String,
    /// The role is a superuser: it bypasses every privilege and row check.
    pub superuser: bool,
    /// `current_database()`.
    pub database: String,
    /// The schema the tables are found in (`current_schema()`).
    pub schema: String,
    /// How many tables that schema holds.
    pub tables: usize,
    /// Each table the role lacks one of [`TABLE_PRIVILEGES`] on, with the ones it lacks.
    pub missing: Vec<(String, Vec<String>)>,
    /// Tables another role owns: migrations (which alter them) need the owner.
    pub not_owned: Vec<String>,
}

impl BackendFacts {
    /// The version as `MAJOR.MINOR` from `server_version_num`.
    pub fn major_minor(&self) -> String {
        format!(
            "{}.{}",
            self.version_num / 10_000,
            self.version_num % 10_000
        )
    }
}

impl Store {
    /// The facts of the PostgreSQL server and role `location` names; `None` for a SQLite
    /// file. Connects once, reads only catalogues and `has_table_privilege`.
    pub async fn backend_facts(location: &Location) -> StoreResult<Option<BackendFacts>> {
        let Location::Postgres(url) = location else {
            return Ok(None);
        };
        let mut conn = PgConnection::connect(url).await?;
        let facts = read(&mut conn).await;
        let _ = conn.close().await;
        facts.map(Some)
    }
}

async fn read(conn: &mut PgConnection) -> StoreResult<BackendFacts> {
    type Row = (String, String, String, bool, String, String);
    let (version, version_num, role, superuser, database, schema): Row = sqlx::query_as(
        "SELECT current_setting('server_version'), current_setting('server_version_num'), \
         current_user::text, (SELECT rolsuper FROM pg_roles WHERE rolname = current_user), \
         current_database()::text, coalesce(current_schema()::text, '')",
    )
    .fetch_one(&mut *conn)
    .await?;
    let rows: Vec<(String, bool, bool, bool, bool, bool)> = sqlx::query_as(
        "SELECT c.relname::text, \
         has_table_privilege(c.oid, 'SELECT'), has_table_privilege(c.oid, 'INSERT'), \
         has_table_privilege(c.oid, 'UPDATE'), has_table_privilege(c.oid, 'DELETE'), \
         pg_has_role(c.relowner, 'USAGE') \
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') ORDER BY c.relname",
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut missing = Vec::new();
    let mut not_owned = Vec::new();
    for (table, select, insert, update, delete, owner) in &rows {
        let lacks: Vec<String> = TABLE_PRIVILEGES
            .iter()
            .zip([select, insert, update, delete])
            .filter(|(_, has)| !**has)
            .map(|(p, _)| (*p).to_string())
            .collect();
        if !lacks.is_empty() {
            missing.push((table.clone(), lacks));
        }
        if !owner {
            not_owned.push(table.clone());
        }
    }
    Ok(BackendFacts {
        version,
        version_num: version_num.parse().unwrap_or(0),
        role,
        superuser,
        database,
        schema,
        tables: rows.len(),
        missing,
        not_owned,
    })
}
