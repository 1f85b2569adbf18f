//! The bad input catalogue. Every case is sent to one running server
//! over raw HTTP (a `TcpStream`, so malformed bytes go out as written). For each: the HTTP
//! status and the JSON-RPC error code, or the tool's `refused` status and the field it
//! blames, must be the expected ones; the server must still answer `/healthz`; and a case
//! that must not write leaves the `proposals` and `events` row counts unchanged (the few
//! valid-but-odd inputs must write exactly one proposal, stored verbatim). All mismatches
//! are collected and reported together. A second test: a client that sends its request
//! head one byte at a time is cut off by the server's header timeout (10 s, in
//! `crates/server/src/config.rs`).

use std::io::{Read, Write};
use std::net::IpAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use supervise_tests::{Mcp, Reply, Server, connect_from, exchange_raw, healthz, post_from, sqlite};

const BOTTLE_IP: &str = "127.0.0.2";

/// How a case is sent.
enum Send {
    /// A JSON-RPC body (serialised as is) with the usual headers.
    Json(Value),
    /// Raw body bytes with the usual headers.
    Body(Vec<u8>),
    /// Body bytes with these headers (added; a `Content-Type`/`Accept`/`Host` given here
    /// replaces the usual one, an empty value drops it).
    Headers(Vec<(&'static str, String)>, Vec<u8>),
    /// A whole HTTP request (`{addr}` in it is replaced by the server address).
    Raw(Vec<u8>),
    /// A JSON-RPC body from another source address.
    From(&'static str, Value),
}

/// What must come back.
enum Expect {
    /// This HTTP status and a JSON-RPC error with this code.
    Error(u16, i64),
    /// HTTP status only (the body need not be JSON-RPC, e.g. hyper's own 400).
    Http(u16),
    /// HTTP status and a JSON-RPC error body, whatever the code.
    AnyError(u16),
    /// A tool result refused with `isError: true`, blaming this field (None: no field).
    Refused(Option<&'static str>),
    /// A tool result with this status (e.g. `unknown`, `pending`).
    Tool(&'static str),
    /// A JSON-RPC result (not an error), HTTP 200.
    Result,
    /// HTTP 202 with no body.
    Accepted,
    /// JSON-RPC 2.0: the response id must equal the request's, text for text; a server
    /// that cannot keep it must refuse with -32600 rather than answer another id.
    SameIdOrInvalid(&'static str),
}

struct Case {
    name: &'static str,
    send: Send,
    expect: Expect,
    /// Whether the case files one proposal (valid input that looks odd).
    writes: bool,
}

fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

fn tool(name: &str, arguments: Value) -> Value {
    rpc("tools/call", json!({"name": name, "arguments": arguments}))
}

fn egress(host: Value) -> Value {
    tool(
        "propose-egress",
        json!({"host": host, "justification": "bad input catalogue"}),
    )
}

fn egress_port(port: Value) -> Value {
    tool(
        "propose-egress",
        json!({"host": "port.example", "port": port, "justification": "bad input catalogue"}),
    )
}

fn justified(j: Value) -> Value {
    tool(
        "propose-egress",
        json!({"host": "justify.example", "justification": j}),
    )
}

fn push(remote: Value, git_ref: Value) -> Value {
    tool(
        "propose-git-push",
        json!({"remote": remote, "ref": git_ref, "justification": "bad input catalogue"}),
    )
}

fn case(name: &'static str, send: Send, expect: Expect) -> Case {
    Case {
        name,
        send,
        expect,
        writes: false,
    }
}

fn writes(name: &'static str, send: Send, expect: Expect) -> Case {
    Case {
        name,
        send,
        expect,
        writes: true,
    }
}

fn nested(depth: usize) -> Vec<u8> {
    let mut v = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":".to_vec();
    v.extend(std::iter::repeat_n(b'[', depth));
    v.extend(std::iter::repeat_n(b']', depth));
    v.extend_from_slice(b"}}");
    v
}

fn catalogue() -> Vec<Case> {
    use Expect::*;
    use Send::*;
    let ping = rpc("ping", json!({}));
    let ping_bytes = ping.to_string().into_bytes();
    let ten_mib = {
        let mut s = String::from(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""#);
        s.push_str(&"a".repeat(10 * 1024 * 1024));
        s.push_str(r#""}}"#);
        s.into_bytes()
    };
    let chunked_ten_mib = {
        let mut raw = b"POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
            Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\
            Connection: close\r\n\r\n"
            .to_vec();
        let chunk = vec![b' '; 64 * 1024];
        for _ in 0..160 {
            raw.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            raw.extend_from_slice(&chunk);
            raw.extend_from_slice(b"\r\n");
        }
        raw.extend_from_slice(b"0\r\n\r\n");
        raw
    };
    let huge = "x".repeat(100 * 1024);
    vec![
        // --- HTTP and transport ---
        case("invalid JSON", Body(b"{not json".to_vec()), Error(400, -32700)),
        case(
            "truncated JSON",
            Body(br#"{"jsonrpc":"2.0","id":1,"#.to_vec()),
            Error(400, -32700),
        ),
        case("empty body", Body(Vec::new()), Error(400, -32700)),
        case("non-UTF-8 body", Body(b"\xff\xfe{\"a\":1}".to_vec()), Error(400, -32700)),
        case(
            "lone surrogate escape",
            Body(br#"{"jsonrpc":"2.0","id":1,"method":"\ud800"}"#.to_vec()),
            Error(400, -32700),
        ),
        case("deeply nested arrays (100k)", Body(nested(100_000)), Error(400, -32700)),
        case(
            "deeply nested objects (5k)",
            Body({
                let mut v = Vec::new();
                for _ in 0..5000 {
                    v.extend_from_slice(b"{\"a\":");
                }
                v.extend_from_slice(b"1");
                v.extend(std::iter::repeat_n(b'}', 5000));
                v
            }),
            Error(400, -32700),
        ),
        case("10 MiB body", Body(ten_mib), AnyError(413)),
        case("10 MiB chunked body", Raw(chunked_ten_mib), AnyError(413)),
        case(
            "foreign Origin",
            Headers(vec![("Origin", "http://evil.example".into())], ping_bytes.clone()),
            Error(403, -32600),
        ),
        case(
            "foreign Host",
            Headers(vec![("Host", "evil.example".into())], ping_bytes.clone()),
            Error(403, -32600),
        ),
        case(
            "unregistered source address",
            From("127.0.0.9", ping.clone()),
            Error(403, -32600),
        ),
        case(
            "GET /mcp",
            Raw(b"GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n".to_vec()),
            AnyError(405),
        ),
        case(
            "DELETE /mcp",
            Raw(b"DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n".to_vec()),
            AnyError(405),
        ),
        case(
            "unknown path",
            Raw(b"POST /admin HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}".to_vec()),
            Http(404),
        ),
        case(
            "malformed Content-Length",
            Raw(b"POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: abc\r\nConnection: close\r\n\r\n{}".to_vec()),
            Http(400),
        ),
        case(
            "unsupported MCP-Protocol-Version",
            Headers(vec![("MCP-Protocol-Version", "1999-01-01".into())], ping_bytes.clone()),
            Error(400, -32022),
        ),
        case(
            "2026-07-28 request without its headers",
            Json(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})),
            Error(400, -32020),
        ),
        // --- JSON-RPC envelope ---
        case(
            "jsonrpc 1.0",
            Json(json!({"jsonrpc": "1.0", "id": 1, "method": "ping"})),
            Error(400, -32600),
        ),
        case(
            "jsonrpc missing",
            Json(json!({"id": 1, "method": "ping"})),
            Error(400, -32600),
        ),
        case(
            "jsonrpc a number",
            Json(json!({"jsonrpc": 2.0, "id": 1, "method": "ping"})),
            Error(400, -32600),
        ),
        case(
            "null id",
            Json(json!({"jsonrpc": "2.0", "id": null, "method": "ping"})),
            Error(400, -32600),
        ),
        case(
            "object id",
            Json(json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"})),
            Error(400, -32600),
        ),
        case(
            "array id",
            Json(json!({"jsonrpc": "2.0", "id": [1], "method": "ping"})),
            Error(400, -32600),
        ),
        case(
            "boolean id",
            Json(json!({"jsonrpc": "2.0", "id": true, "method": "ping"})),
            Error(400, -32600),
        ),
        case(
            "id out of f64 range",
            Body(br#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#.to_vec()),
            Error(400, -32700),
        ),
        case(
            "100 KB string id",
            Json(json!({"jsonrpc": "2.0", "id": huge, "method": "ping"})),
            Result,
        ),
        case(
            "method not a string",
            Json(json!({"jsonrpc": "2.0", "id": 1, "method": 5})),
            Error(400, -32600),
        ),
        case(
            "params a string",
            Json(json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": "x"})),
            Error(400, -32600),
        ),
        case("a bare number", Body(b"42".to_vec()), Error(400, -32600)),
        case("empty batch", Body(b"[]".to_vec()), Error(400, -32600)),
        case(
            "batch under 2025-11-25",
            Body(format!("[{}]", ping).into_bytes()),
            Error(400, -32600),
        ),
        case(
            "unknown method",
            Json(rpc("admin/dropAll", json!({}))),
            Error(200, -32601),
        ),
        case(
            "notification of an unknown method",
            Json(json!({"jsonrpc": "2.0", "method": "notifications/whatever"})),
            Accepted,
        ),
        case(
            "a response sent to the server",
            Json(json!({"jsonrpc": "2.0", "id": 7, "result": {}})),
            Accepted,
        ),
        // --- tools/call shape ---
        case("unknown tool", Json(tool("delete-everything", json!({}))), Error(200, -32602)),
        case(
            "tools/call without a name",
            Json(rpc("tools/call", json!({"arguments": {}}))),
            Error(200, -32602),
        ),
        case(
            "tool name a number",
            Json(rpc("tools/call", json!({"name": 7}))),
            Error(200, -32602),
        ),
        case(
            "arguments a string",
            Json(rpc("tools/call", json!({"name": "propose-egress", "arguments": "host=x"}))),
            Error(200, -32602),
        ),
        // --- propose-egress arguments ---
        case(
            "missing host",
            Json(tool("propose-egress", json!({"justification": "x"}))),
            Refused(Some("host")),
        ),
        case(
            "missing justification",
            Json(tool("propose-egress", json!({"host": "a.example"}))),
            Refused(Some("justification")),
        ),
        case("host a number", Json(egress(json!(42))), Refused(Some("host"))),
        case("host an object", Json(egress(json!({"a": 1}))), Refused(Some("host"))),
        case(
            "extra argument",
            Json(tool(
                "propose-egress",
                json!({"host": "a.example", "justification": "x", "proxy": "none"}),
            )),
            Refused(Some("proxy")),
        ),
        case("port 0", Json(egress_port(json!(0))), Refused(Some("port"))),
        case("port 70000", Json(egress_port(json!(70000))), Refused(Some("port"))),
        case("port -1", Json(egress_port(json!(-1))), Refused(Some("port"))),
        case("port 443.5", Json(egress_port(json!(443.5))), Refused(Some("port"))),
        case("port \"abc\"", Json(egress_port(json!("abc"))), Refused(Some("port"))),
        case("port true", Json(egress_port(json!(true))), Refused(Some("port"))),
        case("empty justification", Json(justified(json!(""))), Refused(Some("justification"))),
        case(
            "blank justification",
            Json(justified(json!("  \n\t "))),
            Refused(Some("justification")),
        ),
        case(
            "100 KB justification",
            Json(justified(json!("j".repeat(100 * 1024)))),
            Refused(Some("justification")),
        ),
        case(
            "2001-character justification",
            Json(justified(json!("é".repeat(2001)))),
            Refused(Some("justification")),
        ),
        case(
            "NUL in justification",
            Json(justified(json!("before\u{0}after"))),
            Refused(Some("justification")),
        ),
        case(
            "justification a number",
            Json(justified(json!(12))),
            Refused(Some("justification")),
        ),
        case("host with scheme", Json(egress(json!("https://a.example"))), Refused(Some("host"))),
        case("host with path", Json(egress(json!("a.example/x"))), Refused(Some("host"))),
        case("host with space", Json(egress(json!("a example.com"))), Refused(Some("host"))),
        case("host with port", Json(egress(json!("a.example:8443"))), Refused(Some("host"))),
        case("host with user info", Json(egress(json!("me@a.example"))), Refused(Some("host"))),
        case("IDN host", Json(egress(json!("bücher.example"))), Refused(Some("host"))),
        case("host `*`", Json(egress(json!("*"))), Refused(Some("host"))),
        case("host `*.com`", Json(egress(json!("*.com"))), Refused(Some("host"))),
        case("host `*a.example`", Json(egress(json!("*a.example"))), Refused(Some("host"))),
        case("empty host", Json(egress(json!(""))), Refused(Some("host"))),
        case("host with empty label", Json(egress(json!("a..example"))), Refused(Some("host"))),
        case("NUL in host", Json(egress(json!("a\u{0}.example"))), Refused(Some("host"))),
        case("300-character host", Json(egress(json!("a".repeat(300)))), Refused(Some("host"))),
        case(
            "SQL-looking host",
            Json(egress(json!("a.example'; DROP TABLE proposals;--"))),
            Refused(Some("host")),
        ),
        // --- propose-git-push arguments ---
        case(
            "ref with ..",
            Json(push(json!("origin"), json!("refs/heads/../main"))),
            Refused(Some("ref")),
        ),
        case(
            "ref with space",
            Json(push(json!("origin"), json!("refs/heads/a b"))),
            Refused(Some("ref")),
        ),
        case(
            "NUL in ref",
            Json(push(json!("origin"), json!("refs/heads/a\u{0}b"))),
            Refused(Some("ref")),
        ),
        case(
            "ref ending .lock",
            Json(push(json!("origin"), json!("refs/heads/x.lock"))),
            Refused(Some("ref")),
        ),
        case("ref @{-1}", Json(push(json!("origin"), json!("@{-1}"))), Refused(Some("ref"))),
        case(
            "remote with space",
            Json(push(json!("my remote"), json!("feature/x"))),
            Refused(Some("remote")),
        ),
        case(
            "1000-character remote",
            Json(push(json!("r".repeat(1000)), json!("feature/x"))),
            Refused(Some("remote")),
        ),
        case(
            "missing ref",
            Json(tool("propose-git-push", json!({"remote": "origin", "justification": "x"}))),
            Refused(Some("ref")),
        ),
        // --- check / withdraw / list ---
        case(
            "check-proposal without id",
            Json(tool("check-proposal", json!({}))),
            Refused(Some("proposal_id")),
        ),
        case(
            "check-proposal id a number",
            Json(tool("check-proposal", json!({"proposal_id": 5}))),
            Refused(Some("proposal_id")),
        ),
        case(
            "check-proposal SQL-looking id",
            Json(tool("check-proposal", json!({"proposal_id": "1' OR '1'='1"}))),
            Tool("unknown"),
        ),
        case(
            "check-proposal NUL id",
            Json(tool("check-proposal", json!({"proposal_id": "a\u{0}b"}))),
            Tool("unknown"),
        ),
        case(
            "check-proposal 100 KB id",
            Json(tool("check-proposal", json!({"proposal_id": "0".repeat(100 * 1024)}))),
            Tool("unknown"),
        ),
        case(
            "check-proposal LIKE wildcard id",
            Json(tool("check-proposal", json!({"proposal_id": "%"}))),
            Tool("unknown"),
        ),
        case(
            "withdraw-proposal unknown id",
            Json(tool("withdraw-proposal", json!({"proposal_id": "01a2-nope"}))),
            Tool("unknown"),
        ),
        case(
            "list-proposals with an argument",
            Json(tool("list-proposals", json!({"all": true}))),
            Refused(Some("all")),
        ),
        // --- valid but odd: each files exactly one proposal, stored as sent ---
        writes(
            "punycode host",
            Json(egress(json!("xn--bcher-kva.example"))),
            Tool("pending"),
        ),
        writes(
            "wildcard host *.example.com",
            Json(egress(json!("*.wild.example.com"))),
            Tool("pending"),
        ),
        writes(
            "SQL-looking justification",
            Json(tool(
                "propose-egress",
                json!({"host": "sql.example", "justification": "'); DROP TABLE proposals; --"}),
            )),
            Tool("pending"),
        ),
        writes(
            "2000-character justification",
            Json(tool(
                "propose-egress",
                json!({"host": "long.example", "justification": "é".repeat(2000)}),
            )),
            Tool("pending"),
        ),
        writes(
            "quoted port \"8443\"",
            Json(tool(
                "propose-egress",
                json!({"host": "quoted-port.example", "port": "8443", "justification": "x"}),
            )),
            Tool("pending"),
        ),
    ]
}

/// Content negotiation and id fidelity (found failing, then fixed), kept apart so the main
/// catalogue stays a regression guard: MCP clients MUST send `Accept: application/json,
/// text/event-stream` and a JSON body, so other media types get 415 / 406 (as the official
/// SDKs answer); and JSON-RPC 2.0 requires the response id to be the request's id.
fn negotiation_catalogue() -> Vec<Case> {
    use Expect::*;
    use Send::*;
    let ping_bytes = rpc("ping", json!({})).to_string().into_bytes();
    vec![
        case(
            "wrong Content-Type (text/plain)",
            Headers(
                vec![("Content-Type", "text/plain".into())],
                ping_bytes.clone(),
            ),
            AnyError(415),
        ),
        case(
            "wrong Content-Type (form)",
            Headers(
                vec![("Content-Type", "application/x-www-form-urlencoded".into())],
                ping_bytes.clone(),
            ),
            AnyError(415),
        ),
        case(
            "missing Accept",
            Headers(vec![("Accept", String::new())], ping_bytes.clone()),
            AnyError(406),
        ),
        case(
            "Accept without JSON or SSE",
            Headers(vec![("Accept", "text/html".into())], ping_bytes.clone()),
            AnyError(406),
        ),
        case(
            "huge integer id",
            Body(
                br#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#
                    .to_vec(),
            ),
            SameIdOrInvalid("123456789012345678901234567890"),
        ),
    ]
}

/// `proposals` and `events` row counts.
fn counts(db: &Path) -> (u64, u64) {
    let out = sqlite(
        db,
        "SELECT (SELECT count(*) FROM proposals) || ',' || (SELECT count(*) FROM events);",
    );
    let (p, e) = out.split_once(',').expect("two counts");
    (p.parse().unwrap(), e.parse().unwrap())
}

fn send(server: &Server, send: &Send) -> std::io::Result<Reply> {
    let source: IpAddr = BOTTLE_IP.parse().unwrap();
    let version = ("MCP-Protocol-Version", Mcp::PROTOCOL.to_string());
    match send {
        Send::Json(v) => post_from(
            source,
            server.addr,
            &[(version.0, &version.1)],
            v.to_string().as_bytes(),
        ),
        Send::Body(b) => post_from(source, server.addr, &[(version.0, &version.1)], b),
        Send::Headers(headers, body) => {
            let addr = server.addr.to_string();
            let mut head = String::from("POST /mcp HTTP/1.1\r\n");
            let given = |n: &str| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(n));
            for (name, default) in [
                ("Host", addr.as_str()),
                ("Accept", "application/json, text/event-stream"),
                ("Content-Type", "application/json"),
                ("MCP-Protocol-Version", Mcp::PROTOCOL),
            ] {
                match given(name) {
                    Some((_, v)) if v.is_empty() => {}
                    Some((_, v)) => head.push_str(&format!("{name}: {v}\r\n")),
                    None => head.push_str(&format!("{name}: {default}\r\n")),
                }
            }
            for (k, v) in headers {
                if !["host", "accept", "content-type", "mcp-protocol-version"]
                    .contains(&k.to_ascii_lowercase().as_str())
                {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
            }
            head.push_str(&format!(
                "Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            ));
            let mut raw = head.into_bytes();
            raw.extend_from_slice(body);
            exchange_raw(source, server.addr, &raw, Duration::from_secs(30))
        }
        Send::Raw(raw) => {
            let text_end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
            let head = String::from_utf8_lossy(&raw[..text_end])
                .replace("{addr}", &server.addr.to_string());
            let mut bytes = head.into_bytes();
            bytes.extend_from_slice(&raw[text_end..]);
            exchange_raw(source, server.addr, &bytes, Duration::from_secs(30))
        }
        Send::From(ip, v) => post_from(
            ip.parse().unwrap(),
            server.addr,
            &[(version.0, &version.1)],
            v.to_string().as_bytes(),
        ),
    }
}

fn check(reply: &Reply, expect: &Expect) -> Result<(), String> {
    let msg = reply.message.as_ref();
    let error_code = msg.and_then(|m| m["error"]["code"].as_i64());
    let result = msg.map(|m| &m["result"]);
    let facts = result
        .map(|r| r["structuredContent"].clone())
        .unwrap_or(Value::Null);
    let want_status = |s: u16| {
        if reply.status == s {
            Ok(())
        } else {
            Err(format!("HTTP {} (want {s})", reply.status))
        }
    };
    match expect {
        Expect::Error(http, code) => {
            want_status(*http)?;
            if error_code != Some(*code) {
                return Err(format!("JSON-RPC error code {error_code:?} (want {code})"));
            }
            if msg.is_some_and(|m| m["jsonrpc"] != "2.0") {
                return Err("error without jsonrpc 2.0".into());
            }
        }
        Expect::Http(http) => want_status(*http)?,
        Expect::AnyError(http) => {
            want_status(*http)?;
            if error_code.is_none() {
                return Err("no JSON-RPC error in the body".into());
            }
        }
        Expect::Refused(field) => {
            want_status(200)?;
            if error_code.is_some() {
                return Err(format!(
                    "a protocol error {error_code:?}, want a refused tool result"
                ));
            }
            if facts["status"] != "refused" || result.is_none_or(|r| r["isError"] != true) {
                return Err(format!("not refused with isError: {facts}"));
            }
            if facts["field"].as_str() != *field {
                return Err(format!("blames {} (want {field:?})", facts["field"]));
            }
            let text = result.unwrap()["content"][0]["text"].as_str().unwrap_or("");
            if !text.contains("Next:") {
                return Err(format!("text without a next step: {text:?}"));
            }
        }
        Expect::Tool(status) => {
            want_status(200)?;
            if facts["status"] != *status {
                return Err(format!("tool status {} (want {status})", facts["status"]));
            }
            let is_error = result.is_some_and(|r| r["isError"] == true);
            if is_error != (*status != "pending") {
                return Err(format!("isError {is_error} for {status}"));
            }
        }
        Expect::Result => {
            want_status(200)?;
            if error_code.is_some() || result.is_none_or(Value::is_null) {
                return Err("no result".into());
            }
        }
        Expect::Accepted => {
            want_status(202)?;
            if !reply.body.is_empty() {
                return Err(format!("a body: {:?}", reply.body));
            }
        }
        Expect::SameIdOrInvalid(id_text) => {
            if error_code == Some(-32600) && reply.status == 400 {
                return Ok(());
            }
            want_status(200)?;
            let raw_id = reply.body.split("\"id\":").nth(1).unwrap_or("");
            if !raw_id.starts_with(id_text) {
                return Err(format!(
                    "answered with another id: {:?} (want {id_text} or -32600)",
                    &raw_id[..raw_id.len().min(40)]
                ));
            }
        }
    }
    Ok(())
}

/// Sends every case to a fresh server; returns the mismatches.
fn run(cases: &[Case]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("supervise.db");
    let server = Server::start(
        &db,
        &[
            "--grace",
            "0",
            "--bottle",
            &format!("catalogue={BOTTLE_IP}"),
        ],
    );
    let mut failures = Vec::new();
    for c in cases {
        let before = counts(&db);
        let outcome = send(&server, &c.send)
            .map_err(|e| format!("no answer: {e}"))
            .and_then(|reply| {
                check(&reply, &c.expect).map_err(|e| format!("{e}; body {:.300}", reply.body))
            });
        if let Err(e) = outcome {
            failures.push(format!("{}: {e}", c.name));
        }
        if healthz(server.addr) != Some(200) {
            failures.push(format!("{}: the server stopped answering /healthz", c.name));
            break;
        }
        let after = counts(&db);
        let want = if c.writes {
            (before.0 + 1, before.1 + 1)
        } else {
            before
        };
        if after != want {
            failures.push(format!(
                "{}: rows (proposals, events) went {before:?} -> {after:?}, want {want:?}",
                c.name
            ));
        }
    }
    if cases.iter().any(|c| c.writes) {
        // The odd-but-valid inputs are stored verbatim (parameters, not SQL text).
        let stored = sqlite(
            &db,
            "SELECT justification FROM proposals WHERE json_extract(change, '$.host') = 'sql.example';",
        );
        if stored != "'); DROP TABLE proposals; --" {
            failures.push(format!("SQL-looking justification stored as {stored:?}"));
        }
        let port = sqlite(
            &db,
            "SELECT json_extract(change, '$.port') FROM proposals \
             WHERE json_extract(change, '$.host') = 'quoted-port.example';",
        );
        if port != "8443" {
            failures.push(format!("quoted port stored as {port:?}"));
        }
    }
    let panics: Vec<String> = server
        .log()
        .into_iter()
        .filter(|l| l.contains("panicked"))
        .collect();
    if !panics.is_empty() {
        failures.push(format!("the server panicked: {panics:?}"));
    }
    failures
}

#[test]
fn every_bad_input_gets_the_right_error_and_writes_nothing() {
    let started = Instant::now();
    let cases = catalogue();
    assert!(cases.len() >= 40, "the catalogue shrank to {}", cases.len());
    let failures = run(&cases);
    eprintln!("{} cases in {:?}", cases.len(), started.elapsed());
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Content negotiation and id fidelity: wrong Content-Type (415), missing or unusable
/// Accept (406), and a huge integer id echoed as another number.
#[test]
fn content_type_accept_and_request_ids_are_checked() {
    let cases = negotiation_catalogue();
    let failures = run(&cases);
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// A slowloris: the request head trickles in one byte every 200 ms. The server's header
/// timeout (10 s) must cut the connection off; it must not wait for the head forever.
#[test]
fn a_client_sending_headers_byte_by_byte_is_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("supervise.db");
    let server = Server::start(&db, &["--bottle", &format!("slow={BOTTLE_IP}")]);
    let mut stream = connect_from(BOTTLE_IP.parse().unwrap(), server.addr).unwrap();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n",
        server.addr
    );
    // Long enough never to finish within the test.
    for i in 0..200 {
        head.push_str(&format!("X-Pad-{i}: {}\r\n", "p".repeat(8)));
    }
    let started = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_millis(10)))
        .unwrap();
    let mut cut_off = None;
    for byte in head.bytes() {
        if stream.write_all(&[byte]).is_err() {
            cut_off = Some(started.elapsed());
            break;
        }
        let mut buf = [0u8; 512];
        match stream.read(&mut buf) {
            Ok(0) => {
                cut_off = Some(started.elapsed());
                break;
            }
            Ok(n) => {
                let text = String::from_utf8_lossy(&buf[..n]);
                assert!(text.starts_with("HTTP/1.1 408"), "answered {text:?}");
                cut_off = Some(started.elapsed());
                break;
            }
            // A signal to this thread (the suite's other tests spawn processes) is not a
            // cut-off: with a receive timeout set, read(2) is not restarted after one.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) => {
                cut_off = Some(started.elapsed());
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(190));
        if started.elapsed() > Duration::from_secs(25) {
            break;
        }
    }
    let cut_off = cut_off.expect("the server kept a trickling request head open for 25 s");
    assert!(
        cut_off >= Duration::from_secs(8) && cut_off <= Duration::from_secs(16),
        "cut off after {cut_off:?}, want about the 10 s header timeout"
    );
    // Other clients were served meanwhile and still are.
    assert_eq!(healthz(server.addr), Some(200));
}
