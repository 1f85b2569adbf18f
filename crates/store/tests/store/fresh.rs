//! The agent's poll of a pending proposal is exactly as fresh as the database: whatever was
//! committed before the poll, by another store on the same file or by another process, is
//! what the poll answers, although on SQLite a pending answer comes from memory while
//! nothing was committed. Each round polls twice first (so the second answer is the one
//! remembered), then commits elsewhere and polls at once; many rounds, to catch a race.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

use crate::common::*;
use supervise_store::{
    Actor, Delivery, ProposalLimits, Proposed, Status, StoreError, Timestamp, Verdict,
};

const ROUNDS: usize = 60;
const CHILD_ENV: &str = "SUPERVISE_FRESH_CHILD_DB";

fn pending(d: Delivery) -> supervise_store::Proposal {
    match d {
        Delivery::Pending(p) => p,
        other => panic!("expected pending, got {other:?}"),
    }
}

fn verdict(round: usize) -> Verdict {
    if round.is_multiple_of(2) {
        Verdict::Approve
    } else {
        Verdict::Reject
    }
}

async fn a_decision_by_another_store_is_seen_at_once(db: TestDb) {
    let server = db.open().await;
    let other = db.open().await;
    let b = bottle(&server, "demo", "127.0.0.1").await;
    for round in 0..ROUNDS {
        let id = created(&server, egress(&b, &format!("r{round}.example"))).await;
        let first = pending(server.take_decision(b.id, &id).await.unwrap());
        let again = pending(server.take_decision(b.id, &id).await.unwrap());
        assert_eq!(first, again, "round {round}: the same answer twice");
        other
            .decide(&id, verdict(round), &Actor::cli("op"), None, None)
            .await
            .unwrap();
        match server.take_decision(b.id, &id).await.unwrap() {
            Delivery::Decided(p) => {
                assert_eq!(p.id, id);
                assert!(matches!(p.status, Status::Approved | Status::Rejected));
            }
            d => panic!("round {round}: the decision committed before the poll, got {d:?}"),
        }
        assert_eq!(
            server.take_decision(b.id, &id).await.unwrap(),
            Delivery::Unknown,
            "round {round}: delivered once"
        );
    }
}
on_both!(a_decision_by_another_store_is_seen_at_once);

/// The child: decides each id read from stdin with its own store, printing it once
/// committed. Runs only when the parent test starts it (it is ignored otherwise).
#[tokio::test]
#[ignore = "run by a_decision_by_another_process_is_seen_at_once as a child process"]
async fn child_decider() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let store = open_with(path.as_ref(), ProposalLimits::default()).await;
    let mut out = std::io::stdout().lock();
    for (round, line) in std::io::stdin().lines().enumerate() {
        let id = line.unwrap();
        store
            .decide(&id, verdict(round), &Actor::cli("op"), None, None)
            .await
            .unwrap();
        writeln!(out, "DECIDED {id}").unwrap();
        out.flush().unwrap();
    }
}

fn a_decision_by_another_process_is_seen_at_once(db: TestDb) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (server, b) = rt.block_on(async {
        let server = db.open().await;
        let b = bottle(&server, "demo", "127.0.0.1").await;
        (server, b)
    });
    let mut child = child_test("fresh::child_decider", CHILD_ENV, &db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn child");
    let mut to_child = child.stdin.take().unwrap();
    let mut from_child = BufReader::new(child.stdout.take().unwrap()).lines();
    for round in 0..ROUNDS {
        let id = rt.block_on(async {
            let id = created(&server, egress(&b, &format!("r{round}.example"))).await;
            pending(server.take_decision(b.id, &id).await.unwrap());
            pending(server.take_decision(b.id, &id).await.unwrap());
            id
        });
        writeln!(to_child, "{id}").unwrap();
        to_child.flush().unwrap();
        loop {
            let line = from_child
                .next()
                .unwrap_or_else(|| panic!("round {round}: the child ended early"))
                .unwrap();
            // The harness's own "test ... " may precede it on the first line.
            if line.ends_with(&format!("DECIDED {id}")) {
                break;
            }
        }
        match rt.block_on(server.take_decision(b.id, &id)).unwrap() {
            Delivery::Decided(p) => assert_eq!(p.id, id),
            d => panic!("round {round}: the child committed before the poll, got {d:?}"),
        }
    }
    drop(to_child);
    assert!(
        child.wait().unwrap().success(),
        "the child decided every id"
    );
}

#[test]
fn a_decision_by_another_process_is_seen_at_once_sqlite() {
    a_decision_by_another_process_is_seen_at_once(TestDb::new());
}

#[test]
fn a_decision_by_another_process_is_seen_at_once_postgres() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    if let Some(db) = rt.block_on(TestDb::postgres()) {
        a_decision_by_another_process_is_seen_at_once(db);
    }
}

