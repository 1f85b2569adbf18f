//! The per-bottle pending cap: refused at the limit, a place freed by every way a proposal
//! stops waiting (decide, withdraw, expiry not yet swept, bottle removal), and the count
//! the cap reads kept equal to the proposals actually waiting.

use std::time::Duration;

use crate::common::*;
use supervise_store::{
    Actor, Bottle, EventKind, ProposalLimits, Proposed, Status, Store, StoreError, Verdict,
};

fn capped(limit: u32, ttl: Option<Duration>) -> ProposalLimits {
    ProposalLimits {
        proposal_ttl: ttl,
        reject_cooldown: None,
        max_pending_per_bottle: Some(limit),
    }
}

async fn refused(store: &Store, b: &Bottle, host: &str) {
    match store.propose(egress(b, host)).await {
        Err(StoreError::PendingCapReached { limit, .. }) => assert_eq!(limit, 2),
        other => panic!("expected the cap, got {other:?}"),
    }
}

/// `bottles.pending_count` next to the proposals actually waiting, per bottle.
async fn counts_agree(db: &TestDb) {
    let mut conn = db.raw().await;
    let rows: Vec<(i64, i64, i64)> = sqlx::query_as(
        "SELECT b.id, b.pending_count, \
         (SELECT COUNT(*) FROM proposals p WHERE p.bottle_id = b.id AND p.status = 'pending') \
         FROM bottles b",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    for (id, kept, actual) in rows {
        assert_eq!(
            kept, actual,
            "bottle {id}: kept count matches the waiting proposals"
        );
    }
}

async fn decide_and_withdraw_free_a_place(db: TestDb) {
    let store = db.open_limits(capped(2, None)).await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let one = created(&store, egress(&b, "one.example")).await;
    let two = created(&store, egress(&b, "two.example")).await;
    refused(&store, &b, "three.example").await;
    counts_agree(&db).await;

    store
        .decide(&one, Verdict::Reject, &Actor::cli("olivia"), None, None)
        .await
        .unwrap();
    let three = created(&store, egress(&b, "three.example")).await;
    refused(&store, &b, "four.example").await;

    store.withdraw(b.id, &two).await.unwrap();
    created(&store, egress(&b, "four.example")).await;
    refused(&store, &b, "five.example").await;
    counts_agree(&db).await;

    store
        .decide(&three, Verdict::Approve, &Actor::cli("olivia"), None, None)
        .await
        .unwrap();
    created(&store, egress(&b, "five.example")).await;
    counts_agree(&db).await;
}
on_both!(decide_and_withdraw_free_a_place);

async fn expired_but_unswept_proposals_do_not_count(db: TestDb) {
    let store = db
        .open_limits(capped(2, Some(Duration::from_millis(1500))))
        .await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let one = created(&store, egress(&b, "one.example")).await;
    created(&store, egress(&b, "two.example")).await;
    // The lifetime is long enough for this refusal to come first on a loaded machine.
    refused(&store, &b, "three.example").await;
    tokio::time::sleep(Duration::from_millis(1600)).await;
    // No sweep has run: the cap itself sees that both are past their time.
    let three = store.propose(egress(&b, "three.example")).await.unwrap();
    assert!(matches!(three, Proposed::Created(_)));
    let (shown, history) = store.show(&one).await.unwrap();
    assert_eq!(shown.status, Status::Expired);
    assert_eq!(history.last().unwrap().event, EventKind::Expired);
    counts_agree(&db).await;
    assert_eq!(
        store.sweep().await.unwrap().expired_proposals,
        0,
        "nothing left to sweep"
    );
}
on_both!(expired_but_unswept_proposals_do_not_count);

async fn sweep_and_bottle_removal_keep_the_count(db: TestDb) {
    let store = db
        .open_limits(capped(2, Some(Duration::from_millis(200))))
        .await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    created(&store, egress(&b, "one.example")).await;
    created(&store, egress(&b, "two.example")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(store.sweep().await.unwrap().expired_proposals, 2);
    counts_agree(&db).await;
    created(&store, egress(&b, "one.example")).await;
    created(&store, egress(&b, "two.example")).await;
    store
        .remove_bottle("demo", &Actor::cli("olivia"))
        .await
        .unwrap();
    counts_agree(&db).await;
    let again = bottle(&store, "demo", "127.0.0.1").await;
    created(&store, egress(&again, "one.example")).await;
    counts_agree(&db).await;
}
on_both!(sweep_and_bottle_removal_keep_the_count);
