//! `/api/v1` with a bearer token: every endpoint, the error shapes, a second decision's
//! 409 naming the first decider, and the events stream delivering a decision made by
//! another process.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use supervise_store::{Actor, Role, Store, StoreOptions, Verdict};

use crate::harness::{Console, api, client};

#[tokio::test]
async fn every_endpoint_with_a_bearer_token() {
    let c = Console::start().await;
    c.bottle("demo", "127.0.0.2").await;
    c.bottle("other", "127.0.0.3").await;
    let p1 = c.propose("demo", "pypi.org", 443, "packages").await;
    let p2 = c.propose("demo", "example.com", 443, "docs").await;
    let p3 = c.propose("other", "crates.io", 443, "crates").await;
    c.operator("ops", Role::Approver, &[]).await;
    let token = c.token("ops").await;
    let t = Some(token.as_str());

    let (s, list) = api(&c, Method::GET, "/proposals", t, None).await;
    assert_eq!(s, 200);
    assert_eq!(list["proposals"].as_array().unwrap().len(), 3);
    let (_, list) = api(&c, Method::GET, "/proposals?bottle=other", t, None).await;
    assert_eq!(list["proposals"][0]["id"], p3.id.as_str());
    assert_eq!(list["proposals"].as_array().unwrap().len(), 1);
    let (s, body) = api(&c, Method::GET, "/proposals?status=sideways", t, None).await;
    assert_eq!((s, body["field"].as_str()), (400, Some("status")));

    let (s, one) = api(&c, Method::GET, &format!("/proposals/{}", p1.id), t, None).await;
    assert_eq!(s, 200);
    assert_eq!(
        one["proposal"]["change"],
        json!({"host": "pypi.org", "port": 443})
    );
    assert_eq!(one["history"][0]["event"], "proposed");

    let (s, approved) = api(
        &c,
        Method::POST,
        &format!("/proposals/{}/approve", p1.id),
        t,
        Some(json!({"note": "go", "for": "1h"})),
    )
    .await;
    assert_eq!(s, 200, "{approved}");
    assert_eq!(approved["status"], "approved");
    assert_eq!(approved["decision"]["note"], "go");
    assert_eq!(approved["decision"]["decided_by"], "ops");
    assert_eq!(approved["decision"]["via"], "console");
    assert!(approved["decision"]["grant_expires_at"].is_string());

    let (s, body) = api(
        &c,
        Method::POST,
        &format!("/proposals/{}/modify", p2.id),
        t,
        Some(json!({"note": "x"})),
    )
    .await;
    assert_eq!((s, body["field"].as_str()), (400, Some("change")));
    let (s, body) = api(
        &c,
        Method::POST,
        &format!("/proposals/{}/modify", p2.id),
        t,
        Some(json!({"change": {"port": 0}})),
    )
    .await;
    assert_eq!(s, 400, "{body}");
    assert!(body["field"].is_string(), "{body}");
    let (s, body) = api(
        &c,
        Method::POST,
        &format!("/proposals/{}/approve", p2.id),
        t,
        Some(json!({"for": "a while"})),
    )
    .await;
    assert_eq!((s, body["field"].as_str()), (400, Some("for")));
    let r = client()
        .post(format!("{}/api/v1/proposals/{}/approve", c.url, p2.id))
        .bearer_auth(&token)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.json::<Value>().await.unwrap()["error"].is_string());

    let (s, modified) = api(
        &c,
        Method::POST,
        &format!("/proposals/{}/modify", p2.id),
        t,
        Some(json!({"change": {"port": 8443}, "confirm": true})),
    )
    .await;
    assert_eq!(s, 200, "{modified}");
    assert_eq!(modified["status"], "modified");
    assert_eq!(modified["decision"]["change"]["port"], 8443);

    let (s, rejected) = api(
        &c,
        Method::POST,
        &format!("/proposals/{}/reject", p3.id),
        t,
        Some(json!({"note": "use the mirror"})),
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(rejected["status"], "rejected");

    let (s, grants) = api(&c, Method::GET, "/grants", t, None).await;
    assert_eq!(s, 200);
    let grants = grants["grants"].as_array().unwrap().clone();
    assert_eq!(grants.len(), 2);
    let gid = grants[0]["id"].as_str().unwrap().to_owned();
    let (s, revoked) = api(&c, Method::POST, &format!("/grants/{gid}/revoke"), t, None).await;
    assert_eq!(s, 200, "{revoked}");
    assert!(revoked["ended_at"].is_string());
    let (s, again) = api(&c, Method::POST, &format!("/grants/{gid}/revoke"), t, None).await;
    assert_eq!(s, 409, "{again}");
    let (_, grants) = api(&c, Method::GET, "/grants?bottle=demo", t, None).await;
    assert_eq!(grants["grants"].as_array().unwrap().len(), 1);

    let (s, events) = api(&c, Method::GET, "/events?after=0", t, None).await;
    assert_eq!(s, 200);
    let names: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    for name in [
        "proposed",
        "approved",
        "modified",
        "rejected",
        "grant-revoked",
    ] {
        assert!(names.contains(&name), "{names:?}");
    }
    let last = events.as_array().unwrap().last().unwrap()["seq"]
        .as_i64()
        .unwrap();
    let (_, after) = api(&c, Method::GET, &format!("/events?after={last}"), t, None).await;
    assert_eq!(after, json!([]));
    let (s, body) = api(&c, Method::GET, "/events?after=soon", t, None).await;
    assert_eq!(s, 400, "{body}");

    let (s, doc) = api(&c, Method::GET, "/openapi.json", None, None).await;
    assert_eq!(s, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    for path in [
        "/api/v1/proposals",
        "/api/v1/proposals/{id}",
        "/api/v1/proposals/{id}/approve",
        "/api/v1/proposals/{id}/modify",
        "/api/v1/proposals/{id}/reject",
        "/api/v1/grants",
        "/api/v1/grants/{id}/revoke",
        "/api/v1/events",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} missing");
    }

    let (s, body) = api(&c, Method::GET, "/proposals/nope-nope", t, None).await;
    assert_eq!(s, 404, "{body}");
    let (s, _) = api(&c, Method::GET, "/no-such-thing", t, None).await;
    assert_eq!(s, 404);
    let (s, _) = api(&c, Method::GET, "/proposals", Some("sv_wrong"), None).await;
    assert_eq!(s, 401);
}

