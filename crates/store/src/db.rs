//! The [`Store`]: its options, its pool, and the one place a write transaction begins.
//! Writes take the write lock up front (in [`Store::write`]: `BEGIN IMMEDIATE` on SQLite,
//! `BEGIN` and one transaction-scoped advisory lock on PostgreSQL), so it is held from the
//! first read, and a second process (the CLI, another host's server) can never interleave
//! between a check and its update. [`backend`] is what differs between the two engines;
//! the methods live with their aggregate in the submodules: [`file`] checks and creates
//! a SQLite file and claims it for a server, [`schema`] probes and migrates it, [`rows`] decodes rows, [`trail`] appends events, [`feed`] reads them, [`follow`] follows them,
//! and [`bottles`], [`proposals`], [`decisions`] and [`grants`] change and read the rest;
//! [`gate`] is the git gate's one question, covered or filed, and [`egress`] the one egress
//! decision ("may this bottle reach HOST:PORT now?"); [`operators`] manages console
//! operators and [`sessions`] signs them in.

mod allowed;
mod archive;
mod audit_filter;
mod backend;
mod backend_facts;
mod backup;
mod bottles;
mod chain;
mod changes;
mod context;
mod decisions;
mod diffs;
mod egress;
mod egress_memo;
mod feed;
mod file;
mod follow;
mod fresh;
mod gate;
mod gate_installs;
mod grants;
mod host_settings;
mod multirow;
mod operators;
mod pg;
mod proposals;
mod queue;
mod quorum;
mod records;
mod rows;
mod rules;
mod schema;
mod secrets;
mod sessions;
mod sqlite_read;
mod task_rows;
mod tasks;
mod trail;
mod verify;
mod verify_sqlite;
mod verify_trail;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sqlx::{Any, AnyConnection, AnyPool, Connection};
use tokio::sync::{Mutex, OwnedMutexGuard};
use tracing::instrument;

pub use archive::{ARCHIVE_VERSION, ArchiveCheck, Archived, verify_archive};
pub use audit_filter::{AuditFilter, EVENT_SCHEMA_VERSION};
pub use backend::{Backend, Location};
pub use backend_facts::{BackendFacts, MIN_POSTGRES_VERSION, TABLE_PRIVILEGES};
pub use changes::Changes;
pub use context::{
    CONTEXT_DECISIONS, EgressContext, REFUSAL_EVERY, RESOLVE_LIMIT, Refusals, Resolution,
    egress_destination, resolve,
};
pub use egress::EgressLookups;
pub use follow::{Follow, Woken};
pub use gate_installs::GateInstall;
pub use queue::PendingGroup;
pub use rules::{InForce, RulesVersion, actor_rule, rules_sha256};
pub use verify::{Checkpoint, TrailBreak, TrailCheck};

use crate::error::{StoreError, StoreResult};

pub use secrets::{SESSION_IDLE, SESSION_MAX, SIGN_IN_LINK_TTL};

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
    /// Create (and migrate) the file when missing, or migrate an empty PostgreSQL
    /// database. Read commands leave this off.
    pub create: bool,
    /// `synchronous=FULL` (true, the default) or `NORMAL` (a crash may lose the last
    /// commits, never corrupt).
    pub durable: bool,
    /// How long a write waits for another process's write lock before `Busy` (SQLite's busy
    /// timeout; PostgreSQL's `lock_timeout`).
    pub busy_timeout: Duration,
    /// Connections in the pool (readers run in parallel; writers are serialised).
    pub max_connections: u32,
    pub limits: ProposalLimits,
    /// The host id (`--host-id`): bottles belong to a host, and this store registers,
    /// attributes and claims only its own host's. `None`: on PostgreSQL the machine's
    /// hostname; on SQLite the host the file records (`meta.host`: whoever first opened
    /// it, so a renamed machine or a container with a random hostname keeps its bottles).
    pub host: Option<String>,
    /// Apply the reject cooldown this host's server recorded at its start
    /// (`host_settings`, read in each filing transaction) instead of
    /// `limits.reject_cooldown`, which then holds only while no server of this host has
    /// recorded one: the CLI's processes (the proxy's helpers, the gate) set it, so they
    /// hold back re-filing exactly as long as the server does. The server leaves it off
    /// and records its own ([`Store::record_limits`]).
    pub server_limits: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            create: true,
            durable: true,
            busy_timeout: Duration::from_secs(5),
            max_connections: 8,
            limits: ProposalLimits::default(),
            host: None,
            server_limits: false,
        }
    }
}

