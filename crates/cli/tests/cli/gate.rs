//! The git gate with real git: a bare repository made a gate by `supervise gate install`,
//! a clone pushing to it over `file://` and over `git daemon` on a loopback port, and the
//! operator deciding with the real `supervise` binary. The bottle's side (`list-proposals`,
//! `check-proposal`, `propose-git-push`) is driven through the store methods those tools
//! call, on the same database file.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use supervise_store::{Delivery, Kind, RefUpdate};

use crate::util::{Env, Run};

/// A database with bottle `demo`, a bare gate repository and a working clone.
pub(crate) struct Gate {
    pub(crate) env: Env,
    pub(crate) bare: PathBuf,
    pub(crate) work: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) url: String,
}

pub(crate) fn git_in(dir: &Path, home: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "agent")
        .env("GIT_AUTHOR_EMAIL", "agent@bottle.invalid")
        .env("GIT_COMMITTER_NAME", "agent")
        .env("GIT_COMMITTER_EMAIL", "agent@bottle.invalid")
        .env_remove("GIT_DIR")
        .stdin(Stdio::null())
        .output()
        .expect("run git")
}

impl Gate {
    pub(crate) fn new() -> Gate {
        let env = Env::new();
        let root = env.dir.path().to_path_buf();
        let home = root.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let bare = root.join("gate.git");
        let work = root.join("work");
        ok(git_in(
            &root,
            &home,
            &["init", "-q", "--bare", "-b", "main", "gate.git"],
        ));
        ok(git_in(&root, &home, &["init", "-q", "-b", "main", "work"]));
        let url = format!("file://{}", bare.display());
        let g = Gate {
            env,
            bare,
            work,
            home,
            url,
        };
        g.git(&["remote", "add", "origin", &g.url.clone()]);
        g.install(&["--bottle", "demo"]).assert_ok();
        g
    }

    /// `supervise gate install GATE ARGS...`.
    fn install(&self, args: &[&str]) -> Run {
        let repo = self.bare.to_str().unwrap();
        self.env
            .run(&[&["gate", "install", repo][..], args].concat())
    }

    pub(crate) fn git(&self, args: &[&str]) -> String {
        ok(git_in(&self.work, &self.home, args))
    }

    pub(crate) fn commit(&self, file: &str, subject: &str) -> String {
        std::fs::write(self.work.join(file), format!("{subject}\nline\n")).unwrap();
        self.git(&["add", file]);
        self.git(&["commit", "-q", "-m", subject]);
        self.head()
    }

    pub(crate) fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"]).trim().to_string()
    }

    /// `git push` to the gate; the run's stderr carries the hook's `remote:` lines.
    pub(crate) fn push(&self, args: &[&str]) -> Run {
        let mut all = vec!["push"];
        all.extend_from_slice(args);
        Run::from(git_in(&self.work, &self.home, &all))
    }

    /// The commit a ref of the gate points at, if any.
    pub(crate) fn gate_ref(&self, reference: &str) -> Option<String> {
        let out = git_in(
            &self.bare,
            &self.home,
            &["rev-parse", "--verify", "-q", reference],
        );
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    pub(crate) fn pending(&self) -> Vec<Value> {
        self.env.json(&["list", "--json"])["proposals"]
            .as_array()
            .unwrap()
            .clone()
    }

    pub(crate) fn all(&self) -> Vec<Value> {
        self.env.json(&["list", "--status", "all", "--json"])["proposals"]
            .as_array()
            .unwrap()
            .clone()
    }
}

pub(crate) fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "git failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(crate) const ZERO: &str = "0000000000000000000000000000000000000000";

/// The proposal id the gate printed (`remote: supervise gate:   proposal ID`).
pub(crate) fn printed_id(r: &Run) -> String {
    r.stderr
        .lines()
        .find_map(|l| l.split("supervise gate:   proposal ").nth(1))
        .map(|rest| rest.split_whitespace().next().unwrap().to_string())
        .unwrap_or_else(|| panic!("no proposal id in the push's stderr: {r:#?}"))
}

pub(crate) fn refused(r: &Run) {
    assert_ne!(r.code, 0, "the push should be refused: {r:#?}");
    assert!(r.stderr.contains("remote: supervise gate:"), "{r:#?}");
}

