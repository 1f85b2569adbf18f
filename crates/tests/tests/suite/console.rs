//! The review console used as its operators use it, every part a real process on one
//! database file: `supervise-server` with a bottle, `supervise console` on a free port,
//! `supervise operator ...` for links and tokens, headless Chromium through chromedriver
//! for the pages, an agent speaking MCP from the bottle's source address, and the CLI
//! deciding in another process while the console watches the change feed.

use std::time::Duration;

use serde_json::{Value, json};
use supervise_tests::browser::{self, Browser};
use supervise_tests::console::{Console, api_token, sign_in_link};
use supervise_tests::{Agent, Server, cli, cli_json, structured, text};

/// The bottle's source address: the server attributes the agent by it.
const BOTTLE_IP: &str = "127.0.0.2";
/// How long a decision made in one process may take to show in another, at most.
const LIVE: Duration = Duration::from_secs(30);

/// A server with bottle `demo` (grace 0: proposals answer `pending` at once) and a console
/// on the same database.
fn host(dir: &tempfile::TempDir) -> (std::path::PathBuf, Server, Console) {
    let db = dir.path().join("supervise.db");
    let server = Server::start(
        &db,
        &["--grace", "0", "--bottle", &format!("demo={BOTTLE_IP}")],
    );
    let console = Console::start(&db);
    (db, server, console)
}

