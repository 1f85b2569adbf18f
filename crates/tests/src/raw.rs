//! Reliability helpers: raw HTTP from a chosen loopback source address (bottles are
//! attributed by source IP, so 127.0.0.2, 127.0.0.3 ... are different bottles), health
//! checks, and read-side SQL through the `sqlite3` command-line shell.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::{Mcp, Reply, Server, parse_reply};

pub fn connect_from(source: std::net::IpAddr, addr: SocketAddr) -> std::io::Result<TcpStream> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.bind(&SocketAddr::new(source, 0).into())?;
    socket.connect_timeout(&addr.into(), Duration::from_secs(5))?;
    let stream: TcpStream = socket.into();
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// Sends `raw` (a whole HTTP request, head and body) from `source` and reads until the
/// server closes the connection or `timeout` passes without data. `Err` when no HTTP
/// answer came back at all (connection refused or reset, server gone).
pub fn exchange_raw(
    source: std::net::IpAddr,
    addr: SocketAddr,
    raw: &[u8],
    timeout: Duration,
) -> std::io::Result<Reply> {
    let mut stream = connect_from(source, addr)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    // The server may answer (413) and close before the whole body is written: write from
    // another thread and read meanwhile, so its answer is read before any reset.
    let mut writer = stream.try_clone()?;
    let body = raw.to_vec();
    let write = std::thread::spawn(move || writer.write_all(&body));
    let mut buf = Vec::new();
    let read = stream.read_to_end(&mut buf);
    let write = write.join().expect("the writer thread");
    if buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.starts_with(b"HTTP/") {
        return Ok(parse_reply(&buf));
    }
    write?;
    read?;
    Err(std::io::Error::new(
        std::io::ErrorKind::UnexpectedEof,
        format!(
            "no HTTP answer (got {} bytes: {:?})",
            buf.len(),
            String::from_utf8_lossy(&buf[..buf.len().min(200)])
        ),
    ))
}

/// `POST /mcp` of `body` from `source` with the usual MCP headers (`Host`, `Accept`,
/// `Content-Type: application/json`) unless `headers` names them; `headers` are added
/// as given.
pub fn post_from(
    source: std::net::IpAddr,
    addr: SocketAddr,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Reply> {
    let has = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    let mut head = String::from("POST /mcp HTTP/1.1\r\n");
    if !has("host") {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    if !has("accept") {
        head.push_str("Accept: application/json, text/event-stream\r\n");
    }
    if !has("content-type") {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let mut raw = head.into_bytes();
    raw.extend_from_slice(body);
    exchange_raw(source, addr, &raw, Duration::from_secs(60))
}

/// `GET /healthz`: the HTTP status, or `None` when the server did not answer.
pub fn healthz(addr: SocketAddr) -> Option<u16> {
    let raw = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    exchange_raw(
        std::net::IpAddr::from([127, 0, 0, 1]),
        addr,
        raw.as_bytes(),
        Duration::from_secs(10),
    )
    .ok()
    .map(|r| r.status)
}

/// An agent in a bottle: JSON-RPC `tools/call` over `POST /mcp` from `source`, stateless
/// 2025-11-25 requests (the server mints no session, so no `initialize` is needed), one
/// connection per call. Errors are transport failures only.
#[derive(Debug)]
pub struct Agent {
    pub addr: SocketAddr,
    pub source: std::net::IpAddr,
    next_id: u64,
}

impl Agent {
    pub fn new(addr: SocketAddr, source: &str) -> Agent {
        Agent {
            addr,
            source: source.parse().expect("a source IP address"),
            next_id: 1,
        }
    }

    /// Sends one request; returns the HTTP reply.
    pub fn request(&mut self, method: &str, params: Value) -> std::io::Result<Reply> {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        post_from(
            self.source,
            self.addr,
            &[("MCP-Protocol-Version", Mcp::PROTOCOL)],
            body.to_string().as_bytes(),
        )
    }

    /// `tools/call`; returns the JSON-RPC message (a `result` or an `error`).
    pub fn call(&mut self, tool: &str, arguments: Value) -> std::io::Result<Value> {
        let reply = self.request("tools/call", json!({"name": tool, "arguments": arguments}))?;
        reply.message.ok_or_else(|| {
            std::io::Error::other(format!(
                "HTTP {} without a JSON-RPC message: {:?}",
                reply.status, reply.body
            ))
        })
    }

    /// `tools/call` that must succeed at the JSON-RPC level; returns the tool result.
    pub fn tool(&mut self, tool: &str, arguments: Value) -> Value {
        let message = self
            .call(tool, arguments)
            .unwrap_or_else(|e| panic!("{tool} from {}: {e}", self.source));
        assert!(message.get("error").is_none(), "{tool}: {message}");
        message["result"].clone()
    }
}

/// Runs one SQL statement through the `sqlite3` shell on `db` (read-side; WAL lets it run
/// beside the server) and returns its trimmed output.
pub fn sqlite(db: &Path, sql: &str) -> String {
    let out = Command::new("sqlite3")
        .arg("-batch")
        .arg(db)
        .arg(sql)
        .stdin(Stdio::null())
        .output()
        .expect("run sqlite3 (apt-get install sqlite3)");
    assert!(
        out.status.success(),
        "sqlite3 {sql:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `SELECT count(*) FROM table`.
pub fn row_count(db: &Path, table: &str) -> u64 {
    sqlite(db, &format!("SELECT count(*) FROM {table};"))
        .parse()
        .expect("a count")
}

impl Server {
    /// Ends the server with SIGKILL (what `Drop` does), as a crash would.
    pub fn sigkill(self) {
        drop(self);
    }
}
