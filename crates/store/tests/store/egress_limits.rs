//! Egress grants limited to `methods` and a `path_prefix`: they count only for a request
//! seen and fitting them, a connection they alone cover is named for interception, a path
//! normalising refuses is refused, modifying them wider is flagged; and the decision from
//! memory is exactly as fresh as a read (another store's commit is seen at once, and a
//! grant past its end is not used though nothing was committed).

use std::time::Duration;

use crate::common::*;
use serde_json::{Value, json};
use supervise_store::{
    Actor, BottleRef, DenyReason, EgressDecision, Flag, HttpRequest, NewProposal, Store, Verdict,
};

async fn grant(
    store: &Store,
    b: &supervise_store::Bottle,
    change: Value,
    d: Option<Duration>,
) -> String {
    let id = created(
        store,
        NewProposal {
            change,
            ..egress(b, "pypi.org")
        },
    )
    .await;
    let p = store
        .decide(&id, Verdict::Approve, &Actor::cli("op"), None, d)
        .await
        .unwrap();
    p.decision.unwrap().grant_id.unwrap().to_string()
}

async fn ask(store: &Store, req: Option<(&str, &str)>) -> EgressDecision {
    store
        .egress_request_decision(
            BottleRef::Slug("a"),
            "pypi.org",
            443,
            req.map(|(method, path)| HttpRequest { method, path }),
        )
        .await
        .unwrap()
}

