//! Egress enforcement from the CLI: `check egress` (exit codes, text, JSON), `policy --all`
//! and last use, and the `squid-acl` helper's protocol spoken directly, without Squid:
//! channel ids, trailing fields, out-of-range ports, IPv6 sources, garbage and non-UTF-8
//! lines each get one answer, in order; the database is read at each lookup and never
//! created. `squid` runs the helper under a real Squid.

mod mitm;
mod squid;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::Duration;

use crate::util::*;
use supervise_store::{Actor, StoreOptions, Verdict};

/// A running helper with its stdin and stdout.
struct Helper {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Helper {
    fn start(db: &std::path::Path, flags: &[&str]) -> Helper {
        Helper::start_as(db, "squid-acl", flags)
    }

    /// `supervise decide` (or another line helper) with `flags`.
    fn start_as(db: &std::path::Path, helper: &str, flags: &[&str]) -> Helper {
        let mut child = command(db)
            .arg(helper)
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the helper");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Helper {
            child,
            stdin,
            stdout,
        }
    }

    /// Sends one line and reads its answer.
    fn ask(&mut self, line: &str) -> String {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        self.stdout.read_line(&mut answer).unwrap();
        assert!(answer.ends_with('\n'), "an answer per line, got {answer:?}");
        answer.trim_end().to_string()
    }

    /// Sends `lines` in one write (so the helper reads them together, as one batch) and
    /// reads their answers.
    fn ask_together(&mut self, lines: &[&str]) -> Vec<String> {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
        (0..lines.len())
            .map(|_| {
                let mut answer = String::new();
                self.stdout.read_line(&mut answer).unwrap();
                assert!(answer.ends_with('\n'), "an answer per line, got {answer:?}");
                answer.trim_end().to_string()
            })
            .collect()
    }

    /// Closes stdin; the helper must exit 0 promptly.
    fn finish(mut self) {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "helper exited {status}");
                return;
            }
            assert!(std::time::Instant::now() < deadline, "helper did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn approve(env: &Env, id: &str, d: Option<Duration>) -> String {
    let p = env
        .rt
        .block_on(
            env.store
                .decide(id, Verdict::Approve, &Actor::cli("op"), None, d),
        )
        .unwrap();
    p.decision.unwrap().grant_id.unwrap().to_string()
}

#[test]
fn every_line_gets_one_answer_in_order() {
    let env = Env::new();
    let id = env.egress("pypi.org", 443);
    approve(&env, &id, None);
    let mut input: Vec<u8> = Vec::new();
    let mut want: Vec<&str> = Vec::new();
    let cases: &[(&str, &str)] = &[
        ("10.9.0.2 pypi.org 443", "OK"),
        ("10.9.0.2 pypi.org 443 -", "OK"),
        ("0 10.9.0.2 pypi.org 443 - more fields", "0 OK"),
        ("17 10.9.0.2 PyPI.org. 443", "17 OK"),
        ("18 10.9.0.2 pypi.org 80", "18 ERR"),
        ("19 10.9.0.2 pypi.org 0", "19 ERR"),
        ("20 10.9.0.2 pypi.org 65536", "20 ERR"),
        ("21 10.9.0.2 pypi.org -1", "21 ERR"),
        ("22 ::1 pypi.org 443", "22 ERR"),
        ("23 [::ffff:10.9.0.2] pypi.org 443", "23 OK"),
        ("24 fe80::1%eth0 pypi.org 443", "24 ERR"),
        ("25 10.9.0.2", "25 ERR"),
        ("garbage", "ERR"),
        ("", "ERR"),
        ("26 10.9.0.2 \"quoted\\host 443", "26 ERR"),
        ("27 10.9.0.3 pypi.org 443", "27 ERR"),
        ("10.9.0.2 *.pypi.org 443", "ERR"),
    ];
    for (line, answer) in cases {
        input.extend_from_slice(line.as_bytes());
        input.push(b'\n');
        want.push(answer);
    }
    input.extend_from_slice(b"28 10.9.0.2 \xff\xfe.org 443\n");
    want.push("28 ERR");
    let mut child = command(&env.db)
        .arg("squid-acl")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "exits 0 when stdin closes");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), want.len(), "one answer per line:\n{text}");
    for (got, want) in lines.iter().zip(&want) {
        assert!(
            *got == *want || got.starts_with(&format!("{want} message=\"")),
            "{got:?} should be {want:?}"
        );
        if got.contains("ERR") {
            let msg = got.split_once("message=\"").unwrap().1;
            assert_eq!(msg.matches('"').count(), 1, "one closing quote: {got}");
            assert!(!msg.contains('\\'), "{got}");
        }
    }
    assert!(lines[4].contains("no grant"), "{}", lines[4]);
    assert!(lines[15].contains("no bottle is registered at 10.9.0.3"));
}

