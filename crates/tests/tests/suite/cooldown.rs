//! The server's `--reject-cooldown` as the other processes on its host apply it: the
//! server records it in the database at its start, and the proxy's helpers (`squid-acl`,
//! `decide`, long-lived processes that never see the server's flags) hold back re-filing
//! a rejected or revoked change for exactly as long, following a restarted server's value.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use supervise_tests::{Server, bin, cli, cli_json};

const BOTTLE: &str = "demo=127.0.0.1";

/// A running line helper (`supervise squid-acl` or `decide`) with `--propose-on-deny`.
struct Helper {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Helper {
    fn start(db: &Path, name: &str) -> Helper {
        let mut child = Command::new(bin("supervise"))
            .arg("--db")
            .arg(db)
            .args([name, "--propose-on-deny"])
            .env_remove("SUPERVISE_DB")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the helper");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Helper {
            child,
            stdin,
            stdout,
        }
    }

    fn ask(&mut self, line: &str) -> String {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        let mut answer = String::new();
        self.stdout.read_line(&mut answer).unwrap();
        assert!(
            answer.ends_with('\n'),
            "one answer per line, got {answer:?}"
        );
        answer.trim_end().to_string()
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The undecided proposals for `host`, by id.
fn pending_for(db: &Path, host: &str) -> Vec<String> {
    cli_json(db, "op", &["list", "--json"])["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["change"]["host"] == host)
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect()
}

fn only(ids: Vec<String>, what: &str) -> String {
    assert_eq!(ids.len(), 1, "{what}: {ids:?}");
    ids.into_iter().next().unwrap()
}

fn decide(db: &Path, args: &[&str]) {
    let out = cli(db, "op", args);
    assert!(out.status.success(), "supervise {args:?}: {out:?}");
}

/// `--reject-cooldown 0` (off): right after a rejection or a revoke, both helpers file the
/// refused change again for the operator, as the server would file an agent's proposal.
#[test]
fn a_server_without_a_cooldown_lets_the_helpers_file_again_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("supervise.db");
    let _server = Server::start(
        &db,
        &["--grace", "0", "--reject-cooldown", "0", "--bottle", BOTTLE],
    );
    let mut squid = Helper::start(&db, "squid-acl");
    let mut decide_helper = Helper::start(&db, "decide");

    // Rejected, then refused again at the proxy: a new proposal.
    let answer = squid.ask("127.0.0.1 a.example.test 443");
    assert!(answer.contains("filed proposal"), "{answer}");
    let first = only(pending_for(&db, "a.example.test"), "filed once");
    decide(&db, &["reject", &first, "--note", "not now"]);
    let answer = squid.ask("127.0.0.1 a.example.test 443");
    assert!(
        answer.contains("filed proposal") && !answer.contains("rejected recently"),
        "no cooldown, so a new proposal: {answer}"
    );
    let second = only(pending_for(&db, "a.example.test"), "filed again");
    assert_ne!(second, first);

    // The same through `decide`, which names the proposal in its answer.
    let answer = decide_helper.ask("7 127.0.0.1 b.example.test 443");
    let first = only(pending_for(&db, "b.example.test"), "filed once");
    assert!(answer.starts_with(&format!("7 ERR {first} ")), "{answer}");
    decide(&db, &["reject", &first]);
    let answer = decide_helper.ask("8 127.0.0.1 b.example.test 443");
    let second = only(pending_for(&db, "b.example.test"), "filed again");
    assert_ne!(second, first);
    assert!(answer.starts_with(&format!("8 ERR {second} ")), "{answer}");

    // Approved, revoked, refused again: filed again.
    squid.ask("127.0.0.1 c.example.test 443");
    let asked = only(pending_for(&db, "c.example.test"), "filed once");
    decide(&db, &["approve", &asked]);
    assert_eq!(squid.ask("127.0.0.1 c.example.test 443"), "OK");
    let policy = cli_json(&db, "op", &["policy", "demo", "--json"]);
    let grant = policy["grants"][0]["id"]
        .as_str()
        .expect("a grant in force");
    decide(&db, &["revoke", grant]);
    let answer = squid.ask("127.0.0.1 c.example.test 443");
    assert!(answer.contains("filed proposal"), "{answer}");
    assert_ne!(only(pending_for(&db, "c.example.test"), "refiled"), asked);
}

/// A helper that keeps running while the server restarts follows the value the running
/// server recorded: the default ten minutes hold a rejected change back, and after a
/// restart with `--reject-cooldown 0` the same helper process files it.
#[test]
fn a_running_helper_follows_the_cooldown_of_the_restarted_server() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("supervise.db");
    let mut server = Server::start(&db, &["--grace", "0", "--bottle", BOTTLE]);
    let mut squid = Helper::start(&db, "squid-acl");

    squid.ask("127.0.0.1 a.example.test 443");
    let first = only(pending_for(&db, "a.example.test"), "filed once");
    decide(&db, &["reject", &first]);
    let answer = squid.ask("127.0.0.1 a.example.test 443");
    assert!(
        answer.contains(&format!("rejected recently as proposal {first}")),
        "within the server's cooldown: {answer}"
    );
    assert!(pending_for(&db, "a.example.test").is_empty());

    assert!(
        server.terminate(Duration::from_secs(20)).is_some(),
        "the server did not stop"
    );
    let _server = Server::start(
        &db,
        &["--grace", "0", "--reject-cooldown", "0", "--bottle", BOTTLE],
    );
    let answer = squid.ask("127.0.0.1 a.example.test 443");
    assert!(answer.contains("filed proposal"), "{answer}");
    assert_ne!(only(pending_for(&db, "a.example.test"), "refiled"), first);
}
