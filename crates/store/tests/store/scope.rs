//! What an actor limited to some bottles learns about the others, and how an operator names
//! a bottle across hosts: an id prefix resolves among the actor's own bottles' proposals
//! for a read as for a decision; events of no bottle are for an admin of every bottle; a
//! bottle's name is `SLUG` when one host has it, else `HOST/SLUG`.

use supervise_store::{
    Actor, BottleRef, EgressDecision, EventKind, ProposalLimits, Role, Store, StoreError,
    StoreOptions, Verdict,
};

use crate::common::{TestDb, bottle, created, egress};

fn scoped(name: &str, role: Role, globs: &[&str]) -> Actor {
    Actor {
        bottles: globs.iter().map(|g| g.to_string()).collect(),
        role,
        ..Actor::cli(name)
    }
}

async fn a_scoped_actors_prefix_resolves_among_its_own_bottles(db: TestDb) {
    let store = db.open().await;
    let a = bottle(&store, "team-a-x", "127.0.0.2").await;
    let b = bottle(&store, "team-b-x", "127.0.0.3").await;
    let mine = created(&store, egress(&a, "a.example")).await;
    let theirs = created(&store, egress(&b, "b.example")).await;
    let shared: String = mine
        .chars()
        .zip(theirs.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect();
    assert!(
        !shared.is_empty(),
        "UUIDv7 ids filed together share a prefix"
    );
    let amy = scoped("amy", Role::Viewer, &["team-a-*"]);

    // The prefix names amy's one proposal, whatever team-b filed.
    let (p, history) = store.show_for(&shared, &amy).await.unwrap();
    assert_eq!(p.id, mine.as_str());
    assert_eq!(history[0].event, EventKind::Proposed);
    // Another bottle's proposal is not found, by its full id or its own prefix.
    for id in [theirs.as_str(), &theirs[..shared.len() + 1]] {
        assert!(
            matches!(
                store.show_for(id, &amy).await,
                Err(StoreError::ProposalNotFound(_))
            ),
            "{id}"
        );
    }
    // Seeing every bottle, the same prefix is ambiguous, as a decision finds it.
    assert!(matches!(
        store.show(&shared).await,
        Err(StoreError::AmbiguousId(_))
    ));
    assert!(matches!(
        store
            .decide(&shared, Verdict::Reject, &Actor::cli("root"), None, None)
            .await,
        Err(StoreError::AmbiguousId(_))
    ));
}

on_both!(a_scoped_actors_prefix_resolves_among_its_own_bottles);

async fn events_of_no_bottle_are_for_an_admin_of_every_bottle(db: TestDb) {
    let store = db.open().await;
    let a = bottle(&store, "team-a-x", "127.0.0.2").await;
    created(&store, egress(&a, "a.example")).await;
    store
        .add_operator(
            "zoe",
            Role::Viewer,
            &["team-z-*".into()],
            &Actor::cli("root"),
        )
        .await
        .unwrap();
    let trail = store.audit(None).await.unwrap();
    let seen = |actor: &Actor| -> Vec<EventKind> {
        trail
            .iter()
            .filter(|e| actor.sees_event(e))
            .map(|e| e.event)
            .collect()
    };
    let bottle_events = [EventKind::BottleAdded, EventKind::Proposed];
    // A scoped admin manages its bottles, not operators: their records are not its to read.
    assert_eq!(
        seen(&scoped("sam", Role::Admin, &["team-a-*"])),
        bottle_events
    );
    assert_eq!(
        seen(&scoped("vic", Role::Viewer, &["team-a-*"])),
        bottle_events
    );
    assert_eq!(seen(&scoped("vic", Role::Viewer, &[])), bottle_events);
    assert_eq!(
        seen(&Actor::cli("root")),
        [
            EventKind::BottleAdded,
            EventKind::Proposed,
            EventKind::OperatorAdded
        ]
    );
}

on_both!(events_of_no_bottle_are_for_an_admin_of_every_bottle);

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

async fn an_operator_names_any_hosts_bottle_from_any_host(db: TestDb) {
    let a = on_host(&db, "host-a").await;
    let b = on_host(&db, "host-b").await;
    let laptop = on_host(&db, "laptop").await;
    let ba = bottle(&a, "demo", "10.0.0.2").await;
    let bb = bottle(&b, "demo", "10.0.0.2").await;
    let only = bottle(&b, "only-b", "10.0.0.3").await;

    // Every host's bottles, by host then slug, or one host's.
    let all = laptop.list_bottles_on(None).await.unwrap();
    assert_eq!(all, vec![ba.clone(), bb.clone(), only.clone()]);
    assert_eq!(
        laptop.list_bottles_on(Some("host-b")).await.unwrap(),
        vec![bb.clone(), only.clone()]
    );
    assert!(laptop.list_bottles().await.unwrap().is_empty());

    // A slug one host has names it from anywhere; a slug two hosts have needs its host.
    assert_eq!(laptop.named_bottle("only-b").await.unwrap(), only);
    assert_eq!(laptop.named_bottle("host-a/demo").await.unwrap(), ba);
    let err = laptop.named_bottle("demo").await.unwrap_err();
    assert!(
        matches!(&err, StoreError::AmbiguousBottle { hosts, .. } if hosts == "host-a, host-b"),
        "{err:?}"
    );
    assert!(err.to_string().contains("HOST/SLUG"), "{err}");
    assert!(matches!(
        laptop.named_bottle("host-a/only-b").await,
        Err(StoreError::BottleNotFound(_))
    ));
    assert_eq!(
        laptop.slug_hosts("demo").await.unwrap(),
        ["host-a", "host-b"]
    );
    assert_eq!(laptop.slug_hosts("only-b").await.unwrap(), ["host-b"]);

    // The egress decision by name spans hosts the same way; by address it is this host's.
    let by_name = laptop
        .egress_decision(BottleRef::Slug("host-b/demo"), "pypi.org", 443)
        .await
        .unwrap();
    assert!(
        matches!(&by_name, EgressDecision::Denied { bottle: Some(found), .. } if **found == bb),
        "{by_name:?}"
    );
    assert!(matches!(
        laptop
            .egress_decision(BottleRef::Slug("demo"), "pypi.org", 443)
            .await,
        Err(StoreError::AmbiguousBottle { .. })
    ));
    let by_ip = a
        .egress_decision(BottleRef::Ip("10.0.0.2".parse().unwrap()), "pypi.org", 443)
        .await
        .unwrap();
    assert!(
        matches!(&by_ip, EgressDecision::Denied { bottle: Some(found), .. } if **found == ba),
        "{by_ip:?}"
    );
}

on_both!(an_operator_names_any_hosts_bottle_from_any_host);

async fn a_scoped_prefix_is_resolved_past_many_proposals_of_other_bottles(db: TestDb) {
    let store = db
        .open_limits(ProposalLimits {
            max_pending_per_bottle: None,
            ..ProposalLimits::default()
        })
        .await;
    let a = bottle(&store, "team-a-x", "127.0.0.2").await;
    let b = bottle(&store, "team-b-x", "127.0.0.3").await;
    // More of team-b's proposals than one page of the lookup, then amy's, last in id order.
    let filed = store
        .propose_many(
            (0..300)
                .map(|i| egress(&b, &format!("h{i}.example")))
                .collect(),
        )
        .await
        .unwrap();
    let first: String = filed[0].as_ref().unwrap().proposal().id.clone().into();
    let mine = created(&store, egress(&a, "a.example")).await;
    let shared: String = first
        .chars()
        .zip(mine.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect();
    let amy = scoped("amy", Role::Viewer, &["team-a-*"]);
    let (p, _) = store.show_for(&shared, &amy).await.unwrap();
    assert_eq!(p.id, mine.as_str());
    assert!(matches!(
        store.show(&shared).await,
        Err(StoreError::AmbiguousId(_))
    ));
}

on_both!(a_scoped_prefix_is_resolved_past_many_proposals_of_other_bottles);
