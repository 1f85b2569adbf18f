//! The operator's day, story by story: an agent in bottle `demo` talks MCP to the real
//! `supervise-server`, the operator answers with the real `supervise` CLI, on one database
//! file. Bounded grants, proposal expiry, the rejection cooldown, risk flags, the live
//! watch, event hooks and bulk decisions, each as one story.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use supervise_tests::{
    Mcp, Server, bin, cli, cli_json, structured, text, wait_for_lines, wait_until, write_script,
};

/// One host: a fresh database, a server with bottle `demo` at 127.0.0.1 (plus `args`), and
/// the agent's initialized MCP session.
struct Host {
    dir: tempfile::TempDir,
    db: PathBuf,
    server: Server,
    agent: Mcp,
}

impl Host {
    fn start(args: &[&str]) -> Host {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("supervise.db");
        let args = [&["--bottle", "demo=127.0.0.1"], args].concat();
        let server = Server::start(&db, &args);
        let mut agent = server.mcp();
        agent.initialize();
        Host {
            dir,
            db,
            server,
            agent,
        }
    }

    fn egress(&mut self, host: &str, port: u16, why: &str) -> Value {
        self.agent.call_tool(
            "propose-egress",
            json!({"host": host, "port": port, "justification": why}),
        )
    }

    fn push(&mut self, reference: &str, why: &str) -> Value {
        self.agent.call_tool(
            "propose-git-push",
            json!({"remote": "origin", "ref": reference, "justification": why}),
        )
    }

    fn check(&mut self, id: &str) -> Value {
        self.agent
            .call_tool("check-proposal", json!({"proposal_id": id}))
    }

    /// `supervise --as alice ARGS --json`, parsed.
    fn json(&self, args: &[&str]) -> Value {
        cli_json(&self.db, "alice", args)
    }

