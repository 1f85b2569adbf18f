//! Golden fixtures copied from the MCP specification's examples, decoded and re-encoded.
//!
//! Each fixture names its page (`https://modelcontextprotocol.io/specification/<rev>/…`).
//! Comparisons are on `serde_json::Value`, so member order does not matter but every member
//! and value does.

use serde_json::{Value, json};
use supervise_protocol::{
    CacheScope, CallToolParams, CallToolResult, Content, DiscoverResult, ErrorCode, ErrorObject,
    Implementation, Incoming, InitializeParams, InitializeResult, ListToolsResult,
    META_SERVER_INFO, Outcome, ProtocolVersion, RequestId, Response, ServerCapabilities, Tool,
    ToolAnnotations, methods, modern_meta, modern_result, negotiate, parse_message, parse_params,
};

pub(crate) fn fixture(text: &str) -> Value {
    serde_json::from_str(text).expect("fixture is JSON")
}

/// Classify a request fixture, check it re-encodes to itself, return (method, params).
pub(crate) fn request(text: &str) -> (String, Option<Value>) {
    match parse_message(text.as_bytes()) {
        Ok(Incoming::Request(req)) => {
            assert_eq!(serde_json::to_value(&req).unwrap(), fixture(text));
            (req.method, req.params)
        }
        other => panic!("not a request: {other:?}"),
    }
}

/// Classify a response fixture, check it re-encodes to itself, return its result.
fn result(text: &str) -> Value {
    match parse_message(text.as_bytes()) {
        Ok(Incoming::Response(resp)) => {
            assert_eq!(serde_json::to_value(&resp).unwrap(), fixture(text));
            match resp.outcome {
                Outcome::Result(v) => v,
                Outcome::Error(e) => panic!("an error: {e}"),
            }
        }
        other => panic!("not a response: {other:?}"),
    }
}

/// Decode `value` as `T`, re-encode it, and require the same JSON back.
pub(crate) fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(value: &Value) -> T {
    let typed: T = serde_json::from_value(value.clone()).expect("decodes");
    assert_eq!(&serde_json::to_value(&typed).unwrap(), value);
    typed
}

// 2025-11-25/basic/lifecycle, "Initialization": the request, verbatim.
const INITIALIZE_REQUEST: &str = r#"{
  "jsonrpc": "2.0",
  "id": 1,
  "method": "initialize",
  "params": {
    "protocolVersion": "2024-11-05",
    "capabilities": {
      "roots": { "listChanged": true },
      "sampling": {},
      "elicitation": { "form": {}, "url": {} },
      "tasks": {
        "requests": {
          "elicitation": { "create": {} },
          "sampling": { "createMessage": {} }
        }
      }
    },
    "clientInfo": {
      "name": "ExampleClient",
      "title": "Example Client Display Name",
      "version": "1.0.0",
      "description": "An example MCP client application",
      "icons": [
        { "src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"] }
      ],
      "websiteUrl": "https://example.com"
    }
  }
}"#;

// 2025-11-25/basic/lifecycle, "Initialization": the response. The page answers
// "2024-11-05", which this server does not serve; the fixture says "2025-11-25" instead.
const INITIALIZE_RESPONSE: &str = r#"{
  "jsonrpc": "2.0",
  "id": 1,
  "result": {
    "protocolVersion": "2025-11-25",
    "capabilities": {
      "logging": {},
      "prompts": { "listChanged": true },
      "resources": { "subscribe": true, "listChanged": true },
      "tools": { "listChanged": true },
      "tasks": {
        "list": {},
        "cancel": {},
        "requests": { "tools": { "call": {} } }
      }
    },
    "serverInfo": {
      "name": "ExampleServer",
      "title": "Example Server Display Name",
      "version": "1.0.0",
      "description": "An example MCP server providing tools and resources",
      "icons": [
        { "src": "https://example.com/server-icon.svg", "mimeType": "image/svg+xml", "sizes": ["any"] }
      ],
      "websiteUrl": "https://example.com/server"
    },
    "instructions": "Optional instructions for the client"
  }
}"#;

