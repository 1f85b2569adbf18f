//! The real `supervise` binary against real database files: every command in human and
//! `--json` form, decisions and refusals, exit codes, grants that end, risk flags, watch,
//! bulk decisions. Data is set up through `supervise-store`, as the server would.

mod util;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use supervise_store::Kind;
use util::{Env, command, find, ids};

// ----- list and show --------------------------------------------------------------------

#[test]
fn list_shows_the_queue_as_a_table_and_as_json() {
    let env = Env::new();
    let a = env.egress("api.example.com", 443);
    let b = env.push("refs/heads/feature/x");

    let table = env.ok(&["list"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    for header in [
        "ID",
        "BOTTLE",
        "KIND",
        "CHANGE",
        "FLAGS",
        "HITS",
        "AGE",
        "JUSTIFICATION",
    ] {
        assert!(lines[0].contains(header), "{header} missing: {table}");
    }
    // A short id: a prefix of the full one, covering its timestamp, usable as an id.
    let short = lines[1].split_whitespace().next().unwrap();
    assert!(
        a.starts_with(short) && short.len() >= 13 && short.len() < a.len(),
        "{table}"
    );
    assert!(env.ok(&["show", short]).contains(&a));
    assert!(lines[1].contains("api.example.com:443"), "{table}");
    assert!(lines[2].contains("origin refs/heads/feature/x"), "{table}");
    // Aligned: every row's CHANGE column starts where the header's does.
    let col = lines[0].find("CHANGE").unwrap();
    assert_eq!(lines[1].find("api.example.com").unwrap(), col, "{table}");
    assert!(!table.contains('\x1b'), "no colour when piped");

    let doc = env.json(&["list", "--json"]);
    assert_eq!(ids(&doc), vec![a.clone(), b.clone()], "oldest first");
    let p = find(&doc, &a);
    assert_eq!(p["bottle"], "demo");
    assert_eq!(p["kind"], "egress");
    assert_eq!(p["status"], "pending");
    assert_eq!(p["change"], json!({"host": "api.example.com", "port": 443}));
    assert_eq!(p["justification"], "need api.example.com:443 for the build");
    assert_eq!(p["flags"], json!([]));
    assert_eq!(p["hits"], 1);
    assert!(p["created_at"].as_str().unwrap().ends_with('Z'));
    assert!(p["expires_at"].is_string());
    assert!(p["decision"].is_null());
    assert!(p["archived_at"].is_null());
    assert_eq!(find(&doc, &b)["kind"], "git-push");

    // Filters.
    assert_eq!(
        ids(&env.json(&["list", "--bottle", "demo", "--json"])).len(),
        2
    );
    assert_eq!(
        ids(&env.json(&["list", "--status", "decided", "--json"])).len(),
        0
    );
    env.run(&["list", "--bottle", "nosuch"])
        .assert_refused("no bottle named nosuch");
}

#[test]
fn list_with_nothing_pending_says_so() {
    let env = Env::new();
    assert_eq!(env.ok(&["list"]).trim(), "no pending proposals");
    assert_eq!(env.json(&["list", "--json"]), json!({"proposals": []}));
}

#[test]
fn long_justifications_are_cut_with_a_marker_and_never_break_the_table() {
    let env = Env::new();
    let long = format!("first line\nsecond line {}", "word ".repeat(300));
    let id = env.propose(Kind::Egress, json!({"host": "a.example.com"}), &long);
    let table = env.ok(&["list"]);
    assert_eq!(
        table.lines().count(),
        2,
        "a newline must not break the row: {table}"
    );
    let row = table.lines().nth(1).unwrap();
    assert!(row.ends_with('…'), "{row}");
    assert!(
        row.chars().count() <= 160,
        "fits COLUMNS: {}",
        row.chars().count()
    );

    // show wraps it instead, keeping every word.
    let shown = env.ok(&["show", &id]);
    assert!(shown.lines().all(|l| l.chars().count() <= 160), "{shown}");
    let block: String = shown
        .lines()
        .skip_while(|l| *l != "justification")
        .take_while(|l| !l.starts_with("decision"))
        .collect();
    assert_eq!(block.matches("word").count(), 300, "{shown}");
}

#[test]
fn show_is_a_readable_block_and_a_json_document() {
    let env = Env::new();
    let id = env.egress("10.1.2.3", 8080);
    let text = env.ok(&["show", &id[..13]]);
    for want in [
        id.as_str(),
        "demo",
        "10.1.2.3:8080",
        "need 10.1.2.3:8080 for the build",
        "pending (expires in",
        "none yet",
        "history",
        "proposed",
        "bottle:demo",
    ] {
        assert!(text.contains(want), "{want:?} missing:\n{text}");
    }
    // One line per flag.
    for flag in ["ip-literal", "private-ip", "unusual-port"] {
        assert_eq!(
            text.lines().filter(|l| l.contains(flag)).count(),
            1,
            "{flag}:\n{text}"
        );
    }

    let doc = env.json(&["show", &id, "--json"]);
    assert_eq!(doc["id"], id.as_str());
    assert_eq!(doc["status"], "pending");
    assert_eq!(
        doc["flags"],
        json!(["ip-literal", "private-ip", "unusual-port"])
    );
    assert_eq!(doc["events"][0]["event"], "proposed");
    assert_eq!(doc["events"][0]["actor"], "bottle:demo");
    assert_eq!(doc["events"][0]["proposal_id"], id.as_str());
}

#[test]
fn repeats_show_as_hits_in_list_and_show() {
    let env = Env::new();
    let id = env.egress("pypi.org", 443);
    assert_eq!(
        env.egress("PyPI.org.", 443),
        id,
        "same change, same proposal"
    );
    env.egress("pypi.org", 443);
    assert_eq!(find(&env.json(&["list", "--json"]), &id)["hits"], 3);
    let table = env.ok(&["list"]);
    let row = table.lines().nth(1).unwrap();
    let hits_col = table.lines().next().unwrap().find("HITS").unwrap();
    assert_eq!(&row[hits_col..hits_col + 1], "3", "{table}");
    assert!(
        env.ok(&["show", &id])
            .lines()
            .any(|l| l.starts_with("hits") && l.ends_with(" 3"))
    );
}

// ----- decisions ------------------------------------------------------------------------

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
    assert!(shown.contains("modified by alice at"), "{shown}");
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
fn read_commands_never_create_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("missing.db");
    for args in [
        vec!["list"],
        vec!["list", "--json"],
        vec!["show", "0190"],
        vec!["approve", "0190"],
        vec!["policy", "demo"],
        vec!["audit"],
        vec!["bottle", "list"],
        vec!["bottle", "rm", "demo"],
        vec!["revoke", "0190"],
    ] {
        let r = util::Run::from(command(&db).args(&args).output().unwrap());
        r.assert_refused(&format!("no supervise database at {}", db.display()));
        assert!(!db.exists(), "{args:?} created the file");
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing at all was created"
    );
}

#[test]
fn supervise_db_names_the_database_and_the_flag_wins() {
    let env = Env::new();
    env.egress("a.example.com", 443);
    let via_env = std::process::Command::new(util::BIN)
        .args(["list", "--json"])
        .env("SUPERVISE_DB", &env.db)
        .output()
        .unwrap();
    assert!(via_env.status.success());
    let doc: Value = serde_json::from_slice(&via_env.stdout).unwrap();
    assert_eq!(ids(&doc).len(), 1);
    // A missing --db wins over a good SUPERVISE_DB.
    let r = util::Run::from(
        std::process::Command::new(util::BIN)
            .args(["--db", "/nonexistent/x.db", "list"])
            .env("SUPERVISE_DB", &env.db)
            .output()
            .unwrap(),
    );
    r.assert_refused("no supervise database at /nonexistent/x.db");
}

#[test]
fn a_foreign_file_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("notes.txt");
    std::fs::write(&db, "not a database, just notes\n").unwrap();
    let r = util::Run::from(command(&db).arg("list").output().unwrap());
    r.assert_refused("is not a supervise database");
    assert_eq!(
        std::fs::read_to_string(&db).unwrap(),
        "not a database, just notes\n"
    );
}