fn reason(d: &EgressDecision) -> DenyReason {
    match d {
        EgressDecision::Denied { reason, .. } => reason.clone(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

async fn limited_grants_count_only_for_a_request_that_fits(db: TestDb) {
    let store = db.open().await;
    let a = bottle(&store, "a", "127.0.0.2").await;
    let limited = grant(
        &store,
        &a,
        json!({"host": "pypi.org", "port": 443, "methods": ["get", "HEAD"], "path_prefix": "/simple/"}),
        None,
    )
    .await;
    match reason(&ask(&store, None).await) {
        DenyReason::RequestUnseen(g) => assert_eq!(g, limited.as_str()),
        other => panic!("a CONNECT (or Squid) never passes a limited grant: {other:?}"),
    }
    assert!(
        ask(&store, Some(("GET", "/simple/x?y=/../../")))
            .await
            .is_allowed()
    );
    assert!(ask(&store, Some(("head", "/simple/"))).await.is_allowed());
    assert_eq!(
        reason(&ask(&store, Some(("POST", "/simple/x"))).await),
        DenyReason::OutsideLimits
    );
    assert_eq!(
        reason(&ask(&store, Some(("GET", "/other"))).await),
        DenyReason::OutsideLimits
    );
    assert_eq!(
        reason(&ask(&store, Some(("GET", "/simple/%2e%2e/other"))).await),
        DenyReason::OutsideLimits,
        "dot segments are removed before the prefix is compared"
    );
    for bad in [
        "/simple/a%2fb",
        "/simple/a%5Cb",
        "/simple/../../x",
        "/simple/a\\b",
    ] {
        assert!(
            matches!(
                reason(&ask(&store, Some(("GET", bad))).await),
                DenyReason::InvalidRequest(_)
            ),
            "{bad}"
        );
    }
    // An unlimited grant beside it lets the connection itself through.
    let whole = grant(&store, &a, json!({"host": "pypi.org", "port": 443}), None).await;
    match ask(&store, None).await {
        EgressDecision::Allowed { grant, .. } => assert_eq!(grant.id, whole.as_str()),
        other => panic!("{other:?}"),
    }
}
on_both!(limited_grants_count_only_for_a_request_that_fits);

async fn modifying_limits_wider_is_flagged_widened(db: TestDb) {
    let store = db.open().await;
    let a = bottle(&store, "a", "127.0.0.2").await;
    let flags_after = |patch: Value| {
        let store = store.clone();
        let a = a.clone();
        async move {
            let id = created(
                &store,
                NewProposal {
                    change: json!({"host": "pypi.org", "port": 443, "methods": ["GET"], "path_prefix": "/simple/"}),
                    ..egress(&a, "pypi.org")
                },
            )
            .await;
            let p = store
                .decide(
                    &id,
                    Verdict::Modify(patch.as_object().unwrap().clone()),
                    &Actor::cli("op"),
                    None,
                    None,
                )
                .await
                .unwrap();
            let grant = p.decision.unwrap().grant_id.unwrap();
            store
                .revoke(grant.as_ref(), &Actor::cli("op"))
                .await
                .unwrap();
            p.flags
        }
    };
    let narrower = flags_after(json!({"path_prefix": "/simple/numpy/"})).await;
    assert!(!narrower.contains(&Flag::Widened), "{narrower:?}");
    let every_method = flags_after(json!({"methods": null})).await;
    assert!(every_method.contains(&Flag::Widened), "{every_method:?}");
    let other_path = flags_after(json!({"path_prefix": "/"})).await;
    assert!(other_path.contains(&Flag::Widened), "{other_path:?}");
}
on_both!(modifying_limits_wider_is_flagged_widened);

async fn a_decision_from_memory_is_as_fresh_as_a_read(db: TestDb) {
    let helper = db.open().await;
    let operator = db.open().await;
    let a = bottle(&operator, "a", "127.0.0.2").await;
    let asked = |store: &Store| {
        let store = store.clone();
        async move {
            store
                .egress_decision(BottleRef::Ip("127.0.0.2".parse().unwrap()), "pypi.org", 443)
                .await
                .unwrap()
        }
    };
    for _ in 0..3 {
        assert!(!asked(&helper).await.is_allowed());
    }
    // Another store (another process, for SQLite's signal) commits: the next lookup sees it.
    let g = grant(
        &operator,
        &a,
        json!({"host": "pypi.org", "port": 443}),
        None,
    )
    .await;
    assert!(asked(&helper).await.is_allowed());
    assert!(asked(&helper).await.is_allowed());
    operator.revoke(&g, &Actor::cli("op")).await.unwrap();
    assert!(!asked(&helper).await.is_allowed());
    // A grant's end applies at its time, with nothing committed.
    grant(
        &operator,
        &a,
        json!({"host": "pypi.org", "port": 443}),
        Some(Duration::from_secs(1)),
    )
    .await;
    assert!(asked(&helper).await.is_allowed());
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(!asked(&helper).await.is_allowed());
}
on_both!(a_decision_from_memory_is_as_fresh_as_a_read);

/// Lookups answered against one version read (a proxy's batch of lines) see every commit
/// made before that read, by another store, however many lookups they answer, and give
/// each the answer a lookup of its own would give.
async fn lookups_begun_after_a_commit_see_it_for_every_line(db: TestDb) {
    let helper = db.open().await;
    let operator = db.open().await;
    let a = bottle(&operator, "a", "127.0.0.2").await;
    let ip = BottleRef::Ip("127.0.0.2".parse().unwrap());
    let get = Some(HttpRequest {
        method: "GET",
        path: "/simple/x/",
    });
    let post = Some(HttpRequest {
        method: "POST",
        path: "/simple/x/",
    });
    let batch = |store: &Store| {
        let store = store.clone();
        async move {
            let lookups = store.egress_lookups().await;
            let mut answers = Vec::new();
            for request in [None, get, post, get] {
                let d = lookups
                    .decision(ip, "pypi.org", 443, request)
                    .await
                    .unwrap();
                let alone = store
                    .egress_request_decision(ip, "pypi.org", 443, request)
                    .await
                    .unwrap();
                assert_eq!(d, alone, "the answer a lookup of its own gets");
                answers.push(d.is_allowed());
            }
            answers
        }
    };
    assert_eq!(batch(&helper).await, [false; 4]);
    let g = grant(
        &operator,
        &a,
        json!({"host": "pypi.org", "port": 443, "methods": ["GET"]}),
        None,
    )
    .await;
    assert_eq!(batch(&helper).await, [false, true, false, true]);
    operator.revoke(&g, &Actor::cli("op")).await.unwrap();
    assert_eq!(batch(&helper).await, [false; 4]);
}
on_both!(lookups_begun_after_a_commit_see_it_for_every_line);