#[test]
fn initialize_request() {
    let (method, params) = request(INITIALIZE_REQUEST);
    assert_eq!(method, methods::INITIALIZE);
    let params_value = params.expect("params");
    let init: InitializeParams = round_trip(&params_value);
    assert_eq!(init.protocol_version, "2024-11-05");
    let client = init.client_info.expect("clientInfo");
    assert_eq!(client.name, "ExampleClient");
    assert_eq!(client.title.as_deref(), Some("Example Client Display Name"));
    assert_eq!(client.extra["websiteUrl"], "https://example.com");
    assert!(init.capabilities.contains_key("elicitation"));
    // An unserved requested version is answered with the latest legacy one.
    assert_eq!(
        negotiate(&init.protocol_version),
        ProtocolVersion::V2025_11_25
    );
}

#[test]
fn initialize_params_are_lenient() {
    let init: InitializeParams = parse_params(
        methods::INITIALIZE,
        Some(&json!({"protocolVersion": "2025-06-18", "somethingNew": 1})),
    )
    .unwrap();
    assert_eq!(init.protocol_version, "2025-06-18");
    assert!(init.client_info.is_none());
    assert_eq!(init.extra["somethingNew"], 1);
    let err = parse_params::<InitializeParams>(methods::INITIALIZE, Some(&json!({}))).unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
    assert!(err.message.contains("protocolVersion"), "{}", err.message);
}

#[test]
fn initialize_response() {
    let value = result(INITIALIZE_RESPONSE);
    let init: InitializeResult = round_trip(&value);
    assert_eq!(init.protocol_version, ProtocolVersion::V2025_11_25);
    assert_eq!(init.server_info.name, "ExampleServer");
    assert_eq!(
        init.capabilities
            .tools
            .as_ref()
            .and_then(|t| t.list_changed),
        Some(true)
    );
    assert!(init.capabilities.extra.contains_key("logging"));
}

#[test]
fn initialize_result_builder() {
    let built = InitializeResult::new(
        negotiate("2025-06-18"),
        Implementation::new("supervise", "0.1.0"),
    )
    .with_instructions("Ask for egress with propose-egress.");
    let response = Response::result(RequestId::from(1), serde_json::to_value(&built).unwrap());
    assert_eq!(
        serde_json::to_value(&response).unwrap(),
        json!({
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "protocolVersion": "2025-06-18",
                "capabilities": { "tools": { "listChanged": false } },
                "serverInfo": { "name": "supervise", "version": "0.1.0" },
                "instructions": "Ask for egress with propose-egress."
            }
        })
    );
}

// 2025-11-25/server/tools, "Listing Tools": the response, verbatim.
const TOOLS_LIST_RESPONSE: &str = r#"{
  "jsonrpc": "2.0",
  "id": 1,
  "result": {
    "tools": [
      {
        "name": "get_weather",
        "title": "Weather Information Provider",
        "description": "Get current weather information for a location",
        "inputSchema": {
          "type": "object",
          "properties": {
            "location": { "type": "string", "description": "City name or zip code" }
          },
          "required": ["location"]
        },
        "icons": [
          { "src": "https://example.com/weather-icon.png", "mimeType": "image/png", "sizes": ["48x48"] }
        ]
      }
    ],
    "nextCursor": "next-page-cursor"
  }
}"#;

// 2026-07-28/server/tools, "Listing Tools": the same list with resultType and cache hints.
const TOOLS_LIST_RESPONSE_2026: &str = r#"{
  "jsonrpc": "2.0",
  "id": 1,
  "result": {
    "resultType": "complete",
    "tools": [
      {
        "name": "get_weather",
        "title": "Weather Information Provider",
        "description": "Get current weather information for a location",
        "inputSchema": {
          "type": "object",
          "properties": {
            "location": { "type": "string", "description": "City name or zip code" }
          },
          "required": ["location"]
        },
        "icons": [
          { "src": "https://example.com/weather-icon.png", "mimeType": "image/png", "sizes": ["48x48"] }
        ]
      }
    ],
    "nextCursor": "next-page-cursor",
    "ttlMs": 300000,
    "cacheScope": "public"
  }
}"#;

