//! `supervise operator`: adding operators with a role and a scope, their sign-in links
//! (on the console's public URL), API tokens that replace each other, listing and
//! removing, with SPEC's exit codes; and `via` shown by `show` and `audit`.

use supervise_store::{Role, Verdict};

use crate::util::{Env, Run};

/// The sign-in link a command printed (the one line holding `/sign-in/`).
fn link_in(stdout: &str) -> String {
    stdout
        .lines()
        .map(str::trim)
        .find(|l| l.contains("/sign-in/"))
        .unwrap_or_else(|| panic!("no sign-in link in {stdout}"))
        .to_string()
}

/// The token a `operator token` printed (the one line starting `sv_`).
fn token_in(stdout: &str) -> String {
    stdout
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("sv_"))
        .unwrap_or_else(|| panic!("no token in {stdout}"))
        .to_string()
}

#[test]
fn add_link_token_list_rm_round_trip() {
    let env = Env::new();
    let out = env.ok(&[
        "operator",
        "add",
        "alice",
        "--role",
        "approver",
        "--bottles",
        "team-a-*",
        "--bottles",
        "demo",
    ]);
    assert!(
        out.contains("added operator alice (approver, bottles team-a-*, demo)"),
        "{out}"
    );
    assert!(
        out.contains("expires 20"),
        "says when the link expires: {out}"
    );
    let link = link_in(&out);
    let secret = link
        .strip_prefix("http://127.0.0.1:7412/sign-in/")
        .unwrap_or_else(|| panic!("default public URL: {link}"));
    assert_eq!(secret.len(), 43);
    let session = env
        .rt
        .block_on(env.store.sign_in(secret))
        .expect("the link signs in");
    assert_eq!(session.operator.name, "alice");
    assert_eq!(session.operator.bottles, ["team-a-*", "demo"]);

    // A further link, on the public URL given by flag or environment.
    let out = env.ok(&[
        "operator",
        "link",
        "alice",
        "--public-url",
        "https://review.example.com/",
    ]);
    let second = link_in(&out);
    let secret = second
        .strip_prefix("https://review.example.com/sign-in/")
        .unwrap_or_else(|| panic!("no doubled slash: {second}"));
    env.rt.block_on(env.store.sign_in(secret)).unwrap();
    let out = Run::from(
        env.cmd(&["operator", "link", "alice"])
            .env("SUPERVISE_CONSOLE_URL", "https://console.internal:8443")
            .output()
            .unwrap(),
    );
    out.assert_ok();
    assert!(link_in(&out.stdout).starts_with("https://console.internal:8443/sign-in/"));

    // A token works until the next one is made.
    let out = env.ok(&["operator", "token", "alice"]);
    assert!(
        out.contains("shown once") && out.contains("stopped working"),
        "{out}"
    );
    let first = token_in(&out);
    let op = env.rt.block_on(env.store.token_operator(&first)).unwrap();
    assert_eq!(op.expect("token accepted").role, Role::Approver);
    let second = token_in(&env.ok(&["operator", "token", "alice"]));
    assert_ne!(first, second);
    assert!(
        env.rt
            .block_on(env.store.token_operator(&first))
            .unwrap()
            .is_none(),
        "the first token stopped working"
    );
    assert!(
        env.rt
            .block_on(env.store.token_operator(&second))
            .unwrap()
            .is_some()
    );

    env.ok(&["operator", "add", "vera", "--role", "viewer"]);
    let doc = env.json(&["operator", "list", "--json"]);
    let ops = doc["operators"].as_array().unwrap();
    assert_eq!(ops.len(), 2);
    assert_eq!(ops[0]["name"], "alice");
    assert_eq!(ops[0]["role"], "approver");
    assert_eq!(ops[0]["bottles"], serde_json::json!(["team-a-*", "demo"]));
    assert_eq!(ops[0]["has_token"], true);
    assert_eq!(ops[0]["created_by"], "operator:tester");
    assert!(ops[0]["last_seen_at"].is_string());
    assert_eq!(ops[1]["name"], "vera");
    assert_eq!(ops[1]["bottles"], serde_json::json!([]));
    assert_eq!(ops[1]["last_seen_at"], serde_json::Value::Null);
    let text = env.ok(&["operator", "list"]);
    assert!(text.contains("NAME") && text.contains("alice") && text.contains("viewer"));

    let out = env.ok(&["operator", "rm", "alice"]);
    assert!(out.contains("removed operator alice"), "{out}");
    assert!(
        env.rt
            .block_on(env.store.token_operator(&second))
            .unwrap()
            .is_none()
    );
    assert!(
        env.rt
            .block_on(env.store.session(session.secret.expose()))
            .unwrap()
            .is_none()
    );
    let doc = env.json(&["operator", "list", "--json"]);
    assert_eq!(doc["operators"].as_array().unwrap().len(), 1);

    // The trail names who did it, through the CLI.
    let audit = env.json(&["audit", "--json"]);
    let events = audit["events"].as_array().unwrap();
    let added = events
        .iter()
        .find(|e| e["event"] == "operator-added")
        .unwrap();
    assert_eq!(added["actor"], "operator:tester");
    assert_eq!(added["via"], "cli");
    assert!(events.iter().any(|e| e["event"] == "operator-removed"));
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "signed-in" && e["via"] == "console")
    );
}

