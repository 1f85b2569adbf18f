//! Shared set-up for the store's integration tests: real SQLite files in temp dirs, and
//! real PostgreSQL databases (a fresh one per test on the process's throwaway cluster,
//! `supervise-testpg`). [`on_both!`] runs one test body on each backend.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sqlx::{AnyConnection, Connection};
use supervise_store::{
    Actor, Backend, Bottle, Kind, NewProposal, ProposalLimits, Proposed, Store, StoreOptions,
};

/// Generates `NAME::sqlite` and `NAME::postgres`, each running `async fn NAME(db: TestDb)`
/// on a fresh database of that backend (the PostgreSQL one prints SKIPPED and passes when
/// PostgreSQL is not installed, and fails under CI=true). Extra arguments go to
/// `#[tokio::test(...)]`.
macro_rules! on_both {
    ($name:ident $(, $($cfg:tt)*)?) => {
        mod $name {
            #[tokio::test($($($cfg)*)?)]
            async fn sqlite() {
                super::$name($crate::common::TestDb::new()).await
            }
            #[tokio::test($($($cfg)*)?)]
            async fn postgres() {
                if let Some(db) = $crate::common::TestDb::postgres().await {
                    super::$name(db).await
                }
            }
        }
    };
}

pub struct TestDb {
    pub dir: tempfile::TempDir,
    /// The SQLite file, or the PostgreSQL database's URL (what `Store::open` takes).
    pub path: PathBuf,
    pub backend: Backend,
}

impl TestDb {
    /// A SQLite file in a fresh temp dir.
    pub fn new() -> TestDb {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("supervise.db");
        TestDb {
            dir,
            path,
            backend: Backend::Sqlite,
        }
    }

    /// A fresh PostgreSQL database, or `None` (after SKIPPED) without PostgreSQL.
    pub async fn postgres() -> Option<TestDb> {
        let cluster = supervise_testpg::cluster()?;
        let url = cluster.fresh_database().await;
        Some(TestDb {
            dir: tempfile::tempdir().expect("tempdir"),
            path: PathBuf::from(url),
            backend: Backend::Postgres,
        })
    }

    /// A raw connection of its own to the same database, beside the store (another
    /// process's view).
    pub async fn raw(&self) -> AnyConnection {
        sqlx::any::install_default_drivers();
        let url = match self.backend {
            Backend::Sqlite => format!("sqlite://{}", self.path.display()),
            _ => self.path.display().to_string(),
        };
        AnyConnection::connect(&url).await.expect("raw connection")
    }

    pub async fn open(&self) -> Store {
        open_with(&self.path, ProposalLimits::default()).await
    }

    pub async fn open_limits(&self, limits: ProposalLimits) -> Store {
        open_with(&self.path, limits).await
    }
}

/// This test binary as a child process running only the ignored test `test` (its stdout
/// shows the child's own lines, its stderr is discarded), with `env` naming `db`.
pub fn child_test(test: &str, env: &str, db: &TestDb) -> std::process::Command {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child
        .args([
            test,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(env, &db.path)
        .stderr(std::process::Stdio::null());
    child
}

pub async fn open_with(path: &Path, limits: ProposalLimits) -> Store {
    Store::open(
        path,
        StoreOptions {
            limits,
            ..StoreOptions::default()
        },
    )
    .await
    .expect("open store")
}

pub async fn bottle(store: &Store, slug: &str, ip: &str) -> Bottle {
    store
        .add_bottle(slug, ip.parse::<IpAddr>().unwrap(), &Actor::cli("test"))
        .await
        .expect("add bottle")
}

pub fn egress(bottle: &Bottle, host: &str) -> NewProposal {
    NewProposal {
        bottle_id: bottle.id,
        kind: Kind::Egress,
        change: json!({ "host": host }),
        justification: format!("need {host} for the build"),
        quorum: None,
    }
}

pub fn git_push(bottle: &Bottle, reference: &str) -> NewProposal {
    NewProposal {
        bottle_id: bottle.id,
        kind: Kind::GitPush,
        change: json!({ "remote": "origin", "ref": reference }),
        justification: "push my branch".into(),
        quorum: None,
    }
}

pub async fn created(store: &Store, item: NewProposal) -> String {
    match store.propose(item).await.expect("propose") {
        Proposed::Created(p) => p.id.into(),
        other => panic!("expected a new proposal, got {other:?}"),
    }
}

/// What a writer of another process runs first to hold the write lock, as the store's own
/// writers begin (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: the writers' advisory lock, as
/// another host's server would take it).
pub fn take_write_lock(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "BEGIN IMMEDIATE",
        _ => "BEGIN; SELECT pg_advisory_xact_lock(8319679467651230067)",
    }
}

/// Row counts of every table, read over a separate raw connection, to show that a
/// refused call changed nothing.
pub async fn counts(db: &TestDb) -> Value {
    let mut conn = db.raw().await;
    let mut out = serde_json::Map::new();
    for (name, sql) in [
        ("bottles", "SELECT COUNT(*) FROM bottles"),
        ("proposals", "SELECT COUNT(*) FROM proposals"),
        (
            "pending",
            "SELECT COUNT(*) FROM proposals WHERE status = 'pending'",
        ),
        (
            "archived",
            "SELECT COUNT(*) FROM proposals WHERE archived_at IS NOT NULL",
        ),
        (
            "hits",
            "SELECT CAST(COALESCE(SUM(hits), 0) AS BIGINT) FROM proposals",
        ),
        ("grants", "SELECT COUNT(*) FROM grants"),
        (
            "live_grants",
            "SELECT COUNT(*) FROM grants WHERE ended_at IS NULL",
        ),
        ("events", "SELECT COUNT(*) FROM events"),
    ] {
        let n: i64 = sqlx::query_scalar(sql)
            .fetch_one(&mut conn)
            .await
            .expect("counts");
        out.insert(name.into(), json!(n));
    }
    let _ = conn.close().await;
    Value::Object(out)
}