#[test]
fn tools_list_result() {
    let list: ListToolsResult = round_trip(&result(TOOLS_LIST_RESPONSE));
    assert_eq!(list.tools.len(), 1);
    assert_eq!(list.tools[0].name, "get_weather");
    assert_eq!(list.next_cursor.as_deref(), Some("next-page-cursor"));
    assert_eq!(list.ttl_ms, None);

    let list: ListToolsResult = round_trip(&result(TOOLS_LIST_RESPONSE_2026));
    assert_eq!(list.ttl_ms, Some(300_000));
    assert_eq!(list.cache_scope, Some(CacheScope::Public));
    assert_eq!(list.extra["resultType"], "complete");
    // The legacy form of the same list has no cache hints.
    let legacy = list.for_version(ProtocolVersion::V2025_11_25);
    assert_eq!(legacy.ttl_ms, None);
    assert_eq!(legacy.cache_scope, None);
}

// 2025-11-25/server/tools, "Output Schema": the example tool, verbatim.
const TOOL_WITH_OUTPUT_SCHEMA: &str = r#"{
  "name": "get_weather_data",
  "title": "Weather Data Retriever",
  "description": "Get current weather data for a location",
  "inputSchema": {
    "type": "object",
    "properties": {
      "location": { "type": "string", "description": "City name or zip code" }
    },
    "required": ["location"]
  },
  "outputSchema": {
    "type": "object",
    "properties": {
      "temperature": { "type": "number", "description": "Temperature in celsius" },
      "conditions": { "type": "string", "description": "Weather conditions description" },
      "humidity": { "type": "number", "description": "Humidity percentage" }
    },
    "required": ["temperature", "conditions", "humidity"]
  }
}"#;

#[test]
fn tool_with_output_schema() {
    let tool: Tool = round_trip(&fixture(TOOL_WITH_OUTPUT_SCHEMA));
    assert!(tool.output_schema.is_some());
    assert!(
        tool.clone()
            .for_version(ProtocolVersion::V2025_06_18)
            .output_schema
            .is_some()
    );
    assert!(
        tool.for_version(ProtocolVersion::V2025_03_26)
            .output_schema
            .is_none()
    );
}

#[test]
fn tool_builder() {
    let mut annotations = ToolAnnotations::default();
    annotations.read_only_hint = Some(true);
    let mut tool = Tool::new(
        "check-proposal",
        "Look up a proposal's status.",
        json!({"type": "object", "properties": {"proposal_id": {"type": "string"}}, "required": ["proposal_id"]}),
    );
    tool.annotations = Some(annotations);
    assert_eq!(
        serde_json::to_value(&tool).unwrap(),
        json!({
            "name": "check-proposal",
            "description": "Look up a proposal's status.",
            "inputSchema": {"type": "object", "properties": {"proposal_id": {"type": "string"}}, "required": ["proposal_id"]},
            "annotations": {"readOnlyHint": true}
        })
    );
}

// 2026-07-28/basic/transports/streamable-http, "Standard Request Headers": the tools/call
// body, verbatim.
const TOOLS_CALL_REQUEST_2026: &str = r#"{
  "jsonrpc": "2.0",
  "id": 1,
  "method": "tools/call",
  "params": {
    "name": "get_weather",
    "arguments": { "location": "Seattle, WA" },
    "_meta": {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientInfo": { "name": "ExampleClient", "version": "1.0.0" },
      "io.modelcontextprotocol/clientCapabilities": {}
    }
  }
}"#;

// 2025-11-25/server/tools, "Calling Tools": the request, verbatim (no _meta).
const TOOLS_CALL_REQUEST: &str = r#"{
  "jsonrpc": "2.0",
  "id": 2,
  "method": "tools/call",
  "params": { "name": "get_weather", "arguments": { "location": "New York" } }
}"#;

#[test]
fn tools_call_request_with_modern_meta() {
    let (method, params) = request(TOOLS_CALL_REQUEST_2026);
    assert_eq!(method, methods::TOOLS_CALL);
    let params = params.expect("params");
    let call: CallToolParams = round_trip(&params);
    assert_eq!(call.name, "get_weather");
    assert_eq!(call.arguments.as_ref().unwrap()["location"], "Seattle, WA");
    let meta = modern_meta(Some(&params)).expect("modern").expect("valid");
    assert_eq!(meta.protocol_version, ProtocolVersion::V2026_07_28);
    assert!(meta.client_capabilities.is_empty());
    assert_eq!(meta.client_info.expect("clientInfo").name, "ExampleClient");
}

