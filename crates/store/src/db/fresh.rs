//! Poll freshness: the agent's poll of a pending proposal
//! ([`Store::take_decision`](super::Store::take_decision)) is answered from memory only
//! when the database itself says nothing was committed since the answer was read. The
//! proof is a *version* read after the poll arrived: SQLite's `PRAGMA data_version`, or
//! PostgreSQL's transaction snapshot.
//!
//! On SQLite, on one connection `PRAGMA data_version` changes whenever any *other*
//! connection, of this process or another, commits to the file. The store keeps one
//! connection of its own for it (the [`Watch`]), which only ever runs that pragma, so every
//! commit anywhere changes the value it reads. Each check is one statement on it: it begins a
//! read transaction, which compares the WAL index header in the `-shm` mapping with the one
//! it saw last (every commit changes it), and ends at once (the statement is reset, so the
//! watch never holds a snapshot that would keep a checkpoint from finishing).
//!
//! On PostgreSQL the version is `pg_current_snapshot()` (`xmin:xmax:xip…`), read in a
//! statement of its own on a pooled connection, sent after the poll arrived (concurrent
//! polls share one read, [`Snapshots`]): the set of transactions it shows as
//! completed is every transaction id below `xmax` not listed in progress. A transaction's
//! commit removes it from the in-progress set (or raises `xmax`) before its COMMIT returns,
//! and completed transactions never become in progress again, so two equal snapshots mean no
//! transaction of the cluster, of any process, host or database, completed between the two
//! reads. That covers every write that could change a poll's answer (a decision, a quorum
//! approval, a rule's decision, an archive, a removed bottle, a repeat raising the hit
//! count), whether or not it went through this store, with no trigger or counter to keep in
//! step. A NOTIFY could not prove this: it arrives after its COMMIT, asynchronously.
//!
//! Why answering from memory is exactly as fresh as the peek: a poll reads the version `v`
//! first. A pending answer is remembered under the version read *before* the peek that found
//! it, and only while no other version was read since. So a remembered answer at `v` means
//! the database did not change from before its peek until after this poll arrived: no
//! commit landed in between, and the peek's answer is what a peek now would read. Any commit
//! that returned before the poll arrived has changed what the poll's check reads, so it is
//! seen. A remembered proposal past its `expires_at` is not answered (the peek reads it as
//! expired and delivers the expiry), and a new version forgets every answer. (On PostgreSQL
//! concurrent polls' reads may settle out of order: an older snapshot settling after a newer
//! one only forgets answers, and an answer remembered under it was read after it, so it is
//! never older than what that snapshot shows.)
//!
//! The watch is opened with the very library sqlx links (`libsqlite3-sys` is one crate in
//! the build, one instance of SQLite in the process), through SQLite's own VFS, on the same
//! path. That matters: POSIX record locks belong to a process and an inode, and closing any
//! descriptor of the file drops all of them, including the ones sqlx's connections hold.
//! SQLite's unix VFS keeps one record per inode for every connection of its instance
//! (`unixInodeInfo`, with the `-shm` mapping's `unixShmNode`): the watch shares the locks
//! already held, and a descriptor closed while other connections hold locks is parked, not
//! closed, until the last of them ends. A second copy of SQLite, or a descriptor opened by
//! hand on the database, `-wal` or `-shm` file, would have none of that (and closing it
//! would silently unlock the database under sqlx's connections): never open them here.
//!
//! [`Store::close`](super::Store::close) closes the watch before the writer connection and the
//! pool, so the last of those is the file's last and folds the WAL into it, as without a
//! watch. The watch is
//! opened read-write but never writes (`PRAGMA query_only`): when it does close last (a
//! store dropped without `close`), it folds the WAL in too, which a read-only connection
//! cannot do.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use sqlx::AnyPool;

use super::backend::Location;
use super::pg::Snapshots;
use crate::model::{BottleId, Proposal, Timestamp};

/// Pending answers remembered at most; a full map is emptied rather than grown.
const REMEMBERED_MAX: usize = 4096;

