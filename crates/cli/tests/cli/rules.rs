//! `supervise rules set|show|check|test` on a real database: a bad file is refused naming
//! every problem, versions are shown with who set them, and a replay counts what a
//! candidate file would do and lists each disagreement with a human's decision.

use std::path::PathBuf;

use supervise_store::{Actor, Verdict};

use crate::util::*;

const GOOD: &str = r#"
@id("pypi") @grant("1h")
permit (principal, action == Action::"egress", resource)
when { resource.host == "pypi.org" };

@id("no-paste") @note("paste sites leak secrets")
forbid (principal, action == Action::"egress", resource)
when { resource.host like "*paste*" };
"#;

fn write(env: &Env, name: &str, text: &str) -> PathBuf {
    let path = env.dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn check_accepts_a_good_file_and_names_every_problem_of_a_bad_one() {
    let env = Env::new();
    let good = write(&env, "good.cedar", GOOD);
    let out = env.ok(&["rules", "check", good.to_str().unwrap()]);
    assert!(out.contains("2 policies, all well formed"), "{out}");
    assert!(out.contains("pypi: permit, grant 1h"), "{out}");
    let bad = write(
        &env,
        "bad.cedar",
        "permit (principal, action, resource);\n\
         @id(\"x\") @grant(\"soon\") permit (principal, action, resource);\n",
    );
    let r = env.run(&["rules", "check", bad.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(r.stderr.contains("is not a valid rules file"), "{r:#?}");
    assert!(r.stderr.contains("needs an @id"), "{r:#?}");
    assert!(
        r.stderr.contains("@grant(\"soon\") must be a duration"),
        "{r:#?}"
    );
    let typo = write(
        &env,
        "typo.cedar",
        "@id(\"t\") permit (principal, action == Action::\"egress\", resource) when { resource.hots == \"a\" };",
    );
    let r = env.run(&["rules", "check", typo.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(r.stderr.contains("schema:"), "{r:#?}");
    let r = env.run(&["rules", "check", "/nonexistent/rules.cedar"]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(r.stderr.contains("cannot read"), "{r:#?}");
}

#[test]
fn set_stores_versions_and_show_prints_them() {
    let env = Env::new();
    let r = env.run(&["rules", "show"]);
    r.assert_ok();
    assert!(r.stdout.contains("no rules set"), "{r:#?}");
    let good = write(&env, "good.cedar", GOOD);
    let out = env.ok(&["rules", "set", good.to_str().unwrap()]);
    assert!(out.contains("rules v1 set (2 policies), sha256 "), "{out}");
    let bad = write(&env, "bad.cedar", "permit (principal, action, resource);");
    let r = env.run(&["rules", "set", bad.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:#?}");
    let out = env.ok(&["rules", "set", "--empty"]);
    assert!(out.contains("rules v2 set (no rules"), "{out}");
    let doc = env.json(&["rules", "show", "--version", "1", "--json"]);
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["set_by"], "operator:tester");
    assert_eq!(doc["rules"][1]["id"], "no-paste");
    assert_eq!(doc["rules"][1]["note"], "paste sites leak secrets");
    assert_eq!(doc["rules"][0]["grant_seconds"], 3600);
    assert_eq!(doc["text"], GOOD);
    let out = env.ok(&["rules", "show"]);
    assert!(out.contains("rules v2 set by operator:tester"), "{out}");
    assert!(
        out.contains("no rules: a human decides every proposal"),
        "{out}"
    );
    env.run(&["rules", "show", "--version", "9"])
        .assert_refused("no rules version 9");
    env.run(&["rules", "set"]).assert_usage();
}

#[test]
fn test_counts_what_a_file_would_do_and_lists_each_disagreement() {
    let env = Env::new();
    let approved = env.egress("pastebin.com", 443);
    let alice = Actor::cli("alice");
    env.rt
        .block_on(
            env.store
                .decide(&approved, Verdict::Approve, &alice, None, None),
        )
        .unwrap();
    let rejected = env.egress("pypi.org", 443);
    env.rt
        .block_on(
            env.store
                .decide(&rejected, Verdict::Reject, &alice, None, None),
        )
        .unwrap();
    env.egress("example.com", 443);
    let file = write(&env, "candidate.cedar", GOOD);
    let r = env.run(&["rules", "test", file.to_str().unwrap(), "--since", "1h"]);
    r.assert_ok();
    assert!(
        r.stdout.contains("3 proposals filed since ")
            && r.stdout
                .contains(": 1 auto-approved, 1 auto-rejected, 1 left to a human"),
        "{r:#?}"
    );
    assert!(r.stdout.contains("2 disagreements"), "{r:#?}");
    let doc = env.json(&["rules", "test", file.to_str().unwrap(), "--json"]);
    assert_eq!(doc["proposals"], 3);
    assert_eq!(doc["auto_approved"], 1);
    assert_eq!(doc["auto_rejected"], 1);
    assert_eq!(doc["human"], 1);
    let d = doc["disagreements"].as_array().unwrap();
    assert_eq!(d.len(), 2);
    assert_eq!(d[0]["id"], approved.as_str());
    assert_eq!(d[0]["human"], "approved");
    assert_eq!(d[0]["decided_by"], "alice");
    assert_eq!(d[0]["rule"], "no-paste");
    assert_eq!(d[1]["id"], rejected.as_str());
    assert_eq!(d[1]["rule"], "pypi");
    // Nothing was set: the replay writes nothing.
    assert!(env.ok(&["rules", "show"]).contains("no rules set"));
}
