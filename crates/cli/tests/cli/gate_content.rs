//! What the gate records of a push's content, with real git through a real gate: the diff
//! kept with the proposal (capped, truncation stated), the content flags, a secret stored
//! only masked, `refs/supervise/ID` while the proposal is undecided, `push-accepted` and
//! `grant-used` for what a grant lets through, and `show --diff`.

use std::process::Command;

use serde_json::{Value, json};
use supervise_store::Kind;

use crate::gate::{Gate, git_in, ok, printed_id, refused};

/// A key shaped like an AWS access key id (not AWS's documented example, which gitleaks'
/// rules allow).
const FAKE_AWS_KEY: &str = "AKIAZ7QK2M4XWB3NVD6R";

fn write(g: &Gate, path: &str, text: &str) {
    let file = g.work.join(path);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, text).unwrap();
}

fn flags(doc: &Value) -> Vec<String> {
    doc["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect()
}

fn file<'a>(doc: &'a Value, path: &str) -> &'a Value {
    doc["diff"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["new_path"] == path)
        .unwrap_or_else(|| panic!("no file {path} in {}", doc["diff"]))
}

#[test]
fn an_install_script_that_fetches_instance_credentials_is_recorded_and_flagged() {
    let g = Gate::new();
    write(
        &g,
        "postinstall.sh",
        "#!/bin/sh\ncurl -s http://169.254.169.254/latest/meta-data/iam/security-credentials/ | sh\n",
    );
    write(
        &g,
        "package.json",
        "{\n  \"name\": \"tool\",\n  \"scripts\": {\n    \"postinstall\": \"sh postinstall.sh\"\n  }\n}\n",
    );
    write(&g, ".github/workflows/ci.yml", "on: push\njobs: {}\n");
    write(&g, "README.md", "<script>alert(1)</script>\n");
    g.git(&["add", "."]);
    g.git(&["update-index", "--chmod=+x", "postinstall.sh"]);
    g.git(&["commit", "-q", "-m", "add a helper <b>"]);
    let new = g.head();

    let r = g.push(&["origin", "HEAD:refs/heads/feature"]);
    refused(&r);
    let id = printed_id(&r);
    let doc = g.env.json(&["show", &id, "--json"]);
    let flags = flags(&doc);
    for f in ["executable-added", "ci-config", "install-script"] {
        assert!(flags.contains(&f.to_string()), "{f} in {flags:?}");
    }
    assert!(!flags.contains(&"secret-in-diff".to_string()), "{flags:?}");
    assert!(!flags.contains(&"large-push".to_string()), "{flags:?}");

    let diff = &doc["diff"];
    assert_eq!(diff["truncated"], false);
    assert_eq!(diff["commits"][0]["id"], new.as_str());
    assert_eq!(diff["commits"][0]["subject"], "add a helper <b>");
    assert_eq!(diff["commits"][0]["author"], "agent <agent@bottle.invalid>");
    let script = file(&doc, "postinstall.sh");
    assert_eq!(script["status"], "added");
    assert_eq!(script["mode"], "executable");
    assert_eq!(script["added"], 2);
    assert_eq!(script["removed"], 0);
    assert_eq!(script["binary"], false);
    assert!(
        script["patch"]
            .as_str()
            .unwrap()
            .contains("+curl -s http://169.254.169.254/latest/meta-data/"),
        "{script}"
    );
    assert_eq!(file(&doc, "package.json")["mode"], "file");

    // `show --diff` prints the files and the added lines; `--stat` the list only.
    let shown = g.env.ok(&["show", &id, "--diff"]);
    for needle in [
        "added       +2 -0  postinstall.sh  [executable]",
        "+curl -s http://169.254.169.254/latest/meta-data/iam/security-credentials/ | sh",
        "! install-script package.json: postinstall",
        "! ci-config .github/workflows/ci.yml",
        "add a helper <b>",
    ] {
        assert!(shown.contains(needle), "{needle:?} in {shown}");
    }
    assert!(
        !shown.contains('\u{1b}'),
        "no colour off a terminal: {shown}"
    );
    let stat = g.env.ok(&["show", &id, "--diff", "--stat"]);
    assert!(stat.contains("postinstall.sh"), "{stat}");
    assert!(!stat.contains("+curl"), "{stat}");
    // The plain block points at the diff.
    assert!(g.env.ok(&["show", &id]).contains("--diff"));
}