#[test]
fn each_lookup_reads_the_database_as_it_is_now() {
    let env = Env::new();
    let mut h = Helper::start(&env.db, &[]);
    assert!(h.ask("1 10.9.0.2 a.example.test 443").starts_with("1 ERR"));
    let id = env.egress("*.example.test", 443);
    assert!(
        h.ask("2 10.9.0.2 a.example.test 443")
            .contains(&format!("proposal {id} waits")),
        "a refusal names the undecided proposal"
    );
    let grant = approve(&env, &id, None);
    assert_eq!(h.ask("3 10.9.0.2 a.example.test 443"), "3 OK");
    assert!(h.ask("4 10.9.0.2 example.test 443").starts_with("4 ERR"));
    env.rt
        .block_on(env.store.revoke(&grant, &Actor::cli("op")))
        .unwrap();
    assert!(h.ask("5 10.9.0.2 a.example.test 443").starts_with("5 ERR"));
    h.finish();
}

/// Lines that reach the helper together are answered against one check of the database,
/// made after they arrived: an approval or revoke committed before they were written is in
/// effect for every one of them, and the next lines see the next commit.
#[test]
fn lines_sent_together_see_every_commit_made_before_them() {
    let env = Env::new();
    let mut h = Helper::start_as(&env.db, "decide", &[]);
    let lines = [
        "1 10.9.0.2 a.example.test 443 GET /simple/",
        "2 10.9.0.2 b.example.test 443 POST /x",
        "3 10.9.0.2 a.example.test 443",
        "4 10.9.0.3 a.example.test 443 GET /",
    ];
    let verdicts = |answers: Vec<String>| -> Vec<String> {
        answers
            .iter()
            .map(|a| a.split(' ').take(2).collect::<Vec<_>>().join(" "))
            .collect()
    };
    let refused = ["1 ERR", "2 ERR", "3 ERR", "4 ERR"];
    assert_eq!(verdicts(h.ask_together(&lines)), refused);
    let id = env.egress("*.example.test", 443);
    let grant = approve(&env, &id, None);
    assert_eq!(
        h.ask_together(&lines),
        [
            format!("1 OK {grant}"),
            format!("2 OK {grant}"),
            format!("3 OK {grant}"),
            "4 ERR - message=\"no bottle is registered at 10.9.0.3\"".to_string(),
        ]
    );
    env.rt
        .block_on(env.store.revoke(&grant, &Actor::cli("op")))
        .unwrap();
    assert_eq!(verdicts(h.ask_together(&lines)), refused);
    h.finish();
}

