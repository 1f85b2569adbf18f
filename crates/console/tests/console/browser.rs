//! The operator's day in real headless Chromium, driven through WebDriver (Debian's
//! chromedriver and chromium): sign in with the link, watch an agent's proposal arrive in
//! the queue without reloading, approve it for an hour with a note (the agent's
//! `check-proposal` answers approved with the note; the grant is in force), modify one
//! with an edited port, reject one with a note, confirm a flagged one, revoke a grant;
//! the same on a 390×844 phone screen; agent text with markup shown as text.
//!
//! The agent talks to the real MCP server: `supervise-server` is a dev-dependency and runs
//! in-process (`supervise_server::serve` on its own listener and its own store handle on
//! the same file), because a dev-dependency's binary is not built for this crate's tests;
//! the console, a separate `serve`, learns of the proposal only through the change feed, as
//! it would as its own process. "Is the grant in force" is asked of the store
//! (`Store::grants_in_force`, what `supervise policy` prints) for the same reason.
//! Set `SUPERVISE_SCREENSHOTS=DIR` to save the queue's screenshots (docs/console-*.png).

use std::net::{Ipv4Addr, TcpListener as StdListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig, Implementation};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use supervise_store::{Role, Store, StoreOptions};
use tokio::sync::oneshot;

use crate::harness::{Console, ci};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const WAIT: Duration = Duration::from_secs(20);

/// Whether the browser is installed; a loud skip (or, in CI, a failure) when not.
fn browser_available(test: &str) -> bool {
    if Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists() {
        return true;
    }
    let msg = format!(
        "SKIPPED: {test}: {CHROMIUM} or {CHROMEDRIVER} not found (apt-get install chromium chromium-driver)"
    );
    assert!(!ci(), "{msg}");
    eprintln!("{msg}");
    false
}

/// chromedriver on a free loopback port, and a Chromium session through it.
struct Browser {
    driver: Child,
    client: Option<Client>,
    _profile: tempfile::TempDir,
}

