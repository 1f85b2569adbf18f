//! A busy database, through the server. A `sqlite3` shell (another
//! process, like an operator's audit session gone wrong) holds `BEGIN IMMEDIATE` on the
//! server's file for longer than the store's busy timeout (5 s). A `propose-egress` call
//! must then fail clearly and retryably (a `refused` tool result saying the database is
//! busy and to call again; no protocol error, no panic, nothing half-written), reads must
//! keep working (WAL), and once the lock is released the same call succeeds.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use supervise_tests::{Agent, Server, healthz, row_count, sqlite, structured, text};

const BOTTLE_IP: &str = "127.0.0.2";

#[test]
fn a_held_write_lock_gives_a_retryable_refusal_then_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("supervise.db");
    let server = Server::start(
        &db,
        &["--grace", "0", "--bottle", &format!("busy={BOTTLE_IP}")],
    );
    let mut agent = Agent::new(server.addr, BOTTLE_IP);
    let first = agent.tool(
        "propose-egress",
        json!({"host": "before.example", "justification": "filed before the lock"}),
    );
    let first_id = structured(&first)["proposal_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (proposals, events) = (row_count(&db, "proposals"), row_count(&db, "events"));

    // Another process takes the write lock and keeps it.
    let mut shell = Command::new("sqlite3")
        .arg(&db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run sqlite3 (apt-get install sqlite3)");
    let mut stdin = shell.stdin.take().unwrap();
    let mut stdout = BufReader::new(shell.stdout.take().unwrap());
    writeln!(stdin, "BEGIN IMMEDIATE;\nSELECT 'locked';").unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "locked", "sqlite3 did not take the lock");
    let locked_at = Instant::now();

    // A proposal while the lock is held: refused as busy, retryable, after the timeout.
    let started = Instant::now();
    let message = agent
        .call(
            "propose-egress",
            json!({"host": "during.example", "justification": "filed during the lock"}),
        )
        .expect("an HTTP answer while the database is locked");
    let took = started.elapsed();
    assert!(
        message.get("error").is_none(),
        "a protocol error: {message}"
    );
    let result = &message["result"];
    let facts = structured(result);
    assert_eq!(facts["status"], "refused", "{message}");
    assert_eq!(result["isError"], true);
    let said = text(result).to_lowercase();
    assert!(said.contains("busy"), "does not say busy: {said}");
    assert!(said.contains("again"), "does not say to try again: {said}");
    assert!(facts.get("field").is_none_or(|f| f.is_null()), "{facts}");
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(15),
        "answered after {took:?} (the busy timeout is 5 s)"
    );

    // Reads keep working meanwhile (WAL): health, polling and listing.
    assert_eq!(healthz(server.addr), Some(200));
    let poll_started = Instant::now();
    let poll = agent.tool("check-proposal", json!({"proposal_id": first_id}));
    assert_eq!(structured(&poll)["status"], "pending", "{poll}");
    assert!(
        poll_started.elapsed() < Duration::from_secs(3),
        "a poll waited on the lock"
    );
    let list = agent.tool("list-proposals", json!({}));
    assert_eq!(
        structured(&list)["proposals"].as_array().map(Vec::len),
        Some(1),
        "{list}"
    );

    // Keep the lock well past the busy timeout, then release it.
    std::thread::sleep(Duration::from_secs(6).saturating_sub(locked_at.elapsed()));
    writeln!(stdin, "ROLLBACK;\n.quit").unwrap();
    drop(stdin);
    assert!(shell.wait().unwrap().success());

    // Nothing was half-written by the refused call.
    assert_eq!(row_count(&db, "proposals"), proposals);
    assert_eq!(row_count(&db, "events"), events);
    assert_eq!(
        sqlite(
            &db,
            "SELECT count(*) FROM proposals WHERE json_extract(change, '$.host') = 'during.example';"
        ),
        "0"
    );

    // Recovered: the same call now files the proposal.
    let retry = agent.tool(
        "propose-egress",
        json!({"host": "during.example", "justification": "filed during the lock"}),
    );
    assert_eq!(structured(&retry)["status"], "pending", "{retry}");
    assert_eq!(row_count(&db, "proposals"), proposals + 1);
    assert_eq!(sqlite(&db, "PRAGMA integrity_check;"), "ok");
    let panics: Vec<String> = server
        .log()
        .into_iter()
        .filter(|l| l.contains("panicked"))
        .collect();
    assert!(panics.is_empty(), "{panics:?}");
}
