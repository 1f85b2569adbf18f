//! Deciding one proposal: approve, modify, reject, and the refusals that change nothing.

use std::time::Duration;

use serde_json::json;

use crate::util::{Env, find, ids};

#[test]
fn approve_modify_and_reject_a_pending_proposal() {
    let env = Env::new();
    let a = env.egress("a.example.com", 443);
    let m = env.egress("b.example.com", 443);
    let r = env.egress("c.example.com", 443);

    let out = env.ok(&["approve", &a, "--note", "ok for the build"]);
    assert_eq!(out.lines().count(), 1, "one confirming line: {out}");
    assert!(
        out.starts_with(&format!(
            "approved {a} (demo: egress a.example.com:443); grant "
        )),
        "{out}"
    );
    assert!(out.trim_end().ends_with("until revoked"), "{out}");

    let out = env.ok(&[
        "--as",
        "alice",
        "modify",
        "--yes",
        &m[..24],
        "--change",
        r#"{"port": 8443}"#,
    ]);
    assert!(
        out.starts_with(&format!(
            "modified {m} (demo: egress b.example.com:443 -> b.example.com:8443)"
        )),
        "{out}"
    );
    assert!(out.contains("[flags: unusual-port, widened]"), "{out}");

    let out = env.ok(&["reject", &r, "--note", "use the mirror"]);
    assert_eq!(
        out.trim_end(),
        format!("rejected {r} (demo: egress c.example.com:443)")
    );

    let doc = env.json(&["list", "--status", "decided", "--json"]);
    assert_eq!(ids(&doc), vec![a.clone(), m.clone(), r.clone()]);
    let pa = find(&doc, &a);
    assert_eq!(pa["status"], "approved");
    assert_eq!(pa["decision"]["decided_by"], "tester");
    assert_eq!(pa["decision"]["note"], "ok for the build");
    assert_eq!(
        pa["decision"]["change"],
        json!({"host": "a.example.com", "port": 443})
    );
    let pm = find(&doc, &m);
    assert_eq!(pm["status"], "modified");
    assert_eq!(pm["decision"]["decided_by"], "alice");
    assert_eq!(
        pm["decision"]["change"],
        json!({"host": "b.example.com", "port": 8443})
    );
    assert_eq!(pm["change"]["port"], 443, "the proposed change is kept");
    assert_eq!(pm["flags"], json!(["unusual-port", "widened"]));
    let pr = find(&doc, &r);
    assert_eq!(pr["status"], "rejected");
    assert!(pr["decision"]["change"].is_null());
    assert_eq!(pr["decision"]["note"], "use the mirror");
    assert_eq!(env.json(&["list", "--json"]), json!({"proposals": []}));

    // The decision shows in the table with its status and in `show`.
    let table = env.ok(&["list", "--status", "all"]);
    assert!(table.lines().next().unwrap().contains("STATUS"));
    assert!(
        table.contains("b.example.com:443 -> b.example.com:8443"),
        "{table}"
    );
    let shown = env.ok(&["show", &m]);
    assert!(shown.contains("modified by alice via cli at"), "{shown}");
    assert!(shown.contains("b.example.com:8443"), "{shown}");
    assert!(shown.contains("in force until revoked"), "{shown}");
}

#[test]
fn deciding_again_is_refused_and_changes_nothing() {
    let env = Env::new();
    let id = env.egress("a.example.com", 443);
    env.ok(&["--as", "alice", "approve", &id]);
    let before = (
        env.json(&["list", "--status", "all", "--json"]),
        env.json(&["audit", "--json"]),
        env.json(&["policy", "demo", "--json"]),
    );

    for args in [
        vec!["approve", id.as_str()],
        vec!["reject", id.as_str(), "--note", "changed my mind"],
        vec!["modify", id.as_str(), "--change", r#"{"port": 80}"#],
    ] {
        let r = env.run(&args);
        r.assert_refused(&format!("proposal {id} is already approved (by alice at "));
    }
    let after = (
        env.json(&["list", "--status", "all", "--json"]),
        env.json(&["audit", "--json"]),
        env.json(&["policy", "demo", "--json"]),
    );
    assert_eq!(before, after);
}

#[test]
fn unknown_and_ambiguous_ids_are_refused() {
    let env = Env::new();
    let a = env.egress("a.example.com", 443);
    let b = env.egress("b.example.com", 443);
    env.run(&["approve", "ffffffff"])
        .assert_refused("no proposal with id ffffffff");
    env.run(&["show", "ffffffff"])
        .assert_refused("no proposal with id ffffffff");
    env.run(&["reject", "ffffffff"])
        .assert_refused("no proposal with id ffffffff");
    // Two proposals made within a second share their first characters (UUIDv7).
    let common: String = a
        .chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect();
    assert!(common.len() >= 8);
    env.run(&["approve", &common])
        .assert_refused("matches more than one proposal");
    assert_eq!(ids(&env.json(&["list", "--json"])).len(), 2);
}

#[test]
fn an_invalid_modification_names_the_field_and_changes_nothing() {
    let env = Env::new();
    let id = env.egress("a.example.com", 443);
    env.run(&["modify", &id, "--change", r#"{"port": 0}"#])
        .assert_refused("port");
    env.run(&["modify", &id, "--change", r#"{"host": "https://x.com"}"#])
        .assert_refused("host");
    env.run(&["modify", &id, "--change", r#"{"prot": 1}"#])
        .assert_refused("prot");
    assert_eq!(
        find(&env.json(&["list", "--json"]), &id)["status"],
        "pending"
    );
}

#[test]
fn an_expired_proposal_leaves_the_queue_and_cannot_be_decided() {
    let env = Env::with_policy(supervise_store::ProposalLimits {
        proposal_ttl: Some(Duration::from_secs(1)),
        ..Default::default()
    });
    let id = env.egress("late.example.com", 443);
    assert_eq!(ids(&env.json(&["list", "--json"])), vec![id.clone()]);
    std::thread::sleep(Duration::from_millis(1300));
    assert_eq!(env.json(&["list", "--json"]), json!({"proposals": []}));
    let expired = env.json(&["list", "--status", "expired", "--json"]);
    assert_eq!(find(&expired, &id)["status"], "expired");
    env.run(&["approve", &id])
        .assert_refused(&format!("proposal {id} is already expired"));
    assert_eq!(env.json(&["policy", "demo", "--json"])["grants"], json!([]));
}