/// `supervise ARGS` as operator `root`, which must succeed; its stdout.
fn run(db: &std::path::Path, args: &[&str]) -> String {
    let out = cli(db, "root", args);
    assert!(
        out.status.success(),
        "supervise {args:?} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Files an egress proposal from the bottle; its id.
fn propose(agent: &mut Agent, host: &str, why: &str) -> String {
    let answer = agent.tool(
        "propose-egress",
        json!({"host": host, "justification": why}),
    );
    let facts = structured(&answer);
    assert_eq!(facts["status"], "pending", "{answer}");
    facts["proposal_id"]
        .as_str()
        .expect("a proposal_id")
        .to_owned()
}

fn card(id: &str) -> String {
    format!("document.querySelector('[data-proposal=\"{id}\"]')")
}

/// Marks the page so a reload (which starts a fresh `window`) would show.
fn mark_page(b: &Browser) {
    b.js("window.__notReloaded = true");
}

fn assert_not_reloaded(b: &Browser, what: &str) {
    assert_eq!(
        b.js("window.__notReloaded === true"),
        json!(true),
        "the queue was reloaded to show {what}; SPEC: it updates live"
    );
}

/// Opens the queue and waits until its live stream is open.
fn queue(b: &Browser, console: &Console) {
    b.goto(&console.url);
    b.until(
        "the queue page",
        "document.querySelector('h1') && document.querySelector('h1').textContent.startsWith('Queue')",
    );
    b.until(
        "the queue's live stream",
        "document.body.dataset.liveState === 'open'",
    );
}

/// An approver signs in with the link `supervise operator add` printed, watches an
/// agent's proposal arrive, approves it for an hour with a note in Chromium; the agent
/// learns it, the CLI shows the grant and `via: console`; a rejection from the CLI leaves
/// the open queue without a reload; removing the operator ends the browser's session.
#[test]
fn an_approver_decides_in_the_browser_beside_the_cli_and_the_agent() {
    if !browser::available(
        "console::an_approver_decides_in_the_browser_beside_the_cli_and_the_agent",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (db, server, console) = host(&dir);

    // 2. The admin adds ann; the link is on the console's public URL.
    let added = run(
        &db,
        &[
            "operator",
            "add",
            "ann",
            "--role",
            "approver",
            "--public-url",
            &console.url,
        ],
    );
    let link = sign_in_link(&added);
    assert!(
        link.starts_with(&format!("{}/sign-in/", console.url)),
        "{link} is not on {}",
        console.url
    );

    // 4. Ann opens it, presses the button, lands on the queue.
    let b = Browser::start();
    b.goto(&link);
    b.click("#sign-in");
    b.until(
        "the queue after signing in",
        "document.location.pathname === '/' && document.querySelector('h1') \
         && document.querySelector('h1').textContent.startsWith('Queue')",
    );
    b.until(
        "the queue's live stream",
        "document.body.dataset.liveState === 'open'",
    );

    // 5. The agent files a proposal; it shows up without a reload.
    let mut agent = Agent::new(server.addr, BOTTLE_IP);
    mark_page(&b);
    let id = propose(&mut agent, "docs.example.com", "build the docs");
    b.until("the agent's proposal in the open queue", &card(&id));
    assert_not_reloaded(&b, "the agent's proposal");
    assert_eq!(
        b.text(&format!("[data-proposal=\"{id}\"] .justification"))
            .as_deref(),
        Some("build the docs")
    );

    // 6. Open it, approve for an hour with a note.
    b.click(&format!("[data-proposal=\"{id}\"] a.button"));
    b.until("the proposal page", "document.getElementById('approve')");
    b.select("#approve-for", "1h");
    b.fill("#approve-note", "for the docs build");
    b.click("#approve");
    b.until(
        "status approved on the proposal page",
        "document.getElementById('status') \
         && document.getElementById('status').textContent === 'approved'",
    );
    let decision = b.text("#decision").unwrap_or_default();
    assert!(
        decision.starts_with("approved by ann via console"),
        "{decision}"
    );

    // 7. The agent's poll returns the decision.
    let answer = agent.tool("check-proposal", json!({"proposal_id": id}));
    let facts = structured(&answer);
    assert_eq!(facts["status"], "approved", "{answer}");
    assert_eq!(facts["decision"]["note"], "for the docs build", "{answer}");
    assert_eq!(facts["decision"]["decided_by"], "ann", "{answer}");
    assert_ne!(answer["isError"], true, "{answer}");
    let said = text(&answer);
    assert!(
        said.contains("approved by ann") && said.contains("for the docs build"),
        "{said}"
    );

    // 8. The CLI sees the grant, the decision's channel and the audit event.
    let policy = cli_json(&db, "root", &["policy", "demo", "--json"]);
    let grant = policy["grants"]
        .as_array()
        .expect("grants")
        .iter()
        .find(|g| g["proposal_id"] == id.as_str())
        .unwrap_or_else(|| panic!("no grant for {id} in {policy}"));
    assert_eq!(
        grant["change"],
        json!({"host": "docs.example.com", "port": 443})
    );
    assert_eq!(grant["granted_by"], "ann", "{grant}");
    let left = grant["seconds_left"].as_i64().expect("an hour-long grant");
    assert!((3000..=3600).contains(&left), "{grant}");
    let shown = cli_json(&db, "root", &["show", &id, "--json"]);
    assert_eq!(shown["decision"]["via"], "console", "{shown}");
    assert_eq!(shown["decision"]["decided_by"], "ann", "{shown}");
    let audit = cli_json(&db, "root", &["audit", "--json"]);
    let approved = audit["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["event"] == "approved" && e["proposal_id"] == id.as_str())
        .unwrap_or_else(|| panic!("no approved event for {id} in {audit}"));
    assert_eq!(approved["via"], "console", "{approved}");
    assert_eq!(approved["actor"], "operator:ann", "{approved}");
    assert_eq!(approved["note"], "for the docs build", "{approved}");

    // 9. A second proposal in the open queue; the CLI rejects it in another process.
    queue(&b, &console);
    mark_page(&b);
    let second = propose(&mut agent, "paste.example.net", "upload the logs");
    b.until("the second proposal in the open queue", &card(&second));
    run(&db, &["reject", &second, "--note", "no uploads"]);
    b.until(
        "the queue to drop the proposal the CLI rejected",
        &format!("!{}", card(&second)),
    );
    assert_not_reloaded(&b, "the CLI's rejection");
    let answer = agent.tool("check-proposal", json!({"proposal_id": second}));
    assert_eq!(structured(&answer)["status"], "rejected", "{answer}");

    // 10. Removing ann ends her session: the next page she opens asks for a link.
    run(&db, &["operator", "rm", "ann"]);
    b.goto(&console.url);
    b.until(
        "the sign-in-needed page after `operator rm ann`",
        "document.location.pathname === '/sign-in'",
    );
    let page = b.js("document.body.textContent");
    assert!(
        page.as_str()
            .unwrap_or("")
            .contains("Sign in with your link"),
        "{page}"
    );
    assert_eq!(b.js("document.getElementById('sign-in')"), Value::Null);
    drop(b);
    drop(console);
    drop(server);
}

/// A chat bridge's view: a token from `supervise operator token`, an approve over
/// `/api/v1`, a second approve refused with 409 naming the first decider, and the events
/// stream carrying a decision the CLI made in another process.
#[test]
fn the_api_with_a_token_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let (db, server, console) = host(&dir);
    run(&db, &["operator", "add", "ann", "--role", "approver"]);
    let token = api_token(&run(&db, &["operator", "token", "ann"]));
    let t = Some(token.as_str());

    let mut agent = Agent::new(server.addr, BOTTLE_IP);
    let first = propose(&mut agent, "pypi.org", "install the packages");
    let second = propose(&mut agent, "crates.io", "fetch the crates");

    let (status, listed) = console.api("GET", "/proposals", t, None);
    assert_eq!(status, 200, "{listed}");
    let ids: Vec<&str> = listed["proposals"]
        .as_array()
        .expect("proposals")
        .iter()
        .filter_map(|p| p["id"].as_str())
        .collect();
    assert!(
        ids.contains(&first.as_str()) && ids.contains(&second.as_str()),
        "{listed}"
    );

    let path = format!("/proposals/{first}/approve");
    let (status, approved) = console.api(
        "POST",
        &path,
        t,
        Some(&json!({"note": "from the bridge", "for": "1h"})),
    );
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["status"], "approved", "{approved}");
    assert_eq!(approved["decision"]["decided_by"], "ann", "{approved}");
    assert_eq!(approved["decision"]["via"], "console", "{approved}");
    let (status, again) = console.api("POST", &path, t, Some(&json!({})));
    assert_eq!(status, 409, "{again}");
    assert_eq!(again["decided_by"], "ann", "{again}");
    assert!(
        again["error"].as_str().unwrap_or("").contains("ann"),
        "the 409 names who decided: {again}"
    );
    let answer = agent.tool("check-proposal", json!({"proposal_id": first}));
    assert_eq!(structured(&answer)["status"], "approved", "{answer}");
    assert_eq!(
        structured(&answer)["decision"]["note"],
        "from the bridge",
        "{answer}"
    );

    let (status, _) = console.api("GET", "/proposals", Some("sv_not-a-token"), None);
    assert_eq!(status, 401);

    // The stream from the start replays the backlog, then carries the CLI's decision.
    let stream = console.events(&token, 0);
    assert_eq!(stream.status, 200);
    assert!(
        stream.content_type.starts_with("text/event-stream"),
        "{}",
        stream.content_type
    );
    stream
        .wait_for(LIVE, |e| {
            e.event.as_deref() == Some("approved") && e.json()["proposal_id"] == first.as_str()
        })
        .unwrap_or_else(|seen| panic!("the backlog had no approval of {first}: {seen:?}"));
    run(&db, &["approve", &second, "--note", "from the terminal"]);
    let event = stream
        .wait_for(LIVE, |e| {
            e.event.as_deref() == Some("approved") && e.json()["proposal_id"] == second.as_str()
        })
        .unwrap_or_else(|seen| {
            panic!(
                "the CLI's approval of {second} never reached the stream within {LIVE:?}; \
                 saw {seen:?}; console log: {:?}",
                console.log()
            )
        });
    let data = event.json();
    assert_eq!(data["via"], "cli", "{data}");
    assert_eq!(data["actor"], "operator:root", "{data}");
    assert_eq!(data["note"], "from the terminal", "{data}");
    assert!(event.id.is_some(), "{event:?}");
    drop(stream);
    drop(console);
    drop(server);
}