#[test]
fn refusals_and_usage_errors_have_their_exit_codes() {
    let env = Env::new();
    env.ok(&["operator", "add", "alice", "--role", "admin"]);
    env.run(&["operator", "add", "alice", "--role", "viewer"])
        .assert_refused("an operator named alice already exists");
    env.run(&["operator", "rm", "nobody"])
        .assert_refused("no operator named nobody");
    env.run(&["operator", "link", "nobody"])
        .assert_refused("no operator named nobody");
    env.run(&["operator", "token", "nobody"])
        .assert_refused("no operator named nobody");
    env.run(&["operator", "add", "a b", "--role", "viewer"])
        .assert_refused("invalid operator");
    env.run(&[
        "operator",
        "add",
        "bob",
        "--role",
        "viewer",
        "--bottles",
        "Team A",
    ])
    .assert_refused("invalid bottles");
    let bad_role = env.run(&["operator", "add", "bob", "--role", "root"]);
    bad_role.assert_usage();
    assert!(
        bad_role.stderr.contains("viewer, approver or admin"),
        "{bad_role:#?}"
    );
    env.run(&["operator", "add", "bob"]).assert_usage();
    env.run(&[
        "operator",
        "add",
        "bob",
        "--role",
        "viewer",
        "--public-url",
        "ftp://x",
    ])
    .assert_usage();
    env.run(&["operator", "frobnicate"]).assert_usage();
    // Nothing of the refused ones was added.
    let doc = env.json(&["operator", "list", "--json"]);
    assert_eq!(doc["operators"].as_array().unwrap().len(), 1);
}

#[test]
fn show_and_audit_say_through_what_a_decision_was_made() {
    let env = Env::new();
    let by_cli = env.egress("a.example.com", 443);
    let by_console = env.egress("b.example.com", 443);
    env.ok(&["approve", &by_cli]);
    let (op, _) = env
        .rt
        .block_on(env.store.add_operator(
            "alice",
            Role::Approver,
            &[],
            &supervise_store::Actor::cli("root"),
        ))
        .unwrap();
    env.rt
        .block_on(env.store.decide(
            &by_console,
            Verdict::Reject,
            &supervise_store::Actor::console(&op),
            Some("no"),
            None,
        ))
        .unwrap();

    let text = env.ok(&["show", &by_cli]);
    assert!(text.contains("approved by tester via cli"), "{text}");
    let text = env.ok(&["show", &by_console]);
    assert!(text.contains("rejected by alice via console"), "{text}");
    let doc = env.json(&["show", &by_console, "--json"]);
    assert_eq!(doc["decision"]["via"], "console");
    assert_eq!(doc["decision"]["decided_by"], "alice");
    let rejected = doc["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "rejected")
        .unwrap();
    assert_eq!(rejected["via"], "console");
    let proposed = doc["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "proposed")
        .unwrap();
    assert_eq!(proposed["via"], serde_json::Value::Null);

    let audit = env.ok(&["audit"]);
    let header = audit.lines().next().unwrap();
    assert!(
        header.contains("ACTOR") && header.contains("VIA"),
        "{header}"
    );
    let line = audit
        .lines()
        .find(|l| l.contains("rejected"))
        .unwrap_or_else(|| panic!("{audit}"));
    assert!(
        line.contains("operator:alice") && line.contains("console"),
        "{line}"
    );
    let doc = env.json(&["audit", "--json"]);
    let approved = doc["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "approved")
        .unwrap();
    assert_eq!(approved["via"], "cli");
}

#[test]
fn link_with_qr_draws_the_same_link_as_a_qr_code() {
    use qrcode::render::unicode::Dense1x2;
    let env = Env::new();
    env.ok(&["operator", "add", "alice", "--role", "approver"]);
    let out = env.ok(&["operator", "link", "alice", "--qr"]);
    let link = link_in(&out);
    let drawn = qrcode::QrCode::new(link.as_bytes())
        .unwrap()
        .render::<Dense1x2>()
        .dark_color(Dense1x2::Light)
        .light_color(Dense1x2::Dark)
        .quiet_zone(true)
        .build();
    assert!(out.contains(&drawn), "{out}");
    assert!(drawn.lines().count() > 10);
    let plain = env.ok(&["operator", "link", "alice"]);
    assert!(!plain.contains('▀') && !plain.contains('█'), "{plain}");
}
