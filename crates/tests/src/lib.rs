//! The home of end-to-end tests that run both real binaries, `supervise-server` and
//! `supervise`, against one database file, the way a host runs them.
//!
//! A virtual workspace's root `tests/` belongs to no package, so they live in this
//! package instead. It depends on neither binary's crate: like ripgrep's `tests/util.rs`,
//! it finds the executables next to its own test executable (`target/<profile>/`), where
//! `cargo test --workspace` has built them. When one is missing (e.g. `cargo test -p
//! supervise-tests` on a clean tree) it runs `cargo build -p supervise-server -p
//! supervise-cli` once. A stale binary is not rebuilt: build first when iterating.
//!
//! Layout: [`bin`] finds (or builds) a binary, [`Server`] runs `supervise-server` on a
//! free loopback port and stops it on drop, [`Mcp`] is a minimal MCP client (JSON-RPC
//! over HTTP POST, answers in JSON or SSE) on `std::net`, and [`cli`] runs `supervise`;
//! `raw` has the reliability helpers (raw HTTP from a chosen source address, SQL reads),
//! [`console`] runs `supervise console` and speaks its API, [`browser`] drives headless
//! Chromium through chromedriver.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::Duration;

use serde_json::{Value, json};

pub mod browser;
pub mod console;
mod raw;
pub use raw::*;

/// The directory holding the workspace's binaries: the test executable lives in
/// `target/<profile>/deps/`, the binaries one level up.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let mut dir = exe.parent().expect("exe dir").to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir
}

/// The path of a workspace binary, built once if it is missing.
pub fn bin(name: &str) -> PathBuf {
    let path = bin_dir().join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if !path.exists() {
        build_once();
    }
    assert!(
        path.exists(),
        "{} is missing even after cargo build",
        path.display()
    );
    path
}

fn build_once() {
    static BUILT: OnceLock<()> = OnceLock::new();
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    BUILT.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-p", "supervise-server", "-p", "supervise-cli"]);
        if bin_dir().ends_with("release") {
            cmd.arg("--release");
        }
        let status = cmd
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("run cargo build");
        assert!(status.success(), "cargo build of the binaries failed");
    });
}

/// Runs `supervise --db DB ARGS` as operator `operator`. The suite's operator confirms
/// what it decides: `approve` and `modify` get `--yes`, as a script's would, so a flagged
/// change is decided rather than refused for want of a terminal (the CLI's own `confirm`
/// tests hold the refusal).
pub fn cli(db: &Path, operator: &str, args: &[&str]) -> Output {
    let mut args = args.to_vec();
    if matches!(args.first(), Some(&("approve" | "modify"))) {
        args.insert(1, "--yes");
    }
    Command::new(bin("supervise"))
        .arg("--db")
        .arg(db)
        .arg("--as")
        .arg(operator)
        .args(&args)
        .env_remove("SUPERVISE_DB")
        .stdin(Stdio::null())
        .output()
        .expect("run supervise")
}

// ----- story helpers: JSON from the CLI, polling, hook scripts, a clean stop ----

/// Runs `supervise --db DB --as OPERATOR ARGS`, which must succeed, and parses its stdout
/// as one JSON document (for `--json` commands).
pub fn cli_json(db: &Path, operator: &str, args: &[&str]) -> Value {
    let out = cli(db, operator, args);
    assert!(
        out.status.success(),
        "supervise {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "supervise {args:?} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Calls `probe` every 50 ms until it returns `Some`, for at most `timeout`.
pub fn wait_until<T>(timeout: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if let Some(v) = probe() {
            return Some(v);
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Writes an executable `sh` script `name` into `dir` and returns its path (e.g. an
/// `--on-event` hook).
pub fn write_script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write the script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .expect("make the script executable");
    path
}

/// Waits up to `timeout` until the file at `path` has at least `n` lines; returns the
/// lines it has then (fewer when the time ran out, none when it never appeared).
pub fn wait_for_lines(path: &Path, n: usize, timeout: Duration) -> Vec<String> {
    let read = || -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    };
    wait_until(timeout, || Some(read()).filter(|l| l.len() >= n)).unwrap_or_else(read)
}

impl Server {
    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the server the way an init system does (SIGTERM) and waits up to `timeout` for
    /// it to exit; `None` if it was still running then (it is killed on drop).
    pub fn terminate(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM {} failed", self.child.id());
        wait_until(timeout, || self.child.try_wait().ok().flatten())
    }
}

/// A running `supervise-server`, killed on drop.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    /// Everything it logged so far (for failure messages).
    log: mpsc::Receiver<String>,
}

impl Server {
    /// Starts the server on `127.0.0.1:0` with `args` added, and waits for the log line
    /// that names the bound address.
    pub fn start(db: &Path, args: &[&str]) -> Server {
        let mut child = Command::new(bin("supervise-server"))
            .arg("--db")
            .arg(db)
            .args(["--listen", "127.0.0.1:0", "--log-format", "text"])
            .args(args)
            .env("SUPERVISE_LOG", "info")
            .env("NO_COLOR", "1")
            .env_remove("SUPERVISE_DB")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn supervise-server");
        let rx = pipe_lines(&mut child);
        let mut seen = Vec::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(addr) = listen_addr(&line) {
                        return Server {
                            child,
                            addr,
                            log: rx,
                        };
                    }
                    seen.push(line);
                }
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "supervise-server never said where it listens:\n{}",
                        seen.join("\n")
                    );
                }
            }
        }
    }

    /// Lines logged since the last call.
    pub fn log(&self) -> Vec<String> {
        self.log.try_iter().collect()
    }

    /// An MCP client for this server.
    pub fn mcp(&self) -> Mcp {
        Mcp {
            addr: self.addr,
            session: None,
            protocol: None,
            next_id: 1,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The lines a child prints on stdout and stderr (it must have both piped), as they come,
/// read by a thread each.
pub fn pipe_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    for stream in [
        Box::new(child.stdout.take().expect("a piped stdout")) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().expect("a piped stderr")),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
    }
    rx
}

