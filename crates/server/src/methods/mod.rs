//! One module per JSON-RPC method, each with `call(ctx, params)`; [`Method`] dispatches, and
//! its explicit `Unknown` case becomes METHOD_NOT_FOUND.

pub mod discover;
pub mod empty;
pub mod initialize;
pub mod ping;
pub mod tools_call;
pub mod tools_list;

use serde_json::Value;
use supervise_protocol::{ErrorObject, ModernMeta, ProtocolVersion, methods};
use supervise_store::Bottle;

use crate::App;

/// What a method handler knows about its request.
#[derive(Debug)]
pub struct Ctx<'a> {
    pub app: &'a App,
    pub bottle: &'a Bottle,
    /// The revision the request is served under.
    pub version: ProtocolVersion,
    /// The per-request metadata of a 2026-07-28 request.
    pub modern: Option<ModernMeta>,
}

/// The methods served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
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
    pub fn parse(name: &str, modern: bool) -> Method {
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
    pub async fn call(
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
pub const INSTRUCTIONS: &str = "This server lets you ask a human operator for access your \
sandbox does not have: propose-egress for a host/port, propose-git-push for a ref. A proposal \
waits briefly for the operator; if the answer is `pending`, keep the proposal_id and poll \
check-proposal later instead of proposing again. list-proposals shows your open proposals; \
withdraw-proposal takes one back.";

/// How long a `tools/list` or `server/discover` result may be cached (the tool set never
/// changes while the server runs).
pub const CACHE_TTL_MS: u64 = 3_600_000;
