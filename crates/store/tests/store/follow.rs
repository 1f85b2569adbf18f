//! Following the change feed with [`Follow`]: pages in order, a page at a time; resuming
//! from a position; an empty feed waited on, not answered empty; and a commit by another
//! process wakes a follower through the store's change signal, long before its interval.

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use supervise_store::{Actor, Event, Follow, ProposalLimits, Store};

use crate::common::*;

const CHILD_ENV: &str = "SUPERVISE_FOLLOW_CHILD_DB";

/// Long enough for an answer on a loaded machine; a follower that needs its interval (an
/// hour here) never answers within it.
const IN_TIME: Duration = Duration::from_secs(30);

fn no_cap() -> ProposalLimits {
    ProposalLimits {
        max_pending_per_bottle: None,
        ..ProposalLimits::default()
    }
}

fn seqs(events: &[Event]) -> Vec<i64> {
    events.iter().map(|e| e.seq).collect()
}

/// Adds a bottle and files `n` proposals of it in one transaction: `n + 1` events.
async fn file(store: &Store, slug: &str, ip: &str, n: usize) {
    let b = bottle(store, slug, ip).await;
    let items = (0..n)
        .map(|i| egress(&b, &format!("h{i}.{slug}.example")))
        .collect();
    for r in store.propose_many(items).await.unwrap() {
        r.unwrap();
    }
}

async fn a_follower_pages_the_whole_feed_in_order(db: TestDb) {
    let store = db.open_limits(no_cap()).await;
    file(&store, "demo", "127.0.0.1", Follow::PAGE as usize + 10).await;
    let all = seqs(&store.audit(None).await.unwrap());
    assert!(all.len() > Follow::PAGE as usize, "{}", all.len());

    let mut follow = store.follow(0);
    let first = follow.read_page().await.unwrap();
    assert_eq!(first.len(), Follow::PAGE as usize);
    assert!(!follow.caught_up(), "a full page: more may follow");
    assert_eq!(follow.position(), first.last().unwrap().seq);
    let rest = follow.read_page().await.unwrap();
    assert!(follow.caught_up());
    assert_eq!([seqs(&first), seqs(&rest)].concat(), all);
    assert!(follow.read_page().await.unwrap().is_empty());
    assert_eq!(follow.position(), *all.last().unwrap());

    // `next_page` reads a backlog page after page without waiting.
    let mut follow = store.follow(0).every(Duration::from_secs(3600));
    let mut seen = Vec::new();
    while seen.len() < all.len() {
        let page = tokio::time::timeout(IN_TIME, follow.next_page())
            .await
            .expect("a backlog is read at once")
            .unwrap();
        assert!(!page.is_empty());
        seen.extend(seqs(&page));
    }
    assert_eq!(seen, all);
}
on_both!(a_follower_pages_the_whole_feed_in_order);

async fn a_follower_resumes_from_a_position(db: TestDb) {
    let store = db.open_limits(no_cap()).await;
    file(&store, "one", "127.0.0.1", 5).await;
    let mid = store.last_seq().await.unwrap();
    file(&store, "two", "127.0.0.2", 5).await;
    let all = seqs(&store.audit(None).await.unwrap());

    let mut follow = store.follow(mid);
    let after_mid = follow.read_page().await.unwrap();
    assert_eq!(
        seqs(&after_mid),
        all.iter().copied().filter(|s| *s > mid).collect::<Vec<_>>()
    );
    assert!(after_mid.iter().all(|e| e.bottle.as_deref() == Some("two")));

    // A follower started at another's position reads only what follows it.
    let resumed_at = follow.position();
    file(&store, "three", "127.0.0.3", 2).await;
    let mut resumed = store.follow(resumed_at);
    let page = resumed.read_page().await.unwrap();
    assert_eq!(page.len(), 3, "the bottle and its two proposals");
    assert!(page.iter().all(|e| e.bottle.as_deref() == Some("three")));
    assert_eq!(seqs(&follow.read_page().await.unwrap()), seqs(&page));

    // Skipping moves on without reading, never back.
    let mut skipping = store.follow(0);
    skipping.skip_to(mid);
    skipping.skip_to(1);
    assert_eq!(skipping.position(), mid);
    assert_eq!(
        seqs(&skipping.read_page().await.unwrap())[0],
        after_mid[0].seq
    );

    // From the end: nothing until something is appended.
    let mut from_end = store.follow_from_end().await.unwrap();
    assert_eq!(from_end.position(), page.last().unwrap().seq);
    assert!(from_end.read_page().await.unwrap().is_empty());
    assert!(from_end.caught_up());
}
on_both!(a_follower_resumes_from_a_position);

async fn an_empty_feed_is_waited_on_not_answered_empty(db: TestDb) {
    let store = db.open().await;
    let mut follow = store
        .follow_from_end()
        .await
        .unwrap()
        .every(Duration::from_millis(20));
    // Many intervals pass, and reads with them, but there is never a page to give.
    let waited = tokio::time::timeout(Duration::from_millis(300), follow.next_page()).await;
    assert!(waited.is_err(), "{waited:?}");
    // The wait was cancelled half-way: the follower carries on and gives the next event.
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let page = tokio::time::timeout(IN_TIME, follow.next_page())
        .await
        .expect("the event in time")
        .unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].bottle.as_deref(), Some(b.slug.as_str()));
}
on_both!(an_empty_feed_is_waited_on_not_answered_empty);

/// Run by [`a_commit_by_another_process_wakes_a_follower`]: adds a bottle for each line
/// read (`SLUG IP`), and says so.
#[tokio::test]
#[ignore = "run by a_commit_by_another_process_wakes_a_follower as a child process"]
async fn child_adder() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let store = open_with(path.as_ref(), ProposalLimits::default()).await;
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lines() {
        let line = line.unwrap();
        let (slug, ip) = line.split_once(' ').unwrap();
        store
            .add_bottle(slug, ip.parse().unwrap(), &Actor::cli("test"))
            .await
            .unwrap();
        writeln!(out, "ADDED {slug}").unwrap();
        out.flush().unwrap();
    }
    store.close().await;
}

async fn a_commit_by_another_process_wakes_a_follower(db: TestDb) {
    let store = db.open().await;
    bottle(&store, "first", "127.0.0.1").await;
    // An hour between reads of its own: only the change signal can wake it in time.
    let mut follow = store
        .follow_from_end()
        .await
        .unwrap()
        .every(Duration::from_secs(3600));
    let mut child = child_test("follow::child_adder", CHILD_ENV, &db)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn child");
    let mut to_child = child.stdin.take().unwrap();
    for round in 0..3 {
        let slug = format!("b{round}");
        writeln!(to_child, "{slug} 127.0.1.{round}").unwrap();
        to_child.flush().unwrap();
        let page = tokio::time::timeout(IN_TIME, follow.next_page())
            .await
            .unwrap_or_else(|_| panic!("round {round}: not woken by the other process's commit"))
            .unwrap();
        assert_eq!(page.len(), 1, "{page:?}");
        assert_eq!(page[0].bottle.as_deref(), Some(slug.as_str()));
    }
    drop(to_child);
    assert!(child.wait().unwrap().success());

    // Another handle in this process wakes it the same way.
    let other = db.open().await;
    bottle(&other, "last", "127.0.0.9").await;
    let page = tokio::time::timeout(IN_TIME, follow.next_page())
        .await
        .expect("woken by the other handle's commit")
        .unwrap();
    assert_eq!(page[0].bottle.as_deref(), Some("last"));
}
on_both!(a_commit_by_another_process_wakes_a_follower);
