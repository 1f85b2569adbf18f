//! The MCP client side of the load generator: one keep-alive HTTP/1.1 connection per
//! simulated agent, bound to its bottle's loopback source address, speaking either protocol
//! era on it.
//!
//! Requests are built as text from templates and replies are checked by looking for a few
//! known members in the body, not by full JSON decoding, so the generator spends as little
//! of its core as it can on each call (the server under test has the other one).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http::{HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpSocket;

/// Which protocol era the client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// 2025-11-25: `initialize` once per connection, then `MCP-Protocol-Version` on each call.
    Legacy,
    /// 2026-07-28: stateless; `_meta` version and capabilities plus `MCP-Protocol-Version`,
    /// `Mcp-Method` and `Mcp-Name` headers on every request.
    Modern,
}

impl Style {
    pub fn version(self) -> &'static str {
        match self {
            Style::Legacy => "2025-11-25",
            Style::Modern => "2026-07-28",
        }
    }
}

/// Where the server is.
#[derive(Debug, Clone)]
pub struct Target {
    pub addr: SocketAddr,
    host: HeaderValue,
}

impl Target {
    pub fn new(addr: SocketAddr) -> Target {
        let host = HeaderValue::from_str(&addr.to_string()).expect("an address is a header value");
        Target { addr, host }
    }
}

/// One reply: HTTP status and the JSON-RPC message (the last `data:` of an SSE stream).
#[derive(Debug, Clone)]
pub struct Reply {
    pub http: StatusCode,
    pub body: Bytes,
}

impl Reply {
    /// The first string member `"name":"…"` in the message, e.g. `status` or
    /// `proposal_id` of `structuredContent`. Members inside the escaped `text` copy never
    /// match (their quotes are escaped).
    pub fn field(&self, name: &str) -> Option<&str> {
        find_str_member(&self.body, name)
    }

    /// The tool result's status, or `None` for anything else (a JSON-RPC error, HTTP error).
    pub fn status(&self) -> Option<&str> {
        if self.http != StatusCode::OK {
            return None;
        }
        self.field("status")
    }

    /// A short description for error messages.
    pub fn describe(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let cut: String = text.chars().take(300).collect();
        format!("HTTP {}: {cut}", self.http.as_u16())
    }
}

fn find_str_member<'a>(body: &'a [u8], name: &str) -> Option<&'a str> {
    let pat = format!("\"{name}\":\"");
    let pat = pat.as_bytes();
    let start = body.windows(pat.len()).position(|w| w == pat)? + pat.len();
    let len = body[start..].iter().position(|&b| b == b'"')?;
    std::str::from_utf8(&body[start..start + len]).ok()
}

/// Picks the JSON-RPC message out of an SSE body (the last `data:` line that has one).
fn from_sse(body: &[u8]) -> Bytes {
    let text = String::from_utf8_lossy(body);
    let mut last = None;
    for line in text.lines() {
        if let Some(data) = line.strip_prefix("data:") {
            let data = data.trim();
            if data.contains("\"jsonrpc\"")
                && (data.contains("\"result\"") || data.contains("\"error\""))
            {
                last = Some(data.to_string());
            }
        }
    }
    last.map(Bytes::from).unwrap_or_default()
}

const CLIENT_INFO: &str = r#"{"name":"supervise-bench","version":"0.1.0"}"#;

/// One agent connection.
pub struct Conn {
    sender: SendRequest<Full<Bytes>>,
    target: Target,
    style: Style,
    session: Option<HeaderValue>,
    next_id: u64,
}

