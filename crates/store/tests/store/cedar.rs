//! Operator rules in Cedar through the store: each outcome at filing time (forbid, permit
//! with its grant, shadow, quorum, never-automatic), with its provenance on the trail; a
//! gate push a rule decides; versions set, refused and picked up by another store on the
//! same database without a restart.

use serde_json::json;
use supervise_store::rules::Outcome;
use supervise_store::{
    Actor, EventKind, GateRef, Proposed, RefUpdate, Role, Status, StoreError, Via, rules_sha256,
};

use crate::common::*;

const RULES: &str = r#"
@id("pypi") @grant("1h")
permit (principal, action == Action::"egress", resource)
when { resource.host == "pypi.org" && resource.port == 443 };

@id("no-paste") @note("paste sites leak secrets; use the internal gist server")
forbid (principal, action == Action::"egress", resource)
when { resource.host like "*paste*" };

@id("watch-github") @mode("shadow")
permit (principal, action == Action::"egress", resource)
when { resource.host like "*github.com" };

@id("two-for-cdn") @quorum("2")
permit (principal, action == Action::"egress", resource)
when { resource.host like "*.cdn.example" };

@id("any-egress")
permit (principal, action == Action::"egress", resource)
when { resource.host like "169.254.*" };

@id("feature-pushes") @grant("10m")
permit (principal, action == Action::"git-push", resource)
when { resource.ref like "refs/heads/feature/*" && !resource.force };

@id("no-tags") @note("tags are cut by the release job")
forbid (principal, action == Action::"git-push", resource)
when { resource.ref like "refs/tags/*" };
"#;

fn admin() -> Actor {
    Actor::cli("alice")
}

async fn a_permit_approves_at_filing_with_its_grant_and_provenance(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let v = store.set_rules(RULES, &admin()).await.unwrap();
    assert_eq!(
        (v.version, v.sha256.as_str()),
        (1, rules_sha256(RULES).as_str())
    );
    let filed = store.propose(egress(&b, "pypi.org")).await.unwrap();
    let Proposed::Ruled(p) = filed else {
        panic!("expected a rule's decision, got {filed:?}")
    };
    assert_eq!(p.status, Status::Approved);
    let d = p.decision.as_ref().unwrap();
    assert_eq!(d.decided_by, "rules:pypi");
    assert_eq!(d.via, Some(Via::Rules));
    let left = d.grant_expires_at.as_ref().unwrap().seconds_until();
    assert!((3500..=3600).contains(&left), "grant for 1h, {left}s left");
    // Delivered on the same call: nothing is left for the agent to poll.
    assert!(p.archived_at.is_some());
    let (_, events) = store.show(&p.id).await.unwrap();
    let kinds: Vec<_> = events.iter().map(|e| e.event).collect();
    assert_eq!(
        kinds,
        [
            EventKind::Proposed,
            EventKind::Approved,
            EventKind::Delivered
        ]
    );
    let approved = &events[1];
    assert_eq!(approved.actor, "rules:pypi");
    assert_eq!(approved.via, Some(Via::Rules));
    assert!(approved.grant_id.is_some());
    let note = approved.note.as_deref().unwrap();
    assert_eq!(note, format!("rules v1 sha256:{}", v.sha256));
    // The grant is in force: the egress decision lets pypi.org through.
    let policy = store.grants_in_force("demo").await.unwrap();
    assert!(policy.iter().any(|g| g.change["host"] == "pypi.org"));
}
on_both!(a_permit_approves_at_filing_with_its_grant_and_provenance);

async fn a_forbid_rejects_at_once_with_its_note(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    store.set_rules(RULES, &admin()).await.unwrap();
    let Proposed::Ruled(p) = store.propose(egress(&b, "pastebin.com")).await.unwrap() else {
        panic!("expected a rule's decision")
    };
    assert_eq!(p.status, Status::Rejected);
    let d = p.decision.as_ref().unwrap();
    assert_eq!(d.decided_by, "rules:no-paste");
    assert_eq!(
        d.note.as_deref(),
        Some("paste sites leak secrets; use the internal gist server")
    );
    assert!(d.grant_id.is_none());
    let (_, events) = store.show(&p.id).await.unwrap();
    let rejected = events
        .iter()
        .find(|e| e.event == EventKind::Rejected)
        .unwrap();
    assert_eq!(rejected.actor, "rules:no-paste");
    assert!(
        rejected
            .note
            .as_deref()
            .unwrap()
            .contains("rules v1 sha256:")
    );
}
on_both!(a_forbid_rejects_at_once_with_its_note);

