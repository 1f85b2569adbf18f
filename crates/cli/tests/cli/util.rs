//! The harness: a real database file in a temp dir, set up through `supervise-store`,
//! and the real `supervise` binary run against it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use supervise_store::{Actor, Kind, NewProposal, ProposalLimits, Proposed, Store, StoreOptions};

pub const BIN: &str = env!("CARGO_BIN_EXE_supervise");

/// A database with one bottle, `demo`, and a runtime to drive the store from the test.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub db: PathBuf,
    pub rt: tokio::runtime::Runtime,
    pub store: Store,
    pub bottle_id: supervise_store::BottleId,
}

impl Env {
    pub fn new() -> Env {
        Env::with_policy(ProposalLimits::default())
    }

    pub fn with_policy(policy: ProposalLimits) -> Env {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("supervise.db");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let store = rt
            .block_on(Store::open(
                &db,
                StoreOptions {
                    limits: policy,
                    ..StoreOptions::default()
                },
            ))
            .expect("open store");
        let bottle = rt
            .block_on(store.add_bottle("demo", "10.9.0.2".parse().unwrap(), &Actor::cli("setup")))
            .expect("add bottle");
        Env {
            dir,
            db,
            rt,
            store,
            bottle_id: bottle.id,
        }
    }

    /// Files a proposal as the `demo` bottle would; returns its id (new or coalesced).
    pub fn propose(&self, kind: Kind, change: Value, justification: &str) -> String {
        let proposed = self
            .rt
            .block_on(self.store.propose(NewProposal {
                bottle_id: self.bottle_id,
                kind,
                change,
                justification: justification.into(),
                quorum: None,
            }))
            .expect("propose");
        match proposed {
            Proposed::Created(p) | Proposed::Repeated(p) => p.id.into(),
            other => panic!("unexpected {other:?}"),
        }
    }

    pub fn egress(&self, host: &str, port: u16) -> String {
        self.propose(
            Kind::Egress,
            json!({"host": host, "port": port}),
            &format!("need {host}:{port} for the build"),
        )
    }

    pub fn push(&self, reference: &str) -> String {
        self.propose(
            Kind::GitPush,
            json!({"remote": "origin", "ref": reference}),
            "push my work",
        )
    }

    /// A `supervise` command on this database, as operator `tester`, without colour.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = command(&self.db);
        c.args(args);
        c
    }

    pub fn run(&self, args: &[&str]) -> Run {
        Run::from(self.cmd(args).output().expect("run supervise"))
    }

    /// Runs a command that must succeed and prints one JSON document.
    pub fn json(&self, args: &[&str]) -> Value {
        let r = self.run(args);
        r.assert_ok();
        serde_json::from_str(&r.stdout)
            .unwrap_or_else(|e| panic!("{args:?} printed no JSON ({e}): {}", r.stdout))
    }

    /// Runs a command that must succeed; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let r = self.run(args);
        r.assert_ok();
        r.stdout
    }
}

/// The binary with a clean environment: `--db PATH`, operator `tester`, no colour.
pub fn command(db: &Path) -> Command {
    let mut c = clean_command();
    c.arg("--db").arg(db);
    c
}

/// The binary with a clean environment and no database named: operator `tester`, no colour.
pub fn clean_command() -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("SUPERVISE_DB")
        .env_remove("SUPERVISE_DB_FILE")
        .env_remove("SUPERVISE_CONSOLE_URL")
        .env_remove("NO_COLOR")
        .env("USER", "tester")
        .env("COLUMNS", "160")
        .stdin(Stdio::null());
    c
}

#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Run {
    pub fn assert_ok(&self) {
        assert_eq!(self.code, 0, "expected success: {self:#?}");
    }

    /// Exit 1 with exactly one line on stderr containing `why`.
    pub fn assert_refused(&self, why: &str) {
        assert_eq!(self.code, 1, "expected exit 1: {self:#?}");
        assert_eq!(
            self.stderr.lines().count(),
            1,
            "one line on stderr: {self:#?}"
        );
        assert!(
            self.stderr.contains(why),
            "stderr should say {why:?}: {self:#?}"
        );
    }

    pub fn assert_usage(&self) {
        assert_eq!(self.code, 2, "expected exit 2 (usage): {self:#?}");
        assert!(!self.stderr.is_empty());
    }
}

/// The ids of a `list --json` document, in order.
pub fn ids(doc: &Value) -> Vec<String> {
    doc["proposals"]
        .as_array()
        .expect("proposals array")
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect()
}

/// The proposal with `id` in a `list --json` document.
pub fn find<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in {doc}"))
}

/// Whether `program` can be run here. When it cannot, says `SKIPPED` loudly and returns
/// false, except under CI (`CI=true`), where a missing program is a failure: `.ci/run`
/// installs every program the tests need, so there a skip would hide a broken set-up.
pub fn have(program: &str) -> bool {
    if Command::new(program).arg("--version").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{program} is missing, and under CI=true a test may not skip (.ci/run installs it)"
    );
    eprintln!("SKIPPED: {program} not installed (apt-get install {program})");
    false
}

/// Runs `sql` on the PostgreSQL database `url` with the test cluster's `psql`, failing the
/// test with psql's message when it fails.
pub fn psql(url: &str, sql: &str) {
    let psql = supervise_testpg::bin_dir()
        .map(|d| d.join("psql"))
        .expect("psql");
    let out = Command::new(psql)
        .args(["-X", "-v", "ON_ERROR_STOP=1", url, "-c", sql])
        .output()
        .expect("psql");
    assert!(
        out.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