/// Opens a TCP connection from `local` (a bottle's address; `None`: any) to the target.
pub async fn tcp_connect(target: &Target, local: Option<IpAddr>) -> Result<tokio::net::TcpStream> {
    let sock = TcpSocket::new_v4()?;
    if let Some(ip) = local {
        sock.bind(SocketAddr::new(ip, 0))
            .with_context(|| format!("binding a client socket to {ip}"))?;
    }
    let stream = tokio::time::timeout(Duration::from_secs(10), sock.connect(target.addr))
        .await
        .map_err(|_| anyhow!("connecting to {} timed out", target.addr))?
        .with_context(|| format!("connecting to {}", target.addr))?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

impl Conn {
    /// Connects and, for the 2025-11-25 style, runs the `initialize` handshake.
    pub async fn open(target: &Target, local: Option<IpAddr>, style: Style) -> Result<Conn> {
        let stream = tcp_connect(target, local).await?;
        let (sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut c = Conn {
            sender,
            target: target.clone(),
            style,
            session: None,
            next_id: 1,
        };
        if style == Style::Legacy {
            c.initialize().await?;
        }
        Ok(c)
    }

    async fn initialize(&mut self) -> Result<()> {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{}","capabilities":{{}},"clientInfo":{CLIENT_INFO}}}}}"#,
            Style::Legacy.version()
        );
        let (reply, session) = self.post(body, None, false).await?;
        if reply.http != StatusCode::OK || reply.field("protocolVersion").is_none() {
            bail!("initialize failed: {}", reply.describe());
        }
        self.session = session;
        let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string();
        let (reply, _) = self.post(note, None, true).await?;
        if !reply.http.is_success() {
            bail!("notifications/initialized refused: {}", reply.describe());
        }
        Ok(())
    }

    /// Calls one tool; `arguments` is a JSON object's text.
    pub async fn call_tool(&mut self, name: &str, arguments: &str) -> Result<Reply> {
        let id = self.next_id;
        self.next_id += 1;
        let body = match self.style {
            Style::Legacy => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{arguments}}}}}"#
            ),
            Style::Modern => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{arguments},"_meta":{{"io.modelcontextprotocol/protocolVersion":"{}","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{CLIENT_INFO}}}}}}}"#,
                Style::Modern.version()
            ),
        };
        let (reply, _) = self.post(body, Some(name), true).await?;
        Ok(reply)
    }

    async fn post(
        &mut self,
        body: String,
        tool: Option<&str>,
        versioned: bool,
    ) -> Result<(Reply, Option<HeaderValue>)> {
        let mut req = Request::builder()
            .method(Method::POST)
            .uri("/mcp")
            .header(HOST, self.target.host.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream");
        if versioned {
            req = req.header("mcp-protocol-version", self.style.version());
        }
        if self.style == Style::Modern {
            req = req.header("mcp-method", "tools/call");
            if let Some(name) = tool {
                req = req.header("mcp-name", name);
            }
        }
        if let Some(s) = &self.session {
            req = req.header("mcp-session-id", s.clone());
        }
        let req = req.body(Full::new(Bytes::from(body)))?;
        self.sender.ready().await.context("connection closed")?;
        let resp = self
            .sender
            .send_request(req)
            .await
            .context("request failed")?;
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.context("reading the body")?.to_bytes();
        let sse = parts
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let body = if sse { from_sse(&body) } else { body };
        let session = parts.headers.get("mcp-session-id").cloned();
        Ok((
            Reply {
                http: parts.status,
                body,
            },
            session,
        ))
    }
}

/// `GET path` on a fresh connection: true on 200.
pub async fn get_ok(target: &Target, path: &str) -> bool {
    let Ok(stream) = tcp_connect(target, None).await else {
        return false;
    };
    let Ok((mut sender, conn)) = http1::handshake::<_, Full<Bytes>>(TokioIo::new(stream)).await
    else {
        return false;
    };
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let Ok(req) = Request::builder()
        .method(Method::GET)
        .uri(path)
        .header(HOST, target.host.clone())
        .body(Full::new(Bytes::new()))
    else {
        return false;
    };
    match sender.send_request(req).await {
        Ok(resp) => resp.status() == StatusCode::OK,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_structured_members_not_escaped_text() {
        let body = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"status\":\"nope\"}"}],"structuredContent":{"proposal_id":"0190-ab","status":"pending"}}}"#;
        assert_eq!(find_str_member(body, "status"), Some("pending"));
        assert_eq!(find_str_member(body, "proposal_id"), Some("0190-ab"));
        assert_eq!(find_str_member(body, "missing"), None);
    }

    #[test]
    fn takes_the_response_from_an_event_stream() {
        let body = b"id: 1\ndata: \n\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"status\":\"x\"}}\n\n";
        assert_eq!(
            &from_sse(body)[..],
            br#"{"jsonrpc":"2.0","id":3,"result":{"status":"x"}}"#
        );
    }
}
