//! A process killed with SIGKILL in the middle of proposing loses nothing it reported and
//! leaves a database that passes `PRAGMA integrity_check` (SQLite), on either backend.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use crate::common::*;
use supervise_store::{Backend, EventKind, ProposalLimits};

const CHILD_ENV: &str = "SUPERVISE_CRASH_CHILD_DB";

/// The child: proposes distinct changes forever, printing each id once it is committed.
/// Runs only when the parent test starts it (it is ignored otherwise).
#[tokio::test]
#[ignore = "run by killed_proposer_loses_nothing as a child process"]
async fn child_proposer() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let store = open_with(
        path.as_ref(),
        ProposalLimits {
            max_pending_per_bottle: None,
            ..ProposalLimits::default()
        },
    )
    .await;
    let b = match store.bottle("crash").await.unwrap() {
        Some(b) => b,
        None => bottle(&store, "crash", "127.0.0.1").await,
    };
    let mut out = std::io::stdout().lock();
    for i in 0u64.. {
        let host = format!("h{}-{i}.example", std::process::id());
        let id = created(&store, egress(&b, &host)).await;
        writeln!(out, "ID {id}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn killed_proposer_loses_nothing_sqlite() {
    killed_proposer_loses_nothing(TestDb::new());
}

#[test]
fn killed_proposer_loses_nothing_postgres() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    if let Some(db) = rt.block_on(TestDb::postgres()) {
        killed_proposer_loses_nothing(db);
    }
}

fn killed_proposer_loses_nothing(db: TestDb) {
    let mut reported = Vec::new();
    for (round, kill_after) in [3usize, 11, 29, 1, 47].into_iter().enumerate() {
        let mut child = child_test("crash::child_proposer", CHILD_ENV, &db)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let mut seen = 0;
        while seen < kill_after {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("round {round}: child ended early"))
                .unwrap();
            if let Some(id) = line.strip_prefix("ID ") {
                reported.push(id.to_string());
                seen += 1;
            }
        }
        child.kill().expect("SIGKILL"); // std sends SIGKILL on Unix
        child.wait().unwrap();
        // Anything printed before the kill landed was committed too.
        for line in lines.map_while(Result::ok) {
            if let Some(id) = line.strip_prefix("ID ") {
                reported.push(id.to_string());
            }
        }
    }

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        if db.backend == Backend::Sqlite {
            let mut conn = db.raw().await;
            let check: String = sqlx::query_scalar("PRAGMA integrity_check")
                .fetch_one(&mut conn)
                .await
                .unwrap();
            assert_eq!(check, "ok");
            drop(conn);
        }
        let store = db.open().await;
        for id in &reported {
            let (p, history) = store
                .show(id)
                .await
                .unwrap_or_else(|e| panic!("{id} lost: {e}"));
            assert_eq!(&p.id, id);
            assert_eq!(
                history[0].event,
                EventKind::Proposed,
                "the event was committed with the row"
            );
        }
        assert!(reported.len() >= 91);
    });
}
