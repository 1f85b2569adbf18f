//! The [`Store`]: its options, its pool, and the one place a write transaction begins.
//! Writes begin with `BEGIN IMMEDIATE` (in [`Store::write`]), so the write lock is held from
//! the first read, and a second process (the CLI) can never interleave between a check and
//! its update. The methods live with their aggregate in the submodules: [`file`] checks and creates
//! the file and claims it for a server, [`schema`] probes and migrates it, [`rows`] decodes rows, [`trail`] appends events, [`feed`] reads them,
//! and [`bottles`], [`proposals`], [`decisions`] and [`grants`] change and read the rest;
//! [`gate`] is the git gate's one question, covered or filed, and [`egress`] the one egress
//! decision ("may this bottle reach HOST:PORT now?"); [`operators`] manages console
//! operators and [`sessions`] signs them in.

mod bottles;
mod decisions;
mod egress;
mod feed;
mod file;
mod gate;
mod grants;
mod operators;
mod proposals;
mod rows;
mod schema;
mod sessions;
mod task_rows;
mod tasks;
mod trail;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sqlx::Sqlite;
use sqlx::pool::PoolConnection;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use tokio::sync::{Mutex, OwnedMutexGuard};
use tracing::instrument;

use crate::error::{StoreError, StoreResult};

pub use sessions::{SESSION_IDLE, SESSION_MAX, SIGN_IN_LINK_TTL};

/// Limits that shape what `propose` accepts. The server sets them from its flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProposalLimits {
    /// How long an undecided proposal lives (`None`: forever).
    pub proposal_ttl: Option<Duration>,
    /// An identical change rejected this recently is answered `rejected` at once.
    pub reject_cooldown: Option<Duration>,
    /// Undecided proposals one bottle may have (`None`: no cap).
    pub max_pending_per_bottle: Option<u32>,
}

impl Default for ProposalLimits {
    fn default() -> Self {
        ProposalLimits {
            proposal_ttl: Some(Duration::from_secs(24 * 3600)),
            reject_cooldown: Some(Duration::from_secs(600)),
            max_pending_per_bottle: Some(64),
        }
    }
}

/// How to open the database.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Create (and migrate) the file when missing. Read commands leave this off.
    pub create: bool,
    /// `synchronous=FULL` (true, the default) or `NORMAL` (a crash may lose the last
    /// commits, never corrupt).
    pub durable: bool,
    /// How long a write waits for another process's write lock before `Busy`.
    pub busy_timeout: Duration,
    /// Connections in the pool (readers run in parallel; writers are serialised).
    pub max_connections: u32,
    pub limits: ProposalLimits,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            create: true,
            durable: true,
            busy_timeout: Duration::from_secs(5),
            max_connections: 8,
            limits: ProposalLimits::default(),
        }
    }
}

/// The supervise database. Cheap to clone; clones share one pool.
#[derive(Clone, Debug)]
pub struct Store {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    pool: SqlitePool,
    /// Serialises this process's writers, so they queue here in order instead of spinning
    /// in SQLite's busy handler; other processes are kept out by `BEGIN IMMEDIATE`.
    writer: Arc<Mutex<()>>,
    limits: ProposalLimits,
    path: PathBuf,
    /// The file `path` named when the pool opened it.
    identity: file::Identity,
    /// Set once the path is seen to name another file (or none), so that is logged once.
    replaced: AtomicBool,
    last_write: std::sync::Mutex<Option<WriteFailure>>,
}

/// A write transaction: this process's writer slot plus `BEGIN IMMEDIATE` on a connection
/// of its own. The transaction is ours, not sqlx's: sqlx counts transaction depth per
/// connection, and a COMMIT or ROLLBACK that fails (a full disk) left that count at 1, so
/// the connection refused every later `BEGIN` while the pool kept handing it out. Here a
/// failed COMMIT closes the connection, and one dropped without COMMIT is rolled back before
/// the writer slot is released; if that ROLLBACK fails too, the connection is closed.
struct WriteTx<'a> {
    store: &'a Store,
    conn: Option<PoolConnection<Sqlite>>,
    /// Owned, so a dropped transaction's rollback (a spawned task) keeps the slot until it
    /// is done and the next writer never meets this one's lock in SQLite's busy handler.
    slot: Option<OwnedMutexGuard<()>>,
}