#[test]
fn a_push_is_refused_with_an_id_then_accepted_once_approved() {
    let g = Gate::new();
    g.commit("a.txt", "first change");
    let new = g.commit("b.txt", "second change");

    let r = g.push(&["origin", "HEAD:refs/heads/feature"]);
    refused(&r);
    let id = printed_id(&r);
    assert!(r.stderr.contains("waiting for an operator"), "{r:#?}");
    assert!(
        r.stderr
            .contains(&format!("git push origin {new}:refs/heads/feature")),
        "the exact command to repeat: {r:#?}"
    );
    assert_eq!(g.gate_ref("refs/heads/feature"), None);

    let pending = g.pending();
    assert_eq!(pending.len(), 1);
    let p = &pending[0];
    assert_eq!(p["id"], id.as_str());
    assert_eq!(p["kind"], "git-push");
    assert_eq!(p["change"]["ref"], "refs/heads/feature");
    assert_eq!(p["change"]["old"], ZERO);
    assert_eq!(p["change"]["new"], new.as_str());
    let summary = &p["change"]["summary"];
    assert_eq!(summary["commits"], 2);
    assert_eq!(
        summary["subjects"],
        json!(["second change", "first change"])
    );
    assert_eq!(summary["files_changed"], 2);
    assert_eq!(summary["insertions"], 4);
    assert_eq!(summary["create"], true);
    assert_eq!(summary["force"], false);
    assert_eq!(p["justification"], "second change");

    // `list` shows `ref old..new` short; `show` renders the summary.
    let table = g.env.ok(&["list"]);
    assert!(
        table.contains(&format!("refs/heads/feature 0000000..{}", &new[..7])),
        "{table}"
    );
    let shown = g.env.ok(&["show", &id]);
    for needle in [
        "2 commits, creates the ref",
        "2 files changed, 4 insertions(+)",
        "- second change",
    ] {
        assert!(shown.contains(needle), "{needle:?} in {shown}");
    }

    g.env.ok(&["approve", &id]);
    let r = g.push(&["origin", "HEAD:refs/heads/feature"]);
    r.assert_ok();
    assert!(r.stderr.contains(&format!("approval {id} used")), "{r:#?}");
    assert_eq!(
        g.gate_ref("refs/heads/feature").as_deref(),
        Some(new.as_str())
    );
    let detail = g.env.json(&["show", &id, "--json"]);
    assert!(!detail["archived_at"].is_null(), "{detail}");
    assert!(
        detail["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["event"] == "delivered" && e["actor"] == "system:gate"),
        "{detail}"
    );

    // One more commit is another review.
    let newer = g.commit("c.txt", "third change");
    let r = g.push(&["origin", "HEAD:refs/heads/feature"]);
    refused(&r);
    let second = printed_id(&r);
    assert_ne!(second, id);
    let pending = g.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0]["change"]["old"], new.as_str());
    assert_eq!(pending[0]["change"]["new"], newer.as_str());
    assert_eq!(pending[0]["change"]["summary"]["commits"], 1);
}

#[test]
fn identical_pushes_while_undecided_count_hits_on_one_proposal() {
    let g = Gate::new();
    g.commit("a.txt", "work");
    let first = printed_id(&g.push(&["origin", "HEAD:refs/heads/feature"]));
    let again = printed_id(&g.push(&["origin", "HEAD:refs/heads/feature"]));
    assert_eq!(first, again);
    let pending = g.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0]["hits"], 2);
}

#[test]
fn a_standing_grant_lets_fast_forwards_through_but_not_force_pushes_or_deletions() {
    let g = Gate::new();
    // What `propose-git-push` files, approved by the operator.
    let grant = g.env.propose(
        Kind::GitPush,
        json!({"remote": "origin", "ref": "agent/*"}),
        "my branches",
    );
    assert_eq!(g.all()[0]["change"]["ref"], "refs/heads/agent/*");
    g.env.ok(&["approve", &grant]);

    g.commit("a.txt", "start");
    let r = g.push(&["origin", "HEAD:refs/heads/agent/x"]);
    r.assert_ok();
    assert!(r.stderr.contains("accepted by grant"), "{r:#?}");
    let ff = g.commit("b.txt", "more");
    g.push(&["origin", "HEAD:refs/heads/agent/x"]).assert_ok();
    assert_eq!(
        g.gate_ref("refs/heads/agent/x").as_deref(),
        Some(ff.as_str())
    );
    assert!(g.pending().is_empty(), "no proposal for covered pushes");

    // Outside the namespace: a review.
    refused(&g.push(&["origin", "HEAD:refs/heads/other"]));

    g.git(&["commit", "-q", "--amend", "-m", "rewritten"]);
    let r = g.push(&["--force", "origin", "HEAD:refs/heads/agent/x"]);
    refused(&r);
    let force_id = printed_id(&r);
    assert!(
        r.stderr.contains("--force-with-lease=refs/heads/agent/x:"),
        "{r:#?}"
    );
    let doc = g.env.json(&["show", &force_id, "--json"]);
    assert!(
        doc["flags"]
            .as_array()
            .unwrap()
            .contains(&json!("force-push")),
        "{doc}"
    );
    assert_eq!(doc["change"]["summary"]["force"], true);
    assert!(g.env.ok(&["show", &force_id]).contains("FORCE PUSH"));

    let r = g.push(&["origin", ":refs/heads/agent/x"]);
    refused(&r);
    let doc = g.env.json(&["show", &printed_id(&r), "--json"]);
    assert!(
        doc["flags"]
            .as_array()
            .unwrap()
            .contains(&json!("ref-deletion")),
        "{doc}"
    );
    assert_eq!(doc["change"]["new"], ZERO);
    assert_eq!(
        g.gate_ref("refs/heads/agent/x").as_deref(),
        Some(ff.as_str())
    );

    // The force push, approved on its own, goes through once.
    g.env.ok(&["approve", &force_id, "--yes"]);
    g.push(&["--force", "origin", "HEAD:refs/heads/agent/x"])
        .assert_ok();
    assert_eq!(g.gate_ref("refs/heads/agent/x"), Some(g.head()));
}

