//! The database file: never created by a read, a foreign file left alone, a held write lock.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::{Env, command, ids};

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
        let r = crate::util::Run::from(command(&db).args(&args).output().unwrap());
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
fn a_foreign_file_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("notes.txt");
    std::fs::write(&db, "not a database, just notes\n").unwrap();
    let r = crate::util::Run::from(command(&db).arg("list").output().unwrap());
    r.assert_refused("is not a supervise database");
    assert_eq!(
        std::fs::read_to_string(&db).unwrap(),
        "not a database, just notes\n"
    );
}

#[test]
fn a_held_write_lock_gives_database_is_busy_within_the_timeout() {
    use std::io::Write;
    if !crate::util::have("sqlite3") {
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