/// This machine's hostname, the default host id.
pub fn default_host() -> String {
    let name = rustix::system::uname();
    let name = name.nodename().to_string_lossy();
    if name.is_empty() {
        "localhost".into()
    } else {
        name.into_owned()
    }
}

/// The supervise database. Cheap to clone; clones share one pool.
#[derive(Clone, Debug)]
pub struct Store {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    pool: AnyPool,
    /// This process's writer connection, behind the mutex that serialises its writers, so
    /// they queue here in order instead of retrying for SQLite's write lock or queueing on
    /// the advisory lock; other processes are kept out by the write lock itself. `None`
    /// until the first write, and again after a connection is given up on.
    writer: Arc<Mutex<Option<AnyConnection>>>,
    /// What the writer connection is opened with, and the busy timeout a write waits.
    options: StoreOptions,
    limits: ProposalLimits,
    host: String,
    location: Location,
    /// The location as given, for [`Store::path`].
    path: PathBuf,
    /// The file `path` named when the pool opened it (SQLite only: a server has no inode).
    identity: Option<file::Identity>,
    /// Set once the path is seen to name another file (or none), so that is logged once.
    replaced: AtomicBool,
    last_write: std::sync::Mutex<Option<WriteFailure>>,
    /// The version a poll reads (SQLite's data version, PostgreSQL's snapshot) and the
    /// pending polls answered at it ([`fresh`]).
    fresh: Option<fresh::Fresh>,
    /// The newest rules version read, and the rules it holds (`db/rules.rs`).
    rules: std::sync::Mutex<Option<(i64, Option<Arc<rules::InForce>>)>>,
    /// Bottles' egress state at the version `fresh` read ([`egress_memo`]).
    egress_memo: egress_memo::Memo,
    /// Told how long each committed write took ([`Store::observe_writes`]).
    write_observer: std::sync::OnceLock<WriteObserver>,
}

/// A function told the duration of every committed write transaction, from asking for the
/// write lock to the end of its COMMIT (queueing behind this process's other writers
/// included): the server's metrics keep a histogram of it. The store itself keeps none.
#[derive(Clone)]
pub struct WriteObserver(Arc<dyn Fn(Duration) + Send + Sync>);

impl WriteObserver {
    /// Wraps `f`, which runs on the writer's task right after each commit: keep it cheap.
    pub fn new(f: impl Fn(Duration) + Send + Sync + 'static) -> WriteObserver {
        WriteObserver(Arc::new(f))
    }
}

impl std::fmt::Debug for WriteObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WriteObserver")
    }
}

/// How long a write waits before trying a busy SQLite write lock again, by how long it has
/// waited so far. At first 200 µs: short enough to fall into the gap between another
/// process's back-to-back commits, which a 1 ms step mostly missed. A try costs about 80 µs
/// of CPU (a blocking-pool sleep and a round trip to the connection's worker), so a lock
/// held for long is tried less often: every millisecond after 20 ms, every 5 ms after
/// 200 ms. One write per process retries at a time (the writer mutex).
fn busy_retry(waited: Duration) -> Duration {
    if waited < Duration::from_millis(20) {
        Duration::from_micros(200)
    } else if waited < Duration::from_millis(200) {
        Duration::from_millis(1)
    } else {
        Duration::from_millis(5)
    }
}

