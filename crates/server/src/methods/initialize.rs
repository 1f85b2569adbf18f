//! `initialize` (handshake era): answers the client's revision when served, else 2025-11-25.
//! No session is minted: every later request stands on its own.

use serde_json::Value;
use supervise_protocol::{
    ErrorObject, InitializeParams, InitializeResult, methods, negotiate, parse_params,
};

use supervise_store::text::escape_untrusted;

use super::ctx::{Ctx, INSTRUCTIONS};

pub(crate) fn call(ctx: &Ctx<'_>, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let params: InitializeParams = parse_params(methods::INITIALIZE, params)?;
    let version = negotiate(&params.protocol_version);
    tracing::debug!(
        requested = ?escape_untrusted(&params.protocol_version),
        answered = %version,
        client = params.client_info.as_ref().map(|c| escape_untrusted(&c.name)).as_deref(),
        "initialize"
    );
    let mut result =
        InitializeResult::new(version, ctx.app.server_info.clone()).with_instructions(INSTRUCTIONS);
    result.capabilities = super::empty::declare(result.capabilities);
    serde_json::to_value(result).map_err(ErrorObject::internal)
}
