//! The wire rules with raw HTTP: attribution, DNS-rebinding protection, limits, JSON-RPC
//! errors, both protocol eras, and the HTTP methods that are refused.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::*;

fn init_body(version: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string()
}

fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
    })
}

fn error_code(body: &Option<Value>) -> i64 {
    body.as_ref().expect("a JSON body")["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error code in {body:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unregistered_address_gets_403_naming_it() {
    let server = Server::start(&["--grace", "0"]);
    let (status, body, _) = post(&server, STRANGER, &[], init_body("2025-11-25")).await;
    assert_eq!(status, 403);
    let msg = body.as_ref().unwrap()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(msg.contains(STRANGER), "{msg}");
    assert_eq!(body.unwrap()["jsonrpc"], "2.0");
    // A registered address gets through.
    let (status, _, _) = post(&server, ALPHA, &[], init_body("2025-11-25")).await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bottle_removed_by_the_cli_stops_being_served_within_seconds() {
    let server = Server::start(&["--grace", "0"]);
    let (status, _, _) = post(&server, BETA, &[], init_body("2025-11-25")).await;
    assert_eq!(status, 200);
    server
        .store()
        .await
        .remove_bottle("beta", &supervise_store::Actor::cli("olivia"))
        .await
        .unwrap();
    let start = Instant::now();
    loop {
        let (status, _, _) = post(&server, BETA, &[], init_body("2025-11-25")).await;
        if status == 403 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "still served after removal"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn origin_and_host_are_checked_against_dns_rebinding() {
    let server = Server::start(&[
        "--grace",
        "0",
        "--allowed-origin",
        "http://tools.internal:9000",
    ]);
    let port = server.addr.port();
    let good_origin = format!("http://localhost:{port}");
    for (origin, want) in [
        ("http://evil.example.com", 403),
        ("null", 403),
        (good_origin.as_str(), 200),
        ("http://tools.internal:9000", 200),
    ] {
        let (status, body, _) = post(
            &server,
            ALPHA,
            &[("origin", origin)],
            init_body("2025-11-25"),
        )
        .await;
        assert_eq!(status, want, "origin {origin}: {body:?}");
        if want == 403 {
            assert!(
                body.unwrap()["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("origin")
            );
        }
    }
    let (status, body, _) = post(
        &server,
        ALPHA,
        &[("host", "evil.example.com")],
        init_body("2025-11-25"),
    )
    .await;
    assert_eq!(status, 403, "{body:?}");
    let host = format!("localhost:{port}");
    let (status, _, _) = post(
        &server,
        ALPHA,
        &[("host", host.as_str())],
        init_body("2025-11-25"),
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_level_rules_413_202_405_and_healthz() {
    let server = Server::start(&["--grace", "0"]);
    // Oversize body: 413 with a JSON-RPC error body.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(1024 * 1024 + 10)
    );
    let (status, body, _) = post(&server, ALPHA, &[], big).await;
    assert_eq!(status, 413);
    assert_eq!(body.unwrap()["jsonrpc"], "2.0");

    // A notification: 202 and no body.
    let (status, body, _) = post(
        &server,
        ALPHA,
        &[("mcp-protocol-version", "2025-11-25")],
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(status, 202);
    assert!(body.is_none());

    // A client's response: 202 too.
    let (status, _, _) = post(
        &server,
        ALPHA,
        &[],
        r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
    )
    .await;
    assert_eq!(status, 202);

    // GET and DELETE on /mcp: 405 (stateless: no stream to open, no session to end).
    let http = http_from(ALPHA);
    let r = http.get(server.url()).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 405);
    let r = http.delete(server.url()).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 405);

    let r = http
        .get(format!("http://{}/healthz", server.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["status"], "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_rpc_errors() {
    let server = Server::start(&["--grace", "0"]);
    let v = [("mcp-protocol-version", "2025-11-25")];
    let (status, body, _) = post(&server, ALPHA, &v, "{not json").await;
    assert_eq!(status, 400);
    assert_eq!(error_code(&body), -32700);
    assert!(body.unwrap()["id"].is_null());

    let (_, body, _) = post(
        &server,
        ALPHA,
        &v,
        r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
    )
    .await;
    assert_eq!(error_code(&body), -32600);

    let (_, body, _) = post(
        &server,
        ALPHA,
        &v,
        r#"{"jsonrpc":"2.0","id":4,"method":"no/such"}"#,
    )
    .await;
    assert_eq!(error_code(&body), -32601);
    assert_eq!(body.unwrap()["id"], 4);

    // An unknown tool is a protocol error, as the MCP specification's example shows.
    let (_, body, _) = post(
        &server,
        ALPHA,
        &v,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"rm-rf","arguments":{}}}"#,
    )
    .await;
    assert_eq!(error_code(&body), -32602);
    assert!(
        body.unwrap()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("rm-rf")
    );

    let (_, body, _) = post(
        &server,
        ALPHA,
        &v,
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{}}"#,
    )
    .await;
    assert_eq!(error_code(&body), -32602);

    let (status, body, _) = post(
        &server,
        ALPHA,
        &v,
        r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body.unwrap()["result"], json!({}));

    // An unsupported MCP-Protocol-Version header: 400.
    let (status, _, _) = post(
        &server,
        ALPHA,
        &[("mcp-protocol-version", "1999-01-01")],
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/list"}"#,
    )
    .await;
    assert_eq!(status, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_negotiates_and_mints_no_session() {
    let server = Server::start(&["--grace", "0"]);
    for (asked, answered) in [
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2024-11-05", "2025-11-25"),
    ] {
        let (status, body, headers) = post(&server, ALPHA, &[], init_body(asked)).await;
        assert_eq!(status, 200);
        assert_eq!(
            body.unwrap()["result"]["protocolVersion"],
            answered,
            "asked {asked}"
        );
        assert!(headers.get("mcp-session-id").is_none());
    }
    // tools/list in 2025-03-26 has no outputSchema; 2025-06-18 has.
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let (_, body, _) = post(
        &server,
        ALPHA,
        &[("mcp-protocol-version", "2025-03-26")],
        list,
    )
    .await;
    assert!(
        body.unwrap()["result"]["tools"][0]
            .get("outputSchema")
            .is_none()
    );
    let (_, body, _) = post(
        &server,
        ALPHA,
        &[("mcp-protocol-version", "2025-06-18")],
        list,
    )
    .await;
    let body = body.unwrap();
    assert!(body["result"]["tools"][0].get("outputSchema").is_some());
    assert!(body["result"].get("ttlMs").is_none());

    // No prompts or resources, answered as empty lists rather than "method not found".
    let v = [("mcp-protocol-version", "2025-11-25")];
    let (_, body, _) = post(
        &server,
        ALPHA,
        &v,
        r#"{"jsonrpc":"2.0","id":3,"method":"prompts/list"}"#,
    )
    .await;
    assert_eq!(body.unwrap()["result"], json!({"prompts": []}));
    let (_, body, _) = post(&server, ALPHA, &v, r#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}"#).await;
    assert_eq!(error_code(&body), -32002);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_only_in_2025_03_26() {
    let server = Server::start(&["--grace", "0"]);
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},
                    {"jsonrpc":"2.0","method":"notifications/initialized"},
                    {"jsonrpc":"2.0","id":2,"method":"tools/list"}]"#;
    let (status, body, _) = post(
        &server,
        ALPHA,
        &[("mcp-protocol-version", "2025-03-26")],
        batch,
    )
    .await;
    assert_eq!(status, 200);
    let items = body.unwrap().as_array().unwrap().clone();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["id"], 1);
    assert_eq!(items[1]["result"]["tools"].as_array().unwrap().len(), 5);
    let (status, body, _) = post(
        &server,
        ALPHA,
        &[("mcp-protocol-version", "2025-06-18")],
        batch,
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(error_code(&body), -32600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_2026_07_28_era_is_stateless_with_checked_headers() {
    let server = Server::start(&["--grace", "0"]);
    let call = |id: i64, meta: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "propose-egress",
            "arguments": {"host": "stateless.example", "justification": "j"},
            "_meta": meta}})
        .to_string()
    };
    let good = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "  propose-egress "),
    ];
    let (status, body, headers) = post(&server, ALPHA, &good, call(1, modern_meta())).await;
    assert_eq!(status, 200, "{body:?}");
    let result = body.unwrap()["result"].clone();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["structuredContent"]["status"], "pending");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "supervise"
    );
    assert!(headers.get("mcp-session-id").is_none());

    // Header mismatches: -32020, HTTP 400.
    for bad in [
        vec![
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
            ("mcp-name", "propose-egress"),
        ],
        vec![
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-name", "propose-egress"),
        ],
        vec![
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "check-proposal"),
        ],
        vec![
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
        ],
        vec![("mcp-method", "tools/call"), ("mcp-name", "propose-egress")],
    ] {
        let (status, body, _) = post(&server, ALPHA, &bad, call(2, modern_meta())).await;
        assert_eq!(status, 400, "{bad:?}: {body:?}");
        assert_eq!(error_code(&body), -32020, "{bad:?}");
        assert_eq!(body.unwrap()["id"], 2);
    }

    // Unsupported version (header and _meta agree): -32022 with the supported list.
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let (status, body, _) = post(
        &server,
        ALPHA,
        &[
            ("mcp-protocol-version", "2099-01-01"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "propose-egress"),
        ],
        call(3, meta),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(error_code(&body), -32022);
    assert_eq!(body.unwrap()["error"]["data"]["requested"], "2099-01-01");

    // Missing clientCapabilities: -32602, HTTP 400.
    let mut meta = modern_meta();
    meta.as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    let (status, body, _) = post(&server, ALPHA, &good, call(4, meta)).await;
    assert_eq!(status, 400);
    assert_eq!(error_code(&body), -32602);

    // Removed and unknown methods: 404 + -32601.
    for method in ["ping", "initialize", "no/such"] {
        let body = json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": {"_meta": modern_meta()}});
        let (status, body, _) = post(
            &server,
            ALPHA,
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", method),
            ],
            body.to_string(),
        )
        .await;
        assert_eq!(status, 404, "{method}");
        assert_eq!(error_code(&body), -32601);
    }

    // server/discover and the cache hints on tools/list.
    let h = |m: &'static str| [("mcp-protocol-version", "2026-07-28"), ("mcp-method", m)];
    let body = json!({"jsonrpc": "2.0", "id": 6, "method": "server/discover", "params": {"_meta": modern_meta()}});
    let (status, body, _) = post(&server, ALPHA, &h("server/discover"), body.to_string()).await;
    assert_eq!(status, 200);
    let result = body.unwrap()["result"].clone();
    assert!(
        result["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
    assert!(result["capabilities"]["tools"].is_object());
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": modern_meta()}});
    let (_, body, _) = post(&server, ALPHA, &h("tools/list"), body.to_string()).await;
    let result = body.unwrap()["result"].clone();
    assert!(result["ttlMs"].as_u64().is_some());
    assert!(["public", "private"].contains(&result["cacheScope"].as_str().unwrap()));
    assert_eq!(result["resultType"], "complete");
}
