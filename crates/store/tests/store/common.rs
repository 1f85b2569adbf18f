//! Shared set-up for the store's integration tests: real database files in temp dirs.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use supervise_store::{
    Actor, Bottle, Kind, NewProposal, ProposalLimits, Proposed, Store, StoreOptions,
};

pub struct TestDb {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl TestDb {
    pub fn new() -> TestDb {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("supervise.db");
        TestDb { dir, path }
    }

    pub async fn open(&self) -> Store {
        open_with(&self.path, ProposalLimits::default()).await
    }

    pub async fn open_limits(&self, limits: ProposalLimits) -> Store {
        open_with(&self.path, limits).await
    }
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
    }
}

pub fn git_push(bottle: &Bottle, reference: &str) -> NewProposal {
    NewProposal {
        bottle_id: bottle.id,
        kind: Kind::GitPush,
        change: json!({ "remote": "origin", "ref": reference }),
        justification: "push my branch".into(),
    }
}

pub async fn created(store: &Store, item: NewProposal) -> String {
    match store.propose(item).await.expect("propose") {
        Proposed::Created(p) => p.id.into(),
        other => panic!("expected a new proposal, got {other:?}"),
    }
}

/// Row counts of every table, read over a separate raw connection, to show that a
/// refused call changed nothing.
pub async fn counts(path: &Path) -> Value {
    use sqlx::Connection;
    let mut conn = sqlx::sqlite::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .expect("raw connection");
    let text: String = sqlx::query_scalar(
        "SELECT json_object('bottles', (SELECT COUNT(*) FROM bottles), \
         'proposals', (SELECT COUNT(*) FROM proposals), \
         'pending', (SELECT COUNT(*) FROM proposals WHERE status = 'pending'), \
         'archived', (SELECT COUNT(*) FROM proposals WHERE archived_at IS NOT NULL), \
         'hits', (SELECT COALESCE(SUM(hits), 0) FROM proposals), \
         'grants', (SELECT COUNT(*) FROM grants), \
         'live_grants', (SELECT COUNT(*) FROM grants WHERE ended_at IS NULL), \
         'events', (SELECT COUNT(*) FROM events))",
    )
    .fetch_one(&mut conn)
    .await
    .expect("counts");
    serde_json::from_str(&text).expect("json")
}
