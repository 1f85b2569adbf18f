//! Filing a batch (the server's group commit) gives exactly what filing the same items one
//! by one gives: the per-item results, the rows, the tasks and the events in the same
//! order, whatever the batch mixes (fresh items, repeats within the batch and of earlier
//! proposals, a cooldown hit, the cap reached mid-batch, a removed bottle, an invalid item,
//! items asked as tasks, an identical proposal past its expiry).

use std::time::Duration;

use serde_json::{Value, json};
use supervise_store::{
    Actor, Backend, Bottle, NewProposal, ProposalLimits, Proposed, Store, StoreResult, Task,
    Verdict,
};

use crate::common::*;

/// Another fresh database of the same backend.
async fn another(db: &TestDb) -> TestDb {
    match db.backend {
        Backend::Sqlite => TestDb::new(),
        Backend::Postgres => TestDb::postgres().await.expect("PostgreSQL is running"),
    }
}

/// One item's result, without what differs between two stores (ids, times).
fn shown(r: &StoreResult<(Proposed, Option<Task>)>) -> Value {
    match r {
        Err(e) => json!({ "error": e.to_string() }),
        Ok((filed, task)) => {
            let p = filed.proposal();
            let how = match filed {
                Proposed::Created(_) => "created",
                Proposed::Repeated(_) => "repeated",
                Proposed::AutoRejected(_) => "auto-rejected",
                Proposed::Ruled(_) => "ruled",
            };
            json!({
                "how": how,
                "bottle": p.bottle,
                "kind": p.kind.as_str(),
                "change": p.change,
                "hits": p.hits,
                "status": p.status.as_str(),
                "flags": format!("{:?}", p.flags),
                "expires": p.expires_at.is_some(),
                "task": task.as_ref().map(|t| {
                    assert_eq!(t.proposal_id, p.id, "the task is the proposal's");
                    json!({ "readable_until": t.readable_until == p.expires_at,
                            "cancelled": t.cancelled_at.is_some() })
                }),
            })
        }
    }
}

