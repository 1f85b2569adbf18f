//! The [`Store`]: its options, its pool, and the one place a write transaction begins.
//! Writes begin with `BEGIN IMMEDIATE` (in [`Store::write`]), so the write lock is held from
//! the first read, and a second process (the CLI) can never interleave between a check and
//! its update. The methods live with their aggregate in the submodules: [`schema`] opens and
//! migrates the file, [`rows`] decodes rows, [`trail`] appends events, [`feed`] reads them,
//! and [`bottles`], [`proposals`], [`decisions`] and [`grants`] change and read the rest.

mod bottles;
mod decisions;
mod feed;
mod grants;
mod proposals;
mod rows;
mod schema;
mod trail;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use sqlx::{Sqlite, Transaction};
use tokio::sync::{Mutex, MutexGuard};
use tracing::instrument;

use crate::error::{StoreError, StoreResult};

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
    writer: Mutex<()>,
    limits: ProposalLimits,
    path: PathBuf,
}

/// A write transaction: this process's writer slot plus `BEGIN IMMEDIATE`.
struct WriteTx<'a> {
    tx: Transaction<'static, Sqlite>,
    _slot: MutexGuard<'a, ()>,
}

impl WriteTx<'_> {
    fn conn(&mut self) -> &mut SqliteConnection {
        &mut self.tx
    }

    async fn commit(self) -> StoreResult<()> {
        self.tx.commit().await?;
        Ok(())
    }
}

impl Store {
    /// Opens (and, with `options.create`, creates) the database at `path`, checks that it is
    /// a supervise database no newer than this build, and migrates it.
    #[instrument(skip_all, fields(path = %path.as_ref().display()), err)]
    pub async fn open(path: impl AsRef<Path>, options: StoreOptions) -> StoreResult<Store> {
        let path = path.as_ref().to_path_buf();
        let exists = path.exists();
        if !exists && !options.create {
            return Err(StoreError::Missing(path));
        }
        if exists {
            schema::probe(&path).await?;
        } else {
            schema::create_private(&path)?;
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
        Ok(Store {
            inner: Arc::new(Inner {
                pool,
                writer: Mutex::new(()),
                limits: options.limits,
                path,
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
        let slot = self.inner.writer.lock().await;
        let tx = self.inner.pool.begin_with("BEGIN IMMEDIATE").await?;
        Ok(WriteTx { tx, _slot: slot })
    }

    /// Answers when the database does: for `/healthz`.
    pub async fn health(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1").execute(&self.inner.pool).await?;
        Ok(())
    }
}
