//! Reading the queue: `list` as a table and as JSON, and `show`.

use serde_json::json;
use supervise_store::Kind;

use crate::util::{Env, find, ids};

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
