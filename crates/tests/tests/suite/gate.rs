//! The git gate across the real binaries: `supervise-server` answers the bottle's MCP
//! calls, `supervise gate install` makes a bare repository the gate (its `pre-receive`
//! hook runs the same `supervise` binary), the bottle pushes with the real `git` over
//! `file://`, and the operator decides with `supervise`, all on one database file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use supervise_tests::{Mcp, Server, cli, cli_json, structured};

const ZERO: &str = "0000000000000000000000000000000000000000";
const OPERATOR: &str = "alice";

/// A server with bottle `demo` (127.0.0.1, the MCP client's source address) on a database
/// in a private temp dir, a bare gate repository installed for `demo`, and a clone.
struct Host {
    /// Holds the database, the gate, the clone and git's `HOME`.
    _dir: tempfile::TempDir,
    db: PathBuf,
    server: Server,
    bare: PathBuf,
    work: PathBuf,
    home: PathBuf,
}

/// Runs `git -C DIR ARGS` with an empty `HOME`, no system config, and a fixed identity.
fn git_in(dir: &Path, home: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .env_remove("SUPERVISE_DB")
        .stdin(Stdio::null())
        .output()
        .expect("run git")
}

fn git_ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "git failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl Host {
    fn start() -> Host {
        // A tempdir is 0700: the store refuses a database in a world-writable directory.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let db = root.join("supervise.db");
        let server = Server::start(&db, &["--grace", "0", "--bottle", "demo=127.0.0.1"]);
        let home = root.join("home");
        std::fs::create_dir_all(&home).unwrap();
        git_ok(git_in(
            &root,
            &home,
            &["init", "-q", "--bare", "-b", "main", "gate.git"],
        ));
        git_ok(git_in(&root, &home, &["init", "-q", "-b", "main", "work"]));
        let bare = root.join("gate.git");
        let work = root.join("work");
        let url = format!("file://{}", bare.display());
        git_ok(git_in(&work, &home, &["remote", "add", "origin", &url]));

        let bare_arg = bare.to_str().unwrap();
        let out = cli(
            &db,
            OPERATOR,
            &["gate", "install", bare_arg, "--bottle", "demo"],
        );
        assert!(
            out.status.success(),
            "gate install: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The hook runs the binary that installed it, by absolute path: the one this
        // suite runs, so no PATH is needed for `git push`.
        let hook = std::fs::read_to_string(bare.join("hooks").join("pre-receive")).unwrap();
        let supervise = supervise_tests::bin("supervise");
        assert!(
            hook.contains(&format!("exec '{}' ", supervise.display())),
            "{hook}"
        );
        Host {
            _dir: dir,
            db,
            server,
            bare,
            work,
            home,
        }
    }

    /// An MCP client from 127.0.0.1: bottle `demo`.
    fn bottle(&self) -> Mcp {
        let mut mcp = self.server.mcp();
        mcp.initialize();
        mcp
    }

    fn git(&self, args: &[&str]) -> String {
        git_ok(git_in(&self.work, &self.home, args))
    }

    /// Writes `file`, commits it, and returns the new commit.
    fn commit(&self, file: &str, subject: &str) -> String {
        std::fs::write(self.work.join(file), format!("{subject}\n")).unwrap();
        self.git(&["add", file]);
        self.git(&["commit", "-q", "-m", subject]);
        self.git(&["rev-parse", "HEAD"])
    }

    /// `git push origin SPEC`: the exit status and stderr (the hook's `remote:` lines).
    fn push(&self, spec: &str) -> (bool, String) {
        let out = git_in(&self.work, &self.home, &["push", "origin", spec]);
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// The commit a ref of the gate points at, if any.
    fn gate_ref(&self, reference: &str) -> Option<String> {
        let out = git_in(
            &self.bare,
            &self.home,
            &["rev-parse", "--verify", "-q", reference],
        );
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Every proposal, any status (`list --status all --json`).
    fn all_proposals(&self) -> Vec<Value> {
        cli_json(&self.db, OPERATOR, &["list", "--status", "all", "--json"])["proposals"]
            .as_array()
            .expect("a proposals array")
            .clone()
    }

    fn approve(&self, id: &str) {
        let out = cli(&self.db, OPERATOR, &["approve", id]);
        assert!(
            out.status.success(),
            "approve {id}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The proposal id the gate printed (`remote: supervise gate:   proposal ID ...`).
fn printed_id(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.split("supervise gate:   proposal ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .map(String::from)
        .unwrap_or_else(|| panic!("no proposal id in the push's stderr:\n{stderr}"))
}

/// The bottle proposes a standing `git-push` grant for `refs/heads/agent/*` over MCP and
/// the operator approves it with the CLI; then a new branch `agent/x` and a fast-forward
/// of it are pushed with real git, each accepted by the grant without a new proposal.
#[test]
fn a_standing_grant_proposed_over_mcp_lets_branch_pushes_through_without_a_proposal() {
    let h = Host::start();
    let mut bottle = h.bottle();
    let answer = bottle.call_tool(
        "propose-git-push",
        json!({
            "remote": "origin",
            "ref": "refs/heads/agent/*",
            "justification": "push my work branches for review"
        }),
    );
    let facts = structured(&answer);
    assert_eq!(facts["status"], "pending", "{answer}");
    let id = facts["proposal_id"].as_str().expect("a proposal_id");
    h.approve(id);
    let before = h.all_proposals();
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0]["kind"], "git-push");
    assert_eq!(before[0]["change"]["ref"], "refs/heads/agent/*");

    let first = h.commit("a.txt", "start");
    let (pushed, stderr) = h.push("HEAD:refs/heads/agent/x");
    assert!(pushed, "the creation is covered by the grant:\n{stderr}");
    assert!(stderr.contains("accepted by grant"), "{stderr}");
    assert_eq!(
        h.gate_ref("refs/heads/agent/x").as_deref(),
        Some(first.as_str())
    );

    let second = h.commit("b.txt", "more");
    let (pushed, stderr) = h.push("HEAD:refs/heads/agent/x");
    assert!(
        pushed,
        "the fast-forward is covered by the grant:\n{stderr}"
    );
    assert_eq!(
        h.gate_ref("refs/heads/agent/x").as_deref(),
        Some(second.as_str())
    );

    assert_eq!(
        h.all_proposals().len(),
        before.len(),
        "covered pushes file no proposal"
    );
}

/// A push to `main` is refused at once with a proposal id; the bottle sees that proposal
/// with `list-proposals` and `check-proposal`; the operator approves; `check-proposal`
/// delivers `approved`, and the same push still goes through once: being told and being
/// used are separate facts.
#[test]
fn a_refused_push_is_seen_by_the_bottle_approved_polled_and_then_pushed_once() {
    let h = Host::start();
    let mut bottle = h.bottle();
    let new = h.commit("a.txt", "change main");

    let (pushed, stderr) = h.push("HEAD:refs/heads/main");
    assert!(!pushed, "a push to main needs a review:\n{stderr}");
    let id = printed_id(&stderr);
    assert_eq!(h.gate_ref("refs/heads/main"), None);

    // The bottle sees it among its open proposals, with the ref update it asks for.
    let listed = structured(&bottle.call_tool("list-proposals", json!({})));
    let items = listed["proposals"].as_array().expect("a proposals array");
    let item = items
        .iter()
        .find(|p| p["proposal_id"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} is not in {listed}"));
    assert_eq!(item["kind"], "git-push", "{item}");
    assert_eq!(item["status"], "pending", "{item}");
    assert_eq!(item["proposal"]["ref"], "refs/heads/main", "{item}");
    assert_eq!(item["proposal"]["old"], ZERO, "{item}");
    assert_eq!(item["proposal"]["new"], new.as_str(), "{item}");
    let polled = structured(&bottle.call_tool("check-proposal", json!({"proposal_id": id})));
    assert_eq!(polled["status"], "pending", "{polled}");

    h.approve(&id);
    let polled = structured(&bottle.call_tool("check-proposal", json!({"proposal_id": id})));
    assert_eq!(polled["status"], "approved", "{polled}");
    assert_eq!(polled["decision"]["decided_by"], OPERATOR, "{polled}");

    // Told, and still usable once.
    let (pushed, stderr) = h.push("HEAD:refs/heads/main");
    assert!(pushed, "the approved push goes through:\n{stderr}");
    assert!(stderr.contains(&format!("approval {id} used")), "{stderr}");
    assert_eq!(h.gate_ref("refs/heads/main").as_deref(), Some(new.as_str()));

    // Used once: the same update again (the ref reset behind the gate's back) is a new
    // review, not a second use of the approval.
    git_ok(git_in(
        &h.bare,
        &h.home,
        &["update-ref", "-d", "refs/heads/main"],
    ));
    let (pushed, stderr) = h.push("HEAD:refs/heads/main");
    assert!(!pushed, "an approval is used once:\n{stderr}");
    assert_ne!(printed_id(&stderr), id);
    assert_eq!(h.gate_ref("refs/heads/main"), None);
}