/// Sleeps `d`: on the blocking pool below tokio's timer step (1 ms), else on the timer (also
/// when the blocking pool is gone, the runtime shutting down).
async fn pause(d: Duration) {
    if d >= Duration::from_millis(1)
        || tokio::task::spawn_blocking(move || std::thread::sleep(d))
            .await
            .is_err()
    {
        tokio::time::sleep(d).await;
    }
}

/// A write transaction: this process's writer slot, which holds its writer connection
/// (opened at the first write, [`backend::connect_writer`]), plus `BEGIN IMMEDIATE` on it.
/// The transaction is ours, not sqlx's: sqlx counts transaction depth per connection, and a
/// COMMIT or ROLLBACK that fails (a full disk) left that count at 1, so the connection
/// refused every later `BEGIN`. Here a failed COMMIT closes the connection (the next write
/// opens another), and one dropped without COMMIT is rolled back before the writer slot is
/// released; if that ROLLBACK fails too, the connection is closed.
struct WriteTx<'a> {
    store: &'a Store,
    /// When the write lock was asked for, for the [`WriteObserver`].
    started: std::time::Instant,
    /// Owned, so a dropped transaction's rollback (a spawned task) keeps the slot until it
    /// is done and the next writer never meets this one's lock. Always holds a connection
    /// while the transaction is open.
    slot: Option<OwnedMutexGuard<Option<AnyConnection>>>,
}

impl WriteTx<'_> {
    fn conn(&mut self) -> &mut AnyConnection {
        self.slot
            .as_mut()
            .and_then(|slot| slot.as_mut())
            .expect("a write transaction has its connection until it ends")
    }

    /// Commits, unless the path no longer names the file open (then nothing is
    /// acknowledged: a proposal filed into an unlinked file is gone at the next start).
    async fn commit(mut self) -> StoreResult<()> {
        self.store.check_identity()?;
        let result = sqlx::query("COMMIT").execute(self.conn()).await;
        let mut slot = self.slot.take().expect("not yet committed");
        match result {
            Ok(_) => {
                self.store.record_write(None);
                if let Some(observe) = self.store.inner.write_observer.get() {
                    (observe.0)(self.started.elapsed());
                }
                Ok(())
            }
            Err(e) => {
                let err = self.store.classify(e);
                self.store.record_write(Some(&err));
                // SQLite may or may not have rolled back already; either way this
                // connection's state is not trusted again.
                if let Some(mut conn) = slot.take() {
                    let _ = sqlx::query("ROLLBACK").execute(&mut conn).await;
                    let _ = conn.close().await;
                }
                Err(err)
            }
        }
    }
}

