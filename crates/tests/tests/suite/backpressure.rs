//! Backpressure.
//!
//! Built: the per-bottle cap on undecided proposals (`--max-pending-per-bottle`). Past it a
//! new proposal gets a clear `refused` tool result telling the agent to wait for or check
//! its open proposals; nothing already queued is dropped or overwritten; other bottles are
//! unaffected; a decision frees a slot; concurrent proposals past the cap are refused
//! exactly past the cap.
//!
//! Limits on concurrent *waiting* calls, server-wide (`--max-waiting`) and per bottle
//! (`--max-waiting-per-bottle`; a connection holds at most one waiting call, since HTTP/1.1
//! serves one request at a time on it). Past either, a call is answered `pending` early (its
//! proposal is queued and keeps its id), not refused.

use std::collections::HashSet;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use supervise_tests::{Agent, Server, cli, row_count, structured, text};

const A: &str = "127.0.0.2";
const B: &str = "127.0.0.3";
const C: &str = "127.0.0.4";

fn propose(agent: &mut Agent, host: &str) -> Value {
    agent.tool(
        "propose-egress",
        json!({"host": host, "justification": format!("need {host}")}),
    )
}

#[test]
fn past_the_per_bottle_cap_proposals_are_refused_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("supervise.db");
    let server = Server::start(
        &db,
        &[
            "--grace",
            "0",
            "--max-pending-per-bottle",
            "3",
            "--bottle",
            &format!("cap-a={A}"),
            "--bottle",
            &format!("cap-b={B}"),
            "--bottle",
            &format!("cap-c={C}"),
        ],
    );
    let mut a = Agent::new(server.addr, A);
    let mut ids = Vec::new();
    for n in 0..3 {
        let r = propose(&mut a, &format!("h{n}.a.example"));
        assert_eq!(structured(&r)["status"], "pending", "{r}");
        ids.push(structured(&r)["proposal_id"].as_str().unwrap().to_string());
    }
    let rows = (row_count(&db, "proposals"), row_count(&db, "events"));

    // The fourth: refused, clearly, with what to do instead.
    let r = propose(&mut a, "h3.a.example");
    let facts = structured(&r);
    assert_eq!(facts["status"], "refused", "{r}");
    assert_eq!(r["isError"], true);
    assert!(
        facts["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{r}"
    );
    let said = text(&r);
    assert!(
        said.contains('3'),
        "the refusal should name the cap: {said}"
    );
    assert!(
        said.contains("wait")
            && (said.contains("list-proposals") || said.contains("check-proposal")),
        "the refusal should tell the agent to wait for / check its open proposals: {said}"
    );
    assert_eq!(
        (row_count(&db, "proposals"), row_count(&db, "events")),
        rows
    );

    // Re-proposing a queued change is not a new proposal: same id, no refusal.
    let again = propose(&mut a, "h1.a.example");
    assert_eq!(structured(&again)["status"], "pending", "{again}");
    assert_eq!(structured(&again)["proposal_id"], ids[1].as_str());

    // Nothing dropped or overwritten: the three are listed as filed.
    let list = structured(&a.tool("list-proposals", json!({})));
    let listed: Vec<(&str, &str)> = list["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["proposal_id"].as_str().unwrap(),
                p["proposal"]["host"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        vec![
            (ids[0].as_str(), "h0.a.example"),
            (ids[1].as_str(), "h1.a.example"),
            (ids[2].as_str(), "h2.a.example"),
        ]
    );

    // Another bottle is unaffected.
    let mut b = Agent::new(server.addr, B);
    for n in 0..3 {
        let r = propose(&mut b, &format!("h{n}.b.example"));
        assert_eq!(structured(&r)["status"], "pending", "{r}");
    }

    // A decision frees a slot.
    let out = cli(&db, "op", &["reject", &ids[0], "--note", "no"]);
    assert!(out.status.success(), "{out:?}");
    let r = propose(&mut a, "h3.a.example");
    assert_eq!(structured(&r)["status"], "pending", "{r}");

    // Ten concurrent proposals from a fresh bottle: exactly three queued, seven refused.
    let barrier = Arc::new(Barrier::new(10));
    let handles: Vec<_> = (0..10)
        .map(|n| {
            let mut c = Agent::new(server.addr, C);
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                structured(&propose(&mut c, &format!("h{n}.c.example")))
            })
        })
        .collect();
    let answers: Vec<Value> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let pending: HashSet<&str> = answers
        .iter()
        .filter(|f| f["status"] == "pending")
        .map(|f| f["proposal_id"].as_str().unwrap())
        .collect();
    let refused = answers.iter().filter(|f| f["status"] == "refused").count();
    assert_eq!((pending.len(), refused), (3, 7), "{answers:?}");
    let queued = cli(&db, "op", &["list", "--bottle", "cap-c", "--json"]);
    let doc: Value = serde_json::from_slice(&queued.stdout).unwrap();
    let queued: HashSet<&str> = doc["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(queued, pending, "the queue and the answers disagree");
}

