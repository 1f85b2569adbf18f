//! The store's one error type: every refusal is typed, and no message leaks SQL.

use std::path::PathBuf;

use crate::model::{Actor, BottleId, EndReason, SignInRefusal, Status, Timestamp};

/// Result alias for store operations.
pub type StoreResult<T> = Result<T, StoreError>;

/// Why a store operation did not happen. Nothing was changed when one is returned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A field of a change, a slug, an address or a duration is not acceptable.
    #[error("invalid {field}: {message}")]
    Invalid { field: String, message: String },
    /// No proposal has this id (or it belongs to another bottle).
    #[error("no proposal with id {0}")]
    ProposalNotFound(String),
    /// A proposal id prefix matches more than one proposal.
    #[error("proposal id prefix {0} matches more than one proposal; give more of the id")]
    AmbiguousId(String),
    /// The proposal is not pending, so it cannot be decided or withdrawn.
    #[error("proposal {id} is already {status}{}", by_when(.decided_by, .decided_at))]
    NotPending {
        id: String,
        status: Status,
        decided_by: Option<String>,
        decided_at: Option<Timestamp>,
    },
    /// The operator's approval of this change is already counted toward the proposal's
    /// quorum; nothing was counted again.
    #[error(
        "operator {operator} already approved proposal {id} ({given} of {needed} approvals); \
         another operator must approve it"
    )]
    AlreadyApproved {
        id: String,
        operator: String,
        given: u32,
        needed: u32,
    },
    /// No live bottle has this slug.
    #[error("no bottle named {0}")]
    BottleNotFound(String),
    /// A bottle named by its slug alone when live bottles of several hosts have it.
    #[error("bottles of several hosts are named {slug} ({hosts}); name one as HOST/SLUG")]
    AmbiguousBottle { slug: String, hosts: String },
    /// A live bottle already has this slug.
    #[error("a bottle named {0} already exists")]
    BottleExists(String),
    /// The address is registered to another live bottle.
    #[error("address {ip} already belongs to bottle {slug}")]
    IpTaken { ip: String, slug: String },
    /// No grant has this id.
    #[error("no grant with id {0}")]
    GrantNotFound(String),
    /// The grant has already ended.
    #[error("grant {id} already ended ({reason} at {at})")]
    GrantEnded {
        id: String,
        reason: EndReason,
        at: Timestamp,
    },
    /// The bottle has as many undecided proposals as it may have.
    #[error(
        "bottle {slug} already has {limit} undecided proposals; wait for them to be decided, \
         or check them with check-proposal, before proposing more"
    )]
    PendingCapReached { slug: String, limit: u32 },
    /// Read commands never create a database.
    #[error("no supervise database at {}", .0.display())]
    Missing(PathBuf),
    /// The file exists but is not a supervise database; it was not touched.
    #[error("{} is not a supervise database (left untouched)", .0.display())]
    NotSupervise(PathBuf),
    /// The database was written by a newer supervise.
    #[error(
        "the database schema (version {found}) is newer than this build knows ({known}); upgrade supervise"
    )]
    SchemaTooNew { found: i64, known: i64 },
    /// Another process held the write lock past the busy timeout. Retry later.
    #[error("the database is busy (another process holds the write lock); try again")]
    Busy,
    /// A stored row holds something this build cannot read (a hand edit, a bad restore): the
    /// table and the row's id say where to look. Nothing is guessed in its place.
    #[error("the {table} row {id} is corrupt ({what}); repair or remove it with sqlite3 (or psql)")]
    Corrupt {
        table: &'static str,
        id: String,
        what: String,
    },
    // The file itself: where it is, who may write it, whether it is still the one open.
    /// The database path is a symbolic link: supervise never creates or opens a database
    /// through one (another user may have planted it).
    #[error(
        "{} is a symbolic link; supervise never opens a database through one: remove the \
         link, or give the real file's path with --db",
        .0.display()
    )]
    Symlink(PathBuf),
    /// The file, or its directory, can be written by users outside its owner and group.
    #[error(
        "{} can be written by users outside its owner and group, so any local user could \
         change the decisions in it; fix: chmod o-w {}",
        .0.display(),
        .0.display()
    )]
    WorldWritable(PathBuf),
    /// The path no longer names the file this store opened (deleted, or replaced by another
    /// file). Nothing written now would survive a restart, so nothing is acknowledged.
    #[error(
        "the database file at {} was deleted or replaced while open; nothing more is \
         written to it: restore it or restart the server to open the file now at that path",
        .0.display()
    )]
    FileReplaced(PathBuf),
    /// The file (or its file system) cannot be written by this process.
    #[error(
        "the database {} is read-only for this process; make it writable (e.g. chmod u+w, \
         or g+w for a shared database) and try again",
        .0.display()
    )]
    ReadOnly(PathBuf),
    /// The disk holding the database is full.
    #[error("the disk holding the database {} is full; free some space and try again", .0.display())]
    DiskFull(PathBuf),
    /// Another `supervise-server` already serves this database on this host.
    #[error(
        "the database {} is already served by another supervise-server on this host{}; \
         stop that one first, or give this one another --db",
        .path.display(),
        .pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
    )]
    AlreadyServed { path: PathBuf, pid: Option<u32> },
    /// A live operator already has this name.
    #[error("an operator named {0} already exists")]
    OperatorExists(String),
    /// No live operator has this name.
    #[error("no operator named {0}")]
    OperatorNotFound(String),
    /// The actor's role does not include this action. Nothing was changed.
    #[error("operator {operator} may not {action}")]
    Forbidden {
        operator: String,
        action: &'static str,
    },
    /// A sign-in link was not accepted; no session was started.
    #[error("sign-in refused: {0}")]
    SignInRefused(SignInRefusal),
    /// Any other database failure.
    #[error("database error: {0}")]
    Database(String),
    /// `backup` never writes over a file.
    #[error("{} already exists; give a new path (a backup never overwrites a file)", .0.display())]
    BackupExists(PathBuf),
    /// `backup` copies SQLite files only.
    #[error(
        "backup copies a SQLite database; for PostgreSQL use pg_dump \
         (e.g. pg_dump --format=custom --file=supervise.dump DBNAME; see docs/RELIABILITY.md)"
    )]
    BackupPostgres,
    /// The caller's bottle generation was removed (its address may belong to a new bottle
    /// now): nothing of the old generation is served to it. Look the address up again.
    #[error("bottle #{0} has been removed; its address may now belong to another bottle")]
    BottleGone(BottleId),
    /// `audit archive` refused, or its file could not be written or read.
    #[error("archive: {0}")]
    Archive(String),
}

