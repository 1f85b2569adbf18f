//! The audit trail stays a record, not a channel one bottle can flood: repeats and cooldown
//! hits are counted exactly on the proposal but written to the trail at most once a
//! minute; and the hook runner's position in the change feed is kept durably.

use supervise_store::{Actor, EventKind, ProposalLimits, Proposed, Verdict};

use crate::common::{TestDb, bottle, created, egress};

/// Events in the trail and the bytes of their rows, over a raw connection.
async fn trail_size(db: &TestDb) -> (i64, i64) {
    let mut conn = db.raw().await;
    sqlx::query_as(
        "SELECT COUNT(*), CAST(COALESCE(SUM(length(at) + length(event) + length(actor) \
         + COALESCE(length(proposal_id), 0) + COALESCE(length(kind), 0) \
         + COALESCE(length(change), 0) + COALESCE(length(note), 0) + 16), 0) AS BIGINT) \
         FROM events",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap()
}

async fn a_thousand_identical_repeats_count_every_hit_but_write_one_event(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let id = created(&store, egress(&b, "flood.example")).await;
    let (events_before, bytes_before) = trail_size(&db).await;
    let started = std::time::Instant::now();
    // Half one by one, half in group commits, as the server's writer files them.
    for _ in 0..500 {
        assert!(matches!(
            store.propose(egress(&b, "flood.example")).await.unwrap(),
            Proposed::Repeated(_)
        ));
    }
    for _ in 0..5 {
        let batch = (0..100).map(|_| egress(&b, "flood.example")).collect();
        for r in store.propose_many(batch).await.unwrap() {
            assert!(matches!(r.unwrap(), Proposed::Repeated(_)));
        }
    }
    let took = started.elapsed();
    let (events_after, bytes_after) = trail_size(&db).await;
    eprintln!(
        "1000 repeats in {took:?}: {} events, {} bytes of event rows",
        events_after - events_before,
        bytes_after - bytes_before
    );
    let (p, history) = store.show(&id).await.unwrap();
    assert_eq!(p.hits, 1001, "every repeat is counted");
    // One `repeated` event per minute of repeats: one, unless a loaded machine took longer.
    let windows = 1 + usize::try_from(took.as_secs() / 60).unwrap();
    let names: Vec<EventKind> = history.iter().map(|e| e.event).collect();
    assert_eq!(names[0], EventKind::Proposed);
    let repeated = names.len() - 1;
    assert!(
        (1..=windows).contains(&repeated) && names[1..].iter().all(|e| *e == EventKind::Repeated),
        "{names:?} over {took:?}"
    );
    assert!(events_after - events_before <= 1 + repeated as i64);
    assert_eq!(history[1].note.as_deref(), Some("hits: 2"));
    // The proposal is still one undecided proposal and decides as usual.
    store
        .decide(&id, Verdict::Approve, &Actor::cli("op"), None, None)
        .await
        .unwrap();
}
on_both!(a_thousand_identical_repeats_count_every_hit_but_write_one_event);

async fn cooldown_hits_are_counted_but_coalesced_in_the_trail(db: TestDb) {
    let store = db
        .open_limits(ProposalLimits {
            reject_cooldown: Some(std::time::Duration::from_secs(600)),
            ..ProposalLimits::default()
        })
        .await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let id = created(&store, egress(&b, "no.example")).await;
    store
        .decide(&id, Verdict::Reject, &Actor::cli("op"), Some("no"), None)
        .await
        .unwrap();
    for _ in 0..300 {
        assert!(matches!(
            store.propose(egress(&b, "no.example")).await.unwrap(),
            Proposed::AutoRejected(_)
        ));
    }
    let (p, history) = store.show(&id).await.unwrap();
    assert_eq!(p.hits, 301);
    let auto = history
        .iter()
        .filter(|e| e.event == EventKind::AutoRejected)
        .count();
    assert_eq!(auto, 1, "{history:?}");
}
on_both!(cooldown_hits_are_counted_but_coalesced_in_the_trail);

async fn repeats_of_different_proposals_are_each_recorded(db: TestDb) {
    let store = db.open().await;
    let a = bottle(&store, "alpha", "127.0.0.1").await;
    let b = bottle(&store, "beta", "127.0.0.2").await;
    let ids = [
        created(&store, egress(&a, "one.example")).await,
        created(&store, egress(&a, "two.example")).await,
        created(&store, egress(&b, "one.example")).await,
    ];
    for _ in 0..3 {
        store.propose(egress(&a, "one.example")).await.unwrap();
        store.propose(egress(&a, "two.example")).await.unwrap();
        store.propose(egress(&b, "one.example")).await.unwrap();
    }
    for id in &ids {
        let (p, history) = store.show(id).await.unwrap();
        assert_eq!(p.hits, 4);
        let repeated = history
            .iter()
            .filter(|e| e.event == EventKind::Repeated)
            .count();
        assert_eq!(repeated, 1, "one per proposal, not one per bottle");
    }
}
on_both!(repeats_of_different_proposals_are_each_recorded);

async fn the_hook_position_is_durable_and_never_moves_back(db: TestDb) {
    let store = db.open().await;
    assert_eq!(
        store.hook_position().await.unwrap(),
        None,
        "hooks never ran"
    );
    store.advance_hook_position(5).await.unwrap();
    store.advance_hook_position(3).await.unwrap();
    assert_eq!(store.hook_position().await.unwrap(), Some(5));
    store.advance_hook_position(9).await.unwrap();
    store.close().await;
    // Another process (a restarted server) reads what was recorded.
    let again = db.open().await;
    assert_eq!(again.hook_position().await.unwrap(), Some(9));
}
on_both!(the_hook_position_is_durable_and_never_moves_back);

async fn a_bottles_events_are_read_back_in_a_window(db: TestDb) {
    let store = db.open().await;
    let a = bottle(&store, "alpha", "127.0.0.1").await;
    let b = bottle(&store, "beta", "127.0.0.2").await;
    for host in ["one.example", "two.example", "three.example"] {
        created(&store, egress(&a, host)).await;
        created(&store, egress(&b, host)).await;
    }
    let end = store.last_seq().await.unwrap();
    let all = store.events_after(0, 100).await.unwrap();
    let of_a: Vec<i64> = all
        .iter()
        .filter(|e| e.bottle_id == Some(a.id))
        .map(|e| e.seq)
        .collect();
    let got: Vec<i64> = store
        .bottle_events_between(Some(a.id), of_a[0], end, 2)
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(got, of_a[1..3]);
    let got = store
        .bottle_events_between(Some(a.id), of_a[1], of_a[2], 10)
        .await
        .unwrap();
    assert_eq!(
        got.len(),
        1,
        "the window's end is included, nothing past it"
    );
}
on_both!(a_bottles_events_are_read_back_in_a_window);
