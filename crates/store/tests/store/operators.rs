//! Console operators: roles and bottle scopes checked inside the store's own transactions,
//! one-time sign-in links, sessions and API tokens that end the moment their operator is
//! removed, secrets kept only as hashes, and `via` recorded on decisions and events.

use supervise_store::{
    Actor, EventKind, Operator, Role, SignInRefusal, Status, Store, StoreError, Verdict, Via,
};

use crate::common::{TestDb, bottle, counts, created, egress};

async fn raw(db: &TestDb) -> sqlx::AnyConnection {
    db.raw().await
}

fn admin() -> Actor {
    Actor::cli("root")
}

async fn operator(store: &Store, name: &str, role: Role, bottles: &[&str]) -> Operator {
    let globs: Vec<String> = bottles.iter().map(|g| g.to_string()).collect();
    store
        .add_operator(name, role, &globs, &admin())
        .await
        .expect("add operator")
        .0
}

async fn a_viewer_cannot_decide_and_the_proposal_stays_pending(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let id = created(&store, egress(&b, "a.example")).await;
    let viewer = Actor::console(&operator(&store, "vera", Role::Viewer, &[]).await);
    let before = counts(&db).await;
    for verdict in [Verdict::Approve, Verdict::Reject] {
        let err = store
            .decide(&id, verdict, &viewer, None, None)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, StoreError::Forbidden { operator, .. } if operator == "vera"),
            "{err:?}"
        );
        assert_eq!(err.to_string(), "operator vera may not decide proposals");
    }
    assert_eq!(counts(&db).await, before, "nothing changed");
    let (p, _) = store.show(&id).await.unwrap();
    assert_eq!(p.status, Status::Pending);
    // A viewer cannot revoke or manage bottles or operators either.
    let g = store
        .decide(&id, Verdict::Approve, &admin(), None, None)
        .await
        .unwrap()
        .decision
        .unwrap()
        .grant_id
        .unwrap();
    assert!(matches!(
        store.revoke(&g, &viewer).await,
        Err(StoreError::Forbidden { .. })
    ));
    assert!(matches!(
        store.remove_bottle("demo", &viewer).await,
        Err(StoreError::Forbidden { .. })
    ));
    assert!(matches!(
        store.add_operator("eve", Role::Admin, &[], &viewer).await,
        Err(StoreError::Forbidden { .. })
    ));
    assert_eq!(store.grants_in_force("demo").await.unwrap().len(), 1);
}
on_both!(a_viewer_cannot_decide_and_the_proposal_stays_pending);

async fn a_scoped_approver_never_sees_another_teams_proposals_or_grants(db: TestDb) {
    let store = db.open().await;
    let a = bottle(&store, "team-a-x", "127.0.0.1").await;
    let b = bottle(&store, "team-b-x", "127.0.0.2").await;
    let mine = created(&store, egress(&a, "a.example")).await;
    let theirs = created(&store, egress(&b, "b.example")).await;
    let ann = Actor::console(&operator(&store, "ann", Role::Approver, &["team-a-*"]).await);
    let before = counts(&db).await;
    let err = store
        .decide(&theirs, Verdict::Approve, &ann, None, None)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::ProposalNotFound(id) if *id == theirs),
        "{err:?}"
    );
    assert_eq!(counts(&db).await, before, "nothing changed");
    assert_eq!(store.show(&theirs).await.unwrap().0.status, Status::Pending);

    // A prefix says no more than the whole id: one both ids share is ambiguous for an
    // admin of every bottle, and names her own proposal for her.
    let shared: String = mine
        .chars()
        .zip(theirs.chars())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a)
        .collect();
    assert!(
        !shared.is_empty(),
        "UUIDv7 ids filed together share a prefix"
    );
    assert!(matches!(
        store
            .decide(&shared, Verdict::Approve, &admin(), None, None)
            .await,
        Err(StoreError::AmbiguousId(_))
    ));
    let decided = store
        .decide(&shared, Verdict::Approve, &ann, None, None)
        .await
        .unwrap();
    assert_eq!(decided.id, mine.as_str());
    assert_eq!(decided.status, Status::Approved);
    // Another team's grant does not exist for her; her own she may revoke.
    let their_grant = store
        .decide(&theirs, Verdict::Approve, &admin(), None, None)
        .await
        .unwrap()
        .decision
        .unwrap()
        .grant_id
        .unwrap();
    assert!(matches!(
        store.revoke(&their_grant, &ann).await,
        Err(StoreError::GrantNotFound(_))
    ));
    assert_eq!(store.grants_in_force("team-b-x").await.unwrap().len(), 1);
    let my_grant = decided.decision.unwrap().grant_id.unwrap();
    store.revoke(&my_grant, &ann).await.unwrap();
    assert!(store.grants_in_force("team-a-x").await.unwrap().is_empty());
}
on_both!(a_scoped_approver_never_sees_another_teams_proposals_or_grants);

