//! One module per JSON-RPC method, each with `call(ctx, params)`; [`Method`] dispatches, and
//! its explicit `Unknown` case becomes METHOD_NOT_FOUND.

mod ctx;
mod discover;
mod empty;
mod initialize;
mod ping;
pub(crate) mod subscriptions_listen;
mod tasks_cancel;
mod tasks_get;
mod tasks_update;
mod tools_call;
mod tools_list;

pub(crate) use ctx::Ctx;
use serde_json::Value;
use supervise_protocol::{ErrorObject, methods};

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
    TasksGet,
    TasksCancel,
    TasksUpdate,
    Unknown,
}

impl Method {
    /// The method named `name` in the given era (`initialize` and `ping` do not exist in
    /// 2026-07-28; the tasks extension exists only there, and its removed `tasks/list` and
    /// `tasks/result` are unknown, as are the legacy experimental tasks).
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
            methods::TASKS_GET if modern => Method::TasksGet,
            methods::TASKS_CANCEL if modern => Method::TasksCancel,
            methods::TASKS_UPDATE if modern => Method::TasksUpdate,
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
            Method::TasksGet => tasks_get::call(ctx, params).await,
            Method::TasksCancel => tasks_cancel::call(ctx, params).await,
            Method::TasksUpdate => tasks_update::call(ctx, params),
            Method::Unknown => Err(ErrorObject::method_not_found(name)),
        }
    }
}
