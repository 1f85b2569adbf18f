//! `audit verify`, `audit head` and `audit archive`: the hash chain catches an edited,
//! deleted or swapped row in a copy of the database, on SQLite and PostgreSQL; an archive
//! leaves a database and a file that both verify; and an auditor's own script, written from
//! docs/SCHEMA.md, computes the same head.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{BIN, Env, Run, command, have, psql};

/// A trail of a few events: bottle added, two proposals, one approved, one rejected.
fn trail(env: &Env) {
    let a = env.egress("a.example.com", 443);
    let b = env.egress("b.example.com", 443);
    env.ok(&["approve", &a, "--note", "fine"]);
    env.ok(&["reject", &b, "--note", "no"]);
}

fn sqlite(db: &Path, sql: &str) {
    let out = Command::new("sqlite3")
        .arg(db)
        .arg(sql)
        .output()
        .expect("sqlite3");
    assert!(
        out.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A copy of the database, taken through SQLite (WAL and all).
fn copy(env: &Env, name: &str) -> PathBuf {
    let to = env.dir.path().join(name);
    sqlite(&env.db, &format!("VACUUM INTO '{}'", to.display()));
    to
}

fn run(db: &Path, args: &[&str]) -> Run {
    command(db)
        .args(args)
        .output()
        .expect("run supervise")
        .into()
}

#[test]
fn an_untouched_trail_verifies_and_each_tampering_names_its_row_on_sqlite() {
    if !have("sqlite3") {
        return;
    }
    let env = Env::new();
    trail(&env);
    let untouched = copy(&env, "untouched.db");
    let ok = run(&untouched, &["audit", "verify"]);
    ok.assert_ok();
    assert!(ok.stdout.contains("5 events verify"), "{ok:?}");

    // A trigger dropped, one note edited.
    let edited = copy(&env, "edited.db");
    sqlite(
        &edited,
        "DROP TRIGGER events_append_only_update; UPDATE events SET note = 'ok' WHERE seq = 4",
    );
    run(&edited, &["audit", "verify"]).assert_refused("at seq 4");

    // A row deleted: the row after it no longer follows.
    let deleted = copy(&env, "deleted.db");
    sqlite(
        &deleted,
        "DROP TRIGGER events_append_only_delete; DELETE FROM events WHERE seq = 3",
    );
    run(&deleted, &["audit", "verify"]).assert_refused("at seq 4");

    // Two rows swapped (their contents trade places, hashes and all).
    let swapped = copy(&env, "swapped.db");
    sqlite(
        &swapped,
        "DROP TRIGGER events_append_only_update; \
         CREATE TEMP TABLE t AS SELECT * FROM events WHERE seq IN (2, 3); \
         UPDATE events SET (at, event, actor, via, bottle_id, proposal_id, grant_id, kind, \
             change, note, hash) = (SELECT at, event, actor, via, bottle_id, proposal_id, \
             grant_id, kind, change, note, hash FROM t WHERE t.seq = 5 - events.seq) \
         WHERE seq IN (2, 3)",
    );
    run(&swapped, &["audit", "verify"]).assert_refused("at seq 2");

    // A decision edited in `proposals`, the trail untouched: the cross-check names it.
    let decided = copy(&env, "decided.db");
    sqlite(
        &decided,
        "UPDATE proposals SET status = 'approved' WHERE status = 'rejected'",
    );
    run(&decided, &["audit", "verify"]).assert_refused("disagrees");

    // Rows cut from the end leave a valid shorter chain; the kept head catches it (and
    // here the cross-check too: the rejected proposal lost its `rejected` event).
    let head = run(&untouched, &["audit", "head"]);
    head.assert_ok();
    let head = head.stdout.trim().to_string();
    assert_eq!(head.len(), 64);
    let cut = copy(&env, "cut.db");
    sqlite(
        &cut,
        "DROP TRIGGER events_append_only_delete; DELETE FROM events WHERE seq = 5",
    );
    run(&cut, &["audit", "verify"]).assert_refused("is decided with no event");
    run(&cut, &["audit", "verify", "--head", &head]).assert_refused("not in the chain");
    run(&untouched, &["audit", "verify", "--head", &head]).assert_ok();
}

#[test]
fn an_auditors_script_from_the_schema_doc_computes_the_head() {
    if !have("sqlite3") || !have("python3") {
        return;
    }
    let env = Env::new();
    trail(&env);
    env.ok(&["bottle", "add", "second", "--ip", "10.9.0.3"]);
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/SCHEMA.md"))
        .unwrap();
    let script = doc
        .split("The hash chain")
        .nth(1)
        .and_then(|s| s.split("```sh\n").nth(1))
        .and_then(|s| s.split("```").next())
        .expect("the auditor's script in docs/SCHEMA.md")
        .replace("supervise.db", &env.db.display().to_string());
    let out = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .current_dir(env.dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let head = env.ok(&["audit", "head"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), head.trim());
}

#[test]
fn an_archive_leaves_a_database_and_a_file_that_both_verify() {
    let env = Env::new();
    trail(&env);
    let id = env.egress("c.example.com", 443);
    env.ok(&["reject", &id]);
    // `reject` answers; the agent takes the outcome: delivered, so the proposal has ended.
    env.rt.block_on(async {
        for p in env
            .store
            .list(None, supervise_store::StatusFilter::All)
            .await
            .unwrap()
        {
            let _ = env.store.take_decision(env.bottle_id, &p.id).await;
        }
    });
    let file = env.dir.path().join("trail.jsonl");
    let until = "2999-01-01";
    let r = run(
        &env.db,
        &[
            "audit",
            "archive",
            "--before",
            until,
            "--to",
            file.to_str().unwrap(),
        ],
    );
    r.assert_ok();
    run(&env.db, &["audit", "verify"]).assert_ok();
    run(
        &env.db,
        &["audit", "verify", "--archive", file.to_str().unwrap()],
    )
    .assert_ok();
    // Never overwritten.
    run(
        &env.db,
        &[
            "audit",
            "archive",
            "--before",
            until,
            "--to",
            file.to_str().unwrap(),
        ],
    )
    .assert_refused("never overwritten");
    // The trail goes on from the checkpoint.
    env.egress("d.example.com", 443);
    run(&env.db, &["audit", "verify"]).assert_ok();

    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() > 3, "{text}");
    for (n, line) in lines.iter().enumerate().take(lines.len() - 1).skip(1) {
        let edited =
            line.replacen("example.com", "example.org", 1)
                .replacen("\"at\":\"2", "\"at\":\"1", 1);
        if edited == *line {
            continue;
        }
        let mut copy = lines.clone();
        copy[n] = &edited;
        let bad = env.dir.path().join(format!("bad{n}.jsonl"));
        std::fs::write(&bad, copy.join("\n") + "\n").unwrap();
        let r = Command::new(BIN)
            .args(["audit", "verify", "--archive", bad.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(r.status.code(), Some(1), "line {n} edited still verifies");
    }
}

#[test]
fn each_tampering_names_its_row_on_postgres() {
    let Some(cluster) = supervise_testpg::cluster() else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let fresh = |setup: &str| {
        let url = rt.block_on(cluster.fresh_database());
        let db = Path::new(&url);
        run(db, &["bottle", "add", "demo", "--ip", "10.9.0.2"]).assert_ok();
        run(db, &["bottle", "add", "two", "--ip", "10.9.0.3"]).assert_ok();
        run(db, &["bottle", "rm", "two"]).assert_ok();
        run(db, &["bottle", "add", "three", "--ip", "10.9.0.4"]).assert_ok();
        if !setup.is_empty() {
            psql(&url, setup);
        }
        url
    };
    let url = fresh("");
    run(Path::new(&url), &["audit", "verify"]).assert_ok();
    let edited = fresh(
        "ALTER TABLE events DISABLE TRIGGER events_append_only_update; \
         UPDATE events SET note = 'x' WHERE seq = 2",
    );
    run(Path::new(&edited), &["audit", "verify"]).assert_refused("at seq 2");
    let deleted = fresh(
        "ALTER TABLE events DISABLE TRIGGER events_append_only_delete; \
         DELETE FROM events WHERE seq = 2",
    );
    run(Path::new(&deleted), &["audit", "verify"]).assert_refused("at seq 3");
    let swapped = fresh(
        "ALTER TABLE events DISABLE TRIGGER events_append_only_update; \
         CREATE TEMP TABLE t AS SELECT * FROM events WHERE seq IN (2, 3); \
         UPDATE events SET (at, event, actor, via, bottle_id, proposal_id, grant_id, kind, \
             change, note, hash) = (SELECT at, event, actor, via, bottle_id, proposal_id, \
             grant_id, kind, change, note, hash FROM t WHERE t.seq = 5 - events.seq) \
         WHERE seq IN (2, 3)",
    );
    run(Path::new(&swapped), &["audit", "verify"]).assert_refused("at seq 2");
}

#[test]
fn audit_filters_in_the_store_and_exports_json_lines() {
    let env = Env::new();
    trail(&env);
    let names = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["audit", "--json"];
        all.extend_from_slice(args);
        env.json(&all)["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["event"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&["--event", "approved"]), ["approved"]);
    assert_eq!(
        names(&["--actor", "operator:"]),
        ["bottle-added", "approved", "rejected"]
    );
    assert_eq!(
        names(&["--actor", "operator:tester"]),
        ["approved", "rejected"]
    );
    assert_eq!(names(&["--actor", "bottle:"]), ["proposed", "proposed"]);
    assert_eq!(names(&["--limit", "2"]), ["approved", "rejected"]);
    assert_eq!(names(&["--since", "1h"]).len(), 5);
    assert!(names(&["--until", "1h"]).is_empty());
    assert!(names(&["--since", "2999-01-01"]).is_empty());
    assert_eq!(names(&["--until", "2999-01-01T00:00:00+02:00"]).len(), 5);
    run(&env.db, &["audit", "--since", "yesterdayish"]).assert_usage();
    run(&env.db, &["audit", "--event", "nonsense"]).assert_usage();

    let head = env.ok(&["audit", "head"]);
    let lines = env.ok(&["audit", "--format", "jsonl"]);
    let docs: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(docs.len(), 5);
    for d in &docs {
        assert_eq!(d["schema_version"], 1, "{d}");
        assert!(d["seq"].is_i64() && d["event"].is_string(), "{d}");
    }
    assert_eq!(docs[4]["hash"].as_str().unwrap(), head.trim());
}

/// The statements of docs/SCHEMA.md's auditor role, for database `db`.
fn auditor_grants(db: &str) -> String {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/SCHEMA.md"))
        .unwrap();
    doc.split("read-only auditor role")
        .nth(1)
        .and_then(|s| s.split("```postgresql\n").nth(1))
        .and_then(|s| s.split("```").next())
        .expect("the auditor role's statements in docs/SCHEMA.md")
        .replace("DATABASE supervise ", &format!("DATABASE {db} "))
}

#[test]
fn the_auditor_role_reads_and_verifies_but_cannot_write_on_postgres() {
    let Some(cluster) = supervise_testpg::cluster() else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let url = rt.block_on(cluster.fresh_database());
    let db = Path::new(&url);
    run(db, &["bottle", "add", "demo", "--ip", "10.9.0.2"]).assert_ok();
    let name = url.rsplit('/').next().unwrap();
    // Roles are cluster-wide: one per test database.
    let grants = auditor_grants(name).replace("supervise_auditor", &format!("{name}_auditor"));
    psql(&url, &grants);
    let (base, _) = url.rsplit_once('/').unwrap();
    let (scheme, rest) = base.split_once("://").unwrap();
    let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let auditor = format!("{scheme}://{name}_auditor:audit@{host}/{name}");
    let as_auditor = Path::new(&auditor);
    run(as_auditor, &["audit", "verify"]).assert_ok();
    run(as_auditor, &["audit", "--json"]).assert_ok();
    run(as_auditor, &["audit", "head"]).assert_ok();
    let refused = run(as_auditor, &["bottle", "add", "other", "--ip", "10.9.0.3"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("permission denied"), "{refused:?}");
    let archive = std::env::temp_dir().join(format!("{name}-archive.jsonl"));
    let refused = run(
        as_auditor,
        &[
            "audit",
            "archive",
            "--before",
            "2999-01-01",
            "--to",
            archive.to_str().unwrap(),
        ],
    );
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(!archive.exists(), "a refused archive leaves no file");
    // The owner's archive works on PostgreSQL too, and both halves verify.
    run(
        db,
        &[
            "audit",
            "archive",
            "--before",
            "2999-01-01",
            "--to",
            archive.to_str().unwrap(),
        ],
    )
    .assert_ok();
    run(db, &["audit", "verify"]).assert_ok();
    run(as_auditor, &["audit", "verify"]).assert_ok();
    run(
        db,
        &["audit", "verify", "--archive", archive.to_str().unwrap()],
    )
    .assert_ok();
    let _ = std::fs::remove_file(&archive);
}

#[test]
fn the_audit_table_fits_the_terminal_width() {
    let env = Env::new();
    let long = format!("{0}.{0}.example.com", "x".repeat(60));
    let id = env.egress(&long, 443);
    env.ok(&["approve", &id, "--note", &"a long note ".repeat(30)]);
    let out = env.cmd(&["audit"]).env("COLUMNS", "200").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for line in text.lines() {
        assert!(
            line.chars().count() <= 200,
            "{} wide: {line}",
            line.chars().count()
        );
    }
    assert!(text.contains(&id), "full ids: {text}");
}