#[test]
fn the_helper_never_creates_the_database_and_recovers_when_it_appears() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("later.db");
    let mut h = Helper::start(&db, &[]);
    let a = h.ask("10.9.0.2 pypi.org 443");
    assert!(
        a.starts_with("ERR message=\"the supervise database is unavailable"),
        "{a}"
    );
    assert!(!db.exists(), "never created");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store = rt
        .block_on(supervise_store::Store::open(&db, StoreOptions::default()))
        .unwrap();
    let b = rt
        .block_on(store.add_bottle("demo", "10.9.0.2".parse().unwrap(), &Actor::cli("op")))
        .unwrap();
    let p = rt
        .block_on(store.propose(supervise_store::NewProposal {
            bottle_id: b.id,
            kind: supervise_store::Kind::Egress,
            change: serde_json::json!({"host": "pypi.org"}),
            justification: "deps".into(),
            quorum: None,
        }))
        .unwrap();
    rt.block_on(store.decide(
        &p.proposal().id,
        Verdict::Approve,
        &Actor::cli("op"),
        None,
        None,
    ))
    .unwrap();
    assert_eq!(h.ask("10.9.0.2 pypi.org 443"), "OK");
    h.finish();
}

#[test]
fn propose_on_deny_files_observed_proposals_and_record_use_shows_in_policy() {
    let env = Env::new();
    let mut h = Helper::start(&env.db, &["--propose-on-deny", "--record-use"]);
    let a = h.ask("10.9.0.2 files.pythonhosted.org 443");
    assert!(a.contains("filed proposal"), "{a}");
    assert!(h.ask("10.9.0.2 169.254.169.254 80").starts_with("ERR"));
    assert!(h.ask("10.9.0.2 localhost 8080").starts_with("ERR"));
    let list = env.json(&["list", "--json"]);
    let props = list["proposals"].as_array().unwrap();
    assert_eq!(props.len(), 1, "never for metadata or loopback: {list}");
    assert_eq!(props[0]["flags"], serde_json::json!(["observed"]));
    let id = props[0]["id"].as_str().unwrap().to_string();
    env.ok(&["approve", &id]);
    assert_eq!(h.ask("10.9.0.2 files.pythonhosted.org 443"), "OK");
    let policy = env.json(&["policy", "demo", "--json"]);
    assert!(policy["grants"][0]["last_used_at"].is_string(), "{policy}");
    let text = env.ok(&["policy", "demo"]);
    assert!(text.contains("LAST USE") && text.contains(" ago"), "{text}");
    let all = env.json(&["policy", "--all", "--json"]);
    assert_eq!(all["bottles"][0]["slug"], "demo");
    assert_eq!(all["bottles"][0]["ip"], "10.9.0.2");
    assert!(all["bottles"][0]["grants"][0]["last_used_at"].is_string());
    h.finish();
}

/// The unspecified address reaches the proxy host's own listeners (127.0.0.1 included),
/// so the helper files it no more than loopback, in any spelling.
#[test]
fn the_unspecified_address_is_never_filed_by_the_helper() {
    let env = Env::new();
    let mut h = Helper::start(&env.db, &["--propose-on-deny"]);
    for dest in ["0.0.0.0", "0", "0.0", "::", "[::]", "::ffff:0.0.0.0"] {
        let a = h.ask(&format!("10.9.0.2 {dest} 8080"));
        assert!(a.starts_with("ERR"), "{dest}: {a}");
        assert!(!a.contains("filed proposal"), "{dest}: {a}");
    }
    h.finish();
    let list = env.json(&["list", "--json"]);
    assert_eq!(list["proposals"], serde_json::json!([]), "{list}");
}

#[test]
fn observed_proposals_are_not_skipped_as_risky_by_a_bulk_approve() {
    let env = Env::new();
    let mut h = Helper::start(&env.db, &["--propose-on-deny"]);
    assert!(h.ask("10.9.0.2 a.pypi.org 443").starts_with("ERR"));
    assert!(h.ask("10.9.0.2 b.pypi.org 22").starts_with("ERR"));
    h.finish();
    let out = env.ok(&[
        "approve",
        "--bottle",
        "demo",
        "--kind",
        "egress",
        "--match",
        "*.pypi.org",
    ]);
    assert!(out.contains("approved 1"), "{out}");
    assert!(
        out.contains("skipped 1"),
        "unusual-port is still risky: {out}"
    );
}