async fn a_never_automatic_flag_goes_to_a_human_even_when_a_permit_matches(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    store.set_rules(RULES, &admin()).await.unwrap();
    // `any-egress` matches the metadata service's address, which no rule may approve.
    let filed = store.propose(egress(&b, "169.254.169.254")).await.unwrap();
    let Proposed::Created(p) = filed else {
        panic!("expected a proposal for a human, got {filed:?}")
    };
    assert_eq!(p.status, Status::Pending);
    assert!(p.decision.is_none());
}
on_both!(a_never_automatic_flag_goes_to_a_human_even_when_a_permit_matches);

async fn a_shadow_rule_records_rule_matched_and_decides_nothing(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    store.set_rules(RULES, &admin()).await.unwrap();
    let Proposed::Created(p) = store.propose(egress(&b, "api.github.com")).await.unwrap() else {
        panic!("a shadow rule decides nothing")
    };
    assert_eq!(p.status, Status::Pending);
    let (_, events) = store.show(&p.id).await.unwrap();
    let matched: Vec<_> = events
        .iter()
        .filter(|e| e.event == EventKind::RuleMatched)
        .collect();
    assert_eq!(matched.len(), 1);
    assert_eq!(matched[0].actor, "rules:watch-github");
    assert_eq!(matched[0].via, Some(Via::Rules));
    let note = matched[0].note.as_deref().unwrap();
    assert!(note.starts_with("shadow: would approve"), "{note}");
}
on_both!(a_shadow_rule_records_rule_matched_and_decides_nothing);

async fn a_quorum_permit_leaves_the_proposal_to_humans(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    store.set_rules(RULES, &admin()).await.unwrap();
    let Proposed::Created(p) = store.propose(egress(&b, "img.cdn.example")).await.unwrap() else {
        panic!("a quorum permit approves nothing itself")
    };
    assert_eq!(p.status, Status::Pending);
    let rules = store.rules_in_force().await.unwrap().unwrap();
    let facts = supervise_store::rules::Facts {
        slug: &p.bottle,
        host: &p.host,
        kind: p.kind,
        change: &p.change,
        flags: &p.flags,
        hits: 1,
        justification: &p.justification,
        time: 0,
    };
    assert_eq!(rules.rules.evaluate(&facts).outcome, Outcome::Quorum(2));
}
on_both!(a_quorum_permit_leaves_the_proposal_to_humans);

async fn a_new_version_is_used_by_another_store_from_its_next_filing(db: TestDb) {
    let server = db.open().await;
    let cli = db.open().await;
    let b = bottle(&server, "demo", "127.0.0.1").await;
    assert!(matches!(
        server.propose(egress(&b, "pypi.org")).await.unwrap(),
        Proposed::Created(_)
    ));
    let (p, _) = (server.list(None, supervise_store::StatusFilter::Pending))
        .await
        .map(|mut l| (l.remove(0), ()))
        .unwrap();
    server
        .decide(
            &p.id,
            supervise_store::Verdict::Reject,
            &admin(),
            None,
            None,
        )
        .await
        .unwrap();
    cli.set_rules(RULES, &admin()).await.unwrap();
    let filed = server.propose(egress(&b, "pastebin.com")).await.unwrap();
    assert!(
        matches!(&filed, Proposed::Ruled(p) if p.status == Status::Rejected),
        "{filed:?}"
    );
    let v = cli.set_rules("", &admin()).await.unwrap();
    assert_eq!(v.version, 2);
    assert!(matches!(
        server.propose(egress(&b, "paste.example")).await.unwrap(),
        Proposed::Created(_)
    ));
    let shown = server.rules_version(Some(1)).await.unwrap().unwrap();
    assert_eq!(shown.text, RULES);
    assert_eq!(shown.set_by, "operator:alice");
    assert_eq!(
        server.rules_version(None).await.unwrap().unwrap().version,
        2
    );
}
on_both!(a_new_version_is_used_by_another_store_from_its_next_filing);

