//! `list --watch`: the live queue, as lines and as JSON lines, and a clean stop.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::Env;

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

    env.ok(&["approve", &id, "--yes"]);
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
