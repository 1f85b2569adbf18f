//! How `supervise` is invoked: usage errors, `SUPERVISE_DB`, the operator's name, completions.

use serde_json::Value;

use crate::util::{Env, command, find, ids};

#[test]
fn bad_usage_exits_2() {
    let env = Env::new();
    let id = env.egress("a.example.com", 443);
    for args in [
        vec![],
        vec!["frobnicate"],
        vec!["list", "--bogus"],
        vec!["list", "--status", "maybe"],
        vec!["show"],
        vec!["approve"],
        vec!["approve", id.as_str(), "--for", "soon"],
        vec!["approve", id.as_str(), "--for", "0"],
        vec![
            "approve",
            id.as_str(),
            "--bottle",
            "demo",
            "--kind",
            "egress",
            "--match",
            "*",
        ],
        vec!["approve", "--bottle", "demo"],
        vec!["modify", id.as_str()],
        vec!["modify", id.as_str(), "--change", "port=8443"],
        vec!["modify", id.as_str(), "--change", "[8443]"],
        vec!["modify", id.as_str(), "--change", "{}"],
        vec!["bottle", "add", "x", "--ip", "not-an-ip"],
        vec!["completions", "powershell-classic"],
        vec!["--as", "", "approve", id.as_str()],
    ] {
        env.run(&args).assert_usage();
    }
    assert_eq!(
        find(&env.json(&["list", "--json"]), &id)["status"],
        "pending"
    );
    // --help is not an error, and shows an example.
    let help = env.run(&["approve", "--help"]);
    help.assert_ok();
    assert!(help.stdout.contains("Examples:"), "{}", help.stdout);
}

#[test]
fn supervise_db_names_the_database_and_the_flag_wins() {
    let env = Env::new();
    env.egress("a.example.com", 443);
    let via_env = std::process::Command::new(crate::util::BIN)
        .args(["list", "--json"])
        .env("SUPERVISE_DB", &env.db)
        .output()
        .unwrap();
    assert!(via_env.status.success());
    let doc: Value = serde_json::from_slice(&via_env.stdout).unwrap();
    assert_eq!(ids(&doc).len(), 1);
    // A missing --db wins over a good SUPERVISE_DB.
    let r = crate::util::Run::from(
        std::process::Command::new(crate::util::BIN)
            .args(["--db", "/nonexistent/x.db", "list"])
            .env("SUPERVISE_DB", &env.db)
            .output()
            .unwrap(),
    );
    r.assert_refused("no supervise database at /nonexistent/x.db");
}

#[test]
fn the_operator_defaults_to_the_login_user() {
    let env = Env::new();
    let a = env.egress("a.example.com", 443);
    let b = env.egress("b.example.com", 443);
    let out = env
        .cmd(&["approve", &a])
        .env_remove("USER")
        .env("LOGNAME", "bob")
        .output()
        .unwrap();
    assert!(out.status.success());
    // Neither variable (cron, a service): the user database's name for the user id, as
    // `id -un` reads it.
    let account = std::process::Command::new("id")
        .arg("-un")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let r = crate::util::Run::from(
        env.cmd(&["approve", &b])
            .env_remove("USER")
            .env_remove("LOGNAME")
            .output()
            .unwrap(),
    );
    let doc = env.json(&["list", "--status", "all", "--json"]);
    assert_eq!(find(&doc, &a)["decision"]["decided_by"], "bob");
    match account {
        Some(name) => {
            r.assert_ok();
            assert_eq!(find(&doc, &b)["decision"]["decided_by"], name.as_str());
            assert_eq!(find(&doc, &b)["decision"]["via"], "cli");
        }
        None => {
            // A user id the user database does not know: ask for --as, record nothing.
            r.assert_usage();
            assert!(r.stderr.contains("--as"), "{r:#?}");
            assert_eq!(find(&doc, &b)["status"], "pending");
        }
    }
    assert!(!doc.to_string().contains("\"unknown\""));
}

#[test]
fn completions_for_each_shell() {
    let env = Env::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = env.ok(&["completions", shell]);
        assert!(out.len() > 500 && out.contains("supervise"), "{shell}");
        assert!(
            out.contains("approve") && out.contains("include-flagged"),
            "{shell}"
        );
    }
    // No database needed.
    let r = crate::util::Run::from(
        command(std::path::Path::new("/nonexistent/x.db"))
            .args(["completions", "bash"])
            .output()
            .unwrap(),
    );
    r.assert_ok();
}

/// A command prefix that runs a program as uid 54321, which the user database does not
/// know: `setpriv` when the tests run as root, else an unprivileged user namespace
/// (`unshare --user`). `None` when neither works here.
fn as_unknown_user() -> Option<Vec<&'static str>> {
    let ways: [&[&'static str]; 2] = [
        &[
            "setpriv",
            "--reuid=54321",
            "--regid=54321",
            "--clear-groups",
        ],
        &["unshare", "--user", "--map-user=54321", "--map-group=54321"],
    ];
    ways.into_iter().map(<[&str]>::to_vec).find(|way| {
        // Usable when it ran `id -un` as that user and `id` found no name for it.
        std::process::Command::new(way[0])
            .args(&way[1..])
            .args(["id", "-un"])
            .output()
            .is_ok_and(|o| {
                o.status.code() == Some(1) && String::from_utf8_lossy(&o.stdout).trim() == "54321"
            })
    })
}

#[test]
fn with_no_name_anywhere_a_decision_asks_for_as_and_records_nothing() {
    let env = Env::new();
    let id = env.egress("a.example.com", 443);
    let Some(prefix) = as_unknown_user() else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "running as an unknown user id needs root (setpriv) or user namespaces (unshare)"
        );
        eprintln!(
            "SKIPPED: cannot run as an unknown user id (run as root with setpriv, or enable \
             user namespaces for unshare; both in util-linux)"
        );
        return;
    };
    for args in [
        vec!["approve", id.as_str()],
        vec!["reject", id.as_str()],
        vec!["operator", "add", "alice", "--role", "viewer"],
    ] {
        let mut c = std::process::Command::new(prefix[0]);
        c.args(&prefix[1..])
            .arg(crate::util::BIN)
            .arg("--db")
            .arg(&env.db)
            .args(&args)
            .env_remove("USER")
            .env_remove("LOGNAME")
            .env_remove("SUPERVISE_DB");
        let r = crate::util::Run::from(c.output().unwrap());
        r.assert_usage();
        assert!(
            r.stderr.contains(
                "the user database has no name for this user id; give one with --as NAME"
            ),
            "{r:#?}"
        );
    }
    let doc = env.json(&["list", "--json"]);
    assert_eq!(find(&doc, &id)["status"], "pending");
    assert!(
        env.json(&["operator", "list", "--json"])["operators"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}