impl WriteTx<'_> {
    fn conn(&mut self) -> &mut SqliteConnection {
        self.conn
            .as_mut()
            .expect("a write transaction has its connection until it ends")
    }

    /// Commits, unless the path no longer names the file open (then nothing is
    /// acknowledged: a proposal filed into an unlinked file is gone at the next start).
    async fn commit(mut self) -> StoreResult<()> {
        self.store.check_identity()?;
        let result = sqlx::query("COMMIT").execute(self.conn()).await;
        let mut conn = self.conn.take().expect("not yet committed");
        match result {
            Ok(_) => {
                self.store.record_write(None);
                drop(conn);
                Ok(())
            }
            Err(e) => {
                let err = self.store.classify(e);
                self.store.record_write(Some(&err));
                // SQLite may or may not have rolled back already; either way this
                // connection's state is not trusted again.
                let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
                let _ = conn.close().await;
                Err(err)
            }
        }
    }
}

impl Drop for WriteTx<'_> {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        let slot = self.slot.take();
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move {
                    if sqlx::query("ROLLBACK").execute(&mut *conn).await.is_err() {
                        let _ = conn.close().await;
                    }
                    drop(slot);
                });
            }
            // No runtime left to roll back on: closing the connection rolls back.
            Err(_) => drop(conn.detach()),
        }
    }
}

/// Why the last write transaction failed, for [`Store::health`] until one succeeds.
#[derive(Debug, Clone)]
enum WriteFailure {
    DiskFull,
    ReadOnly,
    Other(String),
}

impl Store {
    /// Opens (and, with `options.create`, creates) the database at `path`, checks that it is
    /// a supervise database no newer than this build, and migrates it.
    #[instrument(skip_all, fields(path = %path.as_ref().display()), err)]
    pub async fn open(path: impl AsRef<Path>, options: StoreOptions) -> StoreResult<Store> {
        let path = path.as_ref().to_path_buf();
        if let file::Found::Existing { .. } = file::prepare(&path, options.create)? {
            schema::probe(&path).await?;
        }
        let connect = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(options.create)
            .journal_mode(SqliteJournalMode::Wal)
            .foreign_keys(true)
            .busy_timeout(options.busy_timeout)
            .synchronous(if options.durable {
                SqliteSynchronous::Full
            } else {
                SqliteSynchronous::Normal
            });
        let pool = SqlitePoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .min_connections(1)
            .acquire_timeout(options.busy_timeout + Duration::from_secs(5))
            .connect_with(connect)
            .await?;
        schema::migrate(&pool).await?;
        let identity =
            file::Identity::of(&path).map_err(|_| StoreError::FileReplaced(path.clone()))?;
        Ok(Store {
            inner: Arc::new(Inner {
                pool,
                writer: Arc::new(Mutex::new(())),
                limits: options.limits,
                path,
                identity,
                replaced: AtomicBool::new(false),
                last_write: std::sync::Mutex::new(None),
            }),
        })
    }

    /// The file this store was opened on.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The limits `propose` applies.
    pub fn limits(&self) -> ProposalLimits {
        self.inner.limits
    }

    /// Closes the pool, checkpointing the WAL.
    pub async fn close(&self) {
        self.inner.pool.close().await;
    }