impl Drop for WriteTx<'_> {
    fn drop(&mut self) {
        let Some(mut slot) = self.slot.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move {
                    if let Some(conn) = slot.as_mut()
                        && sqlx::query("ROLLBACK").execute(&mut *conn).await.is_err()
                        && let Some(conn) = slot.take()
                    {
                        let _ = conn.close().await;
                    }
                    drop(slot);
                });
            }
            // No runtime left to roll back on: dropping the connection closes it, which
            // rolls back.
            Err(_) => drop(slot.take()),
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
    /// a supervise database no newer than this build, and migrates it. `path` is a file
    /// (SQLite) or a `postgres://` URL (PostgreSQL; the database must exist, and with
    /// `create` an empty one is given the schema), as [`Location::parse`] tells.
    #[instrument(skip_all, fields(db = %Location::parse(path.as_ref())), err)]
    pub async fn open(path: impl AsRef<Path>, options: StoreOptions) -> StoreResult<Store> {
        let path = path.as_ref().to_path_buf();
        let location = Location::parse(&path);
        match &location {
            Location::File(file) => {
                if let file::Found::Existing { .. } = file::prepare(file, options.create)? {
                    schema::probe(file).await?;
                }
            }
            Location::Postgres(url) => {
                schema::probe_postgres(&location, url, options.create).await?
            }
        }
        let pool = backend::connect(&location, &options).await?;
        schema::migrate(&pool, location.backend()).await?;
        verify::hash_older_rows(&pool, location.backend()).await?;
        let host = schema::settle_host(&pool, location.backend(), options.host.as_deref()).await?;
        let identity = match &location {
            Location::File(file) => {
                Some(file::Identity::of(file).map_err(|_| StoreError::FileReplaced(file.clone()))?)
            }
            Location::Postgres(_) => None,
        };
        let fresh = fresh::Fresh::open(&location, &pool);
        Ok(Store {
            inner: Arc::new(Inner {
                pool,
                writer: Arc::new(Mutex::new(None)),
                limits: options.limits,
                host,
                location,
                path,
                identity,
                replaced: AtomicBool::new(false),
                last_write: std::sync::Mutex::new(None),
                options,
                fresh,
                egress_memo: egress_memo::Memo::default(),
                write_observer: std::sync::OnceLock::new(),
                rules: std::sync::Mutex::new(None),
            }),
        })
    }

    /// The database as given to [`Store::open`]: a file's path, or the URL (with any
    /// password: display [`Store::location`] instead).
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Where the database is; its `Display` hides a URL's password.
    pub fn location(&self) -> &Location {
        &self.inner.location
    }

    /// Which engine the database runs on.
    pub fn backend(&self) -> Backend {
        self.inner.location.backend()
    }

    /// The limits this store was opened with (with [`StoreOptions::server_limits`], a
    /// filing applies the reject cooldown its host's server recorded instead).
    pub fn limits(&self) -> ProposalLimits {
        self.inner.limits
    }

    /// Closes the `data_version` watch, the writer connection and the pool (on SQLite, the
    /// last to close checkpoints the WAL). Waits for a write in progress to end first.
    pub async fn close(&self) {
        if let Some(fresh) = &self.inner.fresh {
            fresh.close();
        }
        if let Some(conn) = self.inner.writer.lock().await.take() {
            let _ = conn.close().await;
        }
        self.inner.pool.close().await;
    }

    /// Begins a write transaction: every write method goes through here, and this is the
    /// only place that takes the write lock ([`Backend::begin_write`]). On SQLite a busy
    /// `BEGIN IMMEDIATE` (another process holds the write lock) is tried again, every 200 µs
    /// at first ([`busy_retry`]), until the busy timeout has passed, then refused with
    /// [`StoreError::Busy`]; on PostgreSQL the lock wait is the server's own queue, bounded by
    /// `lock_timeout`.
    async fn write(&self) -> StoreResult<WriteTx<'_>> {
        let asked = std::time::Instant::now();
        let mut slot = self.inner.writer.clone().lock_owned().await;
        let started = tokio::time::Instant::now();
        let deadline = started + self.inner.options.busy_timeout;
        let begin = self.backend().begin_write();
        loop {
            if slot.is_none() {
                let conn = backend::connect_writer(&self.inner.location, &self.inner.options)
                    .await
                    .inspect_err(|e| self.record_write(Some(e)))?;
                *slot = Some(conn);
            }
            let conn = slot.as_mut().expect("opened above");
            let Err(e) = sqlx::raw_sql(begin).execute(&mut *conn).await else {
                return Ok(WriteTx {
                    store: self,
                    started: asked,
                    slot: Some(slot),
                });
            };
            let err = self.classify(e);
            let busy = matches!(err, StoreError::Busy);
            if busy && self.backend() == Backend::Sqlite {
                // No transaction began. Try again in a moment, unless time is up.
                let now = tokio::time::Instant::now();
                if now < deadline {
                    pause(busy_retry(now - started).min(deadline - now)).await;
                    continue;
                }
                return Err(err);
            }
            // PostgreSQL's Busy (the lock wait timed out) left a transaction aborted, which a
            // ROLLBACK ends. Anything else, trust nothing: the next write opens another
            // connection.
            let ended = busy && sqlx::query("ROLLBACK").execute(&mut *conn).await.is_ok();
            if !ended {
                if !busy {
                    self.record_write(Some(&err));
                }
                if let Some(conn) = slot.take() {
                    let _ = conn.close().await;
                }
            }
            return Err(err);
        }
    }

    /// Whether the database can take writes now, and if not why: the path no longer names
    /// the file open, the file or its file system is read-only, the last write failed (a
    /// full disk) and none has succeeded since, or the database does not answer. The file
    /// checks are SQLite's; on PostgreSQL the server answers for its own disk.
    pub async fn health(&self) -> StoreResult<()> {
        self.check_identity()?;
        let shown = self.shown_path();
        let mut full_now = false;
        if let Location::File(path) = &self.inner.location {
            file::writable(path)?;
            // Less room than a few WAL frames: the next commit would fail, whatever the last did.
            full_now = file::statvfs(path).is_some_and(|s| s.free < 64 * 1024);
        }
        let last = self.inner.last_write.lock().expect("not poisoned").clone();
        match last {
            _ if full_now => return Err(StoreError::DiskFull(shown)),
            None => {}
            Some(WriteFailure::DiskFull) => return Err(StoreError::DiskFull(shown)),
            Some(WriteFailure::ReadOnly) => return Err(StoreError::ReadOnly(shown)),
            Some(WriteFailure::Other(message)) => {
                return Err(StoreError::Database(format!(
                    "the last write failed: {message}"
                )));
            }
        }
        sqlx::query("SELECT 1").execute(&self.inner.pool).await?;
        Ok(())
    }

    /// Takes this host's claim to serve the database. SQLite: an exclusive `flock` on the
    /// sidecar `<db>.server-lock` (never a descriptor on the database itself: closing one
    /// would drop this process's SQLite locks). PostgreSQL: a session advisory lock keyed
    /// by the host id ([`StoreOptions::host`]), held on a connection of its own, so one
    /// server per host id serves the shared database. Held until the claim is dropped or
    /// the process ends, however it ends. A second claim, from any process, is refused with
    /// [`StoreError::AlreadyServed`]. Only the server claims; the CLI does not.
    pub async fn claim_server(&self) -> StoreResult<ServerClaim> {
        let hold = match &self.inner.location {
            Location::File(path) => Hold::File(file::claim(path)?),
            Location::Postgres(url) => {
                Hold::Connection(pg::claim_host(url, &self.inner.host, self.shown_path()).await?)
            }
        };
        Ok(ServerClaim { _hold: hold })
    }

    /// The host whose bottles this store registers and attributes ([`StoreOptions::host`]).
    pub fn host(&self) -> &str {
        &self.inner.host
    }

    /// The location for a message: a file's path, or the URL without its password.
    fn shown_path(&self) -> PathBuf {
        match &self.inner.location {
            Location::File(path) => path.clone(),
            other => PathBuf::from(other.to_string()),
        }
    }

    /// Begins a read transaction: one snapshot for every statement in it.
    async fn read(&self) -> StoreResult<sqlx::Transaction<'static, Any>> {
        Ok(self
            .inner
            .pool
            .begin_with(self.backend().begin_read())
            .await?)
    }

    /// Refuses once the path no longer names the file this store opened (one `stat`).
    fn check_identity(&self) -> StoreResult<()> {
        let path = &self.inner.path;
        let Some(identity) = self.inner.identity else {
            return Ok(());
        };
        let replaced = match file::Identity::of(path) {
            Ok(now) => now != identity,
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

    /// The typed error for a failed statement, naming this store's database.
    fn classify(&self, e: sqlx::Error) -> StoreError {
        backend::classify(&self.inner.location, e)
    }

    /// Tells `observer` the duration of every write this store (and each clone of it)
    /// commits from now on. One observer per store: a second call is ignored and answers
    /// `false`.
    pub fn observe_writes(&self, observer: WriteObserver) -> bool {
        self.inner.write_observer.set(observer).is_ok()
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
    _hold: Hold,
}

/// What keeps a claim: never read, only held until dropped.
#[derive(Debug)]
#[allow(dead_code)]
enum Hold {
    File(file::Claim),
    /// The session holding the host's advisory lock; closing it releases the lock.
    Connection(sqlx::PgConnection),
}