#[test]
fn a_rejection_note_reaches_the_pusher_on_the_next_attempt() {
    let g = Gate::new();
    g.commit("a.txt", "risky");
    let id = printed_id(&g.push(&["origin", "HEAD:refs/heads/feature"]));
    g.env
        .ok(&["reject", &id, "--note", "split it into two commits"]);
    let r = g.push(&["origin", "HEAD:refs/heads/feature"]);
    refused(&r);
    assert!(r.stderr.contains("split it into two commits"), "{r:#?}");
    assert!(r.stderr.contains("rejected by tester"), "{r:#?}");
    assert!(r.stderr.contains(&id), "{r:#?}");
    assert!(g.pending().is_empty());
}

#[test]
fn the_bottle_sees_gate_proposals_and_a_polled_approval_still_pushes_once() {
    let g = Gate::new();
    let new = g.commit("a.txt", "work");
    let id = printed_id(&g.push(&["origin", "HEAD:refs/heads/feature"]));
    let store = &g.env.store;
    let open = g
        .env
        .rt
        .block_on(store.open_proposals(g.env.bottle_id))
        .unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].id.to_string(), id);
    assert_eq!(open[0].change["new"], new.as_str());

    g.env.ok(&["approve", &id]);
    // check-proposal: the decision is delivered to the agent and archived...
    match g
        .env
        .rt
        .block_on(store.take_decision(g.env.bottle_id, &id))
        .unwrap()
    {
        Delivery::Decided(p) => assert_eq!(p.status.as_str(), "approved"),
        other => panic!("expected the decision, got {other:?}"),
    }
    // ... and the push can still use it, once.
    g.push(&["origin", "HEAD:refs/heads/feature"]).assert_ok();
    assert_eq!(
        g.gate_ref("refs/heads/feature").as_deref(),
        Some(new.as_str())
    );
    let summary = g.all()[0]["change"]["summary"].clone();
    let again = g
        .env
        .rt
        .block_on(store.gate_push(
            "demo",
            "origin",
            vec![RefUpdate {
                reference: "refs/heads/feature".into(),
                old: ZERO.into(),
                new: new.clone(),
                summary,
                justification: "again".into(),
                diff: None,
            }],
        ))
        .unwrap();
    assert!(!again.accepted, "an approval is used once: {again:?}");
}

