//! `tasks/update` (tasks extension): acknowledged and ignored, since a proposal never asks
//! the agent for input (its tasks are never `input_required`).

use serde_json::{Value, json};
use supervise_protocol::{ErrorObject, UpdateTaskParams, methods, parse_params};

use super::ctx::Ctx;

pub(crate) fn call(ctx: &Ctx<'_>, params: Option<&Value>) -> Result<Value, ErrorObject> {
    ctx.require_tasks()?;
    let _: UpdateTaskParams = parse_params(methods::TASKS_UPDATE, params)?;
    Ok(json!({}))
}