/// The version source and the pending answers read at its latest version, behind one lock:
/// a poll answered from memory takes it once.
pub(super) struct Fresh {
    /// PostgreSQL's snapshot reads (SQLite's watch is in `state`).
    snapshots: Option<Snapshots>,
    state: Mutex<State>,
}

struct State {
    /// SQLite's watch; `None` on PostgreSQL, and once the store is closed.
    watch: Option<Watch>,
    /// Set by [`Fresh::close`]: nothing is read or remembered after it.
    closed: bool,
    /// The version read last; `pending` holds only answers read at it.
    version: Option<Stamp>,
    /// By proposal id (unique across bottles), with the generation it was asked for.
    pending: HashMap<String, (BottleId, Proposal)>,
}

/// What a version read returns: equal stamps mean nothing committed between the reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Stamp {
    /// SQLite's `PRAGMA data_version` on the watch connection.
    Data(i64),
    /// PostgreSQL's `pg_current_snapshot()` as text.
    Snapshot(Arc<str>),
}

/// The version a poll read before its peek: remembering the peek's answer needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Version(Stamp);

/// What memory says about a poll. Not boxed: the proposal moves straight into
/// `Delivery::Pending`, which is as large.
#[allow(clippy::large_enum_variant)]
pub(super) enum Check {
    /// Still pending: the proposal as the peek read it, nothing committed since.
    Pending(Proposal),
    /// Nothing remembered: peek, and remember a pending answer under this version.
    Peek(Version),
    /// The version could not be read: peek, and remember nothing.
    Unread,
}

impl Fresh {
    /// The watch on a SQLite file, or the snapshot reads on PostgreSQL's `pool`. A watch
    /// that cannot be opened is logged and left out (`None`): every poll then reads the
    /// database.
    pub(super) fn open(location: &Location, pool: &AnyPool) -> Option<Fresh> {
        let path = match location {
            Location::Postgres(_) => {
                return Some(Fresh::with(Some(Snapshots::new(pool.clone())), None));
            }
            Location::File(path) => path,
        };
        match Watch::open(path) {
            Ok(watch) => Some(Fresh::with(None, Some(watch))),
            Err(message) => {
                tracing::warn!(path = %path.display(), %message, "no data_version watch: every poll reads the database");
                None
            }
        }
    }

    fn with(snapshots: Option<Snapshots>, watch: Option<Watch>) -> Fresh {
        Fresh {
            snapshots,
            state: Mutex::new(State {
                watch,
                closed: false,
                version: None,
                pending: HashMap::new(),
            }),
        }
    }

    /// Reads the version (after the poll arrived), forgets every answer of another one,
    /// and returns the bottle generation's proposal `id` if it was remembered pending and
    /// is not past its expiry at `now`.
    pub(super) async fn check(&self, bottle_id: BottleId, id: &str, now: &Timestamp) -> Check {
        let (state, version) = self.read().await;
        let Some(version) = version else {
            return Check::Unread;
        };
        // A new version emptied `pending`: only answers read at this one are found.
        match state.pending.get(id) {
            Some((b, p)) if *b == bottle_id && p.expires_at.as_ref().is_none_or(|e| e > now) => {
                Check::Pending(p.clone())
            }
            _ => Check::Peek(Version(version)),
        }
    }

    /// Reads the version now, with the same effect on remembered answers as a poll's
    /// check (a new version forgets them all): the change feed's wake-up on SQLite
    /// ([`Store::changes`](super::Store::changes)) and the egress memo's proof. `None` when
    /// it cannot be read.
    pub(super) async fn observe(&self) -> Option<Stamp> {
        self.read().await.1
    }

    /// Remembers a pending answer the peek read after `version` was read, unless another
    /// version has been read since (then the answer may be stale already).
    pub(super) fn remember(&self, version: Version, bottle_id: BottleId, id: &str, p: &Proposal) {
        let mut state = self.state.lock().expect("not poisoned");
        if state.version.as_ref() != Some(&version.0) {
            return;
        }
        if state.pending.len() >= REMEMBERED_MAX {
            state.pending.clear();
        }
        state.pending.insert(id.to_owned(), (bottle_id, p.clone()));
    }

