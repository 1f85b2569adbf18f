//! Two hosts on one database (SQLite here; PostgreSQL's fleet is the store's test): the
//! queue, proposal, grants and audit pages name each bottle `HOST/SLUG` when the rows span
//! both hosts and filter by `?host=`; the API carries `host` on every proposal, grant and
//! event and filters by it.

use reqwest::Method;
use serde_json::{Value, json};
use supervise_store::{Kind, NewProposal, Role, Store, StoreOptions};

use crate::harness::{Console, api};

const OTHER: &str = "host-b";

/// A store of the second host on the console's database, as `supervise --host-id host-b`
/// opens it.
async fn other_host(c: &Console) -> Store {
    Store::open(
        c.dir.path().join("s.db"),
        StoreOptions {
            host: Some(OTHER.into()),
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap()
}

fn hosts_of(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|d| d["host"].as_str().unwrap_or("-"))
        .collect()
}

#[tokio::test]
async fn two_hosts_in_one_console() {
    let c = Console::start().await;
    let here = c.store.host().to_owned();
    assert_ne!(here, OTHER);
    c.bottle("demo", "127.0.0.2").await;
    let pa = c.propose("demo", "pypi.org", 443, "packages").await;
    // The same slug and address on the second host: two bottles, two proposals.
    let b = other_host(&c).await;
    let bb = b
        .add_bottle(
            "demo",
            "127.0.0.2".parse().unwrap(),
            &crate::harness::root(),
        )
        .await
        .unwrap();
    let pb = b
        .propose(NewProposal {
            bottle_id: bb.id,
            kind: Kind::Egress,
            change: json!({"host": "crates.io", "port": 443}),
            justification: "crates".into(),
            quorum: None,
        })
        .await
        .unwrap()
        .into_proposal();
    let link = c.operator("ops", Role::Approver, &["demo"]).await;
    let browser = c.sign_in(&link).await;
    let a_name = format!("{here}/demo");
    let b_name = format!("{OTHER}/demo");

    // The queue spans both hosts: HOST/SLUG, and a host select offering both.
    let (s, page) = browser.get("/").await;
    assert_eq!(s, 200);
    assert!(page.contains(&a_name) && page.contains(&b_name), "{page}");
    assert!(
        page.contains(&format!("<option value=\"{OTHER}\">")),
        "{page}"
    );
    // Filtered to one host: only its proposal, named by its slug alone.
    let (s, page) = browser.get(&format!("/?host={OTHER}")).await;
    assert_eq!(s, 200);
    assert!(page.contains(pb.id.as_str()), "{page}");
    assert!(!page.contains(pa.id.as_str()), "{page}");
    assert!(!page.contains(&b_name), "{page}");
    assert!(
        page.contains(&format!("<option value=\"{OTHER}\" selected>")),
        "{page}"
    );
    let (_, page) = browser.get("/?host=nowhere").await;
    assert!(!page.contains(pa.id.as_str()) && !page.contains(pb.id.as_str()));

    // The proposal page names the host.
    let (s, page) = browser.get(&format!("/proposals/{}", pb.id)).await;
    assert_eq!(s, 200);
    assert!(
        page.contains(&format!("<dd id=\"host\">{OTHER}</dd>")),
        "{page}"
    );

    // The API: a host on each proposal, and the filter.
    c.operator("bot", Role::Approver, &["demo"]).await;
    let token = c.token("bot").await;
    let t = Some(token.as_str());
    let (s, list) = api(&c, Method::GET, "/proposals", t, None).await;
    assert_eq!(s, 200);
    assert_eq!(hosts_of(&list["proposals"]), [here.as_str(), OTHER]);
    let (_, list) = api(
        &c,
        Method::GET,
        &format!("/proposals?host={OTHER}"),
        t,
        None,
    )
    .await;
    assert_eq!(hosts_of(&list["proposals"]), [OTHER]);
    assert_eq!(list["proposals"][0]["id"], pb.id.as_str());
    let (s, one) = api(&c, Method::GET, &format!("/proposals/{}", pb.id), t, None).await;
    assert_eq!((s, one["proposal"]["host"].as_str()), (200, Some(OTHER)));

    // A grant on each host: the grants page and API name and filter them by host.
    for p in [&pa, &pb] {
        let (s, body) = api(
            &c,
            Method::POST,
            &format!("/proposals/{}/approve", p.id),
            t,
            None,
        )
        .await;
        assert_eq!(s, 200, "{body}");
    }
    let (s, list) = api(&c, Method::GET, "/grants", t, None).await;
    assert_eq!(s, 200);
    let mut hosts = hosts_of(&list["grants"]);
    hosts.sort();
    let mut want = [here.as_str(), OTHER];
    want.sort();
    assert_eq!(hosts, want);
    let (_, list) = api(&c, Method::GET, &format!("/grants?host={OTHER}"), t, None).await;
    assert_eq!(hosts_of(&list["grants"]), [OTHER]);
    assert_eq!(list["grants"][0]["proposal_id"], pb.id.as_str());
    let (_, page) = browser.get("/grants").await;
    assert!(page.contains(&a_name) && page.contains(&b_name), "{page}");
    let (_, page) = browser.get(&format!("/grants?host={OTHER}")).await;
    assert!(
        page.contains(pb.id.as_str()) && !page.contains(pa.id.as_str()),
        "{page}"
    );

    // The audit page and the feed: events carry their host and filter by it.
    let (_, page) = browser.get("/audit").await;
    assert!(page.contains(&a_name) && page.contains(&b_name), "{page}");
    let (_, page) = browser.get(&format!("/audit?host={OTHER}")).await;
    assert!(
        page.contains(pb.id.as_str()) && !page.contains(pa.id.as_str()),
        "{page}"
    );
    assert!(
        page.contains(&format!("host={OTHER}")),
        "the export keeps the filter"
    );
    let (_, page) = browser.get(&format!("/audit?bottle={b_name}")).await;
    assert!(
        page.contains(pb.id.as_str()) && !page.contains(pa.id.as_str()),
        "{page}"
    );
    let (s, events) = api(&c, Method::GET, &format!("/events?host={OTHER}"), t, None).await;
    assert_eq!(s, 200);
    let events = events.as_array().unwrap();
    assert!(events.iter().all(|e| e["host"] == OTHER), "{events:?}");
    assert!(events.iter().any(|e| e["proposal_id"] == pb.id.as_str()));
    let (_, events) = api(&c, Method::GET, "/events", t, None).await;
    assert!(
        events
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["host"] == here.as_str())
    );
    c.stop().await;
}