/// The first `127.0.0.1:PORT` in a log line with a non-zero port.
fn listen_addr(line: &str) -> Option<SocketAddr> {
    let mut rest = line;
    while let Some(i) = rest.find("127.0.0.1:") {
        let after = &rest[i + "127.0.0.1:".len()..];
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(port) = digits.parse::<u16>()
            && port != 0
        {
            return Some(SocketAddr::from(([127, 0, 0, 1], port)));
        }
        rest = after;
    }
    None
}

/// A minimal MCP client: JSON-RPC over HTTP POST `/mcp`, one connection per request.
pub struct Mcp {
    addr: SocketAddr,
    session: Option<String>,
    protocol: Option<String>,
    next_id: u64,
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The JSON-RPC message (from a JSON body or the last SSE `data:` event), if any.
    pub message: Option<Value>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl Mcp {
    pub const PROTOCOL: &'static str = "2025-11-25";

    /// `initialize` then `notifications/initialized`; returns the initialize result.
    pub fn initialize(&mut self) -> Value {
        let reply = self.request(
            "initialize",
            json!({
                "protocolVersion": Self::PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "supervise-tests", "version": "0"}
            }),
        );
        let result = reply["result"].clone();
        assert!(result.is_object(), "initialize failed: {reply}");
        self.protocol = result["protocolVersion"].as_str().map(String::from);
        let r = self.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert!(r.status == 202 || r.status == 200, "initialized: {r:?}");
        result
    }

    /// `tools/call`; returns the JSON-RPC `result` (panics on a JSON-RPC error).
    pub fn call_tool(&mut self, name: &str, arguments: Value) -> Value {
        let reply = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        assert!(
            reply.get("error").is_none(),
            "tools/call {name} failed: {reply}"
        );
        reply["result"].clone()
    }

    /// Sends a request and returns the JSON-RPC response message.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let reply =
            self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        assert_eq!(reply.status, 200, "{method}: {reply:?}");
        if let Some(session) = reply.header("mcp-session-id") {
            self.session = Some(session.to_string());
        }
        reply
            .message
            .unwrap_or_else(|| panic!("{method}: no JSON-RPC message in {:?}", reply.body))
    }

    /// POSTs one JSON-RPC message to `/mcp`.
    pub fn post(&self, message: &Value) -> Reply {
        let body = message.to_string();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json, text/event-stream\r\n\
             Content-Type: application/json\r\nContent-Length: {len}\r\nConnection: close\r\n",
            addr = self.addr,
            len = body.len()
        );
        if let Some(p) = &self.protocol {
            head.push_str(&format!("MCP-Protocol-Version: {p}\r\n"));
        }
        if let Some(s) = &self.session {
            head.push_str(&format!("Mcp-Session-Id: {s}\r\n"));
        }
        head.push_str("\r\n");
        let mut stream = TcpStream::connect(self.addr).expect("connect to the server");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).expect("read the answer");
        parse_reply(&raw)
    }
}

fn parse_reply(raw: &[u8]) -> Reply {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut body = raw[split + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("an HTTP status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.to_ascii_lowercase())
    };
    if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        body = dechunk(&body);
    }
    let body = String::from_utf8_lossy(&body).into_owned();
    let message = if header("content-type").is_some_and(|v| v.starts_with("text/event-stream")) {
        // The last `data:` event that parses as a JSON-RPC message.
        body.split("\n\n")
            .filter_map(|event| {
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                serde_json::from_str::<Value>(&data.join("\n")).ok()
            })
            .filter(|v| v.get("result").is_some() || v.get("error").is_some())
            .last()
    } else {
        serde_json::from_str(&body).ok()
    };
    Reply {
        status,
        headers,
        message,
        body,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = data.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&data[..eol]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = eol + 2;
        let end = (start + size).min(data.len());
        out.extend_from_slice(&data[start..end]);
        data = &data[(end + 2).min(data.len())..];
    }
    out
}

/// The `structuredContent` of a tool result, or the JSON in its first text item.
pub fn structured(result: &Value) -> Value {
    if let Some(s) = result.get("structuredContent") {
        return s.clone();
    }
    result["content"][0]["text"]
        .as_str()
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or(Value::Null)
}

/// The text of a tool result's first content item.
pub fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_listen_address_in_a_log_line() {
        assert_eq!(
            listen_addr("INFO supervise-server listening on 127.0.0.1:41234 db=x.db"),
            Some("127.0.0.1:41234".parse().unwrap())
        );
        assert_eq!(
            listen_addr("listen=127.0.0.1:0 then http://127.0.0.1:5/"),
            Some("127.0.0.1:5".parse().unwrap())
        );
        assert_eq!(listen_addr("no address here"), None);
    }

    #[test]
    fn parses_json_sse_and_chunked_answers() {
        let json = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}";
        assert_eq!(parse_reply(json).message.unwrap()["id"], 1);
        let mut sse = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
            transfer-encoding: chunked\r\n\r\n"
            .to_vec();
        for chunk in [
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,",
            "\"result\":{\"a\":1}}\n\n",
        ] {
            sse.extend_from_slice(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes());
        }
        sse.extend_from_slice(b"0\r\n\r\n");
        let reply = parse_reply(&sse);
        assert_eq!(reply.message.unwrap()["result"]["a"], 1, "{}", reply.body);
    }
}