    /// Closes the watch before the store's other connections, so the last of them is the
    /// file's last and folds the WAL into it; later polls read the database (or find it
    /// closed).
    pub(super) fn close(&self) {
        let mut state = self.state.lock().expect("not poisoned");
        state.watch = None;
        state.closed = true;
        state.version = None;
        state.pending.clear();
    }

    /// Reads the version: PostgreSQL's snapshot before taking the lock (a round trip),
    /// SQLite's data version under it. A version other than the last one read (or none)
    /// forgets every remembered answer, which were read at the last one.
    async fn read(&self) -> (MutexGuard<'_, State>, Option<Stamp>) {
        let snapshot = match &self.snapshots {
            Some(snapshots) => Some(snapshots.read().await.map(Stamp::Snapshot)),
            None => None,
        };
        let mut state = self.state.lock().expect("not poisoned");
        let version = match snapshot {
            _ if state.closed => None,
            Some(snapshot) => snapshot,
            None => state
                .watch
                .as_mut()
                .and_then(Watch::data_version)
                .map(Stamp::Data),
        };
        if version.is_none() || state.version != version {
            state.version.clone_from(&version);
            state.pending.clear();
        }
        (state, version)
    }
}

impl std::fmt::Debug for Fresh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fresh").finish_non_exhaustive()
    }
}

use watch::Watch;

/// SQLite's C API on the watch connection (the store's other `unsafe` is `sqlite_read.rs`).
#[allow(unsafe_code)]
mod watch {
    use std::ffi::{CStr, CString, c_char};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::ptr::{self, NonNull};

    use libsqlite3_sys as sys;

    /// A connection of its own to the database file, with `PRAGMA data_version` prepared
    /// once. Closed (statement finalised first) on drop.
    pub(in super::super) struct Watch {
        db: NonNull<sys::sqlite3>,
        stmt: NonNull<sys::sqlite3_stmt>,
    }

    // SAFETY: the connection is opened with SQLITE_OPEN_NOMUTEX (SQLite's multi-thread
    // mode: a connection may move between threads, used by one at a time). `Watch` has no
    // `&self` method that touches SQLite and lives only inside `Fresh`'s `Mutex`, so one
    // thread at a time uses it.
    unsafe impl Send for Watch {}

    impl Watch {
        /// Opens `path` (which the pool has open and in WAL mode) with the default VFS,
        /// as sqlx does, and prepares the pragma.
        pub(in super::super) fn open(path: &Path) -> Result<Watch, String> {
            let name = CString::new(path.as_os_str().as_bytes())
                .map_err(|_| "the path has a NUL byte".to_string())?;
            let flags = sys::SQLITE_OPEN_READWRITE
                | sys::SQLITE_OPEN_NOMUTEX
                | sys::SQLITE_OPEN_PRIVATECACHE;
            let mut db: *mut sys::sqlite3 = ptr::null_mut();
            // SAFETY: `name` is NUL-terminated and outlives the call; `db` is a valid
            // out-pointer; a null VFS name selects the default VFS, the one sqlx's
            // connections use (one instance of the library, so one lock table per inode).
            let rc = unsafe { sys::sqlite3_open_v2(name.as_ptr(), &mut db, flags, ptr::null()) };
            let Some(db) = NonNull::new(db) else {
                return Err(format!("sqlite3_open_v2 failed ({rc})"));
            };
            if rc != sys::SQLITE_OK {
                let message = errmsg(db);
                // SAFETY: `db` is the handle sqlite3_open_v2 returned, with no statements;
                // a failed open's handle must still be closed.
                unsafe { sys::sqlite3_close(db.as_ptr()) };
                return Err(message);
            }
            match prepare(db) {
                Ok(stmt) => Ok(Watch { db, stmt }),
                Err(message) => {
                    // SAFETY: as above; nothing was prepared on it.
                    unsafe { sys::sqlite3_close(db.as_ptr()) };
                    Err(message)
                }
            }
        }