/// Starts a waiting `propose-egress` call on its own connection from `source`; returns when
/// it is answered, with the answer and how long it took.
fn waiting_call(
    addr: std::net::SocketAddr,
    source: &'static str,
    host: String,
) -> std::thread::JoinHandle<(Value, Duration)> {
    std::thread::spawn(move || {
        let mut agent = Agent::new(addr, source);
        let started = Instant::now();
        let r = propose(&mut agent, &host);
        (r, started.elapsed())
    })
}

/// Global limit: with `--max-waiting 4` and a 20 s grace window, six calls waiting at once
/// leave four waiting and answer two `pending` early (well before the grace window), each
/// with a queued proposal; none is refused. The four get the operator's decision.
#[test]
fn past_the_global_waiting_limit_calls_are_answered_pending_early() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("supervise.db");
    let server = Server::start(
        &db,
        &[
            "--grace",
            "20",
            "--max-waiting",
            "4",
            "--bottle",
            &format!("wait-a={A}"),
            "--bottle",
            &format!("wait-b={B}"),
        ],
    );
    let calls: Vec<_> = (0..6)
        .map(|n| {
            waiting_call(
                server.addr,
                if n % 2 == 0 { A } else { B },
                format!("w{n}.example"),
            )
        })
        .collect();
    // All six are queued (the early ones too).
    let deadline = Instant::now() + Duration::from_secs(10);
    let ids = loop {
        let out = cli(&db, "op", &["list", "--json"]);
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let ids: Vec<String> = doc["proposals"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|p| p["id"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        if ids.len() == 6 {
            break ids;
        }
        assert!(Instant::now() < deadline, "only {} of 6 queued", ids.len());
        std::thread::sleep(Duration::from_millis(100));
    };
    std::thread::sleep(Duration::from_secs(2));
    for id in &ids {
        assert!(cli(&db, "op", &["approve", id]).status.success());
    }
    let answers: Vec<(Value, Duration)> = calls.into_iter().map(|h| h.join().unwrap()).collect();
    let early: Vec<_> = answers
        .iter()
        .filter(|(r, _)| structured(r)["status"] == "pending")
        .collect();
    let approved = answers
        .iter()
        .filter(|(r, _)| structured(r)["status"] == "approved")
        .count();
    assert_eq!((early.len(), approved), (2, 4), "{answers:?}");
    for (r, took) in early {
        assert!(
            *took < Duration::from_secs(2),
            "answered pending after {took:?}"
        );
        assert!(text(r).contains("check-proposal"), "{r}");
        assert!(ids.contains(&structured(r)["proposal_id"].as_str().unwrap().to_string()));
    }
    assert!(
        answers
            .iter()
            .all(|(r, _)| structured(r)["status"] != "refused")
    );
}

/// Per-bottle limit: one HTTP/1.1 connection carries one request at a time, so a bottle's
/// waiting calls are bounded by its source address. With `--max-waiting-per-bottle 2`, four
/// calls waiting at once from bottle A leave two waiting and answer two `pending` early;
/// bottle B's call still waits for its decision.
#[test]
fn past_the_per_bottle_waiting_limit_calls_are_answered_pending_early() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("supervise.db");
    let server = Server::start(
        &db,
        &[
            "--grace",
            "20",
            "--max-waiting-per-bottle",
            "2",
            "--bottle",
            &format!("conn-a={A}"),
            "--bottle",
            &format!("conn-b={B}"),
        ],
    );
    let a_calls: Vec<_> = (0..4)
        .map(|n| waiting_call(server.addr, A, format!("a{n}.example")))
        .collect();
    let b_call = waiting_call(server.addr, B, "b0.example".into());
    std::thread::sleep(Duration::from_secs(3));
    let out = cli(&db, "op", &["list", "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<String> = doc["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 5, "every call queued its proposal: {doc}");
    for id in &ids {
        assert!(cli(&db, "op", &["approve", id]).status.success());
    }
    let answers: Vec<(Value, Duration)> = a_calls.into_iter().map(|h| h.join().unwrap()).collect();
    let early = answers
        .iter()
        .filter(|(r, took)| structured(r)["status"] == "pending" && *took < Duration::from_secs(2))
        .count();
    let approved = answers
        .iter()
        .filter(|(r, _)| structured(r)["status"] == "approved")
        .count();
    assert_eq!((early, approved), (2, 2), "{answers:?}");
    let (b, _) = b_call.join().unwrap();
    assert_eq!(
        structured(&b)["status"],
        "approved",
        "bottle B was limited: {b}"
    );
}
