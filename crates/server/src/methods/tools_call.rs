//! `tools/call`: an unknown tool is a protocol error (-32602, as the MCP specification's own
//! example shows); everything the tool itself refuses is a result with `isError: true`. A
//! proposal call that declared the tasks extension may be answered with a task.

use serde_json::{Map, Value};
use supervise_protocol::{CallToolParams, ErrorObject, methods, parse_params};
use supervise_store::text::escape_untrusted;

use super::Output;
use super::ctx::Ctx;
use crate::grace::{Filed, Wait};
use crate::{task, tools};

/// A call whose name and arguments were read by `parse_tool_call`.
pub(crate) async fn call_read(
    ctx: &Ctx<'_>,
    tool: String,
    arguments: Map<String, Value>,
) -> Result<Output, ErrorObject> {
    let parsed = tools::parse(&tool, &arguments);
    // The call holds only its typed arguments from here, also while it waits.
    drop(arguments);
    call_parsed(ctx, &tool, parsed).await
}

pub(crate) async fn call(ctx: &Ctx<'_>, params: Option<Value>) -> Result<Output, ErrorObject> {
    let empty = Map::new();
    let (name, parsed) = match name_and_arguments(params.as_ref(), &empty) {
        Some((name, args)) => (name.to_owned(), tools::parse(name, args)),
        None => {
            // Not the usual shape: serde's reading gives the exact refusal (or the rare
            // shape it accepts that the quick reading does not).
            let params: CallToolParams = parse_params(methods::TOOLS_CALL, params.as_ref())?;
            let parsed = tools::parse(&params.name, &params.arguments.unwrap_or_default());
            (params.name, parsed)
        }
    };
    // The call holds only its typed arguments from here, also while it waits.
    drop(params);
    call_parsed(ctx, &name, parsed).await
}

/// `params.name` and `params.arguments` read in place, when `params` has the shape
/// `CallToolParams` accepts: a string `name`, `arguments` and `_meta` objects or null or
/// absent (anything else is ignored, as its `extra` is). `None`: let serde decide.
fn name_and_arguments<'a>(
    params: Option<&'a Value>,
    empty: &'a Map<String, Value>,
) -> Option<(&'a str, &'a Map<String, Value>)> {
    let params = params?.as_object()?;
    let name = params.get("name")?.as_str()?;
    let args = match params.get("arguments") {
        None | Some(Value::Null) => empty,
        Some(Value::Object(args)) => args,
        Some(_) => return None,
    };
    if !matches!(
        params.get("_meta"),
        None | Some(Value::Null | Value::Object(_))
    ) {
        return None;
    }
    Some((name, args))
}

async fn call_parsed(
    ctx: &Ctx<'_>,
    name: &str,
    parsed: Option<Result<tools::Call, crate::answer::Answer>>,
) -> Result<Output, ErrorObject> {
    let answer = match parsed {
        None => {
            return Err(ErrorObject::invalid_params(format!(
                "Unknown tool: {} (this server has: {})",
                name,
                tools::NAMES.join(", ")
            )));
        }
        Some(Err(refused)) => Filed::Answer(refused),
        Some(Ok(call)) => {
            let wait = if ctx.declares_tasks() {
                Wait::Task
            } else {
                Wait::Grace
            };
            tools::apply(ctx.app, ctx.bottle, call, wait).await
        }
    };
    let answer = match answer {
        Filed::Answer(a) => a,
        // Waited for by the request's top level, after everything above it has returned.
        Filed::Held(held) => return Ok(Output::Held(held)),
        Filed::Task(t, p) => {
            tracing::debug!(tool = ?escape_untrusted(name), "tool answered with a task");
            return serde_json::to_value(task::created(ctx.app.config.task_poll_interval, &t, &p))
                .map(Output::Value)
                .map_err(ErrorObject::internal);
        }
    };
    tracing::debug!(tool = ?escape_untrusted(name), status = answer.status.map_or("list", crate::answer::AnswerStatus::as_str), "tool answered");
    Ok(Output::Tool(answer))
}