        /// `PRAGMA data_version`: changes whenever another connection committed since the
        /// last call. `None` when the step fails (a busy recovery, an I/O error): the
        /// caller then reads the database and remembers nothing.
        pub(in super::super) fn data_version(&mut self) -> Option<i64> {
            let stmt = self.stmt.as_ptr();
            // SAFETY: `stmt` is a live statement of `self.db` (prepared in `open`, finalised
            // only in `drop`), used by one thread at a time (`&mut self`); column 0 is read
            // only after SQLITE_ROW. The reset ends the read transaction the step began.
            unsafe {
                let version = (sys::sqlite3_step(stmt) == sys::SQLITE_ROW)
                    .then(|| sys::sqlite3_column_int64(stmt, 0));
                sys::sqlite3_reset(stmt);
                version
            }
        }
    }

    impl Drop for Watch {
        fn drop(&mut self) {
            // SAFETY: both handles are live and owned by `self` alone; the statement is
            // finalised before its connection is closed, and neither is used again.
            unsafe {
                sys::sqlite3_finalize(self.stmt.as_ptr());
                sys::sqlite3_close(self.db.as_ptr());
            }
        }
    }

    /// Makes the connection refuse writes and prepares the pragma (kept: persistent).
    fn prepare(db: NonNull<sys::sqlite3>) -> Result<NonNull<sys::sqlite3_stmt>, String> {
        const QUERY_ONLY: &CStr = c"PRAGMA query_only = 1";
        const DATA_VERSION: &CStr = c"PRAGMA data_version";
        // SAFETY: `db` is an open connection used by this thread alone; the SQL is a
        // NUL-terminated static string; no callback, no error-message out-pointer.
        let rc = unsafe {
            sys::sqlite3_exec(
                db.as_ptr(),
                QUERY_ONLY.as_ptr(),
                None,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        if rc != sys::SQLITE_OK {
            return Err(errmsg(db));
        }
        let mut stmt: *mut sys::sqlite3_stmt = ptr::null_mut();
        // SAFETY: as above; `stmt` is a valid out-pointer, and `-1` reads the SQL to its NUL.
        let rc = unsafe {
            sys::sqlite3_prepare_v3(
                db.as_ptr(),
                DATA_VERSION.as_ptr(),
                -1,
                sys::SQLITE_PREPARE_PERSISTENT,
                &mut stmt,
                ptr::null_mut(),
            )
        };
        match NonNull::new(stmt) {
            Some(stmt) if rc == sys::SQLITE_OK => Ok(stmt),
            _ => Err(errmsg(db)),
        }
    }

    /// The connection's last error message.
    fn errmsg(db: NonNull<sys::sqlite3>) -> String {
        // SAFETY: `db` is a live handle; sqlite3_errmsg returns a NUL-terminated string it
        // owns (valid until the next call on `db`), copied out at once.
        let text: *const c_char = unsafe { sys::sqlite3_errmsg(db.as_ptr()) };
        if text.is_null() {
            return "unknown SQLite error".into();
        }
        // SAFETY: non-null, NUL-terminated, alive until the next call on `db`.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use serde_json::json;
    use sqlx::{Connection, SqliteConnection};

    use crate::db::{Store, StoreOptions};
    use crate::model::{Actor, Delivery, Kind, NewProposal, Proposed};

    fn remembered(store: &Store, id: &str) -> bool {
        let fresh = store
            .inner
            .fresh
            .as_ref()
            .expect("a SQLite store has a watch");
        let state = fresh.state.lock().unwrap();
        state.pending.contains_key(id)
    }

    fn version(store: &Store) -> i64 {
        let fresh = store.inner.fresh.as_ref().unwrap();
        let mut state = fresh.state.lock().unwrap();
        state.watch.as_mut().unwrap().data_version().unwrap()
    }

    /// Bottle `demo` with one pending egress proposal: the bottle and the proposal's id.
    async fn a_pending_proposal(store: &Store) -> (crate::model::Bottle, String) {
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let b = store
            .add_bottle("demo", ip, &Actor::cli("t"))
            .await
            .unwrap();
        let item = NewProposal {
            bottle_id: b.id,
            kind: Kind::Egress,
            change: json!({ "host": "a.example" }),
            justification: "build".into(),
            quorum: None,
        };
        let Proposed::Created(p) = store.propose(item).await.unwrap() else {
            panic!("created");
        };
        let id = p.id.to_string();
        (b, id)
    }

    #[tokio::test]
    async fn a_pending_poll_is_remembered_until_any_connection_commits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("supervise.db");
        let store = Store::open(&path, StoreOptions::default()).await.unwrap();
        let (b, id) = a_pending_proposal(&store).await;

        // The first poll after a commit peeks; its pending answer is remembered.
        let first = store.take_decision(b.id, &id).await.unwrap();
        assert!(remembered(&store, &id));
        let v = version(&store);
        assert_eq!(version(&store), v, "no commit, no change");
        assert_eq!(store.take_decision(b.id, &id).await.unwrap(), first);
        assert!(remembered(&store, &id));
        // Another generation asking for the same id is not handed this one's answer.
        let other = crate::model::BottleId::from_row(b.id.get() + 1);
        assert!(store.take_decision(other, &id).await.is_err());

        // A connection the store knows nothing of commits: the next poll reads it.
        let mut raw = SqliteConnection::connect(&format!("sqlite://{}", path.display()))
            .await
            .unwrap();
        sqlx::query("UPDATE proposals SET hits = 7 WHERE id = $1")
            .bind(&id)
            .execute(&mut raw)
            .await
            .unwrap();
        raw.close().await.unwrap();
        assert_ne!(version(&store), v, "another connection's commit changes it");
        match store.take_decision(b.id, &id).await.unwrap() {
            Delivery::Pending(p) => assert_eq!(p.hits, 7),
            d => panic!("expected pending, got {d:?}"),
        }
        store.close().await;
        assert!(
            !path.with_extension("db-wal").exists(),
            "closing the store folds the WAL into the file"
        );
    }

    /// On PostgreSQL a pending answer is remembered under the snapshot; a decision committed
    /// on a connection the store knows nothing of (no trail event, no notification) changes
    /// the snapshot, so the next poll delivers it instead of the remembered pending answer.
    #[tokio::test]
    async fn a_pending_poll_on_postgres_is_remembered_until_any_connection_commits() {
        let Some(cluster) = supervise_testpg::cluster() else {
            return;
        };
        let url = cluster.fresh_database().await;
        let store = Store::open(&url, StoreOptions::default()).await.unwrap();
        let (b, id) = a_pending_proposal(&store).await;

        let first = store.take_decision(b.id, &id).await.unwrap();
        assert!(matches!(first, Delivery::Pending(_)), "got {first:?}");
        assert!(remembered(&store, &id), "a pending answer is remembered");
        assert_eq!(store.take_decision(b.id, &id).await.unwrap(), first);
        assert!(remembered(&store, &id), "answered from memory, kept");

        let mut raw = sqlx::PgConnection::connect(&url).await.unwrap();
        sqlx::query(
            "UPDATE proposals SET status = 'rejected', decided_at = $2, decided_by = 'raw', \
             decided_via = 'cli' WHERE id = $1",
        )
        .bind(&id)
        .bind(crate::model::Timestamp::now().as_str())
        .execute(&mut raw)
        .await
        .unwrap();
        raw.close().await.unwrap();
        match store.take_decision(b.id, &id).await.unwrap() {
            Delivery::Decided(p) => assert_eq!(p.status, crate::model::Status::Rejected),
            d => panic!("the decision committed before the poll, got {d:?}"),
        }
        assert!(!remembered(&store, &id));
        assert_eq!(
            store.take_decision(b.id, &id).await.unwrap(),
            Delivery::Unknown,
            "delivered once"
        );
        store.close().await;
    }
}
