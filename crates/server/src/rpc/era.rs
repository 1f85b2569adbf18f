//! The protocol era of one request and, in 2026-07-28, its header and `_meta` checks, on
//! what both readings of a request (`parse_message`, `parse_tool_call`) give: a [`Head`].

use http::{HeaderMap, StatusCode};
use serde_json::Value;
use supervise_protocol::{
    DEFAULT_WITHOUT_HEADER, ErrorObject, ModernMeta, ProtocolVersion, Request, SUPPORTED_VERSIONS,
    decode_header_value, header, is_modern_request, methods, requested_version,
};

use crate::methods::Method;

/// A header's value, trimmed; `None` when absent or not text.
pub(super) fn header_value<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get(name)
        .map(|v| v.to_str().map(str::trim).unwrap_or_default())
}

/// What the era and header checks read from a request, however it was decoded.
pub(super) struct Head<'r> {
    pub(super) method: &'r str,
    /// `params._meta` holds a protocol version ([`is_modern_request`]).
    pub(super) has_meta: bool,
    /// That version when it is a string ([`requested_version`]).
    pub(super) requested_version: Option<&'r str>,
    /// `params.name` when it is a string.
    pub(super) tool_name: Option<&'r str>,
    /// `params.taskId` when it is a string.
    pub(super) task_id: Option<&'r str>,
}

impl<'r> Head<'r> {
    pub(super) fn of(req: &'r Request) -> Self {
        let param = |name: &str| {
            req.params
                .as_ref()
                .and_then(|p| p.get(name))
                .and_then(Value::as_str)
        };
        Head {
            method: &req.method,
            has_meta: is_modern_request(req.params.as_ref()),
            requested_version: requested_version(req.params.as_ref()),
            tool_name: param("name"),
            task_id: param("taskId"),
        }
    }
}

/// The era of a request, and in 2026-07-28 its header and `_meta` checks (`meta` reads the
/// `_meta` fields, as [`modern_meta`] does): the method, the revision and the `_meta`, or
/// the refusal with its status.
pub(super) fn check(
    headers: &HeaderMap,
    head: &Head<'_>,
    meta: impl FnOnce() -> Option<Result<ModernMeta, ErrorObject>>,
) -> Result<(Method, ProtocolVersion, Option<ModernMeta>), (StatusCode, ErrorObject)> {
    let header_version = header_value(headers, header::PROTOCOL_VERSION);
    let modern = head.has_meta
        || head.method == methods::SERVER_DISCOVER
        || header_version
            .and_then(ProtocolVersion::parse)
            .is_some_and(ProtocolVersion::is_modern);
    if !modern {
        let version = match header_version {
            // `initialize` negotiates its own revision from its params.
            _ if head.method == methods::INITIALIZE => DEFAULT_WITHOUT_HEADER,
            None => DEFAULT_WITHOUT_HEADER,
            Some(v) => ProtocolVersion::parse(v)
                .filter(|v| v.is_legacy())
                .ok_or_else(|| {
                    (
                        StatusCode::BAD_REQUEST,
                        ErrorObject::unsupported_protocol_version(&SUPPORTED_VERSIONS, v),
                    )
                })?,
        };
        return Ok((Method::parse(head.method, false), version, None));
    }
    if let Err(detail) = check_modern_headers(headers, header_version, head) {
        return Err((
            StatusCode::BAD_REQUEST,
            ErrorObject::header_mismatch(detail),
        ));
    }
    let meta = match meta() {
        None => {
            return Err((
                StatusCode::BAD_REQUEST,
                ErrorObject::invalid_params(format!(
                    "missing required _meta field \"{}\" (2026-07-28 requests carry their protocol metadata in params._meta)",
                    supervise_protocol::META_PROTOCOL_VERSION
                )),
            ));
        }
        Some(Err(e)) => return Err((StatusCode::BAD_REQUEST, e)),
        Some(Ok(meta)) => meta,
    };
    let method = Method::parse(head.method, true);
    if method == Method::Unknown {
        return Err((
            StatusCode::NOT_FOUND,
            ErrorObject::method_not_found(head.method),
        ));
    }
    Ok((method, meta.protocol_version, Some(meta)))
}

/// The 2026-07-28 request headers must mirror the body: `MCP-Protocol-Version` = `_meta`
/// version, `Mcp-Method` = `method`, `Mcp-Name` = `params.name` for `tools/call`, and
/// `Mcp-Name`, when sent, = `params.taskId` for `tasks/get|cancel|update` (some clients
/// send none there, which is tolerated).
pub(super) fn check_modern_headers(
    headers: &HeaderMap,
    header_version: Option<&str>,
    req: &Head<'_>,
) -> Result<(), String> {
    match header_value(headers, header::METHOD) {
        None => {
            return Err(format!(
                "missing Mcp-Method header (body method is {:?})",
                req.method
            ));
        }
        Some(m) if m != req.method => {
            return Err(format!(
                "Mcp-Method header {m:?} does not match body method {:?}",
                req.method
            ));
        }
        Some(_) => {}
    }
    let Some(header_version) = header_version else {
        return Err("missing MCP-Protocol-Version header".into());
    };
    if let Some(body_version) = req.requested_version
        && body_version != header_version
    {
        return Err(format!(
            "MCP-Protocol-Version header {header_version:?} does not match _meta protocolVersion {body_version:?}"
        ));
    }
    if req.method == methods::TOOLS_CALL
        && let Some(name) = req.tool_name
    {
        let raw = headers
            .get(header::NAME)
            .ok_or_else(|| format!("missing Mcp-Name header (body params.name is {name:?})"))?;
        let raw = raw
            .to_str()
            .map_err(|_| "Mcp-Name header is not visible ASCII".to_string())?;
        let decoded = decode_header_value(raw).map_err(|e| format!("failed to {e}"))?;
        if decoded != name {
            return Err(format!(
                "Mcp-Name header {decoded:?} does not match body params.name {name:?}"
            ));
        }
    }
    if matches!(
        req.method,
        methods::TASKS_GET | methods::TASKS_CANCEL | methods::TASKS_UPDATE
    ) && let Some(raw) = headers.get(header::NAME)
    {
        let task_id = req.task_id.unwrap_or("");
        let raw = raw
            .to_str()
            .map_err(|_| "Mcp-Name header is not visible ASCII".to_string())?;
        let decoded = decode_header_value(raw).map_err(|e| format!("failed to {e}"))?;
        if decoded != task_id {
            return Err(format!(
                "Mcp-Name header {decoded:?} does not match body params.taskId {task_id:?}"
            ));
        }
    }
    Ok(())
}
