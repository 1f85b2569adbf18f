//! One module per JSON-RPC method, each with `call(ctx, params)`; [`Method`] dispatches, and
//! its explicit `Unknown` case becomes METHOD_NOT_FOUND.

mod discover;
mod empty;
mod initialize;
mod ping;
mod tools_call;
mod tools_list;

use serde_json::Value;
use supervise_protocol::{ErrorObject, ModernMeta, ProtocolVersion, methods};
use supervise_store::Bottle;

use crate::app::App;

/// What a method handler knows about its request.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    pub(crate) app: &'a App,
    pub(crate) bottle: &'a Bottle,
    /// The revision the request is served under.
    pub(crate) version: ProtocolVersion,
    /// The per-request metadata of a 2026-07-28 request.
    #[expect(
        dead_code,
        reason = "no method reads the client's declared capabilities yet"
    )]
    pub(crate) modern: Option<ModernMeta>,
}

/// The methods served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Initialize,
    Ping,
    ToolsList,
    ToolsCall,
    Discover,
    PromptsList,
    PromptsGet,
    ResourcesList,
    ResourceTemplatesList,
    ResourcesRead,
    Unknown,
}

impl Method {
    /// The method named `name` in the given era (`initialize` and `ping` do not exist in
    /// 2026-07-28).
    pub(crate) fn parse(name: &str, modern: bool) -> Method {
        match name {
            methods::INITIALIZE if !modern => Method::Initialize,
            methods::PING if !modern => Method::Ping,
            methods::TOOLS_LIST => Method::ToolsList,
            methods::TOOLS_CALL => Method::ToolsCall,
            methods::SERVER_DISCOVER => Method::Discover,
            "prompts/list" => Method::PromptsList,
            "prompts/get" => Method::PromptsGet,
            "resources/list" => Method::ResourcesList,
            "resources/templates/list" => Method::ResourceTemplatesList,
            "resources/read" => Method::ResourcesRead,
            _ => Method::Unknown,
        }
    }

    /// Runs the method; the error is sent as the JSON-RPC error.
    pub(crate) async fn call(
        self,
        name: &str,
        ctx: &Ctx<'_>,
        params: Option<&Value>,
    ) -> Result<Value, ErrorObject> {
        match self {
            Method::Initialize => initialize::call(ctx, params),
            Method::Ping => Ok(ping::call()),
            Method::ToolsList => Ok(tools_list::call(ctx)),
            Method::ToolsCall => tools_call::call(ctx, params).await,
            Method::Discover => Ok(discover::call(ctx)),
            Method::PromptsList => Ok(empty::list(ctx, "prompts")),
            Method::ResourcesList => Ok(empty::list(ctx, "resources")),
            Method::ResourceTemplatesList => Ok(empty::list(ctx, "resourceTemplates")),
            Method::PromptsGet => Err(empty::get_prompt(params)),
            Method::ResourcesRead => Err(empty::read_resource(ctx, params)),
            Method::Unknown => Err(ErrorObject::method_not_found(name)),
        }
    }
}

/// Guidance for the model, sent in `initialize` and `server/discover`.
pub(crate) const INSTRUCTIONS: &str = "This server lets you ask a human operator for access your \
sandbox does not have: propose-egress for a host/port, propose-git-push for a ref. A proposal \
waits briefly for the operator; if the answer is `pending`, keep the proposal_id and poll \
check-proposal later instead of proposing again. list-proposals shows your open proposals; \
withdraw-proposal takes one back.";

/// How long a `tools/list` or `server/discover` result may be cached (the tool set never
/// changes while the server runs).
pub(crate) const CACHE_TTL_MS: u64 = 3_600_000;
