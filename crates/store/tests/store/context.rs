//! The context beside an egress proposal: the bottle's grants in force, the last decisions
//! on the same destination within the operator's scope, and the proxy's refusals, recorded
//! at most once a minute per bottle and destination.

use supervise_store::{Actor, ProposalLimits, Role, Verdict};

use crate::common::{TestDb, bottle, created, egress};

fn scoped(name: &str, globs: &[&str]) -> Actor {
    Actor {
        bottles: globs.iter().map(|g| g.to_string()).collect(),
        role: Role::Approver,
        ..Actor::cli(name)
    }
}

async fn the_context_shows_grants_decisions_in_scope_and_refusals(db: TestDb) {
    // No rejection cooldown: the same change is proposed again after a rejection.
    let store = db
        .open_limits(ProposalLimits {
            reject_cooldown: None,
            ..ProposalLimits::default()
        })
        .await;
    let a = bottle(&store, "team-a-x", "127.0.0.2").await;
    let b = bottle(&store, "team-b-x", "127.0.0.3").await;
    let root = Actor::cli("root");

    // team-a was granted another host; team-b was refused this one, with a note.
    let other = created(&store, egress(&a, "other.example")).await;
    store
        .decide(&other, Verdict::Approve, &root, None, None)
        .await
        .unwrap();
    let theirs = created(&store, egress(&b, "pkg.example")).await;
    store
        .decide(&theirs, Verdict::Reject, &root, Some("not for <b>"), None)
        .await
        .unwrap();
    let earlier = created(&store, egress(&a, "pkg.example")).await;
    store
        .decide(&earlier, Verdict::Reject, &root, Some("ask later"), None)
        .await
        .unwrap();
    let mine = created(&store, egress(&a, "pkg.example")).await;

    // The proxy refused team-a three times in a row: one write within the minute.
    assert!(store.record_refusal(&a, "pkg.example", 443).await.unwrap());
    assert!(!store.record_refusal(&a, "pkg.example", 443).await.unwrap());
    assert!(!store.record_refusal(&a, "pkg.example", 443).await.unwrap());
    // Another port is another destination.
    assert!(store.record_refusal(&a, "pkg.example", 8443).await.unwrap());

    let (_, ctx) = store.egress_context(&mine, &root).await.unwrap();
    let ctx = ctx.expect("an egress proposal has a context");
    assert_eq!((ctx.host.as_str(), ctx.port), ("pkg.example", 443));
    assert_eq!(ctx.grants.len(), 1);
    assert_eq!(ctx.grants[0].change["host"], "other.example");
    let seen: Vec<(&str, Option<&str>)> = ctx
        .decisions
        .iter()
        .map(|e| (e.bottle.as_deref().unwrap(), e.note.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            ("team-a-x", Some("ask later")),
            ("team-b-x", Some("not for <b>"))
        ],
        "newest first, other.example left out"
    );
    let refusals = ctx.refusals.expect("refusals recorded");
    assert_eq!(refusals.count, 1);
    assert!(refusals.first_seen.as_str() <= refusals.last_seen.as_str());

    // An operator of team-a only does not learn what was decided for team-b.
    let amy = scoped("amy", &["team-a-*"]);
    let (_, ctx) = store.egress_context(&mine, &amy).await.unwrap();
    let ctx = ctx.unwrap();
    assert_eq!(ctx.decisions.len(), 1);
    assert_eq!(ctx.decisions[0].bottle.as_deref(), Some("team-a-x"));

    // A proposal out of scope has no context for them at all.
    let bob = scoped("bob", &["team-b-*"]);
    assert!(store.egress_context(&mine, &bob).await.is_err());
}
on_both!(the_context_shows_grants_decisions_in_scope_and_refusals);

async fn a_refusal_a_minute_later_is_counted(db: TestDb) {
    let store = db.open().await;
    let a = bottle(&store, "team-a-x", "127.0.0.2").await;
    assert!(store.record_refusal(&a, "pkg.example", 443).await.unwrap());
    // Age the recorded refusal past the interval, as a minute passing would.
    let mut raw = db.raw().await;
    sqlx::query("UPDATE egress_refusals SET last_seen = '2000-01-01T00:00:00.000Z'")
        .execute(&mut raw)
        .await
        .unwrap();
    assert!(store.record_refusal(&a, "pkg.example", 443).await.unwrap());
    let mine = created(&store, egress(&a, "pkg.example")).await;
    let (_, ctx) = store
        .egress_context(&mine, &Actor::cli("root"))
        .await
        .unwrap();
    let refusals = ctx.unwrap().refusals.unwrap();
    assert_eq!(refusals.count, 2);
    assert!(refusals.first_seen.as_str() < refusals.last_seen.as_str());
}
on_both!(a_refusal_a_minute_later_is_counted);