async fn a_bad_file_or_a_non_admin_sets_nothing(db: TestDb) {
    let store = db.open().await;
    let err = store
        .set_rules("permit (principal, action, resource);", &admin())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Invalid { field, message } if field == "rules" && message.contains("@id")),
        "{err:?}"
    );
    let approver = Actor {
        role: Role::Approver,
        ..Actor::cli("bob")
    };
    let err = store.set_rules(RULES, &approver).await.unwrap_err();
    assert!(matches!(err, StoreError::Forbidden { .. }), "{err:?}");
    assert!(store.rules_version(None).await.unwrap().is_none());
}
on_both!(a_bad_file_or_a_non_admin_sets_nothing);

fn update(reference: &str) -> RefUpdate {
    RefUpdate {
        reference: reference.into(),
        old: "0".repeat(40),
        new: "a".repeat(40),
        summary: json!({"commits": 1, "subjects": ["work"], "files_changed": 1,
            "insertions": 1, "deletions": 0, "force": false, "delete": false, "create": true}),
        justification: "work".into(),
        diff: None,
    }
}

async fn a_gate_push_a_rule_approves_is_accepted_in_the_same_push(db: TestDb) {
    let store = db.open().await;
    bottle(&store, "demo", "127.0.0.1").await;
    store.set_rules(RULES, &admin()).await.unwrap();
    let v = store
        .gate_push("demo", "origin", vec![update("refs/heads/feature/x")])
        .await
        .unwrap();
    assert!(v.accepted, "{v:?}");
    let GateRef::Approved(p) = &v.refs[0] else {
        panic!("expected the rule's approval, used: {v:?}")
    };
    assert_eq!(
        p.decision.as_ref().unwrap().decided_by,
        "rules:feature-pushes"
    );
    let v = store
        .gate_push("demo", "origin", vec![update("refs/tags/v1")])
        .await
        .unwrap();
    assert!(!v.accepted);
    let GateRef::Proposed(Proposed::Ruled(p)) = &v.refs[0] else {
        panic!("expected the rule's rejection: {v:?}")
    };
    assert_eq!(p.status, Status::Rejected);
    assert_eq!(
        p.decision.as_ref().unwrap().note.as_deref(),
        Some("tags are cut by the release job")
    );
}
on_both!(a_gate_push_a_rule_approves_is_accepted_in_the_same_push);

async fn a_batch_files_ruled_and_plain_proposals_in_order(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    store.set_rules(RULES, &admin()).await.unwrap();
    let out = store
        .propose_many(vec![
            egress(&b, "a.example"),
            egress(&b, "pypi.org"),
            egress(&b, "b.example"),
            egress(&b, "pastebin.com"),
        ])
        .await
        .unwrap();
    let what: Vec<_> = out
        .iter()
        .map(|r| match r.as_ref().unwrap() {
            Proposed::Created(p) => format!("created {}", p.status),
            Proposed::Ruled(p) => format!("ruled {}", p.status),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        what,
        [
            "created pending",
            "ruled approved",
            "created pending",
            "ruled rejected"
        ]
    );
    let pending = store
        .list(None, supervise_store::StatusFilter::Pending)
        .await
        .unwrap();
    assert_eq!(pending.len(), 2);
}
on_both!(a_batch_files_ruled_and_plain_proposals_in_order);

async fn filed_since_reads_only_the_window_oldest_first(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    store.propose(egress(&b, "old.example")).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let since = supervise_store::Timestamp::now();
    store.propose(egress(&b, "new.example")).await.unwrap();
    store.propose(egress(&b, "newer.example")).await.unwrap();
    let hosts = |ps: Vec<supervise_store::Proposal>| -> Vec<String> {
        ps.iter()
            .map(|p| p.change["host"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(
        hosts(store.filed_since(Some(&since)).await.unwrap()),
        ["new.example", "newer.example"]
    );
    assert_eq!(
        hosts(store.filed_since(None).await.unwrap()),
        ["old.example", "new.example", "newer.example"]
    );
}
on_both!(filed_since_reads_only_the_window_oldest_first);
