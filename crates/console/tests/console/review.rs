//! Deciding with what the operator saw: a flagged change needs the page's box or the API's
//! `"confirm": true` (400 naming `confirm` otherwise, deciding nothing), `observed` alone
//! needs neither, and a gate push is approved once, with no duration on offer.

use reqwest::Method;
use serde_json::json;
use supervise_store::{Kind, NewProposal, Role};

use crate::harness::{Console, api};

#[tokio::test]
async fn the_api_refuses_a_flagged_approval_without_confirm_and_decides_nothing() {
    let c = Console::start().await;
    c.bottle("demo", "127.0.0.2").await;
    let risky = c.propose("demo", "10.1.2.3", 443, "internal").await;
    let plain = c.propose("demo", "pypi.org", 443, "packages").await;
    c.operator("ops", Role::Approver, &[]).await;
    let token = c.token("ops").await;
    let t = Some(token.as_str());

    for (verb, body) in [
        ("approve", json!({})),
        ("approve", json!({"confirm": false})),
        ("modify", json!({"change": {"port": 8443}})),
    ] {
        let (s, doc) = api(
            &c,
            Method::POST,
            &format!("/proposals/{}/{verb}", risky.id),
            t,
            Some(body),
        )
        .await;
        assert_eq!((s, doc["field"].as_str()), (400, Some("confirm")), "{doc}");
    }
    // A plain change modified into a flagged one asks too.
    let (s, doc) = api(
        &c,
        Method::POST,
        &format!("/proposals/{}/modify", plain.id),
        t,
        Some(json!({"change": {"port": 22}})),
    )
    .await;
    assert_eq!((s, doc["field"].as_str()), (400, Some("confirm")), "{doc}");
    let (_, one) = api(
        &c,
        Method::GET,
        &format!("/proposals/{}", risky.id),
        t,
        None,
    )
    .await;
    assert_eq!(one["proposal"]["status"], "pending");

    let (s, doc) = api(
        &c,
        Method::POST,
        &format!("/proposals/{}/approve", risky.id),
        t,
        Some(json!({"confirm": true})),
    )
    .await;
    assert_eq!(
        (s, doc["status"].as_str()),
        (200, Some("approved")),
        "{doc}"
    );
    let (s, doc) = api(
        &c,
        Method::POST,
        &format!("/proposals/{}/approve", plain.id),
        t,
        None,
    )
    .await;
    assert_eq!(
        (s, doc["status"].as_str()),
        (200, Some("approved")),
        "{doc}"
    );
    let (_, schema) = api(&c, Method::GET, "/openapi.json", None, None).await;
    assert!(
        schema["components"]["schemas"]["DecideBody"]["properties"]["confirm"].is_object(),
        "{schema}"
    );
}

#[tokio::test]
async fn the_page_asks_for_the_box_only_for_a_risk_flag() {
    let c = Console::start().await;
    c.bottle("demo", "127.0.0.2").await;
    let risky = c.propose("demo", "ssh.example.com", 22, "deploy").await;
    let secret = c.operator("ops", Role::Approver, &[]).await;
    let b = c.sign_in(&secret).await;

    let (_, page) = b.get(&format!("/proposals/{}", risky.id)).await;
    assert!(page.contains("id=\"approve-confirm\""), "{page}");
    assert!(page.contains("id=\"decision-bar\""), "{page}");
    let (s, page) = b
        .post(&format!("/proposals/{}/approve", risky.id), &[])
        .await;
    assert_eq!(s, 400, "{page}");
    assert!(page.contains("tick the confirmation box"), "{page}");
    let (s, _) = b
        .post(
            &format!("/proposals/{}/approve", risky.id),
            &[("confirm", "yes")],
        )
        .await;
    assert_eq!(s, 303);

    // Filed by the proxy and otherwise plain: `observed` says who asked, not a risk.
    let bottle = c.store.bottle("demo").await.unwrap().unwrap();
    let observed = c
        .store
        .propose_observed(&bottle, "crates.io", 443)
        .await
        .unwrap()
        .expect("filed");
    let id = observed.proposal().id.clone();
    let (_, page) = b.get(&format!("/proposals/{id}")).await;
    assert!(!page.contains("id=\"approve-confirm\""), "{page}");
    let (s, page) = b.post(&format!("/proposals/{id}/approve"), &[]).await;
    assert_eq!(s, 303, "{page}");
}