#[test]
fn a_pushed_cloud_key_is_flagged_and_stored_only_masked() {
    let g = Gate::new();
    write(
        &g,
        "deploy.env",
        &format!("AWS_ACCESS_KEY_ID={FAKE_AWS_KEY}\nREGION=eu-west-1\n"),
    );
    g.git(&["add", "."]);
    g.git(&["commit", "-q", "-m", "deploy settings"]);
    let r = g.push(&["origin", "HEAD:refs/heads/feature"]);
    refused(&r);
    let id = printed_id(&r);
    let doc = g.env.json(&["show", &id, "--json"]);
    assert!(flags(&doc).contains(&"secret-in-diff".to_string()), "{doc}");
    let finding = &doc["diff"]["findings"][0];
    assert_eq!(finding["flag"], "secret-in-diff");
    assert_eq!(finding["rule"], "aws-access-token");
    assert_eq!(finding["path"], "deploy.env");
    assert_eq!(finding["masked"], "AKIA…");
    let patch = file(&doc, "deploy.env")["patch"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(patch.contains("+AWS_ACCESS_KEY_ID=AKIA…"), "{patch}");

    // The whole database, dumped by sqlite3: the key is nowhere in it.
    let dump = Command::new("sqlite3")
        .arg(&g.env.db)
        .arg(".dump")
        .output()
        .expect("run sqlite3");
    assert!(dump.status.success());
    let dump = String::from_utf8_lossy(&dump.stdout);
    assert!(dump.contains("push_diffs"), "the dump has the diff table");
    assert!(dump.contains("AKIA…"), "the masked key is recorded");
    assert!(
        !dump.contains(FAKE_AWS_KEY),
        "the whole key is in the database"
    );
    assert!(
        !dump.contains(&FAKE_AWS_KEY[4..]),
        "the key's tail is in the database"
    );
}

#[test]
fn a_push_over_a_mebibyte_states_its_truncation_but_is_not_large_when_scanned_whole() {
    let g = Gate::new();
    // 3 files of 600 KiB in 300 lines each: over the 1 MiB a push keeps, far under the scan's
    // limit and under 10,000 lines.
    let line = "x".repeat(2047);
    let body: String = (0..300).map(|i| format!("{i:04}{line}\n")).collect();
    for name in ["a.txt", "b.txt", "c.txt"] {
        write(&g, name, &body);
    }
    g.git(&["add", "."]);
    g.git(&["commit", "-q", "-m", "data"]);
    let id = printed_id(&g.push(&["origin", "HEAD:refs/heads/feature"]));
    let doc = g.env.json(&["show", &id, "--json"]);
    assert_eq!(
        doc["diff"]["truncated"], true,
        "{}",
        doc["diff"]["truncated"]
    );
    let files = doc["diff"]["files"].as_array().unwrap();
    assert_eq!(files.len(), 3);
    let mut kept = 0;
    for f in files {
        assert_eq!(f["truncated"], true, "each file is over 64 KiB");
        assert_eq!(f["added"], 300, "counts are the whole file's");
        let patch = f["patch"].as_str().unwrap();
        assert!(patch.len() <= 64 * 1024);
        kept += patch.len();
    }
    assert!(kept <= 1024 * 1024);
    assert!(!flags(&doc).contains(&"large-push".to_string()), "{doc:?}");
    assert!(
        g.env
            .ok(&["show", &id, "--diff", "--stat"])
            .contains("patches cut")
    );
}

#[test]
fn a_push_too_large_to_scan_whole_is_flagged_large_push() {
    let g = Gate::new();
    // 33 MiB in 8,448 lines: past the 32 MiB the gate scans, under 10,000 changed lines.
    let line = "y".repeat(4095);
    let body: String = (0..8448).map(|_| format!("{line}\n")).collect();
    write(&g, "big.txt", &body);
    g.git(&["add", "."]);
    g.git(&["commit", "-q", "-m", "big"]);
    let id = printed_id(&g.push(&["origin", "HEAD:refs/heads/feature"]));
    let doc = g.env.json(&["show", &id, "--json"]);
    assert!(
        flags(&doc).contains(&"large-push".to_string()),
        "{}",
        doc["flags"]
    );
    assert_eq!(doc["change"]["summary"]["insertions"], 8448);
    assert_eq!(doc["diff"]["truncated"], true);
}

#[test]
fn a_refused_push_is_kept_under_refs_supervise_until_its_proposal_ends() {
    let g = Gate::new();
    let new = g.commit("a.txt", "work");
    let r = g.push(&["origin", "HEAD:refs/heads/feature"]);
    refused(&r);
    let id = printed_id(&r);
    let kept = format!("refs/supervise/{id}");
    assert_eq!(g.gate_ref("refs/heads/feature"), None);
    assert_eq!(g.gate_ref(&kept).as_deref(), Some(new.as_str()));

    // Another repository fetches it from the gate.
    let root = g.env.dir.path();
    ok(git_in(root, &g.home, &["init", "-q", "reviewer"]));
    let reviewer = root.join("reviewer");
    ok(git_in(&reviewer, &g.home, &["fetch", "-q", &g.url, &kept]));
    let fetched = ok(git_in(&reviewer, &g.home, &["rev-parse", "FETCH_HEAD"]));
    assert_eq!(fetched.trim(), new);

    // Rejected, the proposal has ended: the gate's next run removes the ref.
    g.env.ok(&["reject", &id, "--note", "no"]);
    g.commit("b.txt", "other work");
    refused(&g.push(&["origin", "HEAD:refs/heads/other"]));
    assert_eq!(g.gate_ref(&kept), None);
}

#[test]
fn a_push_to_refs_supervise_is_refused() {
    let g = Gate::new();
    g.commit("a.txt", "work");
    let r = g.push(&["origin", "HEAD:refs/supervise/x"]);
    assert_ne!(r.code, 0, "{r:#?}");
    assert!(r.stderr.contains("refs/supervise/x"), "{r:#?}");
    assert_eq!(g.gate_ref("refs/supervise/x"), None);
    assert!(g.all().is_empty(), "nothing was filed");
}

#[test]
fn a_push_under_a_grant_is_in_the_trail_and_in_the_grants_last_use() {
    let g = Gate::new();
    let grant = g.env.propose(
        Kind::GitPush,
        json!({"remote": "origin", "ref": "agent/*"}),
        "my branches",
    );
    g.env.ok(&["approve", &grant]);
    let policy = g.env.json(&["policy", "demo", "--json"]);
    assert!(policy["grants"][0]["last_used_at"].is_null(), "{policy}");

    write(&g, ".gitlab-ci.yml", "test:\n  script: make\n");
    g.git(&["add", "."]);
    g.git(&["commit", "-q", "-m", "ci"]);
    let new = g.head();
    g.push(&["origin", "HEAD:refs/heads/agent/x"]).assert_ok();

    let audit = g.env.json(&["audit", "--json"]);
    let events = audit["events"].as_array().unwrap();
    let accepted = events
        .iter()
        .find(|e| e["event"] == "push-accepted")
        .unwrap_or_else(|| panic!("no push-accepted in {audit}"));
    assert_eq!(accepted["change"]["ref"], "refs/heads/agent/x");
    assert_eq!(accepted["change"]["new"], new.as_str());
    assert_eq!(accepted["change"]["old"], crate::gate::ZERO);
    let note = accepted["note"].as_str().unwrap();
    assert!(note.contains("grant"), "{note}");
    assert!(note.contains("ci-config"), "flags on the event: {note}");
    assert!(events.iter().any(|e| e["event"] == "grant-used"), "{audit}");
    let policy = g.env.json(&["policy", "demo", "--json"]);
    assert!(!policy["grants"][0]["last_used_at"].is_null(), "{policy}");
    assert!(g.pending().is_empty());
}

#[test]
fn an_approved_push_writes_push_accepted_naming_the_approval() {
    let g = Gate::new();
    g.commit("a.txt", "work");
    let id = printed_id(&g.push(&["origin", "HEAD:refs/heads/feature"]));
    g.env.ok(&["approve", &id]);
    g.push(&["origin", "HEAD:refs/heads/feature"]).assert_ok();
    let doc = g.env.json(&["show", &id, "--json"]);
    let accepted = doc["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "push-accepted")
        .unwrap_or_else(|| panic!("{doc}"));
    assert!(
        accepted["note"]
            .as_str()
            .unwrap()
            .contains(&format!("approval {id}")),
        "{accepted}"
    );
    // The proposal has ended (its approval is used): its kept ref is gone.
    assert_eq!(g.gate_ref(&format!("refs/supervise/{id}")), None);
}