impl Browser {
    async fn start(phone: bool) -> Browser {
        let port = {
            let l = StdListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
            l.local_addr().unwrap().port()
        };
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let profile = tempfile::tempdir().unwrap();
        let mut args = vec![
            "--headless".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--no-first-run".into(),
            "--disable-quic".into(),
            "--disable-dev-shm-usage".into(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        if !phone {
            args.push("--window-size=1280,900".into());
        }
        let mut options = json!({ "binary": CHROMIUM, "args": args });
        if phone {
            options["mobileEmulation"] = json!({
                "deviceMetrics": { "width": 390, "height": 844, "pixelRatio": 3.0, "touch": true }
            });
        }
        let mut caps = serde_json::Map::new();
        caps.insert("goog:chromeOptions".into(), options);
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        let client = loop {
            let attempt =
                ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                    .capabilities(caps.clone())
                    .connect(&url)
                    .await;
            match attempt {
                Ok(c) => break c,
                Err(e) if started.elapsed() < WAIT => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("no WebDriver session: {e}"),
            }
        };
        Browser {
            driver,
            client: Some(client),
            _profile: profile,
        }
    }

    fn c(&self) -> &Client {
        self.client.as_ref().unwrap()
    }

    async fn close(mut self) {
        if let Some(c) = self.client.take() {
            let _ = c.close().await;
        }
    }

    /// Waits until `script` (a JS expression) is true.
    async fn until(&self, what: &str, script: &str) {
        let started = Instant::now();
        loop {
            let v = self
                .c()
                .execute(&format!("return !!({script});"), vec![])
                .await
                .unwrap();
            if v == Value::Bool(true) {
                return;
            }
            assert!(started.elapsed() < WAIT, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn js(&self, script: &str) -> Value {
        self.c()
            .execute(&format!("return ({script});"), vec![])
            .await
            .unwrap()
    }

    /// Clicks the element; again if a live refresh replaced it between finding and clicking.
    async fn click(&self, css: &str) {
        let started = Instant::now();
        loop {
            let el = self
                .c()
                .wait()
                .at_most(WAIT)
                .for_element(Locator::Css(css))
                .await
                .unwrap_or_else(|e| panic!("{css}: {e}"));
            match el.click().await {
                Ok(()) => return,
                Err(e) if e.to_string().contains("stale") && started.elapsed() < WAIT => continue,
                Err(e) => panic!("click {css}: {e}"),
            }
        }
    }

    async fn fill(&self, css: &str, text: &str) {
        let el = self.c().find(Locator::Css(css)).await.unwrap();
        el.clear().await.unwrap();
        el.send_keys(text).await.unwrap();
    }

    async fn screenshot(&self, name: &str) {
        if let Ok(dir) = std::env::var("SUPERVISE_SCREENSHOTS") {
            let png = self.c().screenshot().await.unwrap();
            std::fs::write(Path::new(&dir).join(name), png).unwrap();
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

type Agent = RunningService<RoleClient, ClientConfig>;

/// The real MCP server on the console's database, and an agent (bottle `demo`, 127.0.0.1)
/// connected to it with rmcp.
struct Mcp {
    agent: Agent,
    stop: Option<oneshot::Sender<()>>,
}

impl Mcp {
    async fn start(console: &Console) -> Mcp {
        let store = Store::open(
            console.dir.path().join("s.db"),
            StoreOptions {
                create: false,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let config = supervise_server::Config {
            grace: Duration::ZERO,
            ..Default::default()
        };
        tokio::spawn(supervise_server::serve(
            listener,
            store,
            config,
            async move {
                let _ = stopped.await;
            },
        ));
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let transport = StreamableHttpClientTransport::with_client(
            http,
            StreamableHttpClientTransportConfig::with_uri(format!("http://{addr}/mcp")),
        );
        let info = ClientConfig::new(Default::default(), Implementation::new("agent", "1.0"));
        let agent = info.serve(transport).await.expect("MCP initialize");
        Mcp {
            agent,
            stop: Some(stop),
        }
    }

    async fn call(&self, name: &'static str, args: Value) -> Value {
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        let r: CallToolResult = self
            .agent
            .call_tool(CallToolRequestParams::new(name).with_arguments(args))
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        r.structured_content.expect("structuredContent")
    }

    /// Files an egress proposal; its id.
    async fn propose(&self, host: &str, port: u16, why: &str) -> String {
        let r = self
            .call(
                "propose-egress",
                json!({"host": host, "port": port, "justification": why}),
            )
            .await;
        assert_eq!(r["status"], "pending", "{r}");
        r["proposal_id"].as_str().unwrap().to_owned()
    }

    async fn check(&self, id: &str) -> Value {
        self.call("check-proposal", json!({"proposal_id": id}))
            .await
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Signs `b` in with a fresh link for an approver, and waits for the queue's live stream.
async fn sign_in(console: &Console, b: &Browser, name: &str) {
    let secret = console.operator(name, Role::Approver, &[]).await;
    b.c()
        .goto(&format!("{}/sign-in/{secret}", console.url))
        .await
        .unwrap();
    b.click("#sign-in").await;
    b.until("the queue", "document.querySelector('h1') && document.querySelector('h1').textContent.startsWith('Queue')")
        .await;
    b.until(
        "the live stream",
        "document.body.dataset.liveState === 'open'",
    )
    .await;
}

/// Files a proposal while the queue is open, and waits for it to appear without a reload.
async fn arrives_live(b: &Browser, mcp: &Mcp, host: &str, port: u16, why: &str) -> String {
    b.js("window.__notReloaded = true").await;
    let id = mcp.propose(host, port, why).await;
    b.until(
        "the proposal in the queue",
        &format!("document.querySelector('[data-proposal=\"{id}\"]')"),
    )
    .await;
    assert_eq!(b.js("window.__notReloaded === true").await, json!(true));
    id
}

async fn open(b: &Browser, console: &Console, id: &str) {
    b.c()
        .goto(&format!("{}/proposals/{id}", console.url))
        .await
        .unwrap();
    b.until("the proposal page", "document.getElementById('status')")
        .await;
}

async fn status_is(b: &Browser, status: &str) {
    b.until(
        &format!("status {status}"),
        &format!("document.getElementById('status') && document.getElementById('status').textContent === '{status}'"),
    )
    .await;
}

const HOSTILE: &str = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned=2\"><b>bold</b> needs the docs";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_decides_an_agents_proposals_in_the_browser() {
    if !browser_available("browser desktop story") {
        return;
    }
    let console = Console::start().await;
    console.bottle("demo", "127.0.0.1").await;
    let mcp = Mcp::start(&console).await;
    let b = Browser::start(false).await;
    sign_in(&console, &b, "ann").await;

    // Two proposals already waiting when the page opened: a push and a flagged host.
    mcp.call(
        "propose-git-push",
        json!({"remote": "origin", "ref": "refs/heads/main", "justification": "release 1.4"}),
    )
    .await;
    mcp.propose("169.254.169.254", 80, "read the instance role")
        .await;
    b.c().refresh().await.unwrap();
    b.until(
        "the live stream",
        "document.body.dataset.liveState === 'open'",
    )
    .await;

    // Approve for an hour with a note; the agent's text is shown, never run.
    let id = arrives_live(&b, &mcp, "docs.example.com", 443, HOSTILE).await;
    let card = format!("[data-proposal=\"{id}\"]");
    assert_eq!(
        b.js(&format!(
            "document.querySelector('{card} .justification').textContent"
        ))
        .await,
        json!(HOSTILE)
    );
    assert_eq!(
        b.js(&format!(
            "document.querySelectorAll('{card} script, {card} img, {card} b').length"
        ))
        .await,
        json!(0)
    );
    assert_eq!(b.js("window.__pwned === undefined").await, json!(true));
    b.screenshot("console-desktop.png").await;
    b.click(&format!("{card} a.button")).await;
    b.until("the proposal page", "document.getElementById('approve')")
        .await;
    assert_eq!(
        b.js("document.getElementById('justification').textContent")
            .await,
        json!(HOSTILE)
    );
    assert_eq!(
        b.js("document.querySelectorAll('#justification *').length")
            .await,
        json!(0)
    );
    b.c()
        .find(Locator::Css("#approve-for"))
        .await
        .unwrap()
        .select_by_value("1h")
        .await
        .unwrap();
    b.fill("#approve-note", "for the docs build").await;
    b.click("#approve").await;
    status_is(&b, "approved").await;
    assert_eq!(b.js("window.__pwned === undefined").await, json!(true));

    let answer = mcp.check(&id).await;
    assert_eq!(answer["status"], "approved", "{answer}");
    assert_eq!(answer["decision"]["note"], "for the docs build");
    assert_eq!(answer["decision"]["decided_by"], "ann");
    let grants = console.store.grants_in_force("demo").await.unwrap();
    let grant = grants
        .iter()
        .find(|g| g.change["host"] == "docs.example.com")
        .expect("the grant is in force");
    let left = grant.expires_at.as_ref().expect("an hour").seconds_until();
    assert!((3000..=3600).contains(&left), "{left}");

    // Modify: the same host, another port.
    b.c().goto(&console.url).await.unwrap();
    b.until(
        "the live stream",
        "document.body.dataset.liveState === 'open'",
    )
    .await;
    let id = arrives_live(&b, &mcp, "pypi.org", 443, "packages").await;
    open(&b, &console, &id).await;
    b.click("#modify-details summary").await;
    b.fill("#modify-port", "8443").await;
    b.fill("#modify-note", "the mirror port").await;
    // Another port is `unusual-port` and `widened`: the box confirms it.
    b.click("#modify-confirm").await;
    b.click("#modify").await;
    status_is(&b, "modified").await;
    let answer = mcp.check(&id).await;
    assert_eq!(answer["status"], "modified", "{answer}");
    assert_eq!(answer["decision"]["change"]["port"], 8443);

    // Reject with a note.
    b.c().goto(&console.url).await.unwrap();
    b.until(
        "the live stream",
        "document.body.dataset.liveState === 'open'",
    )
    .await;
    let id = arrives_live(&b, &mcp, "paste.example.net", 443, "upload logs").await;
    open(&b, &console, &id).await;
    b.fill("#reject-note", "no uploads").await;
    b.click("#reject").await;
    status_is(&b, "rejected").await;
    let answer = mcp.check(&id).await;
    assert_eq!(answer["status"], "rejected", "{answer}");
    assert_eq!(answer["decision"]["note"], "no uploads");

    // A flagged change asks for the confirmation box first.
    let id = mcp.propose("ssh.example.com", 22, "deploy key").await;
    open(&b, &console, &id).await;
    b.click("#approve").await;
    b.until("the refusal", "document.getElementById('error-message')")
        .await;
    status_is(&b, "pending").await;
    b.click("#approve-confirm").await;
    b.click("#approve").await;
    status_is(&b, "approved").await;

    // Revoke the hour-long grant from the grants page.
    b.c()
        .goto(&format!("{}/grants", console.url))
        .await
        .unwrap();
    b.click(&format!("#revoke-{}", grant.id)).await;
    b.until(
        "the grant gone",
        &format!(
            "document.location.pathname === '/grants' && !document.getElementById('revoke-{}')",
            grant.id
        ),
    )
    .await;
    let grants = console.store.grants_in_force("demo").await.unwrap();
    assert!(grants.iter().all(|g| g.id != grant.id));

    b.close().await;
    console.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_phone_the_queue_fits_and_the_decision_buttons_work() {
    if !browser_available("browser phone story") {
        return;
    }
    let console = Console::start().await;
    console.bottle("demo", "127.0.0.1").await;
    let mcp = Mcp::start(&console).await;
    let b = Browser::start(true).await;
    sign_in(&console, &b, "pat").await;
    assert_eq!(b.js("window.innerWidth").await, json!(390));

    let long =
        "a-very-long-label-without-any-break-to-test-wrapping-0123456789.build-cache.example.com";
    let id = arrives_live(&b, &mcp, long, 443, HOSTILE).await;
    mcp.propose("registry.npmjs.org", 8443, "npm on the mirror port")
        .await;
    b.until(
        "both cards",
        "document.querySelectorAll('[data-proposal]').length === 2",
    )
    .await;
    b.screenshot("console-phone.png").await;
    let fits = "document.documentElement.scrollWidth <= window.innerWidth";
    assert_eq!(b.js(fits).await, json!(true), "the queue scrolls sideways");

    open(&b, &console, &id).await;
    assert_eq!(
        b.js(fits).await,
        json!(true),
        "the proposal page scrolls sideways"
    );
    // Approve and Reject: side by side, equally sized, in view without scrolling.
    let mut boxes = Vec::new();
    for button in ["#approve", "#reject"] {
        let el = b.c().find(Locator::Css(button)).await.unwrap();
        let (_, _, w, h) = el.rectangle().await.unwrap();
        assert!(h >= 44.0 && w >= 44.0, "{button} is {w}x{h}");
        let rect = b
            .js(&format!(
                "(() => {{ const r = document.querySelector('{button}').getBoundingClientRect(); \
                 return [r.top, r.bottom, r.left, r.width, window.innerHeight, window.scrollY]; }})()"
            ))
            .await;
        let n = |i: usize| rect[i].as_f64().unwrap();
        assert_eq!(n(5), 0.0, "the page is at its top");
        assert!(
            n(0) >= 0.0 && n(1) <= n(4),
            "{button} is out of view: {rect}"
        );
        boxes.push((n(0), n(2), n(3)));
    }
    assert_eq!(boxes[0].0, boxes[1].0, "side by side: {boxes:?}");
    assert_eq!(boxes[0].2, boxes[1].2, "equally sized: {boxes:?}");
    assert!(boxes[0].1 < boxes[1].1, "Approve first: {boxes:?}");
    assert!(
        b.c()
            .find(Locator::Css("#approve"))
            .await
            .unwrap()
            .is_displayed()
            .await
            .unwrap()
    );
    b.click("#approve").await;
    status_is(&b, "approved").await;
    assert_eq!(b.js(fits).await, json!(true));
    assert_eq!(mcp.check(&id).await["status"], "approved");

    b.close().await;
    console.stop().await;
}
