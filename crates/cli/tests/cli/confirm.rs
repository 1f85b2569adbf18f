//! Flagged changes need `--yes` off a terminal (for approve and modify alike, deciding
//! nothing without it), `observed` alone needs nothing, and a gate push takes no `--for`.

use serde_json::json;
use supervise_store::Kind;

use crate::util::{Env, find};

fn status(env: &Env, id: &str) -> String {
    let doc = env.json(&["list", "--status", "all", "--json"]);
    find(&doc, id)["status"].as_str().unwrap().to_owned()
}

#[test]
fn approving_a_flagged_change_off_a_terminal_needs_yes_and_decides_nothing_without_it() {
    let env = Env::new();
    let risky = env.egress("10.0.0.5", 443);
    env.run(&["approve", &risky])
        .assert_refused("confirm with --yes");
    assert_eq!(status(&env, &risky), "pending");
    assert!(
        env.json(&["policy", "demo", "--json"])["grants"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let out = env.ok(&["approve", &risky, "--yes"]);
    assert!(out.starts_with(&format!("approved {risky}")), "{out}");
}

#[test]
fn modifying_into_a_flagged_change_needs_yes() {
    let env = Env::new();
    let plain = env.egress("a.example.com", 443);
    env.run(&["modify", &plain, "--change", r#"{"port": 22}"#])
        .assert_refused("confirm with --yes");
    assert_eq!(status(&env, &plain), "pending");
    env.ok(&["modify", &plain, "--change", r#"{"port": 22}"#, "--yes"]);
    assert_eq!(status(&env, &plain), "modified");
}

#[test]
fn an_unflagged_change_and_a_rejection_need_no_confirmation() {
    let env = Env::new();
    let plain = env.egress("a.example.com", 443);
    env.ok(&["approve", &plain]);
    let risky = env.egress("169.254.169.254", 80);
    env.ok(&["reject", &risky]);
    assert_eq!(status(&env, &risky), "rejected");
}

#[test]
fn bulk_approve_of_flagged_matches_needs_yes() {
    let env = Env::new();
    let flagged = env.egress("c.example.com", 22);
    let bulk = [
        "approve",
        "--bottle",
        "demo",
        "--kind",
        "egress",
        "--match",
        "*.example.com",
        "--include-flagged",
    ];
    env.run(&bulk).assert_refused("confirm with --yes");
    assert_eq!(status(&env, &flagged), "pending");
    env.ok(&[&bulk[..], &["--yes"]].concat());
    assert_eq!(status(&env, &flagged), "approved");
}

#[test]
fn approving_a_gate_push_for_a_duration_is_refused_saying_why() {
    let env = Env::new();
    let old = "1".repeat(40);
    let new = "2".repeat(40);
    let id = env.propose(
        Kind::GitPush,
        json!({"remote": "origin", "ref": "refs/heads/feature", "old": old, "new": new,
               "summary": {"commits": 1, "files_changed": 1, "insertions": 1, "deletions": 0,
                           "subjects": ["x"], "force": false, "delete": false,
                           "create": false}}),
        "push my work",
    );
    env.run(&["approve", &id, "--for", "1h"])
        .assert_refused("takes no duration");
    assert_eq!(status(&env, &id), "pending");
    env.ok(&["approve", &id]);
    assert_eq!(status(&env, &id), "approved");
}
