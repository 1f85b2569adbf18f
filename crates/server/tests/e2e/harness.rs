//! Starts the real `supervise-server` binary on an ephemeral port with a temporary database
//! (it logs the bound address; no sleeping for ports), and builds clients bound to a chosen
//! loopback source address, since attribution is by source address.

use std::io::{BufRead, BufReader};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt};
use serde_json::Value;
use supervise_store::{Store, StoreOptions};

pub const BIN: &str = env!("CARGO_BIN_EXE_supervise-server");
/// Bottle `alpha` is 127.0.0.1, `beta` is 127.0.0.2; 127.0.0.9 is unregistered.
pub const ALPHA: &str = "127.0.0.1";
pub const BETA: &str = "127.0.0.2";
pub const STRANGER: &str = "127.0.0.9";

pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    pub db: PathBuf,
    log: Arc<Mutex<String>>,
    dir: Option<tempfile::TempDir>,
}

impl Server {
    /// Starts a server with bottles alpha and beta and the given extra flags.
    pub fn start(extra: &[&str]) -> Server {
        Server::start_in(tempfile::tempdir().expect("temp dir"), extra)
    }

    /// [`Server::start`] on the database in `dir` (kept, e.g. from [`Server::stop`]), as a
    /// restart does.
    pub fn start_in(dir: tempfile::TempDir, extra: &[&str]) -> Server {
        let db = dir.path().join("supervise.db");
        Server::start_on(dir, db, extra)
    }

    /// [`Server::start`] on the database `db` (a file, or a `postgres://` URL).
    pub fn start_on(dir: tempfile::TempDir, db: PathBuf, extra: &[&str]) -> Server {
        Server::launch(dir, db, extra, Command::new(BIN))
    }

    /// [`Server::start`] with the open-file limit at `soft` (and the hard one at `hard`), as
    /// a service manager sets it.
    pub fn start_with_open_files(soft: u64, hard: u64, extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("supervise.db");
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(format!(
                "ulimit -Sn {soft} && ulimit -Hn {hard} && exec \"$0\" \"$@\""
            ))
            .arg(BIN);
        Server::launch(dir, db, extra, sh)
    }