async fn a_scoped_admin_manages_its_bottles_but_not_operators(db: TestDb) {
    let store = db.open().await;
    bottle(&store, "team-b-x", "127.0.0.2").await;
    let ada = Actor::console(&operator(&store, "ada", Role::Admin, &["team-a-*"]).await);
    store
        .add_bottle("team-a-y", "127.0.0.3".parse().unwrap(), &ada)
        .await
        .unwrap();
    assert!(matches!(
        store
            .add_bottle("team-b-y", "127.0.0.4".parse().unwrap(), &ada)
            .await,
        Err(StoreError::Forbidden { .. })
    ));
    assert!(matches!(
        store.remove_bottle("team-b-x", &ada).await,
        Err(StoreError::BottleNotFound(_))
    ));
    store.remove_bottle("team-a-y", &ada).await.unwrap();
    assert!(matches!(
        store.add_operator("eve", Role::Admin, &[], &ada).await,
        Err(StoreError::Forbidden { .. })
    ));
    assert!(store.bottle("team-b-x").await.unwrap().is_some());
}
on_both!(a_scoped_admin_manages_its_bottles_but_not_operators);

async fn a_sign_in_link_is_spent_once_and_the_session_works(db: TestDb) {
    let store = db.open().await;
    let (op, link) = store
        .add_operator("alice", Role::Approver, &[], &admin())
        .await
        .unwrap();
    assert_eq!(op.name, "alice");
    assert_eq!(link.operator, "alice");
    assert_eq!(link.secret.expose().len(), 43);
    assert!(link.expires_at.seconds_until() > 14 * 60);
    assert_eq!(format!("{:?}", link.secret), "Secret(..)");

    let session = store.sign_in(link.secret.expose()).await.unwrap();
    assert_eq!(session.operator.name, "alice");
    assert_ne!(session.secret.expose(), link.secret.expose());
    assert!(session.expires_at.seconds_until() > 6 * 24 * 3600);
    assert!(matches!(
        store.sign_in(link.secret.expose()).await,
        Err(StoreError::SignInRefused(SignInRefusal::Spent))
    ));
    assert!(matches!(
        store.sign_in("no-such-link").await,
        Err(StoreError::SignInRefused(SignInRefusal::Unknown))
    ));
    let live = store
        .session(session.secret.expose())
        .await
        .unwrap()
        .expect("session");
    assert_eq!(live.operator.role, Role::Approver);
    assert_eq!(live.csrf, session.csrf);
    assert!(live.operator.last_seen_at.is_some());

    // A second link works alongside the first session; signing out ends that session only.
    let again = store.operator_link("alice", &admin()).await.unwrap();
    let second = store.sign_in(again.secret.expose()).await.unwrap();
    store.sign_out(session.secret.expose()).await.unwrap();
    assert!(
        store
            .session(session.secret.expose())
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .session(second.secret.expose())
            .await
            .unwrap()
            .is_some()
    );
    assert!(store.session("nonsense").await.unwrap().is_none());
}
on_both!(a_sign_in_link_is_spent_once_and_the_session_works);

async fn of_concurrent_sign_ins_with_one_link_exactly_one_succeeds(db: TestDb) {
    let store = db.open().await;
    let (_, link) = store
        .add_operator("alice", Role::Viewer, &[], &admin())
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let s = store.clone();
        let secret = link.secret.expose().to_string();
        tasks.push(tokio::spawn(async move { s.sign_in(&secret).await }));
    }
    let mut ok = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => ok += 1,
            Err(StoreError::SignInRefused(SignInRefusal::Spent)) => {}
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!(ok, 1);
}
on_both!(
    of_concurrent_sign_ins_with_one_link_exactly_one_succeeds,
    flavor = "multi_thread",
    worker_threads = 4
);