#[tokio::test]
async fn a_gate_push_offers_no_duration_and_the_api_refuses_one() {
    let c = Console::start().await;
    c.bottle("demo", "127.0.0.2").await;
    let bottle = c.store.bottle("demo").await.unwrap().unwrap();
    let push = c
        .store
        .propose(NewProposal {
            bottle_id: bottle.id,
            kind: Kind::GitPush,
            change: json!({"remote": "origin", "ref": "refs/heads/feature",
                "old": "1".repeat(40), "new": "2".repeat(40),
                "summary": {"commits": 1, "files_changed": 1, "insertions": 1,
                    "deletions": 0, "subjects": ["x"], "force": false, "delete": false,
                    "create": false}}),
            justification: "push my work".into(),
            quorum: None,
        })
        .await
        .unwrap()
        .into_proposal();
    let secret = c.operator("ops", Role::Approver, &[]).await;
    let b = c.sign_in(&secret).await;
    let (_, page) = b.get(&format!("/proposals/{}", push.id)).await;
    assert!(page.contains("id=\"one-shot\""), "{page}");
    assert!(!page.contains("id=\"approve-for\""), "{page}");

    let token = c.token("ops").await;
    let (s, doc) = api(
        &c,
        Method::POST,
        &format!("/proposals/{}/approve", push.id),
        Some(&token),
        Some(json!({"for": "1h"})),
    )
    .await;
    assert_eq!((s, doc["field"].as_str()), (400, Some("for")), "{doc}");
}

#[tokio::test]
async fn sign_in_returns_to_the_page_that_asked() {
    use crate::harness::client;
    let c = Console::start().await;
    c.bottle("demo", "127.0.0.2").await;
    let p = c.propose("demo", "pypi.org", 443, "packages").await;
    let secret = c.operator("ops", Role::Approver, &[]).await;
    // Opened from a chat: no session yet, so to the sign-in page, remembering the page.
    let resp = client()
        .get(format!("{}/proposals/{}", c.url, p.id))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 303);
    let remembered = resp
        .headers()
        .get("set-cookie")
        .expect("the page to return to")
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let resp = client()
        .post(format!("{}/sign-in/{secret}", c.url))
        .header("origin", &c.url)
        .header("cookie", &remembered)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 303);
    assert_eq!(
        resp.headers()["location"].to_str().unwrap(),
        format!("/proposals/{}", p.id)
    );
    // A remembered path elsewhere is ignored: home instead.
    for (i, evil) in [
        "//evil.example/x",
        "https://evil.example/",
        "/\\evil.example",
    ]
    .into_iter()
    .enumerate()
    {
        let secret = c.operator(&format!("eve{i}"), Role::Viewer, &[]).await;
        let resp = client()
            .post(format!("{}/sign-in/{secret}", c.url))
            .header("origin", &c.url)
            .header("cookie", format!("supervise_return={evil}"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.headers()["location"].to_str().unwrap(), "/", "{evil}");
    }
}

#[tokio::test]
async fn the_console_is_installable_a_manifest_and_its_icons_are_served_and_linked() {
    use crate::harness::client;
    let c = Console::start().await;
    let secret = c.operator("ops", Role::Approver, &[]).await;
    let b = c.sign_in(&secret).await;
    let (_, page) = b.get("/").await;
    assert!(
        page.contains(r#"<link rel="manifest" href="/static/manifest.webmanifest">"#),
        "{page}"
    );
    let resp = client()
        .get(format!("{}/static/manifest.webmanifest", c.url))
        .send()
        .await
        .unwrap();
    let csp = resp.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("manifest-src 'self'"), "{csp}");
    let manifest: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(manifest["display"], "standalone");
    for icon in manifest["icons"].as_array().unwrap() {
        let src = icon["src"].as_str().unwrap();
        let resp = client()
            .get(format!("{}{src}", c.url))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{src}");
        assert_eq!(resp.headers()["content-type"], "image/png");
        let bytes = resp.bytes().await.unwrap();
        assert!(bytes.starts_with(b"\x89PNG"), "{src}");
    }
}