#[test]
fn check_egress_exit_codes_text_and_json() {
    let env = Env::new();
    let id = env.egress("pypi.org", 443);
    let r = env.run(&["check", "egress", "--bottle", "demo", "pypi.org"]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(
        r.stdout.contains("not allowed") && r.stdout.contains(&id),
        "{r:#?}"
    );
    assert!(r.stderr.is_empty(), "{r:#?}");
    let grant = approve(&env, &id, Some(Duration::from_secs(3600)));
    let out = env.ok(&["check", "egress", "--ip", "10.9.0.2", "PyPI.org:443"]);
    assert!(out.starts_with("allowed:") && out.contains(&grant), "{out}");
    let doc = env.json(&[
        "check",
        "egress",
        "--bottle",
        "demo",
        "pypi.org:443",
        "--json",
    ]);
    assert_eq!(doc["allowed"], true);
    assert_eq!(doc["grant_id"], grant.as_str());
    assert!(doc["expires_at"].is_string());
    let r = env.run(&[
        "check",
        "egress",
        "--bottle",
        "demo",
        "pypi.org:80",
        "--json",
    ]);
    assert_eq!(r.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["reason"], "no-grant");
    let r = env.run(&["check", "egress", "--bottle", "ghost", "pypi.org"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("no bottle"), "{r:#?}");
    env.run(&["check", "egress", "pypi.org"]).assert_usage();
    env.run(&["check", "egress", "--bottle", "demo", "pypi.org:99999"])
        .assert_usage();
    env.run(&[
        "check", "egress", "--bottle", "demo", "--ip", "10.9.0.2", "a.test",
    ])
    .assert_usage();
    env.run(&["check", "egress", "--bottle", "demo", "https://a.test"])
        .assert_usage();
}

#[test]
fn decide_answers_ok_intercept_or_err_naming_the_proposal() {
    let env = Env::new();
    let mut h = Helper::start_as(&env.db, "decide", &["--propose-on-deny"]);
    let a = h.ask("c1 10.9.0.2 pypi.org 443");
    let (head, message) = a.split_once(" message=").unwrap();
    let fields: Vec<&str> = head.split(' ').collect();
    assert_eq!(fields[..2], ["c1", "ERR"], "{a}");
    let filed = fields[2].to_string();
    assert!(
        message.contains(&format!("check-proposal with proposal_id {filed}")),
        "{a}"
    );
    env.ok(&[
        "modify",
        &filed,
        "--change",
        r#"{"methods": ["GET"], "path_prefix": "/simple/"}"#,
    ]);
    let grant = env.json(&["policy", "demo", "--json"])["grants"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        h.ask("c2 10.9.0.2 pypi.org 443"),
        format!("c2 INTERCEPT {grant}")
    );
    assert_eq!(
        h.ask("r1 10.9.0.2 pypi.org 443 GET /simple/numpy/?x"),
        format!("r1 OK {grant}")
    );
    let refused = h.ask("r2 10.9.0.2 pypi.org 443 POST /simple/numpy/");
    assert!(refused.starts_with("r2 ERR "), "{refused}");
    assert!(
        !refused.starts_with("r2 ERR - "),
        "names a proposal: {refused}"
    );
    assert!(
        h.ask("r3 10.9.0.2 pypi.org 443 GET /simple/a%2fb")
            .starts_with("r3 ERR ")
    );
    assert!(
        h.ask("r4 10.9.0.3 pypi.org 443 GET /simple/")
            .starts_with("r4 ERR - ")
    );
    assert!(h.ask("bad line").starts_with("bad ERR - "));
    h.finish();

    // Squid cannot see requests: the limited grant never lets it through.
    let mut squid = Helper::start(&env.db, &[]);
    assert!(squid.ask("10.9.0.2 pypi.org 443").starts_with("ERR"));
    squid.finish();
}
