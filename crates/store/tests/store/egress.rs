//! The one egress decision: exact and wildcard grants, ports, ends (revoked, expired, bottle
//! removed), other bottles, normalisation, the undecided proposal named on a refusal, the
//! `observed` proposals the proxy files, and `grant-used` at most once a minute per grant.

use std::time::Duration;

use crate::common::*;
use serde_json::json;
use supervise_store::{
    Actor, BottleRef, DenyReason, EgressDecision, EventKind, Flag, NewProposal, Proposed, Store,
    Verdict,
};

async fn grant(
    store: &Store,
    b: &supervise_store::Bottle,
    host: &str,
    port: u16,
    d: Option<Duration>,
) -> String {
    let id = created(
        store,
        NewProposal {
            change: json!({ "host": host, "port": port }),
            ..egress(b, host)
        },
    )
    .await;
    let p = store
        .decide(&id, Verdict::Approve, &Actor::cli("op"), None, d)
        .await
        .unwrap();
    p.decision.unwrap().grant_id.unwrap().to_string()
}

async fn ask(store: &Store, slug: &str, host: &str, port: u16) -> EgressDecision {
    store
        .egress_decision(BottleRef::Slug(slug), host, port)
        .await
        .unwrap()
}

fn reason(d: &EgressDecision) -> DenyReason {
    match d {
        EgressDecision::Denied { reason, .. } => reason.clone(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

async fn exact_and_wildcard_grants_by_port_and_bottle(db: TestDb) {
    let store = db.open().await;
    let a = bottle(&store, "a", "127.0.0.2").await;
    bottle(&store, "b", "127.0.0.3").await;
    let exact = grant(&store, &a, "pypi.org", 443, None).await;
    let wild = grant(&store, &a, "*.example.test", 443, None).await;

    match ask(&store, "a", "PyPI.org.", 443).await {
        EgressDecision::Allowed { grant, host, .. } => {
            assert_eq!(grant.id, exact.as_str());
            assert_eq!(host, "pypi.org");
        }
        other => panic!("{other:?}"),
    }
    match store
        .egress_decision(
            BottleRef::Ip("127.0.0.2".parse().unwrap()),
            "a.example.test",
            443,
        )
        .await
        .unwrap()
    {
        EgressDecision::Allowed { grant, .. } => assert_eq!(grant.id, wild.as_str()),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        reason(&ask(&store, "a", "example.test", 443).await),
        DenyReason::NoGrant
    );
    assert_eq!(
        reason(&ask(&store, "a", "pypi.org", 80).await),
        DenyReason::NoGrant
    );
    assert_eq!(
        reason(&ask(&store, "b", "pypi.org", 443).await),
        DenyReason::NoGrant
    );
    assert_eq!(
        reason(&ask(&store, "nobody", "pypi.org", 443).await),
        DenyReason::UnknownBottle
    );
    assert!(matches!(
        reason(&ask(&store, "a", "*.example.test", 443).await),
        DenyReason::InvalidDestination(_)
    ));
    assert!(matches!(
        reason(&ask(&store, "a", "https://pypi.org", 443).await),
        DenyReason::InvalidDestination(_)
    ));
    let mapped = store
        .egress_decision(
            BottleRef::Ip("::ffff:127.0.0.2".parse().unwrap()),
            "pypi.org",
            443,
        )
        .await
        .unwrap();
    assert!(
        mapped.is_allowed(),
        "an IPv4-mapped source is the IPv4 bottle"
    );
}
on_both!(exact_and_wildcard_grants_by_port_and_bottle);

async fn ended_grants_never_count(db: TestDb) {
    let store = db.open().await;
    let a = bottle(&store, "a", "127.0.0.2").await;
    let g = grant(&store, &a, "pypi.org", 443, None).await;
    assert!(ask(&store, "a", "pypi.org", 443).await.is_allowed());
    store.revoke(&g, &Actor::cli("op")).await.unwrap();
    assert_eq!(
        reason(&ask(&store, "a", "pypi.org", 443).await),
        DenyReason::NoGrant
    );

    grant(
        &store,
        &a,
        "short.test",
        443,
        // Long enough to be asked about on a loaded machine, short enough to wait out.
        Some(Duration::from_millis(1500)),
    )
    .await;
    assert!(ask(&store, "a", "short.test", 443).await.is_allowed());
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert_eq!(
        reason(&ask(&store, "a", "short.test", 443).await),
        DenyReason::NoGrant,
        "expired, swept or not"
    );

    grant(&store, &a, "kept.test", 443, None).await;
    store.remove_bottle("a", &Actor::cli("op")).await.unwrap();
    assert_eq!(
        reason(&ask(&store, "a", "kept.test", 443).await),
        DenyReason::UnknownBottle
    );
}
on_both!(ended_grants_never_count);

async fn a_refusal_names_the_undecided_proposal_asking_for_it(db: TestDb) {
    let store = db.open().await;
    let a = bottle(&store, "a", "127.0.0.2").await;
    let wild = created(&store, egress(&a, "*.example.test")).await;
    match ask(&store, "a", "a.example.test", 443).await {
        EgressDecision::Denied {
            proposal_id,
            reason,
            ..
        } => {
            assert_eq!(reason, DenyReason::NoGrant);
            assert_eq!(proposal_id.unwrap(), wild.as_str());
        }
        other => panic!("{other:?}"),
    }
    let exact = created(&store, egress(&a, "a.example.test")).await;
    match ask(&store, "a", "a.example.test", 443).await {
        EgressDecision::Denied { proposal_id, .. } => {
            assert_eq!(proposal_id.unwrap(), exact.as_str())
        }
        other => panic!("{other:?}"),
    }
}
on_both!(a_refusal_names_the_undecided_proposal_asking_for_it);

async fn observed_proposals_are_flagged_coalesced_and_never_for_the_host_itself(db: TestDb) {
    let store = db.open().await;
    let a = bottle(&store, "a", "127.0.0.2").await;
    let first = store
        .propose_observed(&a, "files.pythonhosted.org", 443)
        .await
        .unwrap();
    let Some(Proposed::Created(p)) = first else {
        panic!("{first:?}")
    };
    assert!(p.flags.contains(&Flag::Observed), "{:?}", p.flags);
    assert!(
        p.justification.contains("proxy refused"),
        "{}",
        p.justification
    );
    let again = store
        .propose_observed(&a, "files.pythonhosted.org", 443)
        .await
        .unwrap();
    match again {
        Some(Proposed::Repeated(r)) => {
            assert_eq!(r.id, p.id);
            assert_eq!(r.hits, 2);
        }
        other => panic!("{other:?}"),
    }
    for host in [
        "169.254.169.254",
        "metadata.google.internal",
        "localhost",
        "127.0.0.1",
        "fe80::1",
    ] {
        assert!(
            store
                .propose_observed(&a, host, 80)
                .await
                .unwrap()
                .is_none(),
            "{host}"
        );
    }
    let (shown, _) = store.show(&p.id).await.unwrap();
    assert!(
        shown.flags.contains(&Flag::Observed),
        "the flag survives the file"
    );
}
on_both!(observed_proposals_are_flagged_coalesced_and_never_for_the_host_itself);

async fn grant_use_is_recorded_at_most_once_a_minute_and_read_by_policy(db: TestDb) {
    let store = db.open().await;
    let a = bottle(&store, "a", "127.0.0.2").await;
    grant(&store, &a, "*.example.test", 443, None).await;
    assert!(
        store.grants_in_force("a").await.unwrap()[0]
            .last_used_at
            .is_none()
    );
    let EgressDecision::Allowed { bottle, grant, .. } =
        ask(&store, "a", "x.example.test", 443).await
    else {
        panic!()
    };
    assert!(
        store
            .record_grant_use(&bottle, &grant, "x.example.test", 443)
            .await
            .unwrap()
    );
    assert!(
        !store
            .record_grant_use(&bottle, &grant, "y.example.test", 443)
            .await
            .unwrap()
    );
    let used: Vec<_> = store
        .audit(Some("a"))
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.event == EventKind::GrantUsed)
        .collect();
    assert_eq!(used.len(), 1);
    assert_eq!(used[0].note.as_deref(), Some("x.example.test:443"));
    assert_eq!(used[0].grant_id.as_ref().unwrap(), &grant.id);
    let policy = store.grants_in_force("a").await.unwrap();
    assert_eq!(policy[0].last_used_at.as_ref(), Some(&used[0].at));
    let all = store.policy_all().await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].1[0].last_used_at.as_ref(), Some(&used[0].at));
}
on_both!(grant_use_is_recorded_at_most_once_a_minute_and_read_by_policy);
