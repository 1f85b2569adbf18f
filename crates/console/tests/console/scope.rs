//! What an operator limited to some bottles learns about the rest: an id prefix is resolved
//! among their own bottles' proposals on the page and the API alike, and the trail (audit
//! page, its JSON lines export, `/api/v1/events` as JSON and as a stream) carries no event
//! of no bottle (operators added, sign-ins) to anyone but an admin of every bottle.

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;
use supervise_store::Role;

use crate::harness::{Console, api, client};

/// The longest prefix two ids share.
fn shared_prefix(a: &str, b: &str) -> String {
    a.chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect()
}

#[tokio::test]
async fn a_scoped_operators_id_prefix_names_their_proposal_whatever_other_bottles_filed() {
    let c = Console::start().await;
    c.bottle("team-a-x", "127.0.0.2").await;
    c.bottle("team-b-x", "127.0.0.3").await;
    let a = c.propose("team-a-x", "a.example.com", 443, "for a").await;
    // Another bottle files right after: its id shares the leading digits of team-a's.
    let b = c.propose("team-b-x", "b.example.com", 443, "for b").await;
    let shared = shared_prefix(a.id.as_str(), b.id.as_str());
    assert!(
        !shared.is_empty(),
        "UUIDv7 ids filed together share a prefix"
    );
    let amy = c
        .sign_in(&c.operator("amy", Role::Approver, &["team-a-*"]).await)
        .await;
    let token = c.token("amy").await;

    // For amy the prefix names her one proposal, as it would had team-b filed nothing.
    let (status, page) = amy.get(&format!("/proposals/{shared}")).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("a.example.com"), "{page}");
    assert!(!page.contains("b.example.com"), "{page}");
    let (status, body) = api(
        &c,
        Method::GET,
        &format!("/proposals/{shared}"),
        Some(&token),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["proposal"]["id"], a.id.as_str());

    // Deciding by the same prefix decides the same proposal (the store's one rule).
    let (status, body) = api(
        &c,
        Method::POST,
        &format!("/proposals/{shared}/reject"),
        Some(&token),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], a.id.as_str());

    // An admin of every bottle sees both, so the prefix is ambiguous for them.
    let root = c.operator("root-admin", Role::Admin, &[]).await;
    let _ = c.sign_in(&root).await;
    let (status, body) = api(
        &c,
        Method::GET,
        &format!("/proposals/{shared}"),
        Some(&c.token("root-admin").await),
        None,
    )
    .await;
    assert_eq!(status, 400, "{body}");
}

/// Whether a JSON event or export line is about operators rather than a bottle.
fn about_operators(text: &str) -> bool {
    ["operator-added", "signed-in", "operator-removed", "zoe"]
        .iter()
        .any(|w| text.contains(w))
}

/// Reads a stream until `want` occurs `n` times; what was read.
async fn read_until(resp: &mut reqwest::Response, want: &str, n: usize) -> String {
    let mut seen = String::new();
    while let Some(chunk) = resp.chunk().await.unwrap() {
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if seen.matches(want).count() >= n {
            break;
        }
    }
    seen
}

#[tokio::test]
async fn a_scoped_admin_reads_no_operator_records_in_the_trail() {
    let c = Console::start().await;
    c.bottle("team-a-x", "127.0.0.2").await;
    c.propose("team-a-x", "a.example.com", 443, "for a").await;
    // Operators added (name, role, globs) and signing in: events of no bottle.
    let sam_link = c.operator("sam", Role::Admin, &["team-a-*"]).await;
    let zoe = c.operator("zoe", Role::Viewer, &["team-z-*"]).await;
    let _ = c.sign_in(&zoe).await;
    let sam = c.sign_in(&sam_link).await;
    let token = c.token("sam").await;

    let (status, page) = sam.get("/audit").await;
    assert_eq!(status, 200);
    assert!(page.contains("a.example.com"), "{page}");
    assert!(!page.contains("zoe") && !page.contains("team-z"), "{page}");
    let (status, export) = sam.get("/audit?format=jsonl").await;
    assert_eq!(status, 200);
    assert!(export.contains("a.example.com"), "{export}");
    assert!(!about_operators(&export), "{export}");
    let (status, events) = api(&c, Method::GET, "/events?after=0", Some(&token), None).await;
    assert_eq!(status, 200);
    let names: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["event"].as_str())
        .collect();
    assert!(names.contains(&"proposed"), "{events}");
    assert!(!about_operators(&events.to_string()), "{events}");

    // The stream: neither the backlog nor what happens while it is open.
    let mut stream = client()
        .get(format!("{}/api/v1/events?after=0", c.url))
        .bearer_auth(&token)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let _ = c.operator("yan", Role::Viewer, &[]).await;
    c.propose("team-a-x", "second.example.com", 443, "more")
        .await;
    let seen = tokio::time::timeout(
        Duration::from_secs(30),
        read_until(&mut stream, "event: proposed", 2),
    )
    .await
    .expect("both proposals reached the stream");
    assert!(!about_operators(&seen) && !seen.contains("yan"), "{seen}");

    // An admin of every bottle manages operators, and reads their records.
    let root = c
        .sign_in(&c.operator("root-admin", Role::Admin, &[]).await)
        .await;
    let (_, export) = root.get("/audit?format=jsonl").await;
    let kinds: Vec<String> = export
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|e| e["event"].as_str().map(str::to_owned))
        .collect();
    assert!(kinds.iter().any(|k| k == "operator-added"), "{export}");
    assert!(kinds.iter().any(|k| k == "signed-in"), "{export}");
}