#[test]
fn tools_call_request_legacy() {
    let (_, params) = request(TOOLS_CALL_REQUEST);
    let params = params.expect("params");
    let call: CallToolParams = parse_params(methods::TOOLS_CALL, Some(&params)).unwrap();
    assert_eq!(serde_json::to_value(&call).unwrap(), params);
    assert!(modern_meta(Some(&params)).is_none());
}

// 2025-11-25/server/tools, "Output Schema": the example response, verbatim.
const TOOLS_CALL_STRUCTURED: &str = r#"{
  "jsonrpc": "2.0",
  "id": 5,
  "result": {
    "content": [
      {
        "type": "text",
        "text": "{\"temperature\": 22.5, \"conditions\": \"Partly cloudy\", \"humidity\": 65}"
      }
    ],
    "structuredContent": { "temperature": 22.5, "conditions": "Partly cloudy", "humidity": 65 }
  }
}"#;

// 2025-11-25/server/tools, "Error Handling": the tool execution error, verbatim.
const TOOLS_CALL_IS_ERROR: &str = r#"{
  "jsonrpc": "2.0",
  "id": 4,
  "result": {
    "content": [
      {
        "type": "text",
        "text": "Invalid departure date: must be in the future. Current date is 08/08/2025."
      }
    ],
    "isError": true
  }
}"#;

// 2026-07-28/server/tools, "Output Schema": the array-valued structuredContent, verbatim.
const TOOLS_CALL_ARRAY_2026: &str = r#"{
  "jsonrpc": "2.0",
  "id": 6,
  "result": {
    "resultType": "complete",
    "content": [
      { "type": "text", "text": "Found 2 users: Alice (alice@example.com) and Bob (bob@example.com)." }
    ],
    "structuredContent": [
      { "id": "1", "name": "Alice", "email": "alice@example.com" },
      { "id": "2", "name": "Bob", "email": "bob@example.com" }
    ]
  }
}"#;

#[test]
fn tools_call_result_with_structured_content() {
    let res: CallToolResult = round_trip(&result(TOOLS_CALL_STRUCTURED));
    assert_eq!(res.structured_content.as_ref().unwrap()["humidity"], 65);
    assert_eq!(res.is_error, None);
    assert!(res.content[0].as_text().unwrap().contains("Partly cloudy"));
    // 2025-03-26 has no structuredContent.
    assert!(
        res.for_version(ProtocolVersion::V2025_03_26)
            .structured_content
            .is_none()
    );

    let res: CallToolResult = round_trip(&result(TOOLS_CALL_ARRAY_2026));
    assert!(res.structured_content.unwrap().is_array());
    assert_eq!(res.extra["resultType"], "complete");
}

#[test]
fn tools_call_result_is_error() {
    let res: CallToolResult = round_trip(&result(TOOLS_CALL_IS_ERROR));
    assert_eq!(res.is_error, Some(true));
    // The same result built with the constructors.
    let built = CallToolResult::text(
        "Invalid departure date: must be in the future. Current date is 08/08/2025.",
    )
    .with_is_error(true);
    assert_eq!(built, res);
}

#[test]
fn content_items_of_every_type_round_trip() {
    // 2025-11-25/server/tools, "Tool Result": image, audio, resource link, embedded resource.
    let items = json!([
        { "type": "image", "data": "base64-encoded-data", "mimeType": "image/png",
          "annotations": { "audience": ["user"], "priority": 0.9 } },
        { "type": "audio", "data": "base64-encoded-audio-data", "mimeType": "audio/wav" },
        { "type": "resource_link", "uri": "file:///project/src/main.rs", "name": "main.rs",
          "description": "Primary application entry point", "mimeType": "text/x-rust" },
        { "type": "resource", "resource": { "uri": "file:///project/src/main.rs",
          "mimeType": "text/x-rust", "text": "fn main() {}" } },
        { "type": "text", "text": "Tool result text" }
    ]);
    let content: Vec<Content> = round_trip(&items);
    assert!(matches!(content[0], Content::Image(_)));
    assert!(matches!(content[2], Content::ResourceLink(_)));
    assert_eq!(content[4], Content::text("Tool result text"));
}

