//! `show` of an egress proposal: the grants in force, the last decisions on the same
//! destination, the proxy's refusals (recorded by the real `squid-acl` helper), in text and
//! under `--json`'s `context`; `--resolve` marks what the name resolves to.

use std::io::Write;
use std::process::Stdio;

use serde_json::Value;

use crate::util::*;

/// Runs `squid-acl` over `lines` (stdin closed after them); returns its answers.
fn squid_acl(env: &Env, lines: &[&str]) -> String {
    let mut child = command(&env.db)
        .arg("squid-acl")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the helper");
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn show_prints_the_egress_context() {
    let env = Env::new();
    let granted = env.egress("other.example", 443);
    env.ok(&["approve", &granted, "--for", "8h"]);
    let earlier = env.egress("pkg.example", 443);
    env.ok(&["reject", &earlier, "--note", "not <yet>"]);

    // The proxy refuses the bottle twice within the minute: recorded once.
    let answers = squid_acl(
        &env,
        &["10.9.0.2 pkg.example 443", "10.9.0.2 pkg.example 443"],
    );
    assert_eq!(answers.lines().filter(|l| l.starts_with("ERR")).count(), 2);

    let text = env.ok(&["show", &earlier]);
    assert!(text.contains("Grants in force"), "{text}");
    assert!(text.contains("other.example"), "{text}");
    assert!(
        text.contains("Recent decisions on pkg.example:443"),
        "{text}"
    );
    assert!(text.contains("rejected"), "{text}");
    assert!(text.contains("\"not <yet>\""), "{text}");
    assert!(
        text.contains("Refused at the proxy: 1 time, last"),
        "{text}"
    );
    assert!(!text.contains("Resolves from this host"), "{text}");

    let doc = env.json(&["show", &earlier, "--json"]);
    let ctx = &doc["context"];
    assert_eq!(ctx["host"], "pkg.example");
    assert_eq!(ctx["port"], 443);
    assert_eq!(ctx["grants"][0]["change"]["host"], "other.example");
    assert_eq!(ctx["decisions"][0]["event"], "rejected");
    assert_eq!(ctx["decisions"][0]["note"], "not <yet>");
    assert_eq!(ctx["refusals"]["count"], 1);
    assert_eq!(ctx["resolved"], Value::Null, "resolved on request only");

    // A push has no egress context.
    let push = env.push("refs/heads/feature");
    assert_eq!(env.json(&["show", &push, "--json"])["context"], Value::Null);
}

#[test]
fn show_resolve_marks_loopback() {
    let env = Env::new();
    let id = env.egress("localhost", 8080);
    let doc = env.json(&["show", &id, "--json", "--resolve"]);
    let addresses = doc["context"]["resolved"]["addresses"].as_array().unwrap();
    assert!(!addresses.is_empty(), "{doc}");
    for a in addresses {
        assert!(
            a["marks"].as_array().unwrap().contains(&"loopback".into()),
            "{doc}"
        );
    }
    let text = env.ok(&["show", &id, "--resolve"]);
    assert!(
        text.contains("Resolves from this host (localhost)"),
        "{text}"
    );
    assert!(text.contains("! loopback"), "{text}");
}