// ----- bottles, policy, grants, audit ----------------------------------------------------

#[test]
fn bottle_add_creates_the_database_and_the_registry_works() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new.db");
    let run = |args: &[&str]| util::Run::from(command(&db).args(args).output().unwrap());

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

// ----- risk flags ------------------------------------------------------------------------

#[test]
fn risk_flags_show_in_json_list_and_show() {
    let env = Env::new();
    let egress: &[(&str, u16, &[&str])] = &[
        ("plain.example.com", 443, &[]),
        ("plain.example.com", 80, &[]),
        ("*.example.com", 443, &["wildcard-host"]),
        ("ssh.example.com", 22, &["unusual-port"]),
        ("8.8.8.8", 443, &["ip-literal"]),
        ("10.1.2.3", 443, &["ip-literal", "private-ip"]),
        ("192.168.1.1", 443, &["ip-literal", "private-ip"]),
        ("127.0.0.1", 443, &["ip-literal", "loopback"]),
        ("::1", 443, &["ip-literal", "loopback"]),
        ("fe80::1", 443, &["ip-literal", "link-local"]),
        (
            "169.254.169.254",
            80,
            &["ip-literal", "cloud-metadata", "link-local"],
        ),
        (
            "fd00:ec2::254",
            80,
            &["ip-literal", "cloud-metadata", "private-ip"],
        ),
        ("100.64.0.1", 443, &["ip-literal", "cgnat"]),
        ("2130706433", 443, &["disguised-ip", "loopback"]),
        ("0x7f000001", 443, &["disguised-ip", "loopback"]),
        ("0177.0.0.1", 443, &["disguised-ip", "loopback"]),
        (
            "0xa9.0xfe.0xa9.0xfe",
            443,
            &["disguised-ip", "cloud-metadata", "link-local"],
        ),
    ];
    let pushes: &[(&str, &[&str])] = &[
        ("refs/heads/feature/x", &[]),
        ("refs/heads/main", &["default-branch"]),
        ("refs/heads/master", &["default-branch"]),
        ("refs/tags/v1.0", &["tag"]),
        ("refs/notes/commits", &["ref-outside-heads"]),
    ];
    let mut cases: Vec<(String, Vec<&str>)> = Vec::new();
    for (host, port, want) in egress {
        cases.push((env.egress(host, *port), want.to_vec()));
    }
    for (reference, want) in pushes {
        cases.push((env.push(reference), want.to_vec()));
    }
    let doc = env.json(&["list", "--json"]);
    assert_eq!(ids(&doc).len(), cases.len());
    for (id, want) in &cases {
        let p = find(&doc, id);
        assert_eq!(p["flags"], json!(want), "{}", p["change"]);
    }

    // The table's FLAGS column and show's one line per flag say the same.
    let table = env.ok(&["list"]);
    let metadata = table
        .lines()
        .find(|l| l.contains("169.254.169.254:80"))
        .unwrap();
    assert!(
        metadata.contains("ip-literal,cloud-metadata,link-local"),
        "{metadata}"
    );
    let plain = table
        .lines()
        .find(|l| l.contains("plain.example.com:443"))
        .unwrap();
    let flags_col = table.lines().next().unwrap().find("FLAGS").unwrap();
    assert_eq!(&plain[flags_col..flags_col + 2], "- ", "{table}");
    let shown = env.ok(&["show", &cases[10].0]);
    assert!(
        shown.contains("cloud-metadata  the cloud metadata service"),
        "{shown}"
    );
    let clean = env.ok(&["show", &cases[0].0]);
    assert!(
        clean
            .lines()
            .any(|l| l.starts_with("flags") && l.ends_with("none")),
        "{clean}"
    );
}