// 2025-11-25/server/tools, "Error Handling": the protocol error, verbatim.
const UNKNOWN_TOOL_ERROR: &str = r#"{
  "jsonrpc": "2.0",
  "id": 3,
  "error": { "code": -32602, "message": "Unknown tool: invalid_tool_name" }
}"#;

// 2026-07-28/basic/versioning, "Protocol Version Negotiation", verbatim.
const UNSUPPORTED_VERSION_ERROR: &str = r#"{
  "jsonrpc": "2.0",
  "id": 1,
  "error": {
    "code": -32022,
    "message": "Unsupported protocol version",
    "data": { "supported": ["2026-07-28", "2025-11-25"], "requested": "1900-01-01" }
  }
}"#;

// 2026-07-28/basic/transports/streamable-http, "Server Validation", verbatim.
const HEADER_MISMATCH_ERROR: &str = r#"{
  "jsonrpc": "2.0",
  "id": 1,
  "error": {
    "code": -32020,
    "message": "Header mismatch: Mcp-Name header value 'foo' does not match body value 'bar'"
  }
}"#;

#[test]
fn error_responses_match_the_spec() {
    let cases = [
        (
            UNKNOWN_TOOL_ERROR,
            Response::error(
                Some(RequestId::from(3)),
                ErrorObject::invalid_params("Unknown tool: invalid_tool_name"),
            ),
        ),
        (
            UNSUPPORTED_VERSION_ERROR,
            Response::error(
                Some(RequestId::from(1)),
                ErrorObject::unsupported_protocol_version(
                    &["2026-07-28", "2025-11-25"],
                    "1900-01-01",
                ),
            ),
        ),
        (
            HEADER_MISMATCH_ERROR,
            Response::error(
                Some(RequestId::from(1)),
                ErrorObject::header_mismatch(
                    "Mcp-Name header value 'foo' does not match body value 'bar'",
                ),
            ),
        ),
    ];
    for (text, built) in cases {
        assert_eq!(serde_json::to_value(&built).unwrap(), fixture(text));
        // And the fixture decodes to the same response.
        match parse_message(text.as_bytes()) {
            Ok(Incoming::Response(decoded)) => assert_eq!(decoded, built),
            other => panic!("not a response: {other:?}"),
        }
    }
}

// server/discover result in the shape of the 2026-07-28 schema's DiscoverResult (required:
// resultType, supportedVersions, capabilities, ttlMs, cacheScope; serverInfo under _meta).
const DISCOVER_RESPONSE: &str = r#"{
  "jsonrpc": "2.0",
  "id": 1,
  "result": {
    "resultType": "complete",
    "supportedVersions": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"],
    "capabilities": { "tools": { "listChanged": false } },
    "instructions": "Propose policy changes; an operator decides.",
    "ttlMs": 60000,
    "cacheScope": "public",
    "_meta": {
      "io.modelcontextprotocol/serverInfo": { "name": "supervise", "version": "0.1.0" }
    }
  }
}"#;

#[test]
fn server_discover_result() {
    let value = result(DISCOVER_RESPONSE);
    let decoded: DiscoverResult = round_trip(&value);
    let built = DiscoverResult::new(
        &Implementation::new("supervise", "0.1.0"),
        ServerCapabilities::default().with_tools(false),
    )
    .with_instructions("Propose policy changes; an operator decides.")
    .with_cache(60_000, CacheScope::Public);
    assert_eq!(built, decoded);
    assert_eq!(serde_json::to_value(&built).unwrap(), value);
}

#[test]
fn modern_result_makes_a_legacy_result_modern() {
    // The 2025-11-25 tool result plus resultType and serverInfo is the 2026-07-28 one.
    let legacy = result(TOOLS_CALL_IS_ERROR);
    let modern = modern_result(legacy, &Implementation::new("supervise", "0.1.0"));
    assert_eq!(modern["resultType"], "complete");
    assert_eq!(modern["_meta"][META_SERVER_INFO]["name"], "supervise");
    assert_eq!(modern["isError"], true);
}