    /// Begins a write transaction: every write method goes through here, and this is the
    /// only place that says `BEGIN IMMEDIATE`.
    async fn write(&self) -> StoreResult<WriteTx<'_>> {
        let slot = self.inner.writer.clone().lock_owned().await;
        let mut conn = self.inner.pool.acquire().await?;
        if let Err(e) = sqlx::query("BEGIN IMMEDIATE").execute(&mut *conn).await {
            let err = self.classify(e);
            if !matches!(err, StoreError::Busy) {
                // Busy means no transaction began; anything else, trust nothing.
                self.record_write(Some(&err));
                let _ = conn.close().await;
            }
            return Err(err);
        }
        Ok(WriteTx {
            store: self,
            conn: Some(conn),
            slot: Some(slot),
        })
    }

    /// Whether the database can take writes now, and if not why: the path no longer names
    /// the file open, the file or its file system is read-only, the last write failed (a
    /// full disk) and none has succeeded since, or the database does not answer.
    pub async fn health(&self) -> StoreResult<()> {
        self.check_identity()?;
        file::writable(&self.inner.path)?;
        let last = self.inner.last_write.lock().expect("not poisoned").clone();
        // Less room than a few WAL frames: the next commit would fail, whatever the last did.
        let full_now = file::statvfs(&self.inner.path).is_some_and(|s| s.free < 64 * 1024);
        match last {
            _ if full_now => return Err(StoreError::DiskFull(self.inner.path.clone())),
            None => {}
            Some(WriteFailure::DiskFull) => {
                return Err(StoreError::DiskFull(self.inner.path.clone()));
            }
            Some(WriteFailure::ReadOnly) => {
                return Err(StoreError::ReadOnly(self.inner.path.clone()));
            }
            Some(WriteFailure::Other(message)) => {
                return Err(StoreError::Database(format!(
                    "the last write failed: {message}"
                )));
            }
        }
        sqlx::query("SELECT 1").execute(&self.inner.pool).await?;
        Ok(())
    }

    /// Takes this host's claim to serve the database: an exclusive `flock` on the sidecar
    /// `<db>.server-lock` (never a descriptor on the database itself: closing one would
    /// drop this process's SQLite locks). Held until the claim is dropped or the process
    /// ends, however it ends. A second claim on the same file, from any process, is
    /// refused with [`StoreError::AlreadyServed`]. Only the server claims; the CLI does not.
    pub fn claim_server(&self) -> StoreResult<ServerClaim> {
        Ok(ServerClaim {
            _lock: file::claim(&self.inner.path)?,
        })
    }

    /// Refuses once the path no longer names the file this store opened (one `stat`).
    fn check_identity(&self) -> StoreResult<()> {
        let path = &self.inner.path;
        let replaced = match file::Identity::of(path) {
            Ok(now) => now != self.inner.identity,
            // A path that cannot be looked at (its directory lost its x bit) is no evidence
            // of a replacement; the write itself will say what is wrong.
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        };
        if !replaced {
            return Ok(());
        }
        if !self.inner.replaced.swap(true, Ordering::Relaxed) {
            tracing::error!(
                path = %path.display(),
                "the database file was deleted or replaced while open; refusing every write \
                 until the server is restarted"
            );
        }
        Err(StoreError::FileReplaced(path.clone()))
    }

    /// The typed error for a failed statement, naming this store's file.
    fn classify(&self, e: sqlx::Error) -> StoreError {
        if let sqlx::Error::Database(db) = &e {
            let code = db.code().and_then(|c| c.parse::<i32>().ok()).unwrap_or(0);
            match code & 0xff {
                13 => return StoreError::DiskFull(self.inner.path.clone()),
                8 => return StoreError::ReadOnly(self.inner.path.clone()),
                _ => {}
            }
        }
        StoreError::from(e)
    }

    /// Remembers how the last write transaction ended, for `health`.
    fn record_write(&self, failure: Option<&StoreError>) {
        let failure = failure.and_then(|e| match e {
            StoreError::DiskFull(_) => Some(WriteFailure::DiskFull),
            StoreError::ReadOnly(_) => Some(WriteFailure::ReadOnly),
            StoreError::Busy | StoreError::FileReplaced(_) => None,
            other => Some(WriteFailure::Other(other.to_string())),
        });
        *self.inner.last_write.lock().expect("not poisoned") = failure;
    }
}

/// This process's claim to serve a database ([`Store::claim_server`]); dropping it lets
/// another server start.
#[derive(Debug)]
pub struct ServerClaim {
    _lock: std::fs::File,
}
