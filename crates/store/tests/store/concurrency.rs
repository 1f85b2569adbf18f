//! Races between two pools on one file, as the server and the CLI are: a decision is
//! delivered exactly once, and of two conflicting decisions exactly one wins.

use std::sync::Arc;

use crate::common::*;
use serde_json::json;
use supervise_store::{
    Actor, BottleId, Delivery, EventKind, ProposalLimits, Status, Store, StoreError, Verdict,
};

/// Two independent stores (pools, writer slots) on the same file.
async fn two_pools(db: &TestDb) -> (Store, Store) {
    let policy = ProposalLimits {
        max_pending_per_bottle: None,
        ..ProposalLimits::default()
    };
    (db.open_limits(policy).await, db.open_limits(policy).await)
}

/// Polls `id` from `n` tasks split across both pools; returns (decided, unknown, pending).
async fn poll_all(
    a: &Store,
    b: &Store,
    bottle: BottleId,
    id: &str,
    n: usize,
) -> (usize, usize, usize) {
    let mut tasks = Vec::new();
    for i in 0..n {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        let id = id.to_string();
        tasks.push(tokio::spawn(async move {
            store.take_decision(bottle, &id).await
        }));
    }
    let (mut decided, mut unknown, mut pending) = (0, 0, 0);
    for t in tasks {
        match t.await.unwrap().expect("no poll may fail") {
            Delivery::Decided(_) => decided += 1,
            Delivery::Unknown => unknown += 1,
            Delivery::Pending(_) => pending += 1,
            Delivery::Expired(p) => panic!("unexpected expiry of {}", p.id),
        }
    }
    (decided, unknown, pending)
}

async fn sixty_four_polls_deliver_once(db: TestDb) {
    let (server, cli) = two_pools(&db).await;
    let b = bottle(&server, "demo", "127.0.0.1").await;
    let id = created(&server, egress(&b, "a.example")).await;
    cli.decide(&id, Verdict::Approve, &Actor::cli("op"), None, None)
        .await
        .unwrap();
    let (decided, unknown, pending) = poll_all(&server, &cli, b.id, &id, 64).await;
    assert_eq!((decided, unknown, pending), (1, 63, 0));
    let delivered = server
        .audit(None)
        .await
        .unwrap()
        .iter()
        .filter(|e| e.event == EventKind::Delivered)
        .count();
    assert_eq!(delivered, 1, "one delivery in the audit trail");
}
on_both!(
    sixty_four_polls_deliver_once,
    flavor = "multi_thread",
    worker_threads = 4
);

async fn many_proposals_polled_while_decided(db: TestDb) {
    let (server, cli) = two_pools(&db).await;
    let b = bottle(&server, "demo", "127.0.0.1").await;
    let mut ids = Vec::new();
    for i in 0..24 {
        ids.push(created(&server, egress(&b, &format!("h{i}.example"))).await);
    }
    // Pollers loop until the proposal is gone, while the other pool decides them all.
    let delivered = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut pollers = Vec::new();
    for (n, id) in ids.iter().enumerate() {
        for k in 0..8 {
            let store = if (n + k) % 2 == 0 {
                server.clone()
            } else {
                cli.clone()
            };
            let id = id.clone();
            let delivered = delivered.clone();
            pollers.push(tokio::spawn(async move {
                loop {
                    match store.take_decision(b.id, &id).await.expect("poll") {
                        Delivery::Pending(_) => tokio::task::yield_now().await,
                        Delivery::Decided(p) => {
                            delivered.lock().unwrap().push(p.id);
                            return;
                        }
                        Delivery::Unknown => return,
                        Delivery::Expired(_) => panic!("expired"),
                    }
                }
            }));
        }
    }
    for (n, id) in ids.iter().enumerate() {
        let verdict = if n % 3 == 0 {
            Verdict::Reject
        } else {
            Verdict::Approve
        };
        cli.decide(id, verdict, &Actor::cli("op"), None, None)
            .await
            .unwrap();
    }
    for p in pollers {
        p.await.unwrap();
    }
    let mut got = delivered.lock().unwrap().clone();
    got.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(got, want, "every decision delivered exactly once");
    let c = counts(&db).await;
    assert_eq!(c["archived"], 24);
    assert_eq!(c["grants"], 16);
}
on_both!(
    many_proposals_polled_while_decided,
    flavor = "multi_thread",
    worker_threads = 4
);

async fn approve_racing_reject_one_wins(db: TestDb) {
    let (server, cli) = two_pools(&db).await;
    let b = bottle(&server, "demo", "127.0.0.1").await;
    for round in 0..20 {
        let id = created(&server, egress(&b, &format!("r{round}.example"))).await;
        let (s1, s2) = (server.clone(), cli.clone());
        let (i1, i2) = (id.clone(), id.clone());
        let approve = tokio::spawn(async move {
            s1.decide(&i1, Verdict::Approve, &Actor::cli("alice"), None, None)
                .await
        });
        let reject = tokio::spawn(async move {
            s2.decide(&i2, Verdict::Reject, &Actor::cli("bob"), Some("no"), None)
                .await
        });
        let (a, r) = (approve.await.unwrap(), reject.await.unwrap());
        let winner = match (&a, &r) {
            (
                Ok(p),
                Err(StoreError::NotPending {
                    status, decided_by, ..
                }),
            ) => {
                assert_eq!(*status, Status::Approved);
                assert_eq!(decided_by.as_deref(), Some("alice"));
                p.status
            }
            (
                Err(StoreError::NotPending {
                    status, decided_by, ..
                }),
                Ok(p),
            ) => {
                assert_eq!(*status, Status::Rejected);
                assert_eq!(decided_by.as_deref(), Some("bob"));
                p.status
            }
            other => panic!("round {round}: exactly one must win, got {other:?}"),
        };
        let (p, history) = server.show(&id).await.unwrap();
        assert_eq!(p.status, winner);
        let decisions = history
            .iter()
            .filter(|e| e.event == EventKind::Approved || e.event == EventKind::Rejected)
            .count();
        assert_eq!(decisions, 1);
    }
    let c = counts(&db).await;
    assert!(c["grants"].as_i64().unwrap() <= 20);
}
on_both!(
    approve_racing_reject_one_wins,
    flavor = "multi_thread",
    worker_threads = 4
);