    /// `supervise --as alice ARGS`, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = cli(&self.db, "alice", args);
        assert!(
            out.status.success(),
            "supervise {args:?}: {out:?}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

/// The id of a `pending` answer (asserting it is one).
fn pending_id(answer: &Value) -> String {
    let facts = structured(answer);
    assert_eq!(facts["status"], "pending", "{answer}");
    facts["proposal_id"].as_str().expect("proposal_id").into()
}

/// The proposal with `id` in a `list --json` document.
fn find<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["proposals"]
        .as_array()
        .expect("a proposals array")
        .iter()
        .find(|p| p["id"] == id)
        .unwrap_or_else(|| panic!("{id} is not in {doc}"))
}

/// The audit events named `event`.
fn events(audit: &Value, event: &str) -> Vec<Value> {
    audit["events"]
        .as_array()
        .expect("an events array")
        .iter()
        .filter(|e| e["event"] == event)
        .cloned()
        .collect()
}

/// The last line of a tool answer's text: the next step for the model.
fn next_step(answer: &Value) -> String {
    text(answer).lines().last().unwrap_or("").to_string()
}

/// Single-quotes `path` for `sh -c`.
fn quoted(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// Waits until the server's `--on-event` hook (which writes into `hook_out`) has run once
/// for a write made by the CLI in another process: registers a bottle with the CLI and
/// waits for the hook to record the `bottle-added` event. (Events from the server's first
/// moments are hooked too: `an_event_right_after_start_is_hooked`.)
fn wait_for_hook_runner(h: &Host, hook_out: &Path) {
    h.ok(&["bottle", "add", "hook-probe", "--ip", "127.0.0.9"]);
    let seen = wait_until(Duration::from_secs(10), || {
        std::fs::read_to_string(hook_out)
            .ok()
            .filter(|t| t.contains("bottle-added"))
    });
    assert!(
        seen.is_some(),
        "the hook never saw the probe's bottle-added"
    );
}

// ----- 1. a bounded grant ------------------------------------------------------------------

/// The operator grants egress for two seconds: the grant is in `policy` with its time
/// left, then it is gone from `policy`, and the running server's sweep (every 5 s; there
/// is no flag to shorten it) writes `grant-expired` into the audit trail.
#[test]
fn a_grant_for_two_seconds_is_in_force_then_gone_with_an_audit_event() {
    let mut h = Host::start(&["--grace", "0"]);
    let id = pending_id(&h.egress("dl.example.com", 443, "fetch the toolchain"));

    let out = h.ok(&[
        "approve",
        &id,
        "--for",
        "2s",
        "--note",
        "just for the download",
    ]);
    let approved = Instant::now();
    assert!(out.starts_with(&format!("approved {id} ")), "{out}");
    assert!(out.contains("; grant ") && out.contains(" for "), "{out}");

    // The agent hears about it.
    let answer = h.check(&id);
    assert_eq!(structured(&answer)["status"], "approved", "{answer}");
    assert_eq!(
        structured(&answer)["decision"]["note"],
        "just for the download"
    );

    // In force, with its time left.
    let policy = h.json(&["policy", "demo", "--json"]);
    let grants = policy["grants"].as_array().unwrap();
    assert_eq!(grants.len(), 1, "{policy}");
    let grant = &grants[0];
    let grant_id = grant["id"].as_str().unwrap().to_string();
    assert_eq!(grant["proposal_id"], id.as_str());
    assert_eq!(
        grant["change"],
        json!({"host": "dl.example.com", "port": 443})
    );
    assert!(grant["expires_at"].is_string(), "{grant}");
    let left = grant["seconds_left"].as_i64().unwrap();
    assert!((0..=2).contains(&left), "{grant}");
    let table = h.ok(&["policy", "demo"]);
    assert!(
        table.contains(&grant_id) && !table.contains("until revoked"),
        "{table}"
    );

    // Gone once its time is up.
    let gone = wait_until(Duration::from_secs(5), || {
        h.json(&["policy", "demo", "--json"])["grants"]
            .as_array()
            .unwrap()
            .is_empty()
            .then(Instant::now)
    })
    .expect("the grant never left policy");
    assert!(
        gone.duration_since(approved) >= Duration::from_millis(1500),
        "the grant left policy after only {:?}",
        gone.duration_since(approved)
    );
    assert_eq!(
        h.ok(&["policy", "demo"]).trim(),
        "no grants in force for bottle demo"
    );

    // The server's sweep records the expiry.
    let expired = wait_until(Duration::from_secs(10), || {
        let audit = h.json(&["audit", "--json"]);
        events(&audit, "grant-expired").into_iter().next()
    })
    .unwrap_or_else(|| {
        panic!(
            "no grant-expired event 10 s after the grant ended; server log:\n{}",
            h.server.log().join("\n")
        )
    });
    assert_eq!(expired["grant_id"], grant_id.as_str(), "{expired}");
    assert_eq!(expired["proposal_id"], id.as_str(), "{expired}");
    assert_eq!(expired["bottle"], "demo", "{expired}");
    assert_eq!(expired["actor"], "system", "{expired}");
    let audit = h.json(&["audit", "--bottle", "demo", "--json"]);
    assert_eq!(events(&audit, "grant-expired").len(), 1, "{audit}");
}

// ----- 2. a proposal that nobody decided in time -------------------------------------------

/// With `--proposal-ttl 2s`, two proposals go undecided. Once the time is up the operator
/// cannot approve either (exit 1): one the agent has not polled yet, and one the agent was
/// already told `expired` about; `check-proposal` answers `expired`, never `pending`.
#[test]
fn a_proposal_past_its_ttl_is_expired_for_the_agent_and_cannot_be_approved() {
    let mut h = Host::start(&["--grace", "0", "--proposal-ttl", "2s"]);
    let filed = Instant::now();
    let polled = pending_id(&h.egress("slow.example.com", 443, "mirror the docs"));
    let unpolled = pending_id(&h.push("refs/heads/feature/late", "ship the fix"));
    let doc = h.json(&["list", "--json"]);
    assert!(find(&doc, &polled)["expires_at"].is_string(), "{doc}");
    let answer = h.check(&polled);
    assert_eq!(structured(&answer)["status"], "pending", "{answer}");

    std::thread::sleep(Duration::from_millis(2300).saturating_sub(filed.elapsed()));

    // The agent asks: expired, an error, with a next step, and no longer queued.
    let answer = h.check(&polled);
    let facts = structured(&answer);
    assert_eq!(facts["status"], "expired", "{answer}");
    assert_eq!(facts["proposal_id"], polled.as_str());
    assert_eq!(answer["isError"], true, "{answer}");
    assert!(text(&answer).contains("expired"), "{answer}");
    assert!(next_step(&answer).starts_with("Next: "), "{answer}");

    // The operator tries to approve both: refused, exit 1, nothing granted.
    for id in [&polled, &unpolled] {
        let out = cli(&h.db, "alice", &["approve", id]);
        assert_eq!(out.status.code(), Some(1), "approve {id}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(id.as_str()) && err.contains("expired"),
            "{err}"
        );
    }
    assert_eq!(h.json(&["policy", "demo", "--json"])["grants"], json!([]));
    assert_eq!(h.json(&["list", "--json"]), json!({"proposals": []}));

    // The agent that never polled is told `expired` too, not `approved` nor `pending`.
    let answer = h.check(&unpolled);
    assert_eq!(structured(&answer)["status"], "expired", "{answer}");
    assert_eq!(answer["isError"], true, "{answer}");
    let again = h.check(&polled);
    assert_eq!(structured(&again)["status"], "unknown", "{again}");

    let audit = h.json(&["audit", "--json"]);
    let expired: Vec<Value> = events(&audit, "expired");
    for id in [&polled, &unpolled] {
        assert_eq!(
            expired.iter().filter(|e| e["proposal_id"] == **id).count(),
            1,
            "one expired event for {id}: {audit}"
        );
    }
}

// ----- 3. no re-asking what was just refused ----------------------------------------------

/// The agent's call waits in the grace window; the operator rejects it with a note. The
/// agent asks for the very same change again (another spelling, another justification):
/// the server answers `rejected` at once, quoting the earlier id and note, and the
/// operator's queue stays empty.
#[test]
fn an_identical_change_after_a_rejection_is_answered_at_once_without_a_new_row() {
    let h = Host::start(&["--grace", "30"]);
    let Host {
        dir: _dir,
        db,
        server,
        mut agent,
    } = h;
    let waiting = std::thread::spawn(move || {
        let answer = agent.call_tool(
            "propose-egress",
            json!({"host": "paste.example.com", "justification": "share a log"}),
        );
        (answer, agent)
    });
    let id = wait_until(Duration::from_secs(10), || {
        cli_json(&db, "alice", &["list", "--json"])["proposals"][0]["id"]
            .as_str()
            .map(String::from)
    })
    .expect("the proposal never reached the queue");
    let note = "no paste sites; attach the log to the ticket";
    let out = cli(&db, "alice", &["reject", &id, "--note", note]);
    assert!(out.status.success(), "{out:?}");
    let (answer, mut agent) = waiting.join().unwrap();
    assert_eq!(structured(&answer)["status"], "rejected", "{answer}");

    // The same change again: same host in another case, trailing dot, default port.
    let asked = Instant::now();
    let answer = agent.call_tool(
        "propose-egress",
        json!({"host": "Paste.Example.COM.", "port": 443, "justification": "please, it is small"}),
    );
    let took = asked.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "answered after {took:?}: the cooldown must answer at once, not wait the grace window"
    );
    let facts = structured(&answer);
    assert_eq!(facts["status"], "rejected", "{answer}");
    assert_eq!(answer["isError"], true, "{answer}");
    assert_eq!(facts["proposal_id"], id.as_str(), "quotes the earlier id");
    assert_eq!(facts["decision"]["note"], note, "{answer}");
    assert!(
        text(&answer).contains(&id) && text(&answer).contains(note),
        "{answer}"
    );
    assert_eq!(
        next_step(&answer),
        format!("Next: rejected: {note}; do not retry the same change.")
    );

    // Nothing new for the operator: no pending row, the repeat counted on the old one.
    assert_eq!(
        cli_json(&db, "alice", &["list", "--json"]),
        json!({"proposals": []})
    );
    let all = cli_json(&db, "alice", &["list", "--status", "all", "--json"]);
    assert_eq!(all["proposals"].as_array().unwrap().len(), 1, "{all}");
    assert_eq!(find(&all, &id)["hits"], 2, "{all}");
    let audit = cli_json(&db, "alice", &["audit", "--json"]);
    let auto = events(&audit, "auto-rejected");
    assert_eq!(auto.len(), 1, "{audit}");
    assert_eq!(auto[0]["proposal_id"], id.as_str());
    assert_eq!(auto[0]["note"], note);
    assert_eq!(events(&audit, "proposed").len(), 1, "{audit}");
    drop(server);
}

// ----- 4. risk flags ------------------------------------------------------------------------

/// Every risky shape the flags name (and a few safe controls), filed by the agent through
/// the server, reads back from `supervise list --json` with its flags.
#[test]
fn risk_flags_for_each_listed_case() {
    enum Ask {
        Egress(&'static str, u16),
        Push(&'static str),
    }
    use Ask::{Egress, Push};
    let cases: &[(Ask, &[&str])] = &[
        // controls
        (Egress("api.example.com", 443), &[]),
        (Egress("plain.example.com", 80), &[]),
        (Push("refs/heads/feature/x"), &[]),
        // wildcard host
        (Egress("*.example.com", 443), &["wildcard-host"]),
        // IP literals: private, loopback, link-local, cloud metadata, CGNAT
        (Egress("10.1.2.3", 443), &["ip-literal", "private-ip"]),
        (Egress("172.16.0.5", 443), &["ip-literal", "private-ip"]),
        (Egress("192.168.1.10", 443), &["ip-literal", "private-ip"]),
        (Egress("fd12:3456::1", 443), &["ip-literal", "private-ip"]),
        (Egress("127.0.0.1", 443), &["ip-literal", "loopback"]),
        (Egress("::1", 443), &["ip-literal", "loopback"]),
        (Egress("169.254.10.1", 443), &["ip-literal", "link-local"]),
        (Egress("fe80::1", 443), &["ip-literal", "link-local"]),
        (
            Egress("169.254.169.254", 80),
            &["ip-literal", "cloud-metadata", "link-local"],
        ),
        (
            Egress("fd00:ec2::254", 80),
            &["ip-literal", "cloud-metadata", "private-ip"],
        ),
        (Egress("100.64.0.1", 443), &["ip-literal", "cgnat"]),
        (Egress("100.127.255.254", 443), &["ip-literal", "cgnat"]),
        (Egress("8.8.8.8", 443), &["ip-literal"]),
        // a port other than 80/443
        (Egress("db.example.com", 5432), &["unusual-port"]),
        (Egress("git.example.com", 22), &["unusual-port"]),
        // raw IPs in disguise: decimal, hex, dotted hex and octal
        (Egress("2130706433", 443), &["disguised-ip", "loopback"]),
        (Egress("0x7f000001", 443), &["disguised-ip", "loopback"]),
        (
            Egress("0xa9fea9fe", 80),
            &["disguised-ip", "cloud-metadata", "link-local"],
        ),
        (
            Egress("0xa9.0xfe.0xa9.0xfe", 80),
            &["disguised-ip", "cloud-metadata", "link-local"],
        ),
        (Egress("0177.0.0.1", 443), &["disguised-ip", "loopback"]),
        (Egress("167772161", 443), &["disguised-ip", "private-ip"]),
        // several at once
        (
            Egress("10.0.0.7", 8080),
            &["ip-literal", "private-ip", "unusual-port"],
        ),
        // git: default branches, tags, refs outside refs/heads/
        (Push("refs/heads/main"), &["default-branch"]),
        (Push("refs/heads/master"), &["default-branch"]),
        (Push("main"), &["default-branch"]),
        (Push("refs/tags/v1.0"), &["tag"]),
        (Push("refs/notes/commits"), &["ref-outside-heads"]),
    ];
    let mut h = Host::start(&["--grace", "0"]);
    let mut filed = Vec::new();
    for (ask, want) in cases {
        let (answer, label) = match ask {
            Egress(host, port) => (
                h.egress(host, *port, "table-driven risk check"),
                format!("egress {host}:{port}"),
            ),
            Push(reference) => (
                h.push(reference, "table-driven risk check"),
                format!("push {reference}"),
            ),
        };
        let facts = structured(&answer);
        assert_eq!(facts["status"], "pending", "{label}: {answer}");
        filed.push((
            label,
            facts["proposal_id"].as_str().unwrap().to_string(),
            *want,
        ));
    }

    let doc = h.json(&["list", "--json"]);
    let mut wrong = Vec::new();
    for (label, id, want) in &filed {
        let got = &find(&doc, id)["flags"];
        if got != &json!(want) {
            wrong.push(format!("{label}: flags {got}, want {}", json!(want)));
        }
    }
    assert!(wrong.is_empty(), "wrong flags:\n{}", wrong.join("\n"));

    // The table shows them too, in its FLAGS column.
    let table = h.ok(&["list"]);
    assert!(table.lines().next().unwrap().contains("FLAGS"), "{table}");
    let row = table
        .lines()
        .find(|l| l.contains("169.254.169.254"))
        .expect("the metadata row");
    assert!(row.contains("cloud-metadata"), "{table}");
}

/// An operator's `modify` that grants more than was asked is flagged `widened`.
#[test]
fn a_modify_that_widens_the_change_is_flagged() {
    let mut h = Host::start(&["--grace", "0"]);
    let wider_host = pending_id(&h.egress("api.example.com", 443, "call the API"));
    let other_port = pending_id(&h.egress("web.example.com", 443, "read the docs"));
    let narrower = pending_id(&h.egress("*.example.org", 443, "any mirror"));

    let out = h.ok(&[
        "modify",
        &wider_host,
        "--change",
        r#"{"host": "*.example.com"}"#,
    ]);
    assert!(out.contains("[flags: wildcard-host, widened]"), "{out}");
    h.ok(&["modify", &other_port, "--change", r#"{"port": 8443}"#]);
    h.ok(&[
        "modify",
        &narrower,
        "--change",
        r#"{"host": "mirror.example.org"}"#,
    ]);

    let doc = h.json(&["list", "--status", "decided", "--json"]);
    assert_eq!(
        find(&doc, &wider_host)["flags"],
        json!(["wildcard-host", "widened"]),
        "{doc}"
    );
    assert_eq!(
        find(&doc, &other_port)["flags"],
        json!(["unusual-port", "widened"]),
        "{doc}"
    );
    // Narrowing a wildcard to one host widens nothing (the proposal's own flag stays).
    assert_eq!(
        find(&doc, &narrower)["flags"],
        json!(["wildcard-host"]),
        "{doc}"
    );

    // The agent is told what it got instead.
    let answer = h.check(&wider_host);
    let facts = structured(&answer);
    assert_eq!(facts["status"], "modified", "{answer}");
    assert_eq!(
        facts["decision"]["change"],
        json!({"host": "*.example.com", "port": 443})
    );
}

// ----- 5. the live view ---------------------------------------------------------------------

/// `supervise list --watch` is open on the operator's terminal; the agent files a proposal
/// through the server and a line for it appears within a second; the operator approves it
/// and it leaves; Ctrl-C ends the watch cleanly.
#[test]
fn list_watch_shows_a_proposal_filed_through_the_server_within_a_second() {
    let mut h = Host::start(&["--grace", "0"]);
    let mut watch = Command::new(bin("supervise"))
        .arg("--db")
        .arg(&h.db)
        .args(["--as", "alice", "list", "--watch"])
        .env_remove("SUPERVISE_DB")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn supervise list --watch");
    let stdout = watch.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let first = lines
        .recv_timeout(Duration::from_secs(10))
        .expect("the watch printed its initial list");
    assert_eq!(first, "no pending proposals");

    let answer = h.egress("new.example.com", 8443, "reach the staging API");
    let filed = Instant::now();
    let id = pending_id(&answer);
    let line = lines
        .recv_timeout(Duration::from_secs(1))
        .expect("a line for the new proposal within a second");
    assert!(
        filed.elapsed() < Duration::from_secs(1),
        "{:?}",
        filed.elapsed()
    );
    assert!(line.contains("+ proposed") && line.contains(&id), "{line}");
    assert!(
        line.contains("demo")
            && line.contains("egress new.example.com:8443")
            && line.contains("[unusual-port]")
            && line.contains("bottle:demo"),
        "{line}"
    );

    h.ok(&["approve", &id]);
    let line = lines
        .recv_timeout(Duration::from_secs(2))
        .expect("a line for the decision");
    assert!(
        line.contains("- approved") && line.contains(&id) && line.contains("operator:alice"),
        "{line}"
    );

    let sent = Command::new("kill")
        .args(["-INT", &watch.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = wait_until(Duration::from_secs(3), || watch.try_wait().ok().flatten());
    let Some(status) = status else {
        let _ = watch.kill();
        let _ = watch.wait();
        panic!("the watch did not stop on Ctrl-C");
    };
    assert!(status.success(), "clean exit on Ctrl-C: {status:?}");
}

// ----- 6. the operator hears about it ------------------------------------------------------

/// A hook script gets one JSON document per event on stdin, with `SUPERVISE_EVENT` and
/// `SUPERVISE_PROPOSAL_ID` set: for the agent's new proposal, and for the operator's
/// decision made with the CLI in another process.
#[test]
fn an_on_event_hook_receives_a_new_proposal_and_a_cli_decision() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("events.tsv");
    let hook = write_script(
        dir.path(),
        "notify.sh",
        r#"doc=$(cat)
printf '%s\t%s\t%s\n' "$SUPERVISE_EVENT" "$SUPERVISE_PROPOSAL_ID" "$doc" >> "$1""#,
    );
    let on_event = format!("{} {}", quoted(&hook), quoted(&out));
    let mut h = Host::start(&["--grace", "0", "--on-event", &on_event]);
    wait_for_hook_runner(&h, &out);
    let id = pending_id(&h.egress("releases.example.com", 443, "download the release"));

    /// Waits for the hook's line for `event` and returns (env event, env id, document).
    fn hook_line(out: &Path, event: &str) -> (String, String, Value) {
        let found = wait_until(Duration::from_secs(10), || {
            std::fs::read_to_string(out)
                .unwrap_or_default()
                .lines()
                .map(|l| l.splitn(3, '\t').map(String::from).collect::<Vec<_>>())
                .find(|f| f.len() == 3 && f[0] == event)
        });
        let Some(f) = found else {
            panic!(
                "the hook never saw {event}; it wrote:\n{}",
                std::fs::read_to_string(out).unwrap_or_default()
            );
        };
        let doc = serde_json::from_str(&f[2])
            .unwrap_or_else(|e| panic!("the hook's stdin was not JSON ({e}): {}", f[2]));
        (f[0].clone(), f[1].clone(), doc)
    }

    let (env_event, env_id, doc) = hook_line(&out, "proposed");
    assert_eq!(env_event, "proposed");
    assert_eq!(env_id, id);
    assert_eq!(doc["event"], "proposed", "{doc}");
    assert_eq!(doc["actor"], "bottle:demo", "{doc}");
    assert_eq!(doc["bottle"], "demo", "{doc}");
    assert_eq!(doc["proposal_id"], id.as_str(), "{doc}");
    assert_eq!(doc["kind"], "egress", "{doc}");
    assert_eq!(
        doc["change"],
        json!({"host": "releases.example.com", "port": 443}),
        "{doc}"
    );
    // A proposal's event carries the justification as its note (docs/SCHEMA.md).
    assert_eq!(doc["note"], "download the release", "{doc}");
    assert!(
        doc["at"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{doc}"
    );

    h.ok(&["approve", &id, "--note", "ok for this release"]);
    let (env_event, env_id, doc) = hook_line(&out, "approved");
    assert_eq!(env_event, "approved");
    assert_eq!(env_id, id);
    assert_eq!(doc["event"], "approved", "{doc}");
    assert_eq!(doc["actor"], "operator:alice", "{doc}");
    assert_eq!(doc["bottle"], "demo", "{doc}");
    assert_eq!(doc["proposal_id"], id.as_str(), "{doc}");
    assert_eq!(doc["kind"], "egress", "{doc}");
    assert_eq!(
        doc["change"],
        json!({"host": "releases.example.com", "port": 443}),
        "{doc}"
    );
    assert_eq!(doc["note"], "ok for this release", "{doc}");
}

/// The hook of the slow-hook stories: records "EVENT PID" in `started`, then sleeps 30 s
/// (`exec`, so the recorded pid is the sleeping process). Returns the server's
/// `--on-event` command.
fn sleeping_hook(dir: &Path, started: &Path) -> String {
    let hook = write_script(
        dir,
        "slow.sh",
        r#"echo "$SUPERVISE_EVENT $$" >> "$1"
exec sleep 30"#,
    );
    format!("{} {}", quoted(&hook), quoted(started))
}

/// The pids the sleeping hook recorded that are still running it.
fn sleeping_hooks(started: &Path) -> Vec<String> {
    wait_for_lines(started, 0, Duration::ZERO)
        .iter()
        .filter_map(|l| l.split(' ').nth(1).map(String::from))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.starts_with(b"sleep\0") && c.ends_with(b"30\0"))
        })
        .collect()
}

/// Ends the hook processes this test's server started (by pid) so none outlives the test.
fn end_sleeping_hooks(started: &Path) {
    for pid in sleeping_hooks(started) {
        let _ = Command::new("kill").args(["-KILL", &pid]).status();
    }
}

/// A hook that sleeps 30 s holds up nothing: every propose call answers at once, even with
/// every hook slot busy, and every proposal is queued.
#[test]
fn a_hook_that_sleeps_30_s_does_not_delay_the_tool_call() {
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let on_event = sleeping_hook(dir.path(), &started);
    let mut h = Host::start(&["--grace", "0", "--on-event", &on_event]);
    wait_for_hook_runner(&h, &started); // its hook sleeps too, in one of the slots

    let mut ids = Vec::new();
    let mut times = Vec::new();
    for i in 0..6 {
        let asked = Instant::now();
        let answer = h.egress(&format!("h{i}.example.com"), 443, "fetch a dependency");
        times.push(asked.elapsed());
        ids.push(pending_id(&answer));
        if i == 0 {
            // From here on a hook is asleep while the agent calls.
            let lines = wait_for_lines(&started, 2, Duration::from_secs(10));
            assert!(
                lines.iter().any(|l| l.starts_with("proposed ")),
                "the hook never started for the proposal: {lines:?}"
            );
        }
    }
    let doc = h.json(&["list", "--json"]);
    let audit = h.json(&["audit", "--json"]);
    drop(h);
    end_sleeping_hooks(&started);

    for (i, took) in times.iter().enumerate() {
        assert!(
            *took < Duration::from_secs(2),
            "propose #{i} took {took:?} with a sleeping hook (all: {times:?})"
        );
    }
    for id in &ids {
        assert_eq!(find(&doc, id)["status"], "pending");
    }
    assert_eq!(events(&audit, "proposed").len(), 6, "{audit}");
}

/// SPEC: a slow hook is "killed after a timeout", and the server "shuts down cleanly on
/// SIGINT/SIGTERM". A hook still running when the server stops must not outlive it.
#[test]
fn a_hook_still_running_when_the_server_stops_does_not_outlive_it() {
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let on_event = sleeping_hook(dir.path(), &started);
    let mut h = Host::start(&["--grace", "0", "--on-event", &on_event]);
    wait_for_hook_runner(&h, &started);
    // The hook writes its line, then execs `sleep`: wait for the exec, not just the line.
    let asleep = wait_until(Duration::from_secs(10), || {
        Some(sleeping_hooks(&started)).filter(|p| p.len() == 1)
    });
    assert!(
        asleep.is_some(),
        "{:?}",
        wait_for_lines(&started, 0, Duration::ZERO)
    );

    let status = h.server.terminate(Duration::from_secs(20));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    let left = wait_until(Duration::from_secs(3), || {
        Some(sleeping_hooks(&started)).filter(Vec::is_empty)
    });
    let alive = sleeping_hooks(&started);
    end_sleeping_hooks(&started);
    assert!(
        left.is_some(),
        "hook processes {alive:?} still run after the server exited"
    );
}

/// SPEC: the server runs the hook "once per event". The first proposal, filed right
/// after the server said where it listens, is hooked like any other. Started several
/// times to give the race a chance: it shows reliably only on a loaded machine.
#[test]
fn an_event_right_after_start_is_hooked() {
    for round in 0..8 {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("events");
        let hook = write_script(dir.path(), "log.sh", r#"echo "$SUPERVISE_EVENT" >> "$1""#);
        let on_event = format!("{} {}", quoted(&hook), quoted(&out));
        let mut h = Host::start(&["--grace", "0", "--on-event", &on_event]);
        pending_id(&h.egress("first.example.com", 443, "the first call"));
        let lines = wait_for_lines(&out, 1, Duration::from_secs(5));
        assert_eq!(
            lines,
            vec!["proposed"],
            "round {round}: the first proposal was never hooked"
        );
    }
}

// ----- 7. bulk decisions --------------------------------------------------------------------

/// The agent files a batch; the operator approves every `*.example.com` egress of `demo` in
/// one command: first a dry run that changes nothing, then for real (flagged ones skipped),
/// then the flagged ones too with `--include-flagged`. The agent learns each decision.
#[test]
fn bulk_approve_with_and_without_flagged_items() {
    let mut h = Host::start(&["--grace", "0"]);
    let a = pending_id(&h.egress("a.example.com", 443, "package index"));
    let b = pending_id(&h.egress("b.example.com", 443, "package files"));
    let ssh = pending_id(&h.egress("c.example.com", 22, "clone over ssh"));
    let wild = pending_id(&h.egress("*.example.com", 443, "all of it"));
    let other = pending_id(&h.egress("other.org", 443, "unrelated"));
    let push = pending_id(&h.push("refs/heads/a.example.com", "a branch"));
    let bulk = [
        "approve",
        "--bottle",
        "demo",
        "--kind",
        "egress",
        "--match",
        "*.example.com",
    ];

    // A dry run says what would happen and changes nothing.
    let before = h.json(&["list", "--status", "all", "--json"]);
    let audit_before = h.json(&["audit", "--json"]);
    let out = h.ok(&[&bulk[..], &["--dry-run"]].concat());
    assert!(
        out.contains(&format!("would approve {a}")) && out.contains(&format!("would approve {b}")),
        "{out}"
    );
    assert!(
        out.contains(&format!("skipped {ssh}")) && out.contains(&format!("skipped {wild}")),
        "{out}"
    );
    assert!(!out.contains(&other) && !out.contains(&push), "{out}");
    assert!(out.contains("nothing was changed"), "{out}");
    assert_eq!(h.json(&["list", "--status", "all", "--json"]), before);
    assert_eq!(h.json(&["audit", "--json"]), audit_before);
    assert_eq!(structured(&h.check(&a))["status"], "pending");

    // For real: the unflagged matches only.
    let out = h.ok(&[&bulk[..], &["--for", "1h", "--note", "batch"]].concat());
    assert!(
        out.contains(&format!("approved {a}")) && out.contains(&format!("approved {b}")),
        "{out}"
    );
    assert!(
        out.contains("approved 2, skipped 2 flagged, refused 0"),
        "{out}"
    );
    for id in [&a, &b] {
        let answer = h.check(id);
        let facts = structured(&answer);
        assert_eq!(facts["status"], "approved", "{answer}");
        assert_eq!(facts["decision"]["note"], "batch", "{answer}");
    }
    for id in [&ssh, &wild, &other, &push] {
        assert_eq!(structured(&h.check(id))["status"], "pending", "{id}");
    }
    let policy = h.json(&["policy", "demo", "--json"]);
    let grants = policy["grants"].as_array().unwrap();
    assert_eq!(grants.len(), 2, "{policy}");
    assert!(
        grants.iter().all(|g| g["expires_at"].is_string()),
        "{policy}"
    );

    // The flagged ones too, when the operator says so.
    let out = h.ok(&[&bulk[..], &["--include-flagged"]].concat());
    assert!(
        out.contains(&format!("approved {ssh}")) && out.contains("[flags: unusual-port]"),
        "{out}"
    );
    assert!(
        out.contains(&format!("approved {wild}")) && out.contains("[flags: wildcard-host]"),
        "{out}"
    );
    assert!(
        out.contains("approved 2, skipped 0 flagged, refused 0"),
        "{out}"
    );
    for id in [&ssh, &wild] {
        assert_eq!(structured(&h.check(id))["status"], "approved", "{id}");
    }
    let doc = h.json(&["list", "--json"]);
    let left: Vec<&str> = doc["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(left, vec![other.as_str(), push.as_str()], "{doc}");

    // Nothing left to match: refused, exit 1.
    let out = cli(&h.db, "alice", &bulk);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no pending egress proposal"),
        "{out:?}"
    );
}
