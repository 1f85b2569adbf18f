//! A fleet writing at once: several hosts, each with a store of its own (its own pool and
//! writer, as each host's server is), file, decide and take decisions concurrently while a
//! follower reads the change feed continuously. The follower sees every event exactly
//! once, in `seq` order, skipping none, and the hash chain stays one chain.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use supervise_store::{Actor, Delivery, Event, ProposalLimits, Store, StoreOptions, Verdict};

use crate::common::*;

/// Hosts writing at once, and the proposals each files, decides and takes.
const HOSTS: usize = 4;
const ROUNDS: usize = 40;

async fn on_host(db: &TestDb, host: &str) -> Store {
    Store::open(
        &db.path,
        StoreOptions {
            host: Some(host.into()),
            limits: ProposalLimits {
                max_pending_per_bottle: None,
                ..ProposalLimits::default()
            },
            ..StoreOptions::default()
        },
    )
    .await
    .expect("open store")
}

/// One host's writer: a bottle, then per round a proposal filed, decided by an operator on
/// the same host and taken by the bottle, each its own write transaction.
async fn write_as(store: Store, n: usize) {
    let b = bottle(&store, "demo", &format!("10.0.0.{}", n + 2)).await;
    let op = Actor::cli(&format!("op{n}"));
    for round in 0..ROUNDS {
        let id = created(&store, egress(&b, &format!("r{round}.h{n}.example"))).await;
        let verdict = if round % 3 == 0 {
            Verdict::Reject
        } else {
            Verdict::Approve
        };
        store
            .decide(&id, verdict, &op, None, None)
            .await
            .expect("decide");
        match store.take_decision(b.id, &id).await.expect("take") {
            Delivery::Decided(_) => {}
            other => panic!("expected the decision, got {other:?}"),
        }
    }
}

/// Reads the feed from the start, page after page without waiting, until every writer has
/// returned and a read begun after that finds nothing more.
async fn follow_all(store: Store, writers_done: Arc<AtomicBool>) -> Vec<Event> {
    let mut follow = store.follow(0);
    let mut seen = Vec::new();
    loop {
        let done = writers_done.load(Ordering::SeqCst);
        let page = follow.read_page().await.expect("read the feed");
        if page.is_empty() {
            if done {
                return seen;
            }
            tokio::task::yield_now().await;
        }
        seen.extend(page);
    }
}

async fn the_feed_never_skips_under_writers_of_different_hosts(db: TestDb) {
    let mut writers = Vec::new();
    for n in 0..HOSTS {
        writers.push(on_host(&db, &format!("host-{n}")).await);
    }
    let reader = on_host(&db, "reader").await;
    let writers_done = Arc::new(AtomicBool::new(false));
    let follower = tokio::spawn(follow_all(reader.clone(), writers_done.clone()));

    let tasks: Vec<_> = writers
        .iter()
        .enumerate()
        .map(|(n, s)| tokio::spawn(write_as(s.clone(), n)))
        .collect();
    for t in tasks {
        t.await.expect("a writer panicked");
    }
    writers_done.store(true, Ordering::SeqCst);
    let seen = follower.await.expect("the follower panicked");

    let seen: Vec<i64> = seen.iter().map(|e| e.seq).collect();
    let all: Vec<i64> = reader
        .audit(None)
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    // Every host's bottle, and per round a proposal, a decision and a delivery: none lost
    // on its way into the feed.
    assert_eq!(
        all.len(),
        HOSTS * (1 + 3 * ROUNDS),
        "every write's event is in the feed"
    );
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "the follower read the feed out of order or twice"
    );
    let missed: Vec<i64> = all.iter().filter(|s| !seen.contains(s)).copied().collect();
    assert!(
        missed.is_empty(),
        "the follower skipped {} of {} events, committed behind its position: {missed:?}",
        missed.len(),
        all.len()
    );
    assert_eq!(seen, all, "the follower read exactly the table's events");

    let check = reader.verify_trail(None).await.unwrap();
    assert!(check.ok(), "{check:?}");
    assert_eq!(check.events as usize, all.len());
    for s in writers {
        s.close().await;
    }
    reader.close().await;
}
on_both!(
    the_feed_never_skips_under_writers_of_different_hosts,
    flavor = "multi_thread",
    worker_threads = 4
);
