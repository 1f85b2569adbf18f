//! JSON-RPC 2.0 envelopes: the version marker, request ids, error objects and responses.

use std::fmt;

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

/// The `"jsonrpc"` member: serialises as `"2.0"`, and deserialising anything else fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct JsonRpcVersion;

impl JsonRpcVersion {
    /// The only accepted value.
    pub const AS_STR: &'static str = "2.0";
}

impl Serialize for JsonRpcVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(Self::AS_STR)
    }
}

impl<'de> Deserialize<'de> for JsonRpcVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct VersionVisitor;
        impl Visitor<'_> for VersionVisitor {
            type Value = JsonRpcVersion;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("the string \"2.0\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<JsonRpcVersion, E> {
                if v == JsonRpcVersion::AS_STR {
                    Ok(JsonRpcVersion)
                } else {
                    Err(E::invalid_value(de::Unexpected::Str(v), &self))
                }
            }
        }
        deserializer.deserialize_str(VersionVisitor)
    }
}

/// A request id: a JSON number or a string. `null` is not a valid request id in MCP.
///
/// Numbers are kept as [`serde_json::Number`], so an id is echoed back exactly as received.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id, e.g. `1`.
    Number(Number),
    /// A string id, e.g. `"abc-1"`.
    String(String),
}

impl RequestId {
    /// The id held by a JSON value, if it is a number or a string.
    pub(crate) fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::Number(n) => Some(Self::Number(n.clone())),
            Value::String(s) => Some(Self::String(s.clone())),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl Visitor<'_> for IdVisitor {
            type Value = RequestId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a number")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RequestId, E> {
                Ok(RequestId::Number(v.into()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RequestId, E> {
                Ok(RequestId::Number(v.into()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RequestId, E> {
                Number::from_f64(v)
                    .map(RequestId::Number)
                    .ok_or_else(|| E::invalid_value(de::Unexpected::Float(v), &self))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RequestId, E> {
                Ok(RequestId::String(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<RequestId, E> {
                Ok(RequestId::String(v))
            }
        }
        deserializer.deserialize_any(IdVisitor)
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => f.write_str(s),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        Self::Number(n.into())
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        Self::String(s.to_owned())
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        Self::String(s)
    }
}

/// A JSON-RPC error code, with the codes MCP uses as named constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// Invalid JSON (including a body that is not UTF-8).
    pub const PARSE_ERROR: Self = Self(-32700);
    /// Valid JSON, but not a valid JSON-RPC message.
    pub const INVALID_REQUEST: Self = Self(-32600);
    /// Unknown method (on 2026-07-28 HTTP: status 404).
    pub const METHOD_NOT_FOUND: Self = Self(-32601);
    /// Bad params, unknown tool, missing required `_meta` field.
    pub const INVALID_PARAMS: Self = Self(-32602);
    /// A fault inside the server.
    pub const INTERNAL_ERROR: Self = Self(-32603);
    /// 2026-07-28: HTTP headers missing, malformed or not matching the body (HTTP 400).
    pub const HEADER_MISMATCH: Self = Self(-32020);
    /// 2026-07-28: the request needs a client capability it did not declare (HTTP 400).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: Self = Self(-32021);
    /// 2026-07-28: the requested protocol version is not served (HTTP 400).
    pub const UNSUPPORTED_PROTOCOL_VERSION: Self = Self(-32022);
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The `error` member of a JSON-RPC error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message} ({code})")]
pub struct ErrorObject {
    /// The error code.
    pub code: ErrorCode,
    /// A short human-readable description.
    pub message: String,
    /// Optional structured detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with this code and message and no data.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error with `data` set.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32700`, message `Parse error`.
    pub fn parse_error() -> Self {
        Self::new(ErrorCode::PARSE_ERROR, "Parse error")
    }

    /// `-32600`, message `Invalid Request: {detail}`.
    pub fn invalid_request(detail: impl fmt::Display) -> Self {
        Self::new(
            ErrorCode::INVALID_REQUEST,
            format!("Invalid Request: {detail}"),
        )
    }

    /// `-32601`, message `Method not found: {method}`.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    /// `-32602`, with `message` used verbatim (the spec's example is `Unknown tool: NAME`).
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, message)
    }

    /// `-32603`, message `Internal error: {detail}`.
    pub fn internal(detail: impl fmt::Display) -> Self {
        Self::new(
            ErrorCode::INTERNAL_ERROR,
            format!("Internal error: {detail}"),
        )
    }

    /// `-32020`, message `Header mismatch: {detail}` (the spec's example form).
    pub fn header_mismatch(detail: impl fmt::Display) -> Self {
        Self::new(
            ErrorCode::HEADER_MISMATCH,
            format!("Header mismatch: {detail}"),
        )
    }

    /// `-32021`, message `Missing required client capability`, with
    /// `data: {"requiredCapabilities": required}` (a `ClientCapabilities`-shaped object).
    pub fn missing_required_client_capability(required: Value) -> Self {
        Self::new(
            ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            "Missing required client capability",
        )
        .with_data(serde_json::json!({ "requiredCapabilities": required }))
    }

    /// `-32022`, message `Unsupported protocol version`, with
    /// `data: {"supported": [...], "requested": "..."}`.
    pub fn unsupported_protocol_version(supported: &[&str], requested: &str) -> Self {
        Self::new(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        )
        .with_data(serde_json::json!({ "supported": supported, "requested": requested }))
    }
}

/// A client-to-server request: it has an id and expects a response.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id to echo in the response.
    pub id: RequestId,
    /// The method name, e.g. `tools/call`.
    pub method: String,
    /// `params`: an object or an array when present.
    pub params: Option<Value>,
}

/// A one-way message without an id; it is never answered (on HTTP: `202 Accepted`).
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name, e.g. `notifications/initialized`.
    pub method: String,
    /// `params`: an object or an array when present.
    pub params: Option<Value>,
}

impl Serialize for Request {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", &JsonRpcVersion)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("method", &self.method)?;
        if let Some(params) = &self.params {
            map.serialize_entry("params", params)?;
        }
        map.end()
    }
}

impl Serialize for Notification {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", &JsonRpcVersion)?;
        map.serialize_entry("method", &self.method)?;
        if let Some(params) = &self.params {
            map.serialize_entry("params", params)?;
        }
        map.end()
    }
}

