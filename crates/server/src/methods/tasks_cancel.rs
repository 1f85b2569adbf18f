//! `tasks/cancel` (tasks extension): withdraws the caller's undecided proposal (the task then
//! reads `cancelled`); on a terminal task an empty ack that changes nothing.

use serde_json::{Value, json};
use supervise_protocol::{ErrorObject, TaskIdParams, methods, parse_params};

use super::ctx::Ctx;
use super::tasks_get::{not_found, task_store_error};

pub(crate) async fn call(ctx: &Ctx<'_>, params: Option<&Value>) -> Result<Value, ErrorObject> {
    ctx.require_tasks()?;
    let params: TaskIdParams = parse_params(methods::TASKS_CANCEL, params)?;
    ctx.app
        .store
        .cancel_task(ctx.bottle.id, &params.task_id)
        .await
        .map_err(|e| task_store_error(&e))?
        .ok_or_else(|| not_found(&params.task_id))?;
    Ok(json!({}))
}
