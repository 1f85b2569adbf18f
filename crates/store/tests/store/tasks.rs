//! Proposals filed as tasks: delivered once, readable by their task for its lifetime,
//! cancelled only while undecided, and never visible to another bottle.

use crate::common::*;
use supervise_store::{Actor, Delivery, EventKind, Status, StoreError, Verdict};

#[tokio::test]
async fn a_task_reads_its_outcome_twice_while_check_proposal_sees_it_once() {
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let id = created(&store, egress(&b, "tasks.example")).await;
    let task = store.open_task(b.id, &id).await.unwrap();
    assert_eq!(task.proposal_id, id);
    assert_eq!(
        store.open_task(b.id, &id).await.unwrap(),
        task,
        "same task again"
    );

    let read = store.read_task(b.id, &id).await.unwrap().unwrap();
    assert_eq!(read.proposal.status, Status::Pending);
    assert!(!read.delivered_now);

    store
        .decide(
            &id,
            Verdict::Approve,
            &Actor::cli("alice"),
            Some("fine"),
            None,
        )
        .await
        .unwrap();
    let first = store.read_task(b.id, &id).await.unwrap().unwrap();
    assert!(first.delivered_now, "the first read delivers");
    assert_eq!(first.proposal.status, Status::Approved);
    let second = store.read_task(b.id, &id).await.unwrap().unwrap();
    assert!(!second.delivered_now);
    assert_eq!(second.proposal, first.proposal, "the same outcome again");
    assert_eq!(
        store.take_decision(b.id, &id).await.unwrap(),
        Delivery::Unknown,
        "delivered: check-proposal says unknown"
    );
    let (_, history) = store.show(&id).await.unwrap();
    let delivered = history
        .iter()
        .filter(|e| e.event == EventKind::Delivered)
        .count();
    assert_eq!(delivered, 1, "delivered exactly once");
}

#[tokio::test]
async fn cancelling_withdraws_an_undecided_proposal_and_then_changes_nothing() {
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let id = created(&store, egress(&b, "cancel.example")).await;
    store.open_task(b.id, &id).await.unwrap();
    let c = store.cancel_task(b.id, &id).await.unwrap().unwrap();
    assert_eq!(c.proposal.status, Status::Withdrawn);
    assert!(c.task.cancelled_at.is_some());
    let again = store.cancel_task(b.id, &id).await.unwrap().unwrap();
    assert_eq!(again.task.cancelled_at, c.task.cancelled_at);
    assert!(matches!(
        store
            .decide(&id, Verdict::Approve, &Actor::cli("alice"), None, None)
            .await,
        Err(StoreError::NotPending { .. })
    ));
    let (_, history) = store.show(&id).await.unwrap();
    let w = history
        .iter()
        .find(|e| e.event == EventKind::Withdrawn)
        .unwrap();
    assert_eq!(w.actor, "bottle:demo");
}

#[tokio::test]
async fn another_bottle_sees_no_task_and_cannot_cancel_it() {
    let db = TestDb::new();
    let store = db.open().await;
    let a = bottle(&store, "alpha", "127.0.0.1").await;
    let b = bottle(&store, "beta", "127.0.0.2").await;
    let id = created(&store, egress(&a, "mine.example")).await;
    store.open_task(a.id, &id).await.unwrap();
    assert_eq!(store.read_task(b.id, &id).await.unwrap(), None);
    assert_eq!(store.cancel_task(b.id, &id).await.unwrap(), None);
    assert_eq!(store.read_task(a.id, "no-such-id").await.unwrap(), None);
    let still = store.read_task(a.id, &id).await.unwrap().unwrap();
    assert_eq!(still.proposal.status, Status::Pending);
    // A proposal that was not filed as a task has no task.
    let plain = created(&store, egress(&a, "plain.example")).await;
    assert_eq!(store.read_task(a.id, &plain).await.unwrap(), None);
}
