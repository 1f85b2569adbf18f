//! `tools/call`: an unknown tool is a protocol error (-32602, as the MCP specification's own
//! example shows); everything the tool itself refuses is a result with `isError: true`. A
//! proposal call that declared the tasks extension may be answered with a task.

use serde_json::Value;
use supervise_protocol::{CallToolParams, ErrorObject, methods, parse_params};
use supervise_store::text::escape_untrusted;

use super::ctx::Ctx;
use crate::grace::{Filed, Wait};
use crate::{task, tools};

pub(crate) async fn call(ctx: &Ctx<'_>, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let params: CallToolParams = parse_params(methods::TOOLS_CALL, params)?;
    let args = params.arguments.unwrap_or_default();
    let answer = match tools::parse(&params.name, &args) {
        None => {
            return Err(ErrorObject::invalid_params(format!(
                "Unknown tool: {} (this server has: {})",
                params.name,
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
        Filed::Task(t, p) => {
            tracing::debug!(tool = ?escape_untrusted(&params.name), "tool answered with a task");
            return serde_json::to_value(task::created(ctx.app.config.task_poll_interval, &t, &p))
                .map_err(ErrorObject::internal);
        }
    };
    tracing::debug!(tool = ?escape_untrusted(&params.name), status = answer.status.unwrap_or("list"), "tool answered");
    serde_json::to_value(answer.into_result(ctx.version)).map_err(ErrorObject::internal)
}