#[tokio::test]
async fn a_second_decision_is_409_and_names_the_first_decider() {
    let c = Console::start().await;
    c.bottle("demo", "127.0.0.2").await;
    let p = c.propose("demo", "example.com", 443, "docs").await;
    c.operator("alice", Role::Approver, &[]).await;
    c.operator("bob", Role::Approver, &[]).await;
    let (alice, bob) = (c.token("alice").await, c.token("bob").await);

    let (s, _) = api(
        &c,
        Method::POST,
        &format!("/proposals/{}/approve", p.id),
        Some(&alice),
        None,
    )
    .await;
    assert_eq!(s, 200);
    let (s, body) = api(
        &c,
        Method::POST,
        &format!("/proposals/{}/reject", p.id),
        Some(&bob),
        Some(json!({"note": "no"})),
    )
    .await;
    assert_eq!(s, 409, "{body}");
    assert_eq!(body["decided_by"], "alice");
    assert!(body["decided_at"].is_string());
    assert!(body["error"].as_str().unwrap().contains("alice"), "{body}");
}

/// Reads a streaming response until `want` shows up in it (or the stream ends).
async fn read_until(resp: &mut reqwest::Response, want: &str) -> String {
    let mut seen = String::new();
    while let Some(chunk) = resp.chunk().await.unwrap() {
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if seen.contains(want) {
            break;
        }
    }
    seen
}