/// What a response carries: a result or an error.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// `"result": …`
    Result(Value),
    /// `"error": {…}`
    Error(ErrorObject),
}

/// A JSON-RPC response. Serialises as `{"jsonrpc":"2.0","id":…,"result"|"error":…}`, with
/// `"id": null` when the id is unknown (the request could not be read).
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request answered; `None` serialises as `null`.
    pub id: Option<RequestId>,
    /// The result or the error.
    pub outcome: Outcome,
}

impl Response {
    /// A success response.
    pub fn result(id: RequestId, result: Value) -> Self {
        Self {
            id: Some(id),
            outcome: Outcome::Result(result),
        }
    }

    /// An error response; `id: None` when the request's id could not be read.
    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Self {
        Self {
            id,
            outcome: Outcome::Error(error),
        }
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("jsonrpc", &JsonRpcVersion)?;
        map.serialize_entry("id", &self.id)?;
        match &self.outcome {
            Outcome::Result(result) => map.serialize_entry("result", result)?,
            Outcome::Error(error) => map.serialize_entry("error", error)?,
        }
        map.end()
    }
}

/// An error response, as [`crate::parse_message`] returns it: the server picks the HTTP
/// status from `error.code` and sends it as the body.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorResponse {
    /// The id of the offending request when it could be read; `None` serialises as `null`.
    pub id: Option<RequestId>,
    /// The error.
    pub error: ErrorObject,
}

impl ErrorResponse {
    /// An error response for `id` (`None`: unknown id).
    pub fn new(id: Option<RequestId>, error: ErrorObject) -> Self {
        Self { id, error }
    }
}

impl From<ErrorResponse> for Response {
    fn from(e: ErrorResponse) -> Self {
        Response::error(e.id, e.error)
    }
}

impl Serialize for ErrorResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("jsonrpc", &JsonRpcVersion)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("error", &self.error)?;
        map.end()
    }
}