async fn concurrent_identical_proposals_coalesce(db: TestDb) {
    let (server, cli) = two_pools(&db).await;
    let b = bottle(&server, "demo", "127.0.0.1").await;
    let mut tasks = Vec::new();
    for i in 0..32 {
        let store = if i % 2 == 0 {
            server.clone()
        } else {
            cli.clone()
        };
        let item = egress(&b, "same.example");
        tasks.push(tokio::spawn(async move { store.propose(item).await }));
    }
    let mut ids = std::collections::BTreeSet::new();
    for t in tasks {
        ids.insert(t.await.unwrap().unwrap().into_proposal().id);
    }
    assert_eq!(ids.len(), 1, "one proposal for one change");
    let c = counts(&db).await;
    assert_eq!(c["proposals"], 1);
    assert_eq!(c["hits"], 32);
    assert_eq!(json!(c["pending"]), json!(1));
}
on_both!(
    concurrent_identical_proposals_coalesce,
    flavor = "multi_thread",
    worker_threads = 4
);

async fn batch_delivery_races_single_polls_and_delivers_once(db: TestDb) {
    let (server, cli) = two_pools(&db).await;
    let b = bottle(&server, "demo", "127.0.0.1").await;
    let mut ids = Vec::new();
    for i in 0..30 {
        let id = created(&server, egress(&b, &format!("batch{i}.example"))).await;
        if i % 3 != 0 {
            cli.decide(&id, Verdict::Approve, &Actor::cli("op"), None, None)
                .await
                .unwrap();
        }
        ids.push(id);
    }
    let items: Vec<(BottleId, String)> = ids.iter().map(|id| (b.id, id.clone())).collect();
    let batch = {
        let server = server.clone();
        let items = items.clone();
        tokio::spawn(async move { server.take_decisions(&items).await })
    };
    let mut singles = Vec::new();
    for id in &ids {
        let (cli, id) = (cli.clone(), id.clone());
        singles.push(tokio::spawn(
            async move { cli.take_decision(b.id, &id).await },
        ));
    }
    let batch = batch.await.unwrap().unwrap();
    assert_eq!(batch.len(), ids.len(), "one result per item, in order");
    let mut delivered = std::collections::HashMap::<String, usize>::new();
    for (i, d) in batch.iter().enumerate() {
        match d.as_ref().expect("the bottle is live") {
            Delivery::Decided(p) => {
                assert_eq!(p.id, ids[i], "results follow the order asked");
                *delivered.entry(p.id.clone().into()).or_default() += 1;
            }
            Delivery::Pending(p) => assert_eq!(p.id, ids[i]),
            Delivery::Unknown => {}
            Delivery::Expired(_) => panic!("nothing expires here"),
        }
    }
    for s in singles {
        if let Delivery::Decided(p) = s.await.unwrap().unwrap() {
            *delivered.entry(p.id.into()).or_default() += 1;
        }
    }
    assert_eq!(delivered.len(), 20, "every decided proposal delivered");
    assert!(delivered.values().all(|&n| n == 1), "{delivered:?}");
    let c = counts(&db).await;
    assert_eq!(c["archived"], 20);
    assert_eq!(c["pending"], 10);
}
on_both!(
    batch_delivery_races_single_polls_and_delivers_once,
    flavor = "multi_thread",
    worker_threads = 4
);

/// Two sweeps that both see the same proposals due before either holds the write lock (the
/// server's sweep and another host's, say): each expiry is counted by the one sweep that
/// made it, never by both.
async fn racing_sweeps_count_each_expiry_once(db: TestDb) {
    let limits = ProposalLimits {
        proposal_ttl: Some(std::time::Duration::from_millis(100)),
        max_pending_per_bottle: None,
        ..ProposalLimits::default()
    };
    let (one, other) = (db.open_limits(limits).await, db.open_limits(limits).await);
    let b = bottle(&one, "demo", "127.0.0.1").await;
    for i in 0..3 {
        created(&one, egress(&b, &format!("s{i}.example"))).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;

    // Another process holds the write lock while both sweeps find the three due and queue
    // for the lock; it lets go once they are both waiting.
    let mut holder = db.raw().await;
    sqlx::raw_sql(take_write_lock(db.backend))
        .execute(&mut holder)
        .await
        .unwrap();
    let first = tokio::spawn(async move { one.sweep().await });
    let second = tokio::spawn(async move { other.sweep().await });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();
    let (first, second) = (first.await.unwrap(), second.await.unwrap());
    let (first, second) = (first.unwrap(), second.unwrap());

    assert_eq!(first.expired_proposals + second.expired_proposals, 3);
    assert_eq!(first.expired_grants + second.expired_grants, 0);
    let c = counts(&db).await;
    assert_eq!(c["pending"], json!(0));
    let store = db.open().await;
    let expired = store
        .audit(None)
        .await
        .unwrap()
        .iter()
        .filter(|e| e.event == EventKind::Expired)
        .count();
    assert_eq!(expired, 3);
}
on_both!(
    racing_sweeps_count_each_expiry_once,
    flavor = "multi_thread",
    worker_threads = 4
);
