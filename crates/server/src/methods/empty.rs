//! `prompts/list`, `resources/list`, `resources/templates/list`, `prompts/get` and
//! `resources/read`: this server has no prompts and no resources. It still declares both
//! capabilities and answers the lists empty (with the 2026-07-28 cache hints), so generic
//! clients, and conformance checks that expect every list to carry cache hints, get a
//! well-formed answer instead of METHOD_NOT_FOUND; a lookup by name or URI finds nothing.

use serde_json::{Value, json};
use supervise_protocol::{ErrorCode, ErrorObject, ServerCapabilities};

use super::ctx::{CACHE_TTL_MS, Ctx};

/// Adds the (empty) `prompts` and `resources` capabilities.
pub(crate) fn declare(mut caps: ServerCapabilities) -> ServerCapabilities {
    caps.extra
        .insert("prompts".into(), json!({ "listChanged": false }));
    caps.extra.insert(
        "resources".into(),
        json!({ "listChanged": false, "subscribe": false }),
    );
    caps
}

/// An empty list result under `key`, with cache hints in 2026-07-28.
pub(crate) fn list(ctx: &Ctx<'_>, key: &str) -> Value {
    let mut out = serde_json::Map::new();
    out.insert(key.into(), json!([]));
    if ctx.version.is_modern() {
        out.insert("ttlMs".into(), json!(CACHE_TTL_MS));
        out.insert("cacheScope".into(), json!("public"));
    }
    Value::Object(out)
}

/// `prompts/get`: there are none.
pub(crate) fn get_prompt(params: Option<&Value>) -> ErrorObject {
    let name = params
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    ErrorObject::invalid_params(format!(
        "Unknown prompt: {name} (this server has no prompts)"
    ))
}

/// `resources/read`: there are none (-32002 before 2026-07-28, -32602 from then on).
pub(crate) fn read_resource(ctx: &Ctx<'_>, params: Option<&Value>) -> ErrorObject {
    let uri = params
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let message = format!("Resource not found: {uri} (this server has no resources)");
    let code = if ctx.version.is_modern() {
        ErrorCode::INVALID_PARAMS
    } else {
        ErrorCode(-32002)
    };
    ErrorObject::new(code, message).with_data(json!({ "uri": uri }))
}
