//! What being able to reach the port does not give: roles and scopes hold, every form post
//! needs the console's Origin and the session's CSRF token, links work once and briefly,
//! removed operators stop at once, pages carry the security headers, and sign-in attempts
//! are rate-limited.

use reqwest::Method;
use supervise_store::{Role, Status, Store, StoreOptions};

use crate::harness::{Console, api, client};

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
    manifest-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

async fn status_of(console: &Console, id: &str) -> Status {
    console.store.show(id).await.unwrap().0.status
}

#[tokio::test]
async fn a_viewer_cannot_approve_and_the_proposal_stays_pending() {
    let c = Console::start().await;
    c.bottle("demo", "127.0.0.2").await;
    let p = c.propose("demo", "example.com", 443, "docs").await;
    let viewer = c
        .sign_in(&c.operator("vera", Role::Viewer, &[]).await)
        .await;

    let (status, page) = viewer.get(&format!("/proposals/{}", p.id)).await;
    assert_eq!(status, 200);
    assert!(page.contains("example.com:443"));
    assert!(
        !page.contains("id=\"approve\""),
        "a viewer is offered no decision"
    );

    let (status, body) = viewer
        .post(&format!("/proposals/{}/approve", p.id), &[])
        .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(status_of(&c, &p.id).await, Status::Pending);

    let token = c.token("vera").await;
    let (status, body) = api(
        &c,
        Method::POST,
        &format!("/proposals/{}/approve", p.id),
        Some(&token),
        None,
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(body["error"].as_str().unwrap().contains("vera"), "{body}");
    assert_eq!(status_of(&c, &p.id).await, Status::Pending);
}

#[tokio::test]
async fn an_approver_scoped_to_team_a_neither_sees_nor_decides_team_b() {
    let c = Console::start().await;
    c.bottle("team-a-x", "127.0.0.2").await;
    c.bottle("team-b-x", "127.0.0.3").await;
    let a = c.propose("team-a-x", "a.example.com", 443, "for a").await;
    let b = c
        .propose("team-b-x", "secret-b.example.com", 443, "for b")
        .await;
    let amy = c
        .sign_in(&c.operator("amy", Role::Approver, &["team-a-*"]).await)
        .await;

    let (_, queue) = amy.get("/").await;
    assert!(queue.contains("a.example.com"));
    assert!(
        !queue.contains("team-b") && !queue.contains("secret-b"),
        "{queue}"
    );

    let (status, page) = amy.get(&format!("/proposals/{}", b.id)).await;
    assert_eq!(status, 404);
    assert!(
        !page.contains("team-b") && !page.contains("secret-b"),
        "{page}"
    );
    let (status, page) = amy.post(&format!("/proposals/{}/approve", b.id), &[]).await;
    assert_eq!(status, 404);
    assert!(!page.contains("secret-b"), "{page}");
    assert_eq!(status_of(&c, &b.id).await, Status::Pending);

    for path in ["/grants", "/audit", "/audit?format=jsonl"] {
        let (status, page) = amy.get(path).await;
        assert_eq!(status, 200, "{path}");
        assert!(
            !page.contains("team-b") && !page.contains("secret-b"),
            "{path}: {page}"
        );
    }

    let token = c.token("amy").await;
    let (status, list) = api(&c, Method::GET, "/proposals", Some(&token), None).await;
    assert_eq!(status, 200);
    assert_eq!(list["proposals"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list["proposals"][0]["id"], a.id.as_str());
    let (status, body) = api(
        &c,
        Method::GET,
        &format!("/proposals/{}", b.id),
        Some(&token),
        None,
    )
    .await;
    assert_eq!(status, 404);
    assert!(!body.to_string().contains("secret-b"), "{body}");
    // A prefix of team-b's id (shared with team-a's, filed the same moment, or not): no
    // "ambiguous", no team-b data; team-a's proposal when it has the prefix too.
    let prefix = &b.id.as_str()[..8];
    let expected = if a.id.as_str().starts_with(prefix) {
        200
    } else {
        404
    };
    let (status, body) = api(
        &c,
        Method::GET,
        &format!("/proposals/{prefix}"),
        Some(&token),
        None,
    )
    .await;
    assert_eq!(status, expected, "{body}");
    assert!(!body.to_string().contains("secret-b"), "{body}");
    let (status, page) = amy.get(&format!("/proposals/{prefix}")).await;
    assert_eq!(status, expected);
    assert!(!page.contains("secret-b"), "{page}");
    let (status, body) = api(
        &c,
        Method::POST,
        &format!("/proposals/{}/reject", b.id),
        Some(&token),
        None,
    )
    .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(status_of(&c, &b.id).await, Status::Pending);
    let (_, events) = api(&c, Method::GET, "/events?after=0", Some(&token), None).await;
    assert!(!events.to_string().contains("team-b"), "{events}");

    // In scope, the same approver decides.
    let (status, _) = amy.post(&format!("/proposals/{}/approve", a.id), &[]).await;
    assert_eq!(status, 303);
    assert_eq!(status_of(&c, &a.id).await, Status::Approved);
}

#[tokio::test]
async fn a_post_without_the_csrf_token_or_from_another_origin_is_refused() {
    let c = Console::start().await;
    c.bottle("demo", "127.0.0.2").await;
    let p = c.propose("demo", "example.com", 443, "docs").await;
    let ann = c
        .sign_in(&c.operator("ann", Role::Approver, &[]).await)
        .await;
    let path = format!("/proposals/{}/approve", p.id);
    let own = ann.url.clone();

    let (status, _) = ann.post_raw(&path, &[], &[("origin", &own)]).await;
    assert_eq!(status, 403, "no CSRF token");
    let (status, _) = ann
        .post_raw(&path, &[("csrf", "forged")], &[("origin", &own)])
        .await;
    assert_eq!(status, 403, "a wrong CSRF token");
    let csrf = ann.csrf.clone();
    let (status, _) = ann
        .post_raw(
            &path,
            &[("csrf", &csrf)],
            &[("origin", "https://evil.example")],
        )
        .await;
    assert_eq!(status, 403, "a foreign Origin");
    let (status, _) = ann
        .post_raw(&path, &[("csrf", &csrf)], &[("origin", "null")])
        .await;
    assert_eq!(status, 403, "Origin null without Fetch Metadata");
    let (status, _) = ann
        .post_raw(
            &path,
            &[("csrf", &csrf)],
            &[("origin", &own), ("sec-fetch-site", "cross-site")],
        )
        .await;
    assert_eq!(status, 403, "Fetch Metadata says cross-site");
    assert_eq!(status_of(&c, &p.id).await, Status::Pending);

    // What a browser sends on a same-origin form post under no-referrer.
    let (status, _) = ann
        .post_raw(
            &path,
            &[("csrf", &csrf)],
            &[("origin", "null"), ("sec-fetch-site", "same-origin")],
        )
        .await;
    assert_eq!(status, 303);
    assert_eq!(status_of(&c, &p.id).await, Status::Approved);
}

#[tokio::test]
async fn a_link_works_once_and_not_after_it_expires() {
    let c = Console::start().await;
    let secret = c.operator("lee", Role::Viewer, &[]).await;

    // Opening the link changes nothing: the page only offers the button.
    let (status, page) = {
        let r = client()
            .get(format!("{}/sign-in/{secret}", c.url))
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    };
    assert_eq!(status, 200);
    assert!(page.contains("<form method=\"post\""), "{page}");
    c.sign_in(&secret).await;

    let spend = |s: String| {
        let url = c.url.clone();
        async move {
            let r = client()
                .post(format!("{url}/sign-in/{s}"))
                .header("origin", &url)
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let has_cookie = r.headers().contains_key("set-cookie");
            (status, has_cookie, r.text().await.unwrap())
        }
    };
    let (status, cookie, page) = spend(secret.clone()).await;
    assert_eq!((status, cookie), (403, false));
    assert!(page.contains("already used"), "{page}");

    let (status, cookie, _) = spend("no-such-link".into()).await;
    assert_eq!((status, cookie), (403, false));

    // A link past its 15 minutes, as a clock moving on would leave it.
    let link = c
        .store
        .operator_link("lee", &crate::harness::root())
        .await
        .unwrap();
    let pool =
        sqlx::SqlitePool::connect(&format!("sqlite://{}", c.dir.path().join("s.db").display()))
            .await
            .unwrap();
    sqlx::query("UPDATE sign_in_links SET expires_at = '2000-01-01T00:00:00.000000Z' WHERE spent_at IS NULL")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let (status, cookie, page) = spend(link.secret.expose().to_owned()).await;
    assert_eq!((status, cookie), (403, false));
    assert!(page.contains("expired"), "{page}");
}

#[tokio::test]
async fn a_removed_operator_loses_session_and_token_at_once() {
    let c = Console::start().await;
    let rob = c
        .sign_in(&c.operator("rob", Role::Approver, &[]).await)
        .await;
    let token = c.token("rob").await;
    assert_eq!(rob.get("/").await.0, 200);
    assert_eq!(
        api(&c, Method::GET, "/proposals", Some(&token), None)
            .await
            .0,
        200
    );

    // Removed from another process, as `supervise operator rm` would.
    let other = Store::open(
        c.dir.path().join("s.db"),
        StoreOptions {
            create: false,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    other
        .remove_operator("rob", &crate::harness::root())
        .await
        .unwrap();

    let r = client()
        .get(format!("{}/", c.url))
        .header("cookie", &rob.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/sign-in");
    let (status, body) = api(&c, Method::GET, "/proposals", Some(&token), None).await;
    assert_eq!(status, 401);
    assert!(body["error"].is_string());
}

#[tokio::test]
async fn pages_and_api_carry_the_security_headers_and_the_cookie_its_attributes() {
    let c = Console::start().await;
    let secret = c.operator("hal", Role::Admin, &[]).await;
    let r = client()
        .post(format!("{}/sign-in/{secret}", c.url))
        .header("origin", &c.url)
        .send()
        .await
        .unwrap();
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.starts_with("supervise_session="), "{cookie}");
    for attr in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(cookie.contains(attr), "{cookie}");
    }
    assert!(!cookie.contains("Secure"), "plain http: {cookie}");
    let session = cookie.split(';').next().unwrap().to_owned();

    let token = c.token("hal").await;
    for (path, auth) in [
        ("/", Some(("cookie", session.clone()))),
        ("/audit", Some(("cookie", session.clone()))),
        ("/sign-in", None),
        (
            "/api/v1/proposals",
            Some(("authorization", format!("Bearer {token}"))),
        ),
        ("/api/v1/proposals", None),
    ] {
        let mut req = client().get(format!("{}{path}", c.url));
        if let Some((k, v)) = &auth {
            req = req.header(*k, v);
        }
        let r = req.send().await.unwrap();
        let h = r.headers();
        assert_eq!(h["content-security-policy"], CSP, "{path}");
        assert_eq!(h["x-frame-options"], "DENY", "{path}");
        assert_eq!(h["referrer-policy"], "no-referrer", "{path}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["cache-control"], "no-store", "{path}");
    }
    // No session: pages send people to sign in, the API answers 401.
    let r = client()
        .get(format!("{}/grants", c.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/sign-in");
    let (status, body) = api(&c, Method::GET, "/grants", None, None).await;
    assert_eq!(status, 401);
    assert!(body["error"].as_str().unwrap().contains("Bearer"), "{body}");
}

#[tokio::test]
async fn over_https_the_cookie_is_secure_and_host_bound() {
    let c = Console::start_with(|_| supervise_console::Config::new("https://console.example.org"))
        .await;
    let secret = c.operator("sue", Role::Viewer, &[]).await;
    let r = client()
        .post(format!("{}/sign-in/{secret}", c.url))
        .header("origin", "https://console.example.org")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let cookie = r.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.starts_with("__Host-supervise_session="), "{cookie}");
    assert!(cookie.contains("Secure"), "{cookie}");
    assert!(r.headers().contains_key("strict-transport-security"));
}

#[tokio::test]
async fn the_eleventh_sign_in_attempt_in_a_minute_is_429() {
    let c = Console::start().await;
    for i in 0..10 {
        let r = client()
            .post(format!("{}/sign-in/guess-{i}", c.url))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "attempt {i}");
    }
    let r = client()
        .post(format!("{}/sign-in/guess-10", c.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "60");
    // Even a good link waits out the minute from this address.
    let secret = c.operator("max", Role::Viewer, &[]).await;
    let r = client()
        .post(format!("{}/sign-in/{secret}", c.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
}

#[tokio::test]
async fn a_decision_made_first_elsewhere_is_shown_with_who_and_when() {
    let c = Console::start().await;
    c.bottle("demo", "127.0.0.2").await;
    let p = c.propose("demo", "example.com", 443, "docs").await;
    let bea = c
        .sign_in(&c.operator("bea", Role::Approver, &[]).await)
        .await;
    let (status, page) = bea.get(&format!("/proposals/{}", p.id)).await;
    assert_eq!(status, 200);
    assert!(page.contains("id=\"reject\""));

    // Meanwhile, on the host's CLI.
    let decided = c
        .store
        .decide(
            &p.id,
            supervise_store::Verdict::Approve,
            &supervise_store::Actor::cli("carl"),
            None,
            None,
        )
        .await
        .unwrap();
    let at = decided.decision.unwrap().decided_at.to_string();

    let (status, page) = bea
        .post(&format!("/proposals/{}/reject", p.id), &[("note", "no")])
        .await;
    assert_eq!(status, 409);
    assert!(
        page.contains(&format!("already approved by carl at {at}")),
        "{page}"
    );
    assert_eq!(status_of(&c, &p.id).await, Status::Approved);
}

#[tokio::test]
async fn with_tls_files_the_console_serves_https_only() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output();
    if !made.as_ref().is_ok_and(|o| o.status.success()) {
        let msg = "SKIPPED: with_tls_files_the_console_serves_https_only: openssl could not make a test certificate (apt-get install openssl)";
        assert!(!crate::harness::ci(), "{msg}");
        eprintln!("{msg}");
        return;
    }
    let files = supervise_console::TlsFiles {
        cert: cert.clone(),
        key,
    };
    let c = Console::start_with(move |addr| supervise_console::Config {
        tls: Some(files),
        ..supervise_console::Config::new(format!("https://127.0.0.1:{}", addr.port()))
    })
    .await;
    let https = format!("https://127.0.0.1:{}", c.url.rsplit(':').next().unwrap());
    let pem = std::fs::read(&cert).unwrap();
    let tls_client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap();
    let r = tls_client
        .get(format!("{https}/sign-in"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers().contains_key("strict-transport-security"));
    // Plain HTTP on the TLS port gets no page.
    assert!(
        client()
            .get(format!("{}/sign-in", c.url))
            .send()
            .await
            .is_err()
    );

    // A broken key refuses to start, naming the file.
    let bad = dir.path().join("bad.pem");
    std::fs::write(&bad, "not a key").unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let store = c.store.clone();
    let err = supervise_console::serve(
        listener,
        store,
        supervise_console::Config {
            tls: Some(supervise_console::TlsFiles { cert, key: bad }),
            ..supervise_console::Config::new("https://127.0.0.1")
        },
        async {},
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("bad.pem"), "{err}");
}

#[tokio::test]
async fn admins_manage_bottles_and_operators_and_nobody_else_does() {
    let c = Console::start().await;
    let ada = c.sign_in(&c.operator("ada", Role::Admin, &[]).await).await;
    let (status, _) = ada
        .post("/bottles", &[("slug", "web"), ("ip", "127.0.0.7")])
        .await;
    assert_eq!(status, 303);
    assert!(c.store.bottle("web").await.unwrap().is_some());
    let (status, page) = ada.get("/bottles").await;
    assert_eq!(status, 200);
    assert!(page.contains("127.0.0.7"));

    let (status, page) = ada
        .post(
            "/operators",
            &[("name", "new"), ("role", "viewer"), ("bottles", "web")],
        )
        .await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains(&format!("{}/sign-in/", c.url)), "{page}");
    let op = c.store.operator("new").await.unwrap().expect("added");
    assert_eq!(
        (op.role, op.bottles),
        (Role::Viewer, vec!["web".to_string()])
    );
    let (status, page) = ada.post("/operators/new/token", &[]).await;
    assert_eq!(status, 200);
    assert!(page.contains("sv_"), "{page}");

    // An approver sees neither page and changes nothing through them.
    let apu = c
        .sign_in(&c.operator("apu", Role::Approver, &[]).await)
        .await;
    assert_eq!(apu.get("/bottles").await.0, 403);
    assert_eq!(apu.get("/operators").await.0, 403);
    let (status, _) = apu.post("/operators/new/remove", &[]).await;
    assert_eq!(status, 403);
    let (status, _) = apu.post("/bottles/web/remove", &[("confirm", "yes")]).await;
    assert_eq!(status, 403);
    assert!(c.store.operator("new").await.unwrap().is_some());
    assert!(c.store.bottle("web").await.unwrap().is_some());

    let (status, _) = ada.post("/operators/new/remove", &[]).await;
    assert_eq!(status, 303);
    assert!(c.store.operator("new").await.unwrap().is_none());
    let (status, _) = ada.post("/bottles/web/remove", &[]).await;
    assert_eq!(
        status, 400,
        "removing a bottle asks for the confirmation box"
    );
    let (status, _) = ada.post("/bottles/web/remove", &[("confirm", "yes")]).await;
    assert_eq!(status, 303);
    assert!(c.store.bottle("web").await.unwrap().is_none());
}
