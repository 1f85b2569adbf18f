//! A real Prometheus (Debian's `/usr/bin/prometheus`) scrapes a real MCP server's metrics
//! listener and the console's `/metrics` with an API token (its `authorization` setting):
//! both targets come up, and the pending gauge and the decisions counter move as an agent
//! files a proposal over MCP and an operator approves it through the console's API.
//! Skipped loudly when Prometheus is not installed; under CI=true that fails instead.

use std::net::{Ipv4Addr, TcpListener as StdListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::Method;
use rmcp::model::{CallToolRequestParams, ClientConfig, Implementation};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ServiceExt, model::CallToolResult};
use serde_json::{Value, json};
use supervise_store::{Role, Store, StoreOptions};
use tokio::sync::oneshot;

use crate::harness::{Console, api, ci, client};

const PROMETHEUS: &str = "/usr/bin/prometheus";
const WAIT: Duration = Duration::from_secs(60);

/// Whether Prometheus is installed; a loud skip (or, in CI, a failure) when not.
fn prometheus_available(test: &str) -> bool {
    if Path::new(PROMETHEUS).exists() {
        return true;
    }
    let msg = format!("SKIPPED: {test}: {PROMETHEUS} not found (apt-get install prometheus)");
    assert!(!ci(), "{msg}");
    eprintln!("{msg}");
    false
}

fn free_port() -> u16 {
    StdListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Prometheus on a free loopback port with a configuration and storage of its own; killed
/// when dropped.
struct Prometheus {
    child: Child,
    url: String,
    dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(server_metrics: &str, console: &str, token: &str) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let token_file = dir.path().join("console.token");
        std::fs::write(&token_file, token).unwrap();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n\
             \x20 - job_name: supervise-server\n\
             \x20   static_configs:\n\
             \x20     - targets: ['{server_metrics}']\n\
             \x20 - job_name: supervise-console\n\
             \x20   authorization:\n\
             \x20     credentials_file: {}\n\
             \x20   static_configs:\n\
             \x20     - targets: ['{console}']\n",
            token_file.display()
        );
        let config_file = dir.path().join("prometheus.yml");
        std::fs::write(&config_file, config).unwrap();
        let port = free_port();
        let child = Command::new(PROMETHEUS)
            .arg(format!("--config.file={}", config_file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(dir.path().join("prometheus.log")).unwrap(),
            ))
            .spawn()
            .expect("start prometheus");
        Prometheus {
            child,
            url: format!("http://127.0.0.1:{port}"),
            dir,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    async fn get(&self, path: &str, query: &[(&str, &str)]) -> Option<Value> {
        let query = serde_urlencoded::to_string(query).unwrap();
        let resp = client()
            .get(format!("{}{path}?{query}", self.url))
            .send()
            .await
            .ok()?;
        resp.json().await.ok()
    }

    /// Waits until every target's last scrape succeeded; returns the targets.
    async fn wait_targets_up(&self, n: usize) -> Vec<Value> {
        let start = Instant::now();
        let mut last = Value::Null;
        loop {
            if let Some(body) = self.get("/api/v1/targets", &[]).await {
                let active = body["data"]["activeTargets"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                if active.len() == n && active.iter().all(|t| t["health"] == "up") {
                    return active;
                }
                last = body;
            }
            assert!(
                start.elapsed() < WAIT,
                "targets not up after {WAIT:?}: {last}\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until the instant query `q` has one sample whose value is `want`.
    async fn wait_value(&self, q: &str, want: &str) {
        let start = Instant::now();
        let mut last = Value::Null;
        loop {
            if let Some(body) = self.get("/api/v1/query", &[("query", q)]).await {
                let result = &body["data"]["result"];
                if result.as_array().is_some_and(|r| r.len() == 1) && result[0]["value"][1] == want
                {
                    return;
                }
                last = body;
            }
            assert!(
                start.elapsed() < WAIT,
                "{q} is not {want} after {WAIT:?}: {last}\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_prometheus_scrapes_the_server_and_the_console_and_sees_the_queue_move() {
    if !prometheus_available("a_real_prometheus_scrapes_the_server_and_the_console") {
        return;
    }
    let console = Console::start().await;
    console.bottle("demo", "127.0.0.1").await;
    console.operator("vera", Role::Viewer, &[]).await;
    let scrape_token = console.token("vera").await;
    console.operator("ada", Role::Approver, &[]).await;
    let approver = console.token("ada").await;

    // The MCP server on the console's database, with its metrics listener.
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
    let mcp_addr = listener.local_addr().unwrap();
    let metrics = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let metrics_addr = metrics.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(supervise_server::serve_with_metrics(
        listener,
        Some(metrics),
        store,
        supervise_server::Config {
            grace: Duration::ZERO,
            ..Default::default()
        },
        async move {
            let _ = stopped.await;
        },
    ));

    let console_addr = console.url.trim_start_matches("http://").to_owned();
    let prometheus = Prometheus::start(&metrics_addr.to_string(), &console_addr, &scrape_token);
    let targets = prometheus.wait_targets_up(2).await;
    let jobs: Vec<&str> = targets
        .iter()
        .filter_map(|t| t["labels"]["job"].as_str())
        .collect();
    assert!(jobs.contains(&"supervise-server"), "{targets:?}");
    assert!(jobs.contains(&"supervise-console"), "{targets:?}");
    let pending = r#"supervise_proposals_pending{bottle="demo",kind="egress"}"#;
    prometheus.wait_value(pending, "0").await;
    // The console's own figures arrive with the token: its /metrics answered 200.
    prometheus
        .wait_value(
            r#"sum(supervise_console_requests_total{route="/metrics",status="200"}) > bool 0"#,
            "1",
        )
        .await;

    // An agent in bottle `demo` files a proposal over MCP.
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let transport = StreamableHttpClientTransport::with_client(
        http,
        StreamableHttpClientTransportConfig::with_uri(format!("http://{mcp_addr}/mcp")),
    );
    let agent = ClientConfig::new(Default::default(), Implementation::new("agent", "1.0"))
        .serve(transport)
        .await
        .expect("MCP initialize");
    let Value::Object(args) =
        json!({"host": "pypi.org", "port": 443, "justification": "install deps"})
    else {
        unreachable!()
    };
    let r: CallToolResult = agent
        .call_tool(CallToolRequestParams::new("propose-egress").with_arguments(args))
        .await
        .unwrap();
    let r = r.structured_content.expect("structuredContent");
    assert_eq!(r["status"], "pending", "{r}");
    let id = r["proposal_id"].as_str().unwrap().to_owned();
    prometheus.wait_value(pending, "1").await;
    prometheus
        .wait_value(
            "supervise_proposals_oldest_pending_age_seconds >= bool 0",
            "1",
        )
        .await;

    // An operator approves it through the console's API: the queue empties and the
    // decision is counted with its outcome and `via`.
    let (status, body) = api(
        &console,
        Method::POST,
        &format!("/proposals/{id}/approve"),
        Some(&approver),
        Some(json!({"note": "ok"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    prometheus.wait_value(pending, "0").await;
    prometheus
        .wait_value(
            r#"supervise_decisions_total{outcome="approved",via="console"}"#,
            "1",
        )
        .await;
    prometheus
        .wait_value("supervise_time_to_decide_seconds_count", "1")
        .await;

    let _ = agent.cancel().await;
    let _ = stop.send(());
    server.await.unwrap().unwrap();
    console.stop().await;
}