    fn launch(dir: tempfile::TempDir, db: PathBuf, extra: &[&str], mut command: Command) -> Server {
        let mut child = command
            .arg("--db")
            .arg(&db)
            .args(["--listen", "127.0.0.1:0"])
            .args(["--bottle", &format!("alpha={ALPHA}")])
            .args(["--bottle", &format!("beta={BETA}")])
            .args(extra)
            .env("SUPERVISE_LOG", "info,supervise_server=debug")
            .env_remove("SUPERVISE_DB")
            .env_remove("SUPERVISE_HOST_ID")
            .env_remove("SUPERVISE_LISTEN")
            .env_remove("SUPERVISE_RESPONSE_TIMEOUT_SECONDS")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start supervise-server");
        let stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let sink = log.clone();
        // Drain stderr for the server's whole life (a full pipe would block it).
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.split("listening on http://").nth(1)
                    && let Some(addr) = rest.split("/mcp").next()
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(addr.to_owned());
                }
                let mut l = sink.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(a) => a.parse().expect("logged address"),
            Err(_) => {
                let _ = child.kill();
                panic!("server did not start:\n{}", log.lock().unwrap());
            }
        };
        Server {
            child,
            addr,
            db,
            log,
            dir: Some(dir),
        }
    }

    /// SIGTERM, wait for the exit (it must succeed), and keep the database for a restart.
    pub fn stop(mut self) -> tempfile::TempDir {
        self.terminate();
        let status = self.wait_exit(Duration::from_secs(15));
        assert!(status.success(), "{status:?}\n{}", self.log());
        self.dir
            .take()
            .expect("the directory is kept until dropped")
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// A second store on the same file, as the CLI opens it.
    pub async fn store(&self) -> Store {
        Store::open(
            &self.db,
            StoreOptions {
                create: false,
                ..StoreOptions::default()
            },
        )
        .await
        .expect("open the server's database")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let ok = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(ok.success());
    }

    /// Waits for the process to exit, at most `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(
                start.elapsed() < limit,
                "server still running after {limit:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A reqwest client whose connections come from `source`.
pub fn http_from(source: &str) -> reqwest::Client {
    install_crypto();
    reqwest::Client::builder()
        .local_address(source.parse::<IpAddr>().unwrap())
        .no_proxy()
        .build()
        .expect("reqwest client")
}

pub type Client = RunningService<RoleClient, ClientConfig>;

/// An rmcp streamable-HTTP client from `source` that initializes with `version`.
pub async fn mcp_from(server: &Server, source: &str, version: ProtocolVersion) -> Client {
    let transport = StreamableHttpClientTransport::with_client(
        http_from(source),
        StreamableHttpClientTransportConfig::with_uri(server.url()),
    );
    let info = ClientConfig::new(Default::default(), Implementation::new("e2e", "1.0"))
        .with_protocol_version(version);
    info.serve(transport).await.expect("initialize")
}

/// An rmcp client that uses the 2026-07-28 way: `server/discover`, then per-request `_meta`.
pub async fn mcp_modern_from(server: &Server, source: &str) -> Client {
    let transport = StreamableHttpClientTransport::with_client(
        http_from(source),
        StreamableHttpClientTransportConfig::with_uri(server.url()),
    );
    let info = ClientConfig::new(Default::default(), Implementation::new("e2e", "1.0"));
    info.serve_with_lifecycle(
        transport,
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await
    .expect("discover")
}

pub async fn mcp(server: &Server) -> Client {
    mcp_from(server, ALPHA, ProtocolVersion::V_2025_11_25).await
}

/// Calls a tool; a protocol error fails the test.
pub async fn call(client: &Client, name: &'static str, args: Value) -> CallToolResult {
    let args = match args {
        Value::Object(m) => m,
        other => panic!("arguments must be an object, got {other}"),
    };
    client
        .call_tool(CallToolRequestParams::new(name).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{name} failed: {e}"))
}

pub fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn structured(r: &CallToolResult) -> &Value {
    r.structured_content.as_ref().expect("structuredContent")
}

pub fn status(r: &CallToolResult) -> &str {
    structured(r)["status"].as_str().expect("status")
}

pub fn proposal_id(r: &CallToolResult) -> String {
    structured(r)["proposal_id"]
        .as_str()
        .expect("proposal_id")
        .to_owned()
}

pub fn is_error(r: &CallToolResult) -> bool {
    r.is_error.unwrap_or(false)
}

/// Waits (bounded) until the store shows `n` pending proposals; returns their ids.
pub async fn wait_pending(store: &Store, n: usize) -> Vec<String> {
    let start = Instant::now();
    loop {
        let list = store
            .list(None, supervise_store::StatusFilter::Pending)
            .await
            .unwrap();
        if list.len() >= n {
            return list.into_iter().map(|p| p.id.into()).collect();
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "only {} pending",
            list.len()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// POSTs one JSON-RPC body from `source` with extra headers; returns status and JSON body.
pub async fn post(
    server: &Server,
    source: &str,
    headers: &[(&str, &str)],
    body: impl Into<reqwest::Body>,
) -> (u16, Option<Value>, reqwest::header::HeaderMap) {
    let mut req = http_from(source)
        .post(server.url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.body(body).send().await.expect("send");
    let status = resp.status().as_u16();
    let h = resp.headers().clone();
    let bytes = resp.bytes().await.expect("body");
    let json = if bytes.is_empty() {
        None
    } else {
        Some(serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&bytes)
            )
        }))
    };
    (status, json, h)
}

/// reqwest is built with rustls but no crypto provider (no TLS is used here, but building a
/// client needs one).
pub fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A batch of `n` `tools/list` requests (revision 2025-03-26, the one with batches): a small
/// body whose answer is several kilobytes per item.
pub fn tools_list_batch(n: usize) -> String {
    let item = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    format!("[{}]", vec![item; n].join(","))
}

/// How many pipelined requests [`non_reading_client`] sends: with a batch of 32 `tools/list`
/// each, about 11 MB of answers, far more than the socket buffers hold.
pub const STALLED_REQUESTS: usize = 100;

/// Waits until the server's end of `stream` is closed (its socket in `/proc/net/tcp` has
/// left ESTABLISHED, or is gone after a reset), or `max` passes. Reads nothing, so a test
/// can wait for the server to give up on a client that does not read, however loaded the
/// machine is.
pub fn wait_until_the_server_closes(stream: &std::net::TcpStream, max: Duration) -> bool {
    fn hex(addr: SocketAddr) -> String {
        let SocketAddr::V4(v4) = addr else {
            panic!("an IPv4 address: {addr}")
        };
        format!(
            "{:08X}:{:04X}",
            u32::from_ne_bytes(v4.ip().octets()),
            v4.port()
        )
    }
    let (server, client) = (
        hex(stream.peer_addr().unwrap()),
        hex(stream.local_addr().unwrap()),
    );
    let established = || {
        let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
        table.lines().skip(1).any(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            cols.get(1) == Some(&server.as_str())
                && cols.get(2) == Some(&client.as_str())
                && cols.get(3) == Some(&"01")
        })
    };
    let deadline = std::time::Instant::now() + max;
    while std::time::Instant::now() < deadline {
        if !established() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// A connection from `source` with a tiny receive buffer that sends `body` as
/// [`STALLED_REQUESTS`] pipelined `POST /mcp` requests and reads only the start of the first
/// answer: the rest stops at the full socket buffers. Returns once the answer has started (it
/// is built before its first byte is sent).
pub fn non_reading_client(addr: SocketAddr, source: &str, body: &str) -> std::net::TcpStream {
    use socket2::{Domain, Socket, Type};
    use std::io::Write;
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).expect("socket");
    socket.set_recv_buffer_size(4096).expect("SO_RCVBUF");
    let from: SocketAddr = format!("{source}:0").parse().unwrap();
    socket.bind(&from.into()).expect("bind the source address");
    socket.connect(&addr.into()).expect("connect");
    let mut stream: std::net::TcpStream = socket.into();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let one = format!("{head}{body}");
    stream
        .write_all(one.repeat(STALLED_REQUESTS).as_bytes())
        .expect("send the requests");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut start = [0u8; 12];
    std::io::Read::read_exact(&mut stream, &mut start).expect("the answer starts");
    assert_eq!(&start, b"HTTP/1.1 200");
    stream
}