fn by_when(by: &Option<String>, at: &Option<Timestamp>) -> String {
    match (by, at) {
        (Some(by), Some(at)) => format!(" (by {by} at {at})"),
        (None, Some(at)) => format!(" (at {at})"),
        _ => String::new(),
    }
}

impl StoreError {
    /// The refusal of an act the actor's role does not allow.
    pub(crate) fn forbidden(by: &Actor, action: &'static str) -> StoreError {
        StoreError::Forbidden {
            operator: by.name.clone(),
            action,
        }
    }

    /// Whether retrying the same call later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Busy)
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        match &err {
            sqlx::Error::Database(db) => {
                let code = db.code().unwrap_or_default();
                // PostgreSQL's SQLSTATE is five characters: lock_not_available (the write
                // lock's wait hit `lock_timeout`), deadlock, serialization failure.
                let pg_busy = matches!(&*code, "55P03" | "40P01" | "40001");
                // SQLite's code is a number: SQLITE_BUSY (5) and its extended codes,
                // SQLITE_LOCKED (6).
                let sqlite = if code.len() == 5 {
                    0
                } else {
                    code.parse::<i32>().unwrap_or(0)
                };
                if pg_busy || sqlite & 0xff == 5 || sqlite & 0xff == 6 {
                    StoreError::Busy
                } else {
                    StoreError::Database(db.message().to_string())
                }
            }
            sqlx::Error::PoolTimedOut => StoreError::Busy,
            other => StoreError::Database(other.to_string()),
        }
    }
}

impl From<sqlx::migrate::MigrateError> for StoreError {
    fn from(err: sqlx::migrate::MigrateError) -> Self {
        StoreError::Database(format!("migration failed: {err}"))
    }
}
