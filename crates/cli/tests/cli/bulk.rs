//! Bulk decisions: by bottle, kind and glob; flagged items only when asked; `--dry-run`.

use crate::util::{Env, find};

#[test]
fn bulk_approve_skips_flagged_unless_asked_and_dry_run_changes_nothing() {
    let env = Env::new();
    let a = env.egress("a.example.com", 443);
    let b = env.egress("b.example.com", 443);
    let flagged = env.egress("c.example.com", 22);
    let other = env.egress("other.org", 443);
    let push = env.push("refs/heads/a.example.com");
    let bulk = [
        "approve",
        "--bottle",
        "demo",
        "--kind",
        "egress",
        "--match",
        "*.example.com",
    ];

    let before = env.json(&["list", "--status", "all", "--json"]);
    let mut dry: Vec<&str> = bulk.to_vec();
    dry.push("--dry-run");
    let out = env.ok(&dry);
    assert!(
        out.contains(&format!("would approve {a}")) && out.contains(&format!("would approve {b}")),
        "{out}"
    );
    assert!(
        out.contains(&format!("skipped {flagged}")) && out.contains("unusual-port"),
        "{out}"
    );
    assert!(!out.contains(&other) && !out.contains(&push), "{out}");
    assert!(out.contains("nothing was changed"), "{out}");
    assert_eq!(env.json(&["list", "--status", "all", "--json"]), before);

    let out = env.ok(&[&bulk[..], &["--for", "1h", "--note", "batch"]].concat());
    assert!(
        out.contains(&format!("approved {a}")) && out.contains(&format!("approved {b}")),
        "{out}"
    );
    assert!(
        out.contains("approved 2, skipped 1 flagged, refused 0"),
        "{out}"
    );
    let doc = env.json(&["list", "--status", "all", "--json"]);
    assert_eq!(find(&doc, &a)["status"], "approved");
    assert_eq!(find(&doc, &a)["decision"]["note"], "batch");
    assert_eq!(find(&doc, &b)["status"], "approved");
    assert_eq!(find(&doc, &flagged)["status"], "pending");
    assert_eq!(find(&doc, &other)["status"], "pending");
    assert_eq!(find(&doc, &push)["status"], "pending");
    let grants = env.json(&["policy", "demo", "--json"]);
    assert!(
        grants["grants"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["expires_at"].is_string())
    );

    let out = env.ok(&[&bulk[..], &["--include-flagged", "--yes"]].concat());
    assert!(out.contains(&format!("approved {flagged}")), "{out}");
    assert!(out.contains("[flags: unusual-port]"), "{out}");
    assert_eq!(
        find(&env.json(&["list", "--status", "all", "--json"]), &flagged)["status"],
        "approved"
    );

    // Nothing left to match: refused, saying so.
    env.run(&bulk)
        .assert_refused("no pending egress proposal of bottle demo matches");
}

#[test]
fn bulk_reject_matches_refs_by_glob() {
    let env = Env::new();
    let f1 = env.push("refs/heads/feature/one");
    let f2 = env.push("feature/two");
    let main = env.push("refs/heads/main");
    let out = env.ok(&[
        "reject",
        "--bottle",
        "demo",
        "--kind",
        "git-push",
        "--match",
        "feature/*",
        "--note",
        "open a PR",
    ]);
    assert!(out.contains("rejected 2, skipped 0 flagged"), "{out}");
    let doc = env.json(&["list", "--status", "all", "--json"]);
    assert_eq!(find(&doc, &f1)["status"], "rejected");
    assert_eq!(find(&doc, &f2)["decision"]["note"], "open a PR");
    assert_eq!(find(&doc, &main)["status"], "pending");
    env.run(&[
        "reject", "--bottle", "nosuch", "--kind", "egress", "--match", "*",
    ])
    .assert_refused("no bottle named nosuch");
}