async fn an_expired_link_is_refused_and_idle_or_old_sessions_end(db: TestDb) {
    let store = db.open().await;
    let (_, link) = store
        .add_operator("alice", Role::Viewer, &[], &admin())
        .await
        .unwrap();
    let mut conn = raw(&db).await;
    sqlx::query("UPDATE sign_in_links SET expires_at = '2026-01-01T00:00:00.000Z'")
        .execute(&mut conn)
        .await
        .unwrap();
    assert!(matches!(
        store.sign_in(link.secret.expose()).await,
        Err(StoreError::SignInRefused(SignInRefusal::Expired))
    ));

    let idle = store
        .sign_in(
            store
                .operator_link("alice", &admin())
                .await
                .unwrap()
                .secret
                .expose(),
        )
        .await
        .unwrap();
    let old = store
        .sign_in(
            store
                .operator_link("alice", &admin())
                .await
                .unwrap()
                .secret
                .expose(),
        )
        .await
        .unwrap();
    let fresh = store
        .sign_in(
            store
                .operator_link("alice", &admin())
                .await
                .unwrap()
                .secret
                .expose(),
        )
        .await
        .unwrap();
    // 13 hours idle; past the 7 days; two minutes idle (refreshed by the lookup).
    for (s, column, at) in [
        (&idle, "last_seen_at", now_minus(13 * 3600)),
        (&old, "expires_at", now_minus(1)),
        (&fresh, "last_seen_at", now_minus(120)),
    ] {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE sessions SET {column} = $1 WHERE hash = $2"
        )))
        .bind(&at)
        .bind(hash_of(s.secret.expose()))
        .execute(&mut conn)
        .await
        .unwrap();
    }
    assert!(store.session(idle.secret.expose()).await.unwrap().is_none());
    assert!(store.session(old.secret.expose()).await.unwrap().is_none());
    let before = now_minus(120);
    assert!(
        store
            .session(fresh.secret.expose())
            .await
            .unwrap()
            .is_some()
    );
    let seen: String = sqlx::query_scalar("SELECT last_seen_at FROM sessions WHERE hash = $1")
        .bind(hash_of(fresh.secret.expose()))
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert!(seen > before, "the lookup refreshed last_seen_at ({seen})");
}
on_both!(an_expired_link_is_refused_and_idle_or_old_sessions_end);

