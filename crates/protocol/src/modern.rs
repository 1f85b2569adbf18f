//! The 2026-07-28 era: per-request `_meta`, `server/discover`, `resultType` and cache hints.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::jsonrpc::ErrorObject;
use crate::lifecycle::{Implementation, ServerCapabilities};
use crate::version::{ProtocolVersion, SUPPORTED_VERSIONS};

/// `_meta` key: the request's protocol revision (required on every modern request).
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for this request (required).
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version (should be sent).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the minimum log level for this request (optional).
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta` key: the server's name and version.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The per-request protocol fields of a modern request's `params._meta`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ModernMeta {
    /// The revision the request uses; always a modern revision this crate serves.
    pub protocol_version: ProtocolVersion,
    /// The client's capabilities for this request (`ClientCapabilities`), as sent.
    pub client_capabilities: Map<String, Value>,
    /// The client's identity, when sent and well-formed (self-reported: for logs only).
    pub client_info: Option<Implementation>,
    /// The requested minimum log level, when sent as a string.
    pub log_level: Option<String>,
}

impl ModernMeta {
    /// Whether the client declared extension `id` (e.g. `io.modelcontextprotocol/tasks`) in
    /// `clientCapabilities.extensions`.
    pub fn has_extension(&self, id: &str) -> bool {
        self.client_capabilities
            .get("extensions")
            .and_then(Value::as_object)
            .is_some_and(|e| e.contains_key(id))
    }
}

/// The raw `params._meta["io.modelcontextprotocol/protocolVersion"]` string, if present.
///
/// Useful to compare with the `MCP-Protocol-Version` header before anything else.
pub fn requested_version(params: Option<&Value>) -> Option<&str> {
    params?.get("_meta")?.get(META_PROTOCOL_VERSION)?.as_str()
}

/// Whether `params` are a modern (2026-07-28) request's: exactly when [`modern_meta`] is
/// `Some`, without reading or copying the fields.
pub fn is_modern_request(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
        .is_some_and(|meta| meta.contains_key(META_PROTOCOL_VERSION))
}

/// Read the per-request protocol fields of a modern (2026-07-28) request.
///
/// - `None`: `params._meta` has no `io.modelcontextprotocol/protocolVersion`, so this is a
///   legacy-era request.
/// - `Some(Err(-32602))`: the version is not a string, or `clientCapabilities` is missing or
///   not an object.
/// - `Some(Err(-32022))`: the version is not a modern revision served (checked before the
///   other fields, since another revision may require different ones). The error lists
///   [`SUPPORTED_VERSIONS`].
/// - `Some(Ok(meta))` otherwise. A malformed `clientInfo` or `logLevel` is ignored.
///
/// On HTTP every one of these errors is status 400.
pub fn modern_meta(params: Option<&Value>) -> Option<Result<ModernMeta, ErrorObject>> {
    let meta = params?.get("_meta")?.as_object()?;
    let version = meta.get(META_PROTOCOL_VERSION)?;
    Some(read_meta(meta, version))
}

fn read_meta(meta: &Map<String, Value>, version: &Value) -> Result<ModernMeta, ErrorObject> {
    let Some(requested) = version.as_str() else {
        return Err(ErrorObject::invalid_params(format!(
            "_meta field \"{META_PROTOCOL_VERSION}\" must be a string"
        )));
    };
    let client_capabilities = match meta.get(META_CLIENT_CAPABILITIES) {
        Some(Value::Object(caps)) => Ok(Some(caps.clone())),
        Some(_) => Err(NotAnObject),
        None => Ok(None),
    };
    read_meta_parts(
        requested,
        client_capabilities,
        meta.get(META_CLIENT_INFO).cloned().and_then(implementation),
        meta.get(META_LOG_LEVEL).cloned(),
    )
}

/// `clientInfo` as an [`Implementation`], `None` when malformed: read by hand when it has
/// only the modelled members (the usual case), else by serde, with the same result.
pub(crate) fn implementation(value: Value) -> Option<Implementation> {
    match value {
        Value::Object(map) if only_modelled_members(&map) => {
            let (mut name, mut version, mut title) = (String::new(), String::new(), None);
            for (key, value) in map {
                let Value::String(text) = value else { continue };
                match key.as_str() {
                    "name" => name = text,
                    "version" => version = text,
                    _ => title = Some(text),
                }
            }
            let mut info = Implementation::new(name, version);
            info.title = title;
            Some(info)
        }
        other => serde_json::from_value(other).ok(),
    }
}

/// A string `name`, and besides it at most a string `version` and a string or null `title`.
fn only_modelled_members(map: &Map<String, Value>) -> bool {
    map.get("name").is_some_and(Value::is_string)
        && map.iter().all(|(k, v)| match k.as_str() {
            "name" | "version" => v.is_string(),
            "title" => v.is_string() || v.is_null(),
            _ => false,
        })
}

/// A `_meta` member that is there but not a JSON object.
pub(crate) struct NotAnObject;

/// [`modern_meta`]'s checks and reading, from the members already taken out of `_meta`
/// (shared with [`crate::parse_tool_call`], so both read a request the same way).
pub(crate) fn read_meta_parts(
    requested: &str,
    client_capabilities: Result<Option<Map<String, Value>>, NotAnObject>,
    client_info: Option<Implementation>,
    log_level: Option<Value>,
) -> Result<ModernMeta, ErrorObject> {
    let protocol_version = ProtocolVersion::parse(requested)
        .filter(|v| v.is_modern())
        .ok_or_else(|| ErrorObject::unsupported_protocol_version(&SUPPORTED_VERSIONS, requested))?;
    let client_capabilities = match client_capabilities {
        Ok(Some(caps)) => caps,
        Err(NotAnObject) => {
            return Err(ErrorObject::invalid_params(format!(
                "_meta field \"{META_CLIENT_CAPABILITIES}\" must be an object"
            )));
        }
        Ok(None) => {
            return Err(ErrorObject::invalid_params(format!(
                "missing required _meta field \"{META_CLIENT_CAPABILITIES}\""
            )));
        }
    };
    let log_level = match log_level {
        Some(Value::String(level)) => Some(level),
        _ => None,
    };
    Ok(ModernMeta {
        protocol_version,
        client_capabilities,
        client_info,
        log_level,
    })
}

/// `resultType`: how a client should read a 2026-07-28 result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResultType {
    /// The request completed; the result holds the final content.
    Complete,
    /// More input is needed (`InputRequiredResult`, multi round-trip requests).
    InputRequired,
    /// A task was created (tasks extension).
    Task,
}

/// `cacheScope`: who may share a cached copy of a result (like `Cache-Control`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Holds no caller-specific data; any cache may share it.
    Public,
    /// Reuse only within the same authorization context.
    Private,
}

/// The `server/discover` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DiscoverResult {
    /// Always [`ResultType::Complete`] when built here.
    pub result_type: ResultType,
    /// Every revision served, newest first.
    pub supported_versions: Vec<String>,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// Guidance for the model about using this server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long the result stays fresh, in milliseconds.
    pub ttl_ms: u64,
    /// Who may share a cached copy.
    pub cache_scope: CacheScope,
    /// `_meta`, holding `io.modelcontextprotocol/serverInfo` when built here.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl DiscoverResult {
    /// A result listing [`SUPPORTED_VERSIONS`], naming the server in `_meta`, not cacheable
    /// (`ttlMs: 0`, `cacheScope: "private"`) until [`DiscoverResult::with_cache`].
    pub fn new(server_info: &Implementation, capabilities: ServerCapabilities) -> Self {
        let mut meta = Map::new();
        meta.insert(META_SERVER_INFO.to_owned(), server_info_value(server_info));
        Self {
            result_type: ResultType::Complete,
            supported_versions: SUPPORTED_VERSIONS.iter().map(|v| (*v).to_owned()).collect(),
            capabilities,
            instructions: None,
            ttl_ms: 0,
            cache_scope: CacheScope::Private,
            meta: Some(meta),
        }
    }

    /// The same result with `instructions` set.
    #[must_use]
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// The same result with cache hints.
    #[must_use]
    pub fn with_cache(mut self, ttl_ms: u64, scope: CacheScope) -> Self {
        self.ttl_ms = ttl_ms;
        self.cache_scope = scope;
        self
    }
}

fn server_info_value(server_info: &Implementation) -> Value {
    // An Implementation is plain strings and maps: serialising it cannot fail.
    serde_json::to_value(server_info).unwrap_or(Value::Null)
}

/// Make a result object a 2026-07-28 result: add `"resultType": "complete"` unless it has a
/// `resultType`, and set `_meta["io.modelcontextprotocol/serverInfo"]` (keeping other `_meta`
/// keys). A value that is not an object is returned unchanged.
pub fn modern_result(result: Value, server_info: &Implementation) -> Value {
    let Value::Object(mut map) = result else {
        return result;
    };
    map.entry("resultType")
        .or_insert_with(|| Value::from("complete"));
    let meta = map
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Value::Object(meta) = meta {
        meta.insert(META_SERVER_INFO.to_owned(), server_info_value(server_info));
    }
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::ErrorCode;
    use serde_json::json;

    fn meta_params(meta: Value) -> Value {
        json!({ "name": "check-proposal", "_meta": meta })
    }

    #[test]
    fn a_modern_request_is_one_with_modern_meta() {
        let cases = [
            json!({"name": "x"}),
            meta_params(json!(3)),
            meta_params(json!({})),
            meta_params(json!({META_PROTOCOL_VERSION: 7})),
            meta_params(json!({META_PROTOCOL_VERSION: "2026-07-28"})),
            meta_params(json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}})),
            json!(null),
        ];
        for params in cases {
            assert_eq!(
                is_modern_request(Some(&params)),
                modern_meta(Some(&params)).is_some(),
                "{params}"
            );
        }
        assert!(!is_modern_request(None));
    }

    #[test]
    fn legacy_requests_have_no_modern_meta() {
        assert!(modern_meta(None).is_none());
        assert!(modern_meta(Some(&json!({}))).is_none());
        assert!(modern_meta(Some(&json!({"_meta": {"progressToken": 1}}))).is_none());
        assert!(modern_meta(Some(&json!({"_meta": "x"}))).is_none());
        assert!(modern_meta(Some(&json!([1, 2]))).is_none());
        assert_eq!(requested_version(Some(&json!({"_meta": {}}))), None);
    }

    #[test]
    fn reads_all_fields() {
        let params = meta_params(json!({
            META_PROTOCOL_VERSION: "2026-07-28",
            META_CLIENT_CAPABILITIES: {"extensions": {"io.modelcontextprotocol/tasks": {}}},
            META_CLIENT_INFO: {"name": "ExampleClient", "version": "1.0.0"},
            META_LOG_LEVEL: "debug"
        }));
        assert_eq!(requested_version(Some(&params)), Some("2026-07-28"));
        let meta = modern_meta(Some(&params)).unwrap().unwrap();
        assert_eq!(meta.protocol_version, ProtocolVersion::V2026_07_28);
        assert!(meta.has_extension("io.modelcontextprotocol/tasks"));
        assert!(!meta.has_extension("io.modelcontextprotocol/ui"));
        assert_eq!(meta.client_info.unwrap().name, "ExampleClient");
        assert_eq!(meta.log_level.as_deref(), Some("debug"));
    }

    #[test]
    fn missing_capabilities_is_invalid_params() {
        let params = meta_params(json!({ META_PROTOCOL_VERSION: "2026-07-28" }));
        let err = modern_meta(Some(&params)).unwrap().unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
        assert!(
            err.message.contains(META_CLIENT_CAPABILITIES),
            "{}",
            err.message
        );

        let params = meta_params(json!({
            META_PROTOCOL_VERSION: "2026-07-28",
            META_CLIENT_CAPABILITIES: []
        }));
        let err = modern_meta(Some(&params)).unwrap().unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS);

        let params = meta_params(json!({ META_PROTOCOL_VERSION: 20260728 }));
        let err = modern_meta(Some(&params)).unwrap().unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
        assert!(err.message.contains("must be a string"), "{}", err.message);
    }

    #[test]
    fn unserved_version_is_unsupported_protocol_version() {
        for requested in ["1900-01-01", "2025-11-25", "2027-01-01"] {
            // Even without clientCapabilities: the version is judged first.
            let params = meta_params(json!({ META_PROTOCOL_VERSION: requested }));
            let err = modern_meta(Some(&params)).unwrap().unwrap_err();
            assert_eq!(err.code, ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
            assert_eq!(
                err.data,
                Some(json!({
                    "supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"],
                    "requested": requested
                }))
            );
        }
    }

    #[test]
    fn client_info_read_by_hand_is_what_serde_reads() {
        for v in [
            json!({"name": "c", "version": "1"}),
            json!({"name": "c"}),
            json!({"name": "c", "version": "1", "title": "T"}),
            json!({"name": "c", "version": "1", "title": null}),
            json!({"name": "c", "version": 1}),
            json!({"name": "c", "version": "1", "icons": []}),
            json!({"version": "1"}),
            json!({"name": null}),
            json!({"name": "c", "title": 5}),
            json!("c"),
            json!(null),
        ] {
            assert_eq!(
                implementation(v.clone()),
                serde_json::from_value::<Implementation>(v.clone()).ok(),
                "{v}"
            );
        }
    }

    #[test]
    fn malformed_client_info_is_ignored() {
        let params = meta_params(json!({
            META_PROTOCOL_VERSION: "2026-07-28",
            META_CLIENT_CAPABILITIES: {},
            META_CLIENT_INFO: "not an object"
        }));
        let meta = modern_meta(Some(&params)).unwrap().unwrap();
        assert_eq!(meta.client_info, None);
    }

    #[test]
    fn modern_result_adds_result_type_and_server_info() {
        let info = Implementation::new("supervise", "0.1.0");
        let out = modern_result(json!({"tools": [], "_meta": {"k": 1}}), &info);
        assert_eq!(
            out,
            json!({
                "tools": [],
                "resultType": "complete",
                "_meta": {"k": 1, META_SERVER_INFO: {"name": "supervise", "version": "0.1.0"}}
            })
        );
        // An existing resultType is kept; a non-object _meta is replaced.
        let out = modern_result(json!({"resultType": "task", "_meta": 3}), &info);
        assert_eq!(out["resultType"], "task");
        assert_eq!(out["_meta"][META_SERVER_INFO]["name"], "supervise");
        assert_eq!(modern_result(json!(null), &info), json!(null));
    }
}