#[test]
fn a_busy_database_refuses_the_push_within_the_busy_timeout_writing_nothing() {
    if !crate::util::have("sqlite3") {
        return;
    }
    let g = Gate::new();
    g.commit("a.txt", "work");
    let events_before = g.env.json(&["audit", "--json"])["events"]
        .as_array()
        .unwrap()
        .len();
    let mut holder = Command::new("sqlite3")
        .arg(&g.env.db)
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

    let start = Instant::now();
    let r = g.push(&["origin", "HEAD:refs/heads/feature"]);
    let took = start.elapsed();
    assert_ne!(r.code, 0, "{r:#?}");
    assert!(r.stderr.contains("database is busy"), "{r:#?}");
    assert!(r.stderr.contains("nothing was recorded"), "{r:#?}");
    assert!(took < Duration::from_secs(10), "{took:?}");

    writeln!(stdin, "ROLLBACK;\n.quit").unwrap();
    drop(stdin);
    holder.wait().unwrap();
    assert!(g.all().is_empty(), "no proposal was filed");
    let events_after = g.env.json(&["audit", "--json"])["events"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(events_before, events_after);
    assert_eq!(g.gate_ref("refs/heads/feature"), None);
}

#[test]
fn a_missing_database_refuses_the_push_saying_so() {
    let g = Gate::new();
    g.commit("a.txt", "work");
    std::fs::rename(&g.env.db, g.env.dir.path().join("moved.db")).unwrap();
    let r = g.push(&["origin", "HEAD:refs/heads/feature"]);
    assert_ne!(r.code, 0, "{r:#?}");
    assert!(r.stderr.contains("no supervise database"), "{r:#?}");
    assert_eq!(g.gate_ref("refs/heads/feature"), None);
}

#[test]
fn install_refuses_a_hook_it_did_not_write_unless_forced() {
    let g = Gate::new();
    let hook = g.bare.join("hooks").join("pre-receive");
    let ours = std::fs::read_to_string(&hook).unwrap();
    assert_eq!(
        ours.lines().filter(|l| l.starts_with("exec ")).count(),
        1,
        "{ours}"
    );
    assert!(
        ours.contains("gate pre-receive --bottle 'demo' --remote 'origin'"),
        "{ours}"
    );
    let push_options = ok(git_in(
        &g.bare,
        &g.home,
        &["config", "receive.advertisePushOptions"],
    ));
    assert_eq!(push_options.trim(), "true");
    // Re-installing our own hook is fine; someone else's is not.
    g.install(&["--bottle", "demo"]).assert_ok();
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
    g.install(&["--bottle", "demo"]).assert_refused("--force");
    g.install(&["--bottle", "demo", "--force"]).assert_ok();
    g.install(&["--bottle", "nobody"])
        .assert_refused("no bottle");
}

/// `git daemon` serving the gate's parent directory on a free loopback port.
struct Daemon {
    child: Child,
    port: u16,
}

impl Daemon {
    fn start(base: &Path) -> Daemon {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("git")
            .arg("daemon")
            .arg("--reuseaddr")
            .arg(format!("--base-path={}", base.display()))
            .args([
                "--export-all",
                "--enable=receive-pack",
                "--listen=127.0.0.1",
            ])
            .arg(format!("--port={port}"))
            .arg(base)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start git daemon");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "git daemon did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Daemon { child, port }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn over_git_daemon_the_push_is_refused_then_accepted_with_its_justification() {
    let g = Gate::new();
    let daemon = Daemon::start(g.env.dir.path());
    let url = format!("git://127.0.0.1:{}/gate.git", daemon.port);
    g.git(&["remote", "set-url", "origin", &url]);
    let new = g.commit("a.txt", "over the wire");

    let r = g.push(&[
        "-o",
        "justification=needed for the release",
        "origin",
        "HEAD:refs/heads/feature",
    ]);
    refused(&r);
    let id = printed_id(&r);
    let p = &g.pending()[0];
    assert_eq!(p["id"], id.as_str());
    assert_eq!(p["justification"], "needed for the release");
    assert_eq!(p["change"]["summary"]["subjects"], json!(["over the wire"]));

    g.env.ok(&["approve", &id]);
    g.push(&["origin", "HEAD:refs/heads/feature"]).assert_ok();
    assert_eq!(
        g.gate_ref("refs/heads/feature").as_deref(),
        Some(new.as_str())
    );
}

#[test]
fn with_a_grace_period_a_decision_in_time_lets_the_same_push_through() {
    let g = Gate::new();
    let hook = g.bare.join("hooks").join("pre-receive");
    let text = std::fs::read_to_string(&hook).unwrap();
    std::fs::write(
        &hook,
        text.replace("gate pre-receive", "gate pre-receive --grace 20"),
    )
    .unwrap();
    let new = g.commit("a.txt", "quick one");
    let (work, home) = (g.work.clone(), g.home.clone());
    let pusher = std::thread::spawn(move || {
        Run::from(git_in(
            &work,
            &home,
            &["push", "origin", "HEAD:refs/heads/feature"],
        ))
    });
    let deadline = Instant::now() + Duration::from_secs(15);
    let id = loop {
        if let Some(p) = g.pending().first() {
            break p["id"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "the gate filed nothing");
        std::thread::sleep(Duration::from_millis(50));
    };
    g.env.ok(&["approve", &id]);
    let r = pusher.join().unwrap();
    r.assert_ok();
    assert!(r.stderr.contains(&format!("approval {id} used")), "{r:#?}");
    assert_eq!(
        g.gate_ref("refs/heads/feature").as_deref(),
        Some(new.as_str())
    );
}