/// Decode a request's `params` into `T`; absent params decode as `{}`.
///
/// A failure becomes `-32602` naming the method and serde's reason, e.g.
/// `invalid params for tools/call: missing field `name``.
pub fn parse_params<T: DeserializeOwned>(
    method: &str,
    params: Option<&Value>,
) -> Result<T, ErrorObject> {
    // Read from the borrowed tree (no copy of the params); absent params are an empty
    // object, which allocates nothing.
    let empty = Value::Object(Map::new());
    T::deserialize(params.unwrap_or(&empty))
        .map_err(|e| ErrorObject::invalid_params(format!("invalid params for {method}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn jsonrpc_version_accepts_only_2_0() {
        assert_eq!(serde_json::to_value(JsonRpcVersion).unwrap(), json!("2.0"));
        assert!(serde_json::from_value::<JsonRpcVersion>(json!("2.0")).is_ok());
        for bad in [
            json!("1.0"),
            json!("2"),
            json!(2.0),
            json!(null),
            json!("2.0 "),
        ] {
            assert!(
                serde_json::from_value::<JsonRpcVersion>(bad.clone()).is_err(),
                "accepted {bad}"
            );
        }
    }

    #[test]
    fn request_id_is_number_or_string_never_null() {
        let n: RequestId = serde_json::from_value(json!(7)).unwrap();
        assert_eq!(n, RequestId::from(7));
        let big: RequestId = serde_json::from_value(json!(u64::MAX)).unwrap();
        assert_eq!(serde_json::to_value(&big).unwrap(), json!(u64::MAX));
        let s: RequestId = serde_json::from_value(json!("a-1")).unwrap();
        assert_eq!(s, RequestId::from("a-1"));
        assert_eq!(s.to_string(), "a-1");
        for bad in [json!(null), json!(true), json!({}), json!([1])] {
            assert!(
                serde_json::from_value::<RequestId>(bad.clone()).is_err(),
                "accepted {bad}"
            );
        }
    }

    #[test]
    fn error_codes_have_spec_values() {
        assert_eq!(ErrorCode::PARSE_ERROR.0, -32700);
        assert_eq!(ErrorCode::INVALID_REQUEST.0, -32600);
        assert_eq!(ErrorCode::METHOD_NOT_FOUND.0, -32601);
        assert_eq!(ErrorCode::INVALID_PARAMS.0, -32602);
        assert_eq!(ErrorCode::INTERNAL_ERROR.0, -32603);
        assert_eq!(ErrorCode::HEADER_MISMATCH.0, -32020);
        assert_eq!(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY.0, -32021);
        assert_eq!(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.0, -32022);
    }

    #[test]
    fn named_constructors_set_code_and_message() {
        let e = ErrorObject::method_not_found("tools/frobnicate");
        assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
        assert_eq!(e.message, "Method not found: tools/frobnicate");
        assert_eq!(ErrorObject::parse_error().code.0, -32700);
        assert_eq!(
            ErrorObject::internal("db down").message,
            "Internal error: db down"
        );
        let e = ErrorObject::missing_required_client_capability(json!({"elicitation": {}}));
        assert_eq!(e.code.0, -32021);
        assert_eq!(
            e.data,
            Some(json!({"requiredCapabilities": {"elicitation": {}}}))
        );
        assert_eq!(e.to_string(), "Missing required client capability (-32021)");
    }

    #[test]
    fn responses_serialise_with_null_id_when_unknown() {
        let r = Response::error(None, ErrorObject::parse_error());
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}})
        );
        let r = Response::result(RequestId::from("x"), json!({}));
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"jsonrpc": "2.0", "id": "x", "result": {}})
        );
        let e = ErrorResponse::new(Some(RequestId::from(3)), ErrorObject::invalid_params("bad"));
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::to_value(Response::from(e)).unwrap()
        );
    }

    #[test]
    fn parse_params_reports_method_and_reason() {
        #[derive(Debug, Deserialize)]
        struct P {
            #[allow(dead_code)]
            name: String,
        }
        let err = parse_params::<P>("tools/call", Some(&json!({"name": 5}))).unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
        assert!(
            err.message.starts_with("invalid params for tools/call: "),
            "{}",
            err.message
        );
        let err = parse_params::<P>("tools/call", None).unwrap_err();
        assert!(
            err.message.contains("missing field `name`"),
            "{}",
            err.message
        );
    }
}