/// What the store keeps of a secret: its SHA-256, lowercase hex.
fn hash_of(secret: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The stored form of "`secs` seconds ago".
fn now_minus(secs: u64) -> String {
    supervise_store::Timestamp::before(std::time::Duration::from_secs(secs)).to_string()
}

async fn a_removed_operators_session_token_and_links_stop_at_once(db: TestDb) {
    let store = db.open().await;
    let (_, link) = store
        .add_operator("alice", Role::Approver, &[], &admin())
        .await
        .unwrap();
    let session = store.sign_in(link.secret.expose()).await.unwrap();
    let token = store.operator_token("alice", &admin()).await.unwrap();
    let unspent = store.operator_link("alice", &admin()).await.unwrap();
    assert!(token.expose().starts_with("sv_"));
    assert_eq!(
        store
            .token_operator(token.expose())
            .await
            .unwrap()
            .unwrap()
            .name,
        "alice"
    );
    assert!(store.operator("alice").await.unwrap().unwrap().has_token);

    let removed = store.remove_operator("alice", &admin()).await.unwrap();
    assert_eq!(removed.name, "alice");
    assert!(
        store
            .session(session.secret.expose())
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .token_operator(token.expose())
            .await
            .unwrap()
            .is_none()
    );
    assert!(matches!(
        store.sign_in(unspent.secret.expose()).await,
        Err(StoreError::SignInRefused(SignInRefusal::Unknown))
    ));
    assert!(store.operator("alice").await.unwrap().is_none());
    assert!(store.list_operators().await.unwrap().is_empty());
    assert!(matches!(
        store.remove_operator("alice", &admin()).await,
        Err(StoreError::OperatorNotFound(_))
    ));
    assert!(matches!(
        store.operator_token("alice", &admin()).await,
        Err(StoreError::OperatorNotFound(_))
    ));

    // The name may be added again; nothing of the old operator comes back with it.
    store
        .add_operator("alice", Role::Viewer, &[], &admin())
        .await
        .unwrap();
    assert!(
        store
            .session(session.secret.expose())
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .token_operator(token.expose())
            .await
            .unwrap()
            .is_none()
    );
    assert!(!store.operator("alice").await.unwrap().unwrap().has_token);
}
on_both!(a_removed_operators_session_token_and_links_stop_at_once);

async fn a_new_token_replaces_the_old_and_names_are_checked(db: TestDb) {
    let store = db.open().await;
    operator(&store, "bob", Role::Viewer, &["demo"]).await;
    let first = store.operator_token("bob", &admin()).await.unwrap();
    let second = store.operator_token("bob", &admin()).await.unwrap();
    assert!(
        store
            .token_operator(first.expose())
            .await
            .unwrap()
            .is_none()
    );
    let bob = store
        .token_operator(second.expose())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(bob.bottles, ["demo"]);
    assert!(bob.last_seen_at.is_some(), "the token's use is recorded");
    // Without its prefix a token is nothing.
    assert!(
        store
            .token_operator(&second.expose()[3..])
            .await
            .unwrap()
            .is_none()
    );

    assert!(matches!(
        store.add_operator("bob", Role::Admin, &[], &admin()).await,
        Err(StoreError::OperatorExists(_))
    ));
    for bad in ["", "-x", "a b", "é", &"x".repeat(65)] {
        assert!(
            matches!(
                store.add_operator(bad, Role::Viewer, &[], &admin()).await,
                Err(StoreError::Invalid { .. })
            ),
            "{bad:?}"
        );
    }
    assert!(matches!(
        store
            .add_operator("carol", Role::Viewer, &["Team A".into()], &admin())
            .await,
        Err(StoreError::Invalid { .. })
    ));
    let names: Vec<String> = store
        .list_operators()
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.name)
        .collect();
    assert_eq!(names, ["bob"]);
}
on_both!(a_new_token_replaces_the_old_and_names_are_checked);

