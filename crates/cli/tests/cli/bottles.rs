//! The bottle registry: `bottle add`, `bottle list`, `bottle remove`.

use serde_json::Value;

use crate::util::{Env, command, find};

#[test]
fn bottle_add_creates_the_database_and_the_registry_works() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new.db");
    let run = |args: &[&str]| crate::util::Run::from(command(&db).args(args).output().unwrap());

    let r = run(&["bottle", "add", "demo", "--ip", "10.0.3.2"]);
    r.assert_ok();
    assert_eq!(r.stdout.trim(), "added bottle demo (10.0.3.2)");
    assert!(r.stderr.contains("created supervise database"), "{r:?}");
    assert!(db.exists());
    run(&["bottle", "add", "web", "--ip", "10.0.3.3"]).assert_ok();

    let r = run(&["bottle", "list", "--json"]);
    r.assert_ok();
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["bottles"][0]["slug"], "demo");
    assert_eq!(doc["bottles"][0]["ip"], "10.0.3.2");
    assert!(doc["bottles"][0]["created_at"].is_string());
    assert_eq!(doc["bottles"][1]["slug"], "web");
    let table = run(&["bottle", "list"]).stdout;
    assert!(table.starts_with("SLUG"), "{table}");
    assert!(table.contains("web   10.0.3.3"), "{table}");

    run(&["bottle", "add", "demo", "--ip", "10.0.3.9"])
        .assert_refused("a bottle named demo already exists");
    run(&["bottle", "add", "other", "--ip", "10.0.3.2"])
        .assert_refused("address 10.0.3.2 already belongs to bottle demo");
    run(&["bottle", "add", "Bad_Slug", "--ip", "10.0.3.7"]).assert_refused("slug");

    let r = run(&["bottle", "rm", "web"]);
    r.assert_ok();
    assert!(
        r.stdout.starts_with("removed bottle web (10.0.3.3)"),
        "{r:?}"
    );
    run(&["bottle", "rm", "web"]).assert_refused("no bottle named web");
    let r = run(&["audit", "--json"]);
    let events: Value = serde_json::from_str(&r.stdout).unwrap();
    let names: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec!["bottle-added", "bottle-added", "bottle-removed"]
    );
    assert_eq!(events["events"][0]["actor"], "operator:tester");
}

#[test]
fn removing_a_bottle_withdraws_its_proposals_and_ends_its_grants() {
    let env = Env::new();
    let a = env.egress("a.example.com", 443);
    let p = env.egress("p.example.com", 443);
    env.ok(&["approve", &a]);
    let out = env.ok(&["bottle", "rm", "demo"]);
    assert!(
        out.contains("withdrew 1 pending proposal(s), ended 1 grant(s)"),
        "{out}"
    );
    let doc = env.json(&["list", "--status", "all", "--json"]);
    assert_eq!(find(&doc, &p)["status"], "withdrawn");
    env.run(&["policy", "demo"])
        .assert_refused("no bottle named demo");
}
