//! Grants: `policy`, `approve --for`, grants that end by time, `revoke`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::util::Env;

#[test]
fn policy_lists_what_was_approved_or_modified_not_rejected() {
    let env = Env::new();
    let a = env.egress("a.example.com", 443);
    let m = env.egress("b.example.com", 443);
    let r = env.egress("c.example.com", 443);
    let pending = env.egress("d.example.com", 443);
    env.ok(&["approve", &a]);
    env.ok(&["modify", &m, "--change", r#"{"host": "api.b.example.com"}"#]);
    env.ok(&["reject", &r]);

    let doc = env.json(&["policy", "demo", "--json"]);
    assert_eq!(doc["bottle"], "demo");
    let grants = doc["grants"].as_array().unwrap();
    let proposals: Vec<&str> = grants
        .iter()
        .map(|g| g["proposal_id"].as_str().unwrap())
        .collect();
    assert_eq!(proposals, vec![a.as_str(), m.as_str()]);
    assert!(!proposals.contains(&r.as_str()) && !proposals.contains(&pending.as_str()));
    assert_eq!(
        grants[0]["change"],
        json!({"host": "a.example.com", "port": 443})
    );
    assert_eq!(
        grants[1]["change"],
        json!({"host": "api.b.example.com", "port": 443})
    );
    assert_eq!(grants[1]["granted_by"], "tester");
    assert_eq!(grants[1]["kind"], "egress");
    assert!(grants[0]["expires_at"].is_null() && grants[0]["seconds_left"].is_null());
    assert!(grants[0]["id"].as_str().unwrap().len() == 36);

    let table = env.ok(&["policy", "demo"]);
    assert_eq!(table.lines().count(), 3, "{table}");
    assert!(
        table.contains("a.example.com:443") && table.contains("api.b.example.com:443"),
        "{table}"
    );
    assert!(!table.contains("c.example.com"), "{table}");
    assert!(table.contains("until revoked"), "{table}");
    env.run(&["policy", "nosuch"])
        .assert_refused("no bottle named nosuch");
}

#[test]
fn a_grant_for_two_seconds_is_in_force_then_gone_with_an_audit_event() {
    let env = Env::new();
    let id = env.egress("a.example.com", 443);
    let out = env.ok(&["approve", &id, "--for", "2s"]);
    assert!(
        out.contains("; grant ") && (out.contains(" for 1s") || out.contains(" for 2s")),
        "{out}"
    );

    let doc = env.json(&["policy", "demo", "--json"]);
    let grant = &doc["grants"][0];
    let grant_id = grant["id"].as_str().unwrap().to_string();
    assert_eq!(grant["proposal_id"], id.as_str());
    assert!(grant["expires_at"].is_string());
    let left = grant["seconds_left"].as_i64().unwrap();
    assert!((0..=2).contains(&left), "{left}");
    let table = env.ok(&["policy", "demo"]);
    assert!(
        table.contains(&grant_id) && !table.contains("until revoked"),
        "{table}"
    );
    assert!(out.contains(&grant_id));

    std::thread::sleep(Duration::from_millis(2500));
    // Gone by time alone, before any sweep wrote the event.
    assert_eq!(env.json(&["policy", "demo", "--json"])["grants"], json!([]));
    assert_eq!(
        env.ok(&["policy", "demo"]).trim(),
        "no grants in force for bottle demo"
    );
    let audit = env.json(&["audit", "--json"]);
    assert!(!audit.to_string().contains("grant-expired"));

    // The server's periodic sweep records the expiry.
    let swept = env.rt.block_on(env.store.sweep()).unwrap();
    assert_eq!(swept.expired_grants, 1);
    let audit = env.json(&["audit", "--json"]);
    let expired: Vec<&Value> = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "grant-expired")
        .collect();
    assert_eq!(expired.len(), 1, "{audit}");
    assert_eq!(expired[0]["grant_id"], grant_id.as_str());
    assert_eq!(expired[0]["proposal_id"], id.as_str());
    assert_eq!(expired[0]["actor"], "system");
    assert!(env.ok(&["show", &id]).contains("ended: grant-expired"));
    env.run(&["revoke", &grant_id])
        .assert_refused("already ended (expired");
}

#[test]
fn revoke_ends_a_grant_now() {
    let env = Env::new();
    let id = env.egress("a.example.com", 443);
    env.ok(&["approve", &id, "--for", "8h"]);
    let doc = env.json(&["policy", "demo", "--json"]);
    let grant_id = doc["grants"][0]["id"].as_str().unwrap().to_string();
    assert!(doc["grants"][0]["seconds_left"].as_i64().unwrap() > 8 * 3600 - 60);
    assert!(env.ok(&["policy", "demo"]).contains("7h 59m"));

    let out = env.ok(&["--as", "bob", "revoke", &grant_id]);
    assert_eq!(
        out.trim(),
        format!("revoked grant {grant_id} (demo: egress a.example.com:443)")
    );
    assert_eq!(env.json(&["policy", "demo", "--json"])["grants"], json!([]));
    let audit = env.json(&["audit", "--bottle", "demo", "--json"]);
    let last = audit["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["event"], "grant-revoked");
    assert_eq!(last["actor"], "operator:bob");
    assert_eq!(last["grant_id"], grant_id.as_str());

    env.run(&["revoke", &grant_id])
        .assert_refused("already ended (revoked");
    env.run(&["revoke", "nope"])
        .assert_refused("no grant with id nope");
}
