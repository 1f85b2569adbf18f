//! `--metrics-listen`: `GET /metrics` in Prometheus's text format on a listener of its own
//! (never the MCP one), with SPEC's families, moved by real proposals, decisions, hooks and
//! refusals; an address in use stops the server at start.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use supervise_store::{Actor, Verdict};

use crate::harness::*;

/// Starts a server with a metrics listener on a free port; returns it and that address.
fn start_with_metrics(extra: &[&str]) -> (Server, String) {
    let mut args = vec!["--metrics-listen", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let server = Server::start(&args);
    let log = server.log();
    let addr = log
        .split("metrics on http://")
        .nth(1)
        .and_then(|rest| rest.split("/metrics").next())
        .unwrap_or_else(|| panic!("no metrics address logged:\n{log}"))
        .to_owned();
    (server, addr)
}

async fn scrape(addr: &str) -> String {
    let r = http_from(ALPHA)
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
    r.text().await.unwrap()
}

/// The value of one series (`name{labels}` exactly as exposed), if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let value = l.strip_prefix(series)?.strip_prefix(' ')?;
        Some(value.trim().parse().expect("a number"))
    })
}

/// Scrapes until `series` reads `want` (the feed is counted a moment after the commit).
async fn scrape_until(addr: &str, series: &str, want: f64) -> String {
    let start = Instant::now();
    loop {
        let text = scrape(addr).await;
        if sample(&text, series) == Some(want) {
            return text;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{series} is not {want}:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_served_on_their_own_listener_and_never_on_the_mcp_one() {
    let (server, addr) = start_with_metrics(&[]);
    let on_mcp = http_from(ALPHA)
        .get(format!("http://{}/metrics", server.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(on_mcp.status().as_u16(), 404);
    assert!(!on_mcp.text().await.unwrap().contains("supervise_"));

    let text = scrape(&addr).await;
    for family in [
        "# TYPE supervise_proposals_pending gauge",
        "# TYPE supervise_proposals_oldest_pending_age_seconds gauge",
        "# TYPE supervise_decisions_total counter",
        "# TYPE supervise_time_to_decide_seconds histogram",
        "# TYPE supervise_waiting_calls gauge",
        "# TYPE supervise_task_streams gauge",
        "# TYPE supervise_hook_runs_total counter",
        "# TYPE supervise_hook_failures_total counter",
        "# TYPE supervise_grant_uses_total counter",
        "# TYPE supervise_store_write_duration_seconds histogram",
        "# TYPE supervise_refusals_total counter",
    ] {
        assert!(text.contains(family), "{family} missing:\n{text}");
    }
    // Every bottle of this host has a series per kind, zero while nothing waits.
    for series in [
        r#"supervise_proposals_pending{bottle="alpha",kind="egress"}"#,
        r#"supervise_proposals_pending{bottle="alpha",kind="git-push"}"#,
        r#"supervise_proposals_pending{bottle="beta",kind="egress"}"#,
        r#"supervise_refusals_total{cause="unknown-bottle"}"#,
        r#"supervise_refusals_total{cause="pending-cap"}"#,
        "supervise_proposals_oldest_pending_age_seconds",
        "supervise_waiting_calls",
    ] {
        assert_eq!(sample(&text, series), Some(0.0), "{series}:\n{text}");
    }
    let other = http_from(ALPHA)
        .get(format!("http://{addr}/mcp"))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status().as_u16(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_and_its_decision_move_the_figures() {
    let (server, addr) = start_with_metrics(&["--grace", "0", "--on-event", "exit 3"]);
    let writes_before = sample(
        &scrape(&addr).await,
        "supervise_store_write_duration_seconds_count",
    )
    .unwrap();

    let client = mcp(&server).await;
    let r = call(
        &client,
        "propose-egress",
        json!({"host": "api.example.com", "justification": "fetch the API schema"}),
    )
    .await;
    assert_eq!(status(&r), "pending", "{}", text(&r));
    let id = proposal_id(&r);

    let text = scrape(&addr).await;
    let pending = r#"supervise_proposals_pending{bottle="alpha",kind="egress"}"#;
    assert_eq!(sample(&text, pending), Some(1.0), "{text}");
    assert_eq!(
        sample(
            &text,
            r#"supervise_proposals_pending{bottle="beta",kind="egress"}"#
        ),
        Some(0.0)
    );
    assert!(sample(&text, "supervise_proposals_oldest_pending_age_seconds").unwrap() >= 0.0);
    assert!(
        sample(&text, "supervise_store_write_duration_seconds_count").unwrap() > writes_before,
        "{text}"
    );

    // Decided by the CLI, in another process's store: counted from the change feed.
    server
        .store()
        .await
        .decide(&id, Verdict::Approve, &Actor::cli("olivia"), None, None)
        .await
        .unwrap();
    let text = scrape_until(
        &addr,
        r#"supervise_decisions_total{outcome="approved",via="cli"}"#,
        1.0,
    )
    .await;
    assert_eq!(sample(&text, pending), Some(0.0), "{text}");
    assert_eq!(
        sample(&text, "supervise_time_to_decide_seconds_count"),
        Some(1.0),
        "{text}"
    );

    // Every event (proposed, approved) ran the hook, and each run failed (`exit 3`).
    let start = Instant::now();
    loop {
        let text = scrape(&addr).await;
        let runs = sample(&text, "supervise_hook_runs_total").unwrap();
        let failures = sample(&text, "supervise_hook_failures_total").unwrap();
        if runs >= 2.0 && failures == runs {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "hook runs {runs}, failures {failures}:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // An unregistered address is refused, and counted by cause.
    let (code, _, _) = post(
        &server,
        STRANGER,
        &[],
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    )
    .await;
    assert_eq!(code, 403);
    scrape_until(
        &addr,
        r#"supervise_refusals_total{cause="unknown-bottle"}"#,
        1.0,
    )
    .await;
}

#[test]
fn a_metrics_address_in_use_stops_the_server_at_start() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let at = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .arg("--db")
        .arg(dir.path().join("supervise.db"))
        .args(["--listen", "127.0.0.1:0", "--metrics-listen", &at])
        .env_remove("SUPERVISE_DB")
        .env_remove("SUPERVISE_LISTEN")
        .env_remove("SUPERVISE_METRICS_LISTEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start supervise-server");
    let start = Instant::now();
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("the server is still running after 10 s with {at} taken");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!exit.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot listen on {at} for --metrics-listen")),
        "{stderr}"
    );
}
