//! `audit`: the event trail.

use crate::util::Env;

#[test]
fn audit_is_the_event_trail_with_full_ids() {
    let env = Env::new();
    let id = env.egress("a.example.com", 443);
    env.ok(&["approve", &id, "--note", "fine"]);
    let doc = env.json(&["audit", "--json"]);
    let events = doc["events"].as_array().unwrap();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["bottle-added", "proposed", "approved"]);
    let approved = &events[2];
    for key in [
        "seq",
        "at",
        "event",
        "actor",
        "bottle",
        "proposal_id",
        "grant_id",
        "kind",
        "change",
        "note",
    ] {
        assert!(approved.get(key).is_some(), "{key} missing: {approved}");
    }
    assert_eq!(approved["actor"], "operator:tester");
    assert_eq!(approved["note"], "fine");
    assert_eq!(approved["proposal_id"], id.as_str());
    assert!(events[0]["seq"].as_i64().unwrap() < events[1]["seq"].as_i64().unwrap());

    let table = env.ok(&["audit"]);
    assert_eq!(table.lines().count(), 4, "{table}");
    assert!(table.contains(&id), "full ids: {table}");
    assert_eq!(
        env.json(&["audit", "--bottle", "demo", "--json"])["events"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    env.run(&["audit", "--bottle", "nosuch"])
        .assert_refused("no bottle named nosuch");
}