/// The proposals, tasks and events as rows, in creation (id) and `seq` order, naming each
/// proposal by its bottle and change instead of its id; and each bottle's kept pending
/// count beside the proposals actually waiting.
async fn tables(db: &TestDb) -> Value {
    let mut conn = db.raw().await;
    type ProposalRow = (String, String, String, String, String, i64, String, i32);
    let proposals: Vec<ProposalRow> = sqlx::query_as(
        "SELECT b.slug, p.kind, p.change_key, p.justification, p.status, p.hits, p.flags, \
             CASE WHEN p.expires_at IS NULL THEN 0 ELSE 1 END \
             FROM proposals p JOIN bottles b ON b.id = p.bottle_id ORDER BY p.id",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let tasks: Vec<(String, String, i32)> = sqlx::query_as(
        "SELECT b.slug, p.change_key, CASE WHEN t.readable_until = p.expires_at THEN 1 ELSE 0 END \
         FROM tasks t JOIN proposals p ON p.id = t.proposal_id \
         JOIN bottles b ON b.id = t.bottle_id ORDER BY p.id",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    type EventRow = (
        String,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let events: Vec<EventRow> = sqlx::query_as(
        "SELECT e.event, e.actor, b.slug, e.kind, e.change, e.note, p.change_key \
         FROM events e LEFT JOIN bottles b ON b.id = e.bottle_id \
         LEFT JOIN proposals p ON p.id = e.proposal_id ORDER BY e.seq",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let counts: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT b.slug, b.pending_count, \
         (SELECT COUNT(*) FROM proposals p WHERE p.bottle_id = b.id AND p.status = 'pending') \
         FROM bottles b ORDER BY b.id",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    for (slug, kept, actual) in &counts {
        assert_eq!(kept, actual, "{slug}: the kept count is what waits");
    }
    json!({
        "proposals": format!("{proposals:?}"),
        "tasks": format!("{tasks:?}"),
        "events": events.iter().map(|e| json!([e.0, e.1, e.2, e.3, e.4, e.5, e.6])).collect::<Vec<_>>(),
        "counts": format!("{counts:?}"),
    })
}

/// The same items filed into `store` as one batch, or one by one.
async fn file(
    store: &Store,
    items: Vec<(NewProposal, bool)>,
    one_by_one: bool,
) -> Vec<StoreResult<(Proposed, Option<Task>)>> {
    if !one_by_one {
        return store.propose_many_as(items).await.expect("the batch");
    }
    let mut out = Vec::new();
    for item in items {
        out.extend(store.propose_many_as(vec![item]).await.expect("one item"));
    }
    out
}

struct Mixed {
    a: Bottle,
    b: Bottle,
    gone: Bottle,
}

/// Bottle `a` with an undecided proposal (x.example) and a rejected one (r.example), `b`
/// with four undecided (one below its cap of five), and a removed bottle.
async fn mixed_setup(store: &Store) -> Mixed {
    let a = bottle(store, "a", "127.0.0.2").await;
    let b = bottle(store, "b", "127.0.0.3").await;
    let gone = bottle(store, "gone", "127.0.0.4").await;
    created(store, egress(&a, "x.example")).await;
    let r = created(store, egress(&a, "r.example")).await;
    store
        .decide(
            &r,
            Verdict::Reject,
            &Actor::cli("olivia"),
            Some("not that one"),
            None,
        )
        .await
        .unwrap();
    for host in ["b1.example", "b2.example", "b3.example", "b4.example"] {
        created(store, egress(&b, host)).await;
    }
    store
        .remove_bottle("gone", &Actor::cli("olivia"))
        .await
        .unwrap();
    Mixed { a, b, gone }
}

fn mixed_items(m: &Mixed) -> Vec<(NewProposal, bool)> {
    let invalid = NewProposal {
        change: json!({ "host": "" }),
        ..egress(&m.a, "unused.example")
    };
    vec![
        (egress(&m.a, "one.example"), false),
        (egress(&m.a, "one.example"), false),
        (egress(&m.a, "x.example"), false),
        (egress(&m.a, "r.example"), false),
        (egress(&m.b, "b5.example"), false),
        (egress(&m.b, "b6.example"), false),
        (egress(&m.gone, "gone.example"), false),
        (invalid, false),
        (egress(&m.a, "two.example"), true),
        (egress(&m.a, "x.example"), true),
        (git_push(&m.a, "refs/heads/main"), true),
        (egress(&m.b, "b1.example"), false),
        (egress(&m.a, "three.example"), false),
        (egress(&m.a, "one.example"), true),
        (egress(&m.b, "b6.example"), true),
    ]
}

fn mixed_limits() -> ProposalLimits {
    ProposalLimits {
        max_pending_per_bottle: Some(5),
        ..ProposalLimits::default()
    }
}

async fn a_mixed_batch_files_as_one_by_one_does(db: TestDb) {
    let other = another(&db).await;
    let mut seen = Vec::new();
    for (db, one_by_one) in [(&db, false), (&other, true)] {
        let store = db.open_limits(mixed_limits()).await;
        let m = mixed_setup(&store).await;
        let results = file(&store, mixed_items(&m), one_by_one).await;
        let results: Vec<Value> = results.iter().map(shown).collect();
        seen.push((results, tables(db).await));
    }
    let (batch, tables_batch) = &seen[0];
    let (single, tables_single) = &seen[1];
    let how: Vec<&str> = batch
        .iter()
        .map(|r| r["how"].as_str().unwrap_or("error"))
        .collect();
    assert_eq!(
        how,
        [
            "created",
            "repeated",
            "repeated",
            "auto-rejected",
            "created",
            "error",
            "error",
            "error",
            "created",
            "repeated",
            "created",
            "repeated",
            "created",
            "repeated",
            "error",
        ]
    );
    assert_eq!(batch[13]["hits"], 3, "one.example asked three times");
    // The batch's own events, in the order of its items (a repeat within a minute of the
    // last `repeated` event of its proposal writes none).
    let events = tables_batch["events"].as_array().unwrap();
    let tail: Vec<(String, String, String, String)> = events[events.len() - 9..]
        .iter()
        .map(|e| {
            let change: Value = serde_json::from_str(e[4].as_str().unwrap()).unwrap();
            let what = change
                .get("host")
                .or_else(|| change.get("ref"))
                .unwrap()
                .as_str()
                .unwrap()
                .to_string();
            let s = |i: usize| e[i].as_str().unwrap_or("").to_string();
            (s(0), s(1), what, s(5))
        })
        .collect();
    let ev = |e: &str, actor: &str, what: &str, note: &str| {
        (
            e.to_string(),
            actor.to_string(),
            what.to_string(),
            note.to_string(),
        )
    };
    assert_eq!(
        tail,
        [
            ev(
                "proposed",
                "bottle:a",
                "one.example",
                "need one.example for the build"
            ),
            ev("repeated", "bottle:a", "one.example", "hits: 2"),
            ev("repeated", "bottle:a", "x.example", "hits: 2"),
            ev("auto-rejected", "system", "r.example", "not that one"),
            ev(
                "proposed",
                "bottle:b",
                "b5.example",
                "need b5.example for the build"
            ),
            ev(
                "proposed",
                "bottle:a",
                "two.example",
                "need two.example for the build"
            ),
            ev("proposed", "bottle:a", "refs/heads/main", "push my branch"),
            ev("repeated", "bottle:b", "b1.example", "hits: 2"),
            ev(
                "proposed",
                "bottle:a",
                "three.example",
                "need three.example for the build"
            ),
        ]
    );
    for (i, (x, y)) in batch.iter().zip(single).enumerate() {
        assert_eq!(
            x, y,
            "item {i}: the batch's result is the one-by-one result"
        );
    }
    assert_eq!(tables_batch, tables_single);
}
on_both!(a_mixed_batch_files_as_one_by_one_does);

/// Fresh items only (the common case), more than one chunk of every size and more than
/// one part of 64, over several bottles, some as tasks.
async fn a_large_fresh_batch_files_as_one_by_one_does(db: TestDb) {
    let other = another(&db).await;
    let mut seen = Vec::new();
    for (db, one_by_one) in [(&db, false), (&other, true)] {
        let store = db.open().await;
        let mut bottles = Vec::new();
        for i in 0..5 {
            bottles.push(bottle(&store, &format!("b{i}"), &format!("127.0.1.{i}")).await);
        }
        let items: Vec<(NewProposal, bool)> = (0..90)
            .map(|i| {
                let b = &bottles[i % bottles.len()];
                (egress(b, &format!("h{i}.example")), i % 7 == 0)
            })
            .collect();
        let results = file(&store, items, one_by_one).await;
        assert!(
            results
                .iter()
                .all(|r| matches!(r, Ok((Proposed::Created(_), _)))),
            "every item is fresh"
        );
        let results: Vec<Value> = results.iter().map(shown).collect();
        seen.push((results, tables(db).await));
    }
    assert_eq!(seen[0], seen[1]);
}
on_both!(a_large_fresh_batch_files_as_one_by_one_does);

/// An identical proposal past its expiry is expired and filed anew; at the cap, the
/// bottle's proposals past their time are expired to make room, counting the batch's own.
async fn expiry_within_a_batch_files_as_one_by_one_does(db: TestDb) {
    let limits = ProposalLimits {
        proposal_ttl: Some(Duration::from_secs(1)),
        reject_cooldown: None,
        max_pending_per_bottle: Some(2),
    };
    let other = another(&db).await;
    let mut seen = Vec::new();
    for (db, one_by_one) in [(&db, false), (&other, true)] {
        let store = db.open_limits(limits).await;
        let b = bottle(&store, "demo", "127.0.0.1").await;
        created(&store, egress(&b, "old.example")).await;
        created(&store, egress(&b, "older.example")).await;
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let items = vec![
            (egress(&b, "old.example"), false),
            (egress(&b, "new.example"), true),
            (egress(&b, "old.example"), false),
            (egress(&b, "newer.example"), false),
        ];
        let results = file(&store, items, one_by_one).await;
        let results: Vec<Value> = results.iter().map(shown).collect();
        seen.push((results, tables(db).await));
    }
    let how: Vec<&str> = seen[0]
        .0
        .iter()
        .map(|r| r["how"].as_str().unwrap_or("error"))
        .collect();
    assert_eq!(how, ["created", "created", "repeated", "error"]);
    assert_eq!(seen[0], seen[1]);
}
on_both!(expiry_within_a_batch_files_as_one_by_one_does);