async fn secrets_are_stored_only_as_hashes(db: TestDb) {
    let store = db.open().await;
    let (_, link) = store
        .add_operator("alice", Role::Admin, &[], &admin())
        .await
        .unwrap();
    let spare = store.operator_link("alice", &admin()).await.unwrap();
    let session = store.sign_in(link.secret.expose()).await.unwrap();
    let token = store.operator_token("alice", &admin()).await.unwrap();
    store.close().await;
    let mut conn = raw(&db).await;
    let mut dump = String::new();
    for table in [
        "operators",
        "sign_in_links",
        "sessions",
        "api_tokens",
        "events",
    ] {
        // Every column of every row, quoted, so nothing is left out.
        let columns = match db.backend {
            supervise_store::Backend::Sqlite => {
                format!("SELECT name FROM pragma_table_info('{table}')")
            }
            _ => format!(
                "SELECT column_name::text FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = '{table}'"
            ),
        };
        let quote = match db.backend {
            supervise_store::Backend::Sqlite => "quote",
            _ => "quote_nullable",
        };
        let cols: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(columns))
            .fetch_all(&mut conn)
            .await
            .unwrap();
        let select = cols
            .iter()
            .map(|c| format!("COALESCE({quote}({c}), '')"))
            .collect::<Vec<_>>()
            .join(" || ' ' || ");
        let rows: Vec<String> =
            sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT {select} FROM {table}")))
                .fetch_all(&mut conn)
                .await
                .unwrap();
        dump.push_str(&rows.join("\n"));
        dump.push('\n');
    }
    for secret in [&link.secret, &spare.secret, &session.secret, &token] {
        assert!(!dump.contains(secret.expose()), "a secret is stored as is");
        assert!(
            !dump.contains(&secret.expose()[..20]),
            "part of a secret is stored"
        );
    }
    assert!(
        dump.contains(&session.csrf),
        "the csrf token is kept to compare"
    );
    let hashes: Vec<String> = sqlx::query_scalar(
        "SELECT hash FROM sign_in_links UNION ALL SELECT hash FROM sessions \
         UNION ALL SELECT hash FROM api_tokens",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert_eq!(hashes.len(), 4);
    assert!(
        hashes
            .iter()
            .all(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
    );
}
on_both!(secrets_are_stored_only_as_hashes);

async fn via_is_recorded_on_decisions_and_events_and_operator_events_are_in_the_trail(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let by_cli = created(&store, egress(&b, "a.example")).await;
    let by_console = created(&store, egress(&b, "b.example")).await;
    let (op, link) = store
        .add_operator("alice", Role::Approver, &[], &admin())
        .await
        .unwrap();
    store.sign_in(link.secret.expose()).await.unwrap();
    let p = store
        .decide(&by_cli, Verdict::Approve, &admin(), None, None)
        .await
        .unwrap();
    assert_eq!(p.decision.as_ref().unwrap().via, Some(Via::Cli));
    let p = store
        .decide(
            &by_console,
            Verdict::Reject,
            &Actor::console(&op),
            Some("no"),
            None,
        )
        .await
        .unwrap();
    let d = p.decision.unwrap();
    assert_eq!(
        (d.via, d.decided_by.as_str()),
        (Some(Via::Console), "alice")
    );
    let (shown, history) = store.show(&by_console).await.unwrap();
    assert_eq!(shown.decision.unwrap().via, Some(Via::Console));
    let rejected = history
        .iter()
        .find(|e| e.event == EventKind::Rejected)
        .unwrap();
    assert_eq!(rejected.via, Some(Via::Console));
    assert_eq!(rejected.actor, "operator:alice");
    let proposed = history
        .iter()
        .find(|e| e.event == EventKind::Proposed)
        .unwrap();
    assert_eq!(proposed.via, None, "a bottle's event has no via");
    store.remove_operator("alice", &admin()).await.unwrap();

    let trail = store.audit(None).await.unwrap();
    let of = |kind: EventKind| trail.iter().find(|e| e.event == kind).unwrap();
    let added = of(EventKind::OperatorAdded);
    assert_eq!(
        (added.actor.as_str(), added.via, added.note.as_deref()),
        ("operator:root", Some(Via::Cli), Some("alice as approver"))
    );
    let signed = of(EventKind::SignedIn);
    assert_eq!(
        (signed.actor.as_str(), signed.via),
        ("operator:alice", Some(Via::Console))
    );
    let removed = of(EventKind::OperatorRemoved);
    assert_eq!(
        (removed.actor.as_str(), removed.via, removed.note.as_deref()),
        ("operator:root", Some(Via::Cli), Some("alice"))
    );
    assert_eq!(of(EventKind::BottleAdded).via, Some(Via::Cli));
    let json = serde_json::to_value(rejected.document()).unwrap();
    assert_eq!(json["via"], "console");

    // The columns as stored, and the audit_log view carries via.
    let mut conn = raw(&db).await;
    let vias: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT id, decided_via FROM proposals WHERE decided_at IS NOT NULL ORDER BY id",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert!(vias.contains(&(by_cli.clone(), Some("cli".into()))));
    assert!(vias.contains(&(by_console.clone(), Some("console".into()))));
    let n: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM audit_log WHERE via = 'console' AND event IN ('rejected', 'signed-in')",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(n, 2);
}
on_both!(via_is_recorded_on_decisions_and_events_and_operator_events_are_in_the_trail);

async fn the_trail_stays_append_only_and_operators_are_never_deleted(db: TestDb) {
    let store = db.open().await;
    operator(&store, "alice", Role::Viewer, &[]).await;
    store.remove_operator("alice", &admin()).await.unwrap();
    let mut conn = raw(&db).await;
    for sql in [
        "UPDATE events SET via = 'console' WHERE event = 'operator-added'",
        "DELETE FROM events WHERE event = 'operator-removed'",
        "DELETE FROM operators",
        "INSERT INTO events (at, event, actor, hash) VALUES ('2026-01-01T00:00:00.000Z', 'operator-renamed', 'system', 'h')",
        "INSERT INTO events (at, event, actor, via, hash) VALUES ('2026-01-01T00:00:00.000Z', 'signed-in', 'system', 'telnet', 'h')",
        "INSERT INTO operators (name, role, created_at, created_by) VALUES ('x', 'root', '2026-01-01T00:00:00.000Z', 'system')",
    ] {
        assert!(
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .execute(&mut conn)
                .await
                .is_err(),
            "{sql}"
        );
    }
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM operators")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(n, 1);
}
on_both!(the_trail_stays_append_only_and_operators_are_never_deleted);