#[tokio::test]
async fn the_events_stream_delivers_a_decision_made_by_another_process() {
    let c = Console::start().await;
    c.bottle("demo", "127.0.0.2").await;
    let p = c.propose("demo", "example.com", 443, "docs").await;
    c.operator("bridge", Role::Viewer, &[]).await;
    let token = c.token("bridge").await;

    let mut stream = client()
        .get(format!("{}/api/v1/events", c.url))
        .bearer_auth(&token)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    assert!(
        stream.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );

    // The CLI's decision, through a store handle of its own as another process has.
    let cli = Store::open(
        c.dir.path().join("s.db"),
        StoreOptions {
            create: false,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    cli.decide(
        &p.id,
        Verdict::Approve,
        &Actor::cli("carol"),
        Some("ok"),
        None,
    )
    .await
    .unwrap();

    let seen = tokio::time::timeout(
        Duration::from_secs(30),
        read_until(&mut stream, "event: approved"),
    )
    .await
    .expect("the decision reached the stream");
    assert!(seen.contains("event: approved"), "{seen}");
    let data = seen
        .lines()
        .skip_while(|l| *l != "event: approved")
        .find_map(|l| l.strip_prefix("data: "))
        .expect("a data line");
    let event: Value = serde_json::from_str(data).unwrap();
    assert_eq!(event["proposal_id"], p.id.as_str());
    assert_eq!(event["via"], "cli");
    assert_eq!(event["actor"], "operator:carol");

    // Resuming after the last id replays what came later, from the store.
    let resumed = client()
        .get(format!("{}/api/v1/events?after=0", c.url))
        .bearer_auth(&token)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    let mut resumed = resumed;
    let seen = tokio::time::timeout(
        Duration::from_secs(30),
        read_until(&mut resumed, "event: approved"),
    )
    .await
    .expect("the backlog was replayed");
    assert!(seen.contains("event: proposed"), "{seen}");

    // Shutting down ends the open streams rather than waiting for them.
    tokio::time::timeout(Duration::from_secs(30), c.stop())
        .await
        .expect("the console stopped with two streams open");
    let ended = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(_)) = resumed.chunk().await {}
    })
    .await;
    assert!(ended.is_ok(), "the stream ended with the console");
}

/// The events the API serves are the store's one event document, and the OpenAPI schema
/// of an event lists exactly that document's fields: neither can drift from the other.
#[tokio::test]
async fn events_are_the_store_document_and_the_schema_lists_its_fields() {
    let c = Console::start().await;
    c.bottle("demo", "127.0.0.2").await;
    let p = c.propose("demo", "pypi.org", 443, "packages").await;
    c.operator("ops", Role::Viewer, &[]).await;
    let token = c.token("ops").await;
    let t = Some(token.as_str());
    let mut fields = supervise_store::EventDoc::FIELDS.to_vec();
    fields.sort_unstable();

    let (s, doc) = api(&c, Method::GET, "/openapi.json", None, None).await;
    assert_eq!(s, 200);
    let schema = &doc["components"]["schemas"]["EventDoc"];
    let mut listed: Vec<&str> = schema["properties"]
        .as_object()
        .expect("EventDoc has properties")
        .keys()
        .map(String::as_str)
        .collect();
    listed.sort_unstable();
    assert_eq!(listed, fields, "the schema lists the document's fields");

    let (s, events) = api(&c, Method::GET, "/events?after=0", t, None).await;
    assert_eq!(s, 200);
    let proposed = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "proposed")
        .expect("the proposal's event");
    let mut served: Vec<&str> = proposed
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    served.sort_unstable();
    assert_eq!(served, fields, "{proposed}");
    assert_eq!(
        proposed["url"],
        format!("{}/proposals/{}", c.url, p.id),
        "the proposal's page in this console"
    );
    let (_, trail) = c.store.show(&p.id).await.unwrap();
    let want = trail[0].document().with_console(&c.url);
    assert_eq!(proposed, &serde_json::to_value(want).unwrap());
}
