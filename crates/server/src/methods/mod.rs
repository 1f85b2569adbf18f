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
use serde_json::{Map, Value};
use supervise_protocol::{ErrorObject, methods};

use crate::answer::Answer;
use crate::grace::Held;

/// A request's `params`, as the request was read.
#[derive(Debug)]
pub(crate) enum Params {
    /// Read by the general path (`parse_message`): the whole `params`, when present.
    Tree(Option<Value>),
    /// A `tools/call` read by `parse_tool_call`: the tool's name and arguments (the `_meta`
    /// it needs is in [`Ctx`]).
    ToolCall {
        tool: String,
        arguments: Map<String, Value>,
    },
}

/// A method's result.
#[derive(Debug)]
pub(crate) enum Output {
    /// Any result, as JSON.
    Value(Value),
    /// A tool's answer, written to the wire straight from its parts (`Answer::to_wire`).
    Tool(Answer),
    /// A proposal filed and undecided: the tool's answer once its grace window has been
    /// waited ([`Held::wait`]).
    Held(Box<Held>),
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

    /// Runs the method; the error is sent as the JSON-RPC error. `params` is given away so
    /// that a call that waits (a proposal tool) holds only what it parsed from them. The
    /// arms that talk to the store are boxed: their futures are kilobytes (sqlx's state
    /// machines), and inline they would size every call's state, held ones included, for
    /// the largest of them.
    pub(crate) async fn call(
        self,
        name: &str,
        ctx: &Ctx<'_>,
        params: Params,
    ) -> Result<Output, ErrorObject> {
        let params = match params {
            Params::Tree(params) => params,
            Params::ToolCall { tool, arguments } => {
                // Only `tools/call` is read by the shortcut.
                debug_assert_eq!(self, Method::ToolsCall);
                return tools_call::call_read(ctx, tool, arguments).await;
            }
        };
        let params_ref = params.as_ref();
        let result = match self {
            Method::Initialize => initialize::call(ctx, params_ref),
            Method::Ping => Ok(ping::call()),
            Method::ToolsList => Ok(tools_list::call(ctx)),
            Method::ToolsCall => return tools_call::call(ctx, params).await,
            Method::Discover => Ok(discover::call(ctx)),
            Method::PromptsList => Ok(empty::list(ctx, "prompts")),
            Method::ResourcesList => Ok(empty::list(ctx, "resources")),
            Method::ResourceTemplatesList => Ok(empty::list(ctx, "resourceTemplates")),
            Method::PromptsGet => Err(empty::get_prompt(params_ref)),
            Method::ResourcesRead => Err(empty::read_resource(ctx, params_ref)),
            Method::TasksGet => Box::pin(tasks_get::call(ctx, params_ref)).await,
            Method::TasksCancel => Box::pin(tasks_cancel::call(ctx, params_ref)).await,
            Method::TasksUpdate => tasks_update::call(ctx, params_ref),
            Method::Unknown => Err(ErrorObject::method_not_found(name)),
        };
        result.map(Output::Value)
    }
}
