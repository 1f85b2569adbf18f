//! The queue's figures for the server's metrics: this host's pending proposals by bottle and
//! kind with the oldest filing time (decided ones and other hosts' left out), and the
//! observer told of each committed write.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use supervise_store::{Actor, Kind, Store, StoreOptions, Verdict, WriteObserver};

use crate::common::*;

async fn on_host(db: &TestDb, host: &str) -> Store {
    Store::open(
        &db.path,
        StoreOptions {
            host: Some(host.into()),
            ..StoreOptions::default()
        },
    )
    .await
    .expect("open store")
}

async fn pending_summary_counts_this_hosts_undecided_proposals(db: TestDb) {
    let a = on_host(&db, "host-a").await;
    let b = on_host(&db, "host-b").await;
    assert!(a.pending_summary().await.unwrap().is_empty());
    let demo = bottle(&a, "demo", "10.0.0.2").await;
    let ci = bottle(&a, "ci", "10.0.0.3").await;
    let elsewhere = bottle(&b, "demo", "10.0.0.2").await;
    let first = created(&a, egress(&demo, "one.example")).await;
    created(&a, egress(&demo, "two.example")).await;
    created(&a, git_push(&demo, "refs/heads/agent/x")).await;
    let decided = created(&a, egress(&ci, "three.example")).await;
    created(&b, egress(&elsewhere, "four.example")).await;
    a.decide(&decided, Verdict::Approve, &Actor::cli("op"), None, None)
        .await
        .unwrap();

    let groups = a.pending_summary().await.unwrap();
    let shape: Vec<_> = groups
        .iter()
        .map(|g| (g.bottle.as_str(), g.kind, g.count))
        .collect();
    assert_eq!(
        shape,
        vec![("demo", Kind::Egress, 2), ("demo", Kind::GitPush, 1)]
    );
    let (oldest, _) = a.show(&first).await.unwrap();
    assert_eq!(groups[0].oldest, oldest.created_at);
    // The other host sees its own one.
    let theirs = b.pending_summary().await.unwrap();
    assert_eq!(theirs.len(), 1);
    assert_eq!((theirs[0].bottle.as_str(), theirs[0].count), ("demo", 1));
}
on_both!(pending_summary_counts_this_hosts_undecided_proposals);

async fn the_write_observer_is_told_of_each_commit(db: TestDb) {
    let store = db.open().await;
    let seen = Arc::new(AtomicUsize::new(0));
    let counted = seen.clone();
    assert!(store.observe_writes(WriteObserver::new(move |_| {
        counted.fetch_add(1, Ordering::Relaxed);
    })));
    assert!(
        !store.observe_writes(WriteObserver::new(|_| {})),
        "one observer per store"
    );
    let demo = bottle(&store, "demo", "10.0.0.2").await;
    created(&store, egress(&demo, "one.example")).await;
    assert_eq!(seen.load(Ordering::Relaxed), 2);
}
on_both!(the_write_observer_is_told_of_each_commit);
