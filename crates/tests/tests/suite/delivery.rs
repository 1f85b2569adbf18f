//! Exactly-once delivery. Four bottles (127.0.0.2 .. 127.0.0.5) file
//! proposals with grace 0; three pollers per bottle, each on its own connections, call
//! `check-proposal` on every one of their bottle's proposals in a loop, and a stranger from
//! another bottle polls them too, while two separate `supervise` processes race to decide
//! every proposal. Each decision must be decided once (the losing CLI exits 1), delivered
//! to exactly one poll, every other poll must answer `pending` or `unknown` (a stranger:
//! only `unknown`, and its polls must not consume anything), and `supervise audit --json`
//! must show one `proposed`, one decision and one `delivered` event per proposal.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use supervise_tests::{Agent, Server, cli, sqlite, structured};

const BOTTLES: [&str; 4] = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"];
const PER_BOTTLE: usize = 8;
const POLLERS_PER_BOTTLE: usize = 3;

/// The action for proposal number `i`: the CLI verb's args and the status the agent sees.
fn action(i: usize) -> (&'static str, &'static str) {
    match i % 3 {
        0 => ("approve", "approved"),
        1 => ("reject", "rejected"),
        _ => ("modify", "modified"),
    }
}

fn decide(db: &Path, operator: &str, id: &str, i: usize) -> bool {
    let (verb, _) = action(i);
    let note = format!("decided by {operator}");
    let mut args = vec![verb, id, "--note", note.as_str()];
    if verb == "modify" {
        args.extend(["--change", r#"{"port": 8443}"#]);
    }
    let out = cli(db, operator, &args);
    match out.status.code() {
        Some(0) => true,
        Some(1) => false,
        _ => panic!("{operator} {args:?}: {out:?}"),
    }
}

#[derive(Debug, Clone)]
struct Poll {
    id: String,
    poller: String,
    status: String,
    decided_by: Option<String>,
}

#[test]
fn every_decision_is_delivered_exactly_once_under_concurrent_polls() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("supervise.db");
    let specs: Vec<String> = BOTTLES
        .iter()
        .enumerate()
        .map(|(b, ip)| format!("once-{b}={ip}"))
        .collect();
    let mut args = vec!["--grace", "0", "--max-pending-per-bottle", "0"];
    for s in &specs {
        args.extend(["--bottle", s.as_str()]);
    }
    let server = Server::start(&db, &args);

    // File the proposals: (bottle index, proposal number i, id).
    let mut filed: Vec<(usize, usize, String)> = Vec::new();
    for (b, ip) in BOTTLES.iter().enumerate() {
        let mut agent = Agent::new(server.addr, ip);
        for k in 0..PER_BOTTLE {
            let i = b * PER_BOTTLE + k;
            let result = agent.tool(
                "propose-egress",
                json!({"host": format!("p{k}.once-{b}.example"), "justification": "exactly once"}),
            );
            let facts = structured(&result);
            assert_eq!(facts["status"], "pending", "{result}");
            filed.push((b, i, facts["proposal_id"].as_str().unwrap().to_string()));
        }
    }
    let index: HashMap<String, (usize, usize)> = filed
        .iter()
        .map(|(b, i, id)| (id.clone(), (*b, *i)))
        .collect();

    let polls: Arc<Mutex<Vec<Poll>>> = Arc::default();
    let delivered: Arc<Mutex<HashSet<String>>> = Arc::default();
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut handles = Vec::new();

    // Pollers: each polls all of its bottle's proposals until all are delivered, then
    // once more (those answers must all be `unknown`).
    for (b, ip) in BOTTLES.iter().enumerate() {
        let ids: Vec<String> = filed
            .iter()
            .filter(|(fb, _, _)| *fb == b)
            .map(|(_, _, id)| id.clone())
            .collect();
        for p in 0..POLLERS_PER_BOTTLE {
            let mut agent = Agent::new(server.addr, ip);
            let (ids, polls, delivered) = (ids.clone(), polls.clone(), delivered.clone());
            let poller = format!("b{b}-p{p}");
            handles.push(std::thread::spawn(move || {
                let mut last_pass = false;
                loop {
                    let all_done = {
                        let d = delivered.lock().unwrap();
                        ids.iter().all(|id| d.contains(id))
                    };
                    for id in &ids {
                        let result = agent.tool("check-proposal", json!({"proposal_id": id}));
                        let facts = structured(&result);
                        let status = facts["status"].as_str().unwrap_or("?").to_string();
                        if matches!(status.as_str(), "approved" | "rejected" | "modified") {
                            delivered.lock().unwrap().insert(id.clone());
                        }
                        polls.lock().unwrap().push(Poll {
                            id: id.clone(),
                            poller: poller.clone(),
                            status,
                            decided_by: facts["decision"]["decided_by"].as_str().map(String::from),
                        });
                    }
                    if last_pass {
                        break;
                    }
                    last_pass = all_done;
                    assert!(
                        Instant::now() < deadline,
                        "{poller}: not all delivered in time"
                    );
                }
            }));
        }
    }
    // A stranger: bottle 0 polls bottle 1's proposals. It must learn nothing and take
    // nothing.
    {
        let mut stranger = Agent::new(server.addr, BOTTLES[0]);
        let foreign: Vec<String> = filed
            .iter()
            .filter(|(b, _, _)| *b == 1)
            .map(|(_, _, id)| id.clone())
            .collect();
        let (polls, delivered) = (polls.clone(), delivered.clone());
        handles.push(std::thread::spawn(move || {
            loop {
                for id in &foreign {
                    let result = stranger.tool("check-proposal", json!({"proposal_id": id}));
                    polls.lock().unwrap().push(Poll {
                        id: id.clone(),
                        poller: "stranger".into(),
                        status: structured(&result)["status"].as_str().unwrap_or("?").into(),
                        decided_by: None,
                    });
                }
                let d = delivered.lock().unwrap();
                if foreign.iter().all(|id| d.contains(id)) || Instant::now() > deadline {
                    break;
                }
            }
        }));
    }

    // Two operators race to decide everything, in opposite orders, each from its own
    // `supervise` process per decision.
    let mut deciders = Vec::new();
    for (operator, reverse) in [("alice", false), ("bob", true)] {
        let mut order: Vec<(usize, String)> =
            filed.iter().map(|(_, i, id)| (*i, id.clone())).collect();
        if reverse {
            order.reverse();
        }
        let db = db.clone();
        deciders.push(std::thread::spawn(move || {
            order
                .into_iter()
                .filter(|(i, id)| decide(&db, operator, id, *i))
                .map(|(_, id)| (id, operator))
                .collect::<Vec<_>>()
        }));
    }
    let mut winner: HashMap<String, &str> = HashMap::new();
    for d in deciders {
        for (id, operator) in d.join().expect("a decider panicked") {
            assert!(
                winner.insert(id.clone(), operator).is_none(),
                "{id} was decided by both operators"
            );
        }
    }
    assert_eq!(
        winner.len(),
        filed.len(),
        "some proposal was decided by nobody"
    );
    for h in handles {
        h.join().expect("a poller panicked");
    }

    // Exactly one delivery per proposal, with the winner's decision; all else pending or
    // unknown; a poller never goes back from `unknown`.
    let polls = polls.lock().unwrap().clone();
    let mut deliveries: HashMap<&str, Vec<&Poll>> = HashMap::new();
    let mut seen_unknown: HashSet<(&str, &str)> = HashSet::new();
    for poll in &polls {
        let (_, i) = index[&poll.id];
        if poll.poller == "stranger" {
            assert_eq!(
                poll.status, "unknown",
                "a stranger learned something: {poll:?}"
            );
            continue;
        }
        match poll.status.as_str() {
            "pending" => assert!(
                !seen_unknown.contains(&(poll.poller.as_str(), poll.id.as_str())),
                "pending after unknown: {poll:?}"
            ),
            "unknown" => {
                seen_unknown.insert((poll.poller.as_str(), poll.id.as_str()));
            }
            s if s == action(i).1 => {
                assert!(
                    !seen_unknown.contains(&(poll.poller.as_str(), poll.id.as_str())),
                    "delivered after unknown: {poll:?}"
                );
                assert_eq!(
                    poll.decided_by.as_deref(),
                    Some(winner[&poll.id]),
                    "{poll:?}"
                );
                deliveries.entry(poll.id.as_str()).or_default().push(poll);
            }
            other => panic!("unexpected status {other}: {poll:?}"),
        }
    }
    for (_, _, id) in &filed {
        let got = deliveries.get(id.as_str()).map_or(0, Vec::len);
        assert_eq!(
            got,
            1,
            "{id} delivered {got} times: {:?}",
            deliveries.get(id.as_str())
        );
    }

    // The audit trail accounts for every proposal.
    let audit = cli(&db, "alice", &["audit", "--json"]);
    assert!(audit.status.success(), "{audit:?}");
    let doc: Value = serde_json::from_slice(&audit.stdout).unwrap();
    let mut counts: HashMap<(String, String), usize> = HashMap::new();
    for e in doc["events"].as_array().unwrap() {
        if let Some(id) = e["proposal_id"].as_str() {
            *counts
                .entry((id.to_string(), e["event"].as_str().unwrap().to_string()))
                .or_default() += 1;
        }
    }
    for (_, i, id) in &filed {
        for event in ["proposed", action(*i).1, "delivered"] {
            assert_eq!(
                counts.get(&(id.clone(), event.to_string())),
                Some(&1),
                "{id}: `{event}` events"
            );
        }
    }
    let per_proposal: usize = counts.values().sum();
    assert_eq!(
        per_proposal,
        filed.len() * 3,
        "unexpected extra events: {counts:?}"
    );
    assert_eq!(
        sqlite(
            &db,
            "SELECT count(*) FROM proposals WHERE archived_at IS NULL;"
        ),
        "0"
    );
    eprintln!(
        "{} proposals, {} polls, exactly-once held, in {:?}",
        filed.len(),
        polls.len(),
        started.elapsed()
    );
    drop(server);
}

/// The other half of the rule: every call *waiting* on a proposal when its decision lands
/// receives it (SPEC), while polls stay exactly-once among themselves. Three identical
/// `propose-egress` calls wait in a 20 s grace window (the repeats fold into one proposal);
/// three pollers poll it meanwhile; the operator approves from the CLI. All three waiting
/// calls get `approved`; the pollers together get the decision at most once.
#[test]
fn waiting_calls_all_get_the_decision_and_polls_at_most_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("supervise.db");
    let server = Server::start(&db, &["--grace", "20", "--bottle", "wait=127.0.0.2"]);
    let addr = server.addr;
    let args = json!({"host": "same.example", "justification": "wait together"});
    let waiting: Vec<_> = (0..3)
        .map(|_| {
            let args = args.clone();
            std::thread::spawn(move || Agent::new(addr, "127.0.0.2").tool("propose-egress", args))
        })
        .collect();
    // The proposal is queued once, with three hits.
    let deadline = Instant::now() + Duration::from_secs(10);
    let id = loop {
        let out = cli(&db, "op", &["list", "--json"]);
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if doc["proposals"][0]["hits"] == 3 {
            assert_eq!(doc["proposals"].as_array().map(Vec::len), Some(1), "{doc}");
            break doc["proposals"][0]["id"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "not queued with 3 hits: {doc}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let pollers: Vec<_> = (0..3)
        .map(|_| {
            let (id, stop) = (id.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut agent = Agent::new(addr, "127.0.0.2");
                let mut got = Vec::new();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let r = agent.tool("check-proposal", json!({"proposal_id": id}));
                    got.push(structured(&r)["status"].as_str().unwrap_or("?").to_string());
                }
                got
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let out = cli(&db, "op", &["approve", &id]);
    assert!(out.status.success(), "{out:?}");
    for w in waiting {
        let r = w.join().unwrap();
        assert_eq!(
            structured(&r)["status"],
            "approved",
            "a waiting call missed it: {r}"
        );
        assert_eq!(structured(&r)["proposal_id"], id.as_str());
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let per_poller: Vec<Vec<String>> = pollers.into_iter().map(|p| p.join().unwrap()).collect();
    for (n, got) in per_poller.iter().enumerate() {
        let approved = got.iter().filter(|s| *s == "approved").count();
        assert!(
            approved <= 1,
            "poller {n} got the decision {approved} times: {got:?}"
        );
    }
    let polls: Vec<String> = per_poller.into_iter().flatten().collect();
    assert!(
        polls
            .iter()
            .all(|s| matches!(s.as_str(), "pending" | "approved" | "unknown")),
        "{polls:?}"
    );
    let delivered = polls.iter().filter(|s| *s == "approved").count();
    assert!(delivered <= 1, "polls got the decision {delivered} times");
    assert!(polls.last().is_some_and(|s| s == "unknown"), "{polls:?}");
    drop(server);
}