// ----- bulk ------------------------------------------------------------------------------

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

    let out = env.ok(&[&bulk[..], &["--include-flagged"]].concat());
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

// ----- watch -----------------------------------------------------------------------------

/// Spawns `list --watch` and forwards its stdout lines to a channel.
fn spawn_watch(env: &Env, extra: &[&str]) -> (std::process::Child, mpsc::Receiver<String>) {
    let mut child = env
        .cmd(&[&["list", "--watch"], extra].concat())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn watch");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

fn wait_exit(child: &mut std::process::Child, within: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > within {
            let _ = child.kill();
            panic!("watch did not exit within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn watch_shows_a_new_proposal_within_a_second_and_stops_on_ctrl_c() {
    let env = Env::new();
    let (mut child, rx) = spawn_watch(&env, &[]);
    let first = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("initial list");
    assert_eq!(first, "no pending proposals");

    let proposed_at = Instant::now();
    let id = env.egress("new.example.com", 22);
    let line = rx
        .recv_timeout(Duration::from_secs(1))
        .expect("a line within a second");
    assert!(proposed_at.elapsed() < Duration::from_secs(1));
    assert!(line.contains("+ proposed") && line.contains(&id), "{line}");
    assert!(
        line.contains("egress new.example.com:22") && line.contains("[unusual-port]"),
        "{line}"
    );

    env.ok(&["approve", &id]);
    let line = rx
        .recv_timeout(Duration::from_secs(2))
        .expect("the decision");
    assert!(
        line.contains("- approved") && line.contains(&id) && line.contains("operator:tester"),
        "{line}"
    );

    let other = env.egress("other.example.com", 443);
    assert!(
        rx.recv_timeout(Duration::from_secs(2))
            .unwrap()
            .contains(&other)
    );
    env.ok(&["reject", &other, "--note", "no"]);
    let line = rx
        .recv_timeout(Duration::from_secs(2))
        .expect("the rejection");
    assert!(
        line.contains("- rejected") && line.contains("egress other.example.com:443"),
        "{line}"
    );

    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = wait_exit(&mut child, Duration::from_secs(3));
    assert!(status.success(), "clean exit on Ctrl-C: {status:?}");
}

#[test]
fn watch_exits_cleanly_when_stdout_closes() {
    let env = Env::new();
    let mut child = env
        .cmd(&["list", "--watch"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert_eq!(first.trim(), "no pending proposals");
    drop(stdout); // nobody reads any more; no new event is written
    let status = wait_exit(&mut child, Duration::from_secs(3));
    assert!(status.success(), "{status:?}");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!err.contains("error"), "{err}");
}

#[test]
fn watch_json_prints_json_lines() {
    let env = Env::new();
    let (mut child, rx) = spawn_watch(&env, &["--json"]);
    let first: Value =
        serde_json::from_str(&rx.recv_timeout(Duration::from_secs(10)).unwrap()).unwrap();
    assert_eq!(first, json!({"proposals": []}));
    let id = env.egress("j.example.com", 443);
    let ev: Value =
        serde_json::from_str(&rx.recv_timeout(Duration::from_secs(2)).unwrap()).unwrap();
    assert_eq!(ev["event"], "proposed");
    assert_eq!(ev["proposal_id"], id.as_str());
    child.kill().unwrap();
    child.wait().unwrap();
}

// ----- output plumbing -------------------------------------------------------------------

#[test]
fn a_closed_pipe_is_not_an_error() {
    let env = Env::new();
    for i in 0..40 {
        env.egress(&format!("h{i}.example.com"), 443);
    }
    let mut child = env
        .cmd(&["audit"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn colour_only_when_asked_or_on_a_terminal_and_never_in_json() {
    let env = Env::new();
    env.egress("10.0.0.1", 22);
    assert!(!env.ok(&["list"]).contains('\x1b'));
    assert!(env.ok(&["--color", "always", "list"]).contains("\x1b[31m"));
    assert!(
        !env.ok(&["--color", "always", "list", "--json"])
            .contains('\x1b')
    );
    let no_color = env.cmd(&["list"]).env("NO_COLOR", "1").output().unwrap();
    assert!(!String::from_utf8_lossy(&no_color.stdout).contains('\x1b'));
}

#[test]
fn agent_text_cannot_smuggle_terminal_escapes_or_reorder_text() {
    let env = Env::new();
    let id = env.propose(
        Kind::Egress,
        json!({"host": "a.example.com"}),
        "harmless\u{202e}txt.exe and more",
    );
    for args in [vec!["list"], vec!["show", id.as_str()], vec!["audit"]] {
        let out = env.ok(&args);
        assert!(!out.contains('\u{202e}'), "{args:?}: {out}");
        assert!(out.contains("\\u{202e}"), "{args:?}: {out}");
    }
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
    let r = util::Run::from(
        command(std::path::Path::new("/nonexistent/x.db"))
            .args(["completions", "bash"])
            .output()
            .unwrap(),
    );
    r.assert_ok();
}

#[test]
fn a_held_write_lock_gives_database_is_busy_within_the_timeout() {
    use std::io::Write;
    if std::process::Command::new("sqlite3")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no sqlite3 command to hold the write lock");
        return;
    }
    let env = Env::new();
    let id = env.egress("a.example.com", 443);
    let mut holder = std::process::Command::new("sqlite3")
        .arg(&env.db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = holder.stdin.take().unwrap();
    let mut stdout = BufReader::new(holder.stdout.take().unwrap());
    writeln!(stdin, ".timeout 5000\nBEGIN IMMEDIATE;\nSELECT 'locked';").unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "locked");

    // Readers are not blocked (WAL); a decision waits the busy timeout, then says so.
    assert_eq!(ids(&env.json(&["list", "--json"])), vec![id.clone()]);
    let start = Instant::now();
    env.run(&["approve", &id])
        .assert_refused("database is busy");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );

    writeln!(stdin, "ROLLBACK;\n.quit").unwrap();
    drop(stdin);
    holder.wait().unwrap();
    env.ok(&["approve", &id]);
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
    let out = env
        .cmd(&["approve", &b])
        .env_remove("USER")
        .env_remove("LOGNAME")
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc = env.json(&["list", "--status", "all", "--json"]);
    assert_eq!(find(&doc, &a)["decision"]["decided_by"], "bob");
    assert_eq!(find(&doc, &b)["decision"]["decided_by"], "unknown");
}