/// Nothing is written while the proposal's time runs out: the poll after its expiry still
/// answers expired (and delivers the expiry), not the pending answer read before.
async fn an_expiry_passing_without_a_write_is_answered(db: TestDb) {
    let server = db
        .open_limits(ProposalLimits {
            proposal_ttl: Some(Duration::from_secs(2)),
            ..ProposalLimits::default()
        })
        .await;
    let b = bottle(&server, "demo", "127.0.0.1").await;
    let id = created(&server, egress(&b, "a.example")).await;
    let p = pending(server.take_decision(b.id, &id).await.unwrap());
    pending(server.take_decision(b.id, &id).await.unwrap());
    let expires_at = p.expires_at.expect("a proposal ttl");
    while Timestamp::now() <= expires_at {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    match server.take_decision(b.id, &id).await.unwrap() {
        Delivery::Expired(p) => assert_eq!(p.status, Status::Expired),
        d => panic!("expected expired, got {d:?}"),
    }
    assert_eq!(
        server.take_decision(b.id, &id).await.unwrap(),
        Delivery::Unknown
    );
}
on_both!(an_expiry_passing_without_a_write_is_answered);

/// A bottle removed elsewhere: its proposal answered pending a moment ago is not answered
/// again; the poll is refused as the removed generation's.
async fn a_removed_bottles_proposal_is_not_answered(db: TestDb) {
    let server = db.open().await;
    let other = db.open().await;
    for round in 0..ROUNDS / 4 {
        let slug = format!("demo{round}");
        let b = bottle(&server, &slug, "127.0.0.1").await;
        let id = created(&server, egress(&b, "a.example")).await;
        pending(server.take_decision(b.id, &id).await.unwrap());
        pending(server.take_decision(b.id, &id).await.unwrap());
        other.remove_bottle(&slug, &Actor::cli("op")).await.unwrap();
        match server.take_decision(b.id, &id).await {
            Err(StoreError::BottleGone(gone)) => assert_eq!(gone, b.id),
            r => panic!("round {round}: expected the removed generation refused, got {r:?}"),
        }
    }
}
on_both!(a_removed_bottles_proposal_is_not_answered);

/// A repeat of the change (another store, or this one) raises the hit count: the next poll
/// answers the raised count, exactly as a fresh read gives it.
async fn a_repeat_is_seen_by_the_next_poll(db: TestDb) {
    let server = db.open().await;
    let other = db.open().await;
    let b = bottle(&server, "demo", "127.0.0.1").await;
    let id = created(&server, egress(&b, "a.example")).await;
    for round in 0..10usize {
        let hits = i64::try_from(round).unwrap() + 2;
        pending(server.take_decision(b.id, &id).await.unwrap());
        let by = if round.is_multiple_of(2) {
            &other
        } else {
            &server
        };
        match by.propose(egress(&b, "a.example")).await.unwrap() {
            Proposed::Repeated(p) => assert_eq!(p.hits, hits),
            r => panic!("expected a repeat, got {r:?}"),
        }
        let p = pending(server.take_decision(b.id, &id).await.unwrap());
        assert_eq!(p.hits, hits);
        let fresh = db.open().await;
        assert_eq!(
            Delivery::Pending(p),
            fresh.take_decision(b.id, &id).await.unwrap(),
            "the answer a fresh read gives"
        );
        fresh.close().await;
    }
}
on_both!(a_repeat_is_seen_by_the_next_poll);

/// The change feed's wake-up sees a commit by another store on the same database (SQLite:
/// the data version; PostgreSQL: the notification) and wakes the reader, which then finds
/// the event. Only liveness is checked: each wait is bounded by a generous timeout.
async fn the_change_signal_wakes_the_reader_on_another_stores_commit(db: TestDb) {
    let reader = db.open().await;
    let other = db.open().await;
    let b = bottle(&other, "demo", "127.0.0.1").await;
    let mut changes = reader.changes();
    for _ in 0..100 {
        if changes.live() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(changes.live(), "the change signal is live");
    for round in 0..5 {
        let seq = reader
            .events_after(0, 10_000)
            .await
            .unwrap()
            .last()
            .map_or(0, |e| e.seq);
        let id = created(&other, egress(&b, &format!("w{round}.example"))).await;
        // A wake-up may be left over from before the commit; wait until one shows it.
        let mut seen = false;
        for _ in 0..10 {
            tokio::time::timeout(Duration::from_secs(10), changes.changed())
                .await
                .expect("woken within 10 s of another store's commit");
            let events = reader.events_after(seq, 100).await.unwrap();
            if events
                .iter()
                .any(|e| e.proposal_id.as_ref().map(|p| p.as_str()) == Some(id.as_str()))
            {
                seen = true;
                break;
            }
        }
        assert!(seen, "round {round}: the woken reader finds the commit");
    }
}
on_both!(the_change_signal_wakes_the_reader_on_another_stores_commit);
