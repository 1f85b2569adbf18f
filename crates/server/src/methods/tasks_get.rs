//! `tasks/get` (tasks extension): the caller's own task, read from the store. The first read
//! that finds the decision delivers it; later reads return the same completed task for the
//! task's lifetime. Another bottle's task and an unknown id are the same -32602.

use serde_json::Value;
use supervise_protocol::{ErrorObject, TaskIdParams, methods, parse_params};

use super::ctx::Ctx;
use crate::task;

pub(crate) async fn call(ctx: &Ctx<'_>, params: Option<&Value>) -> Result<Value, ErrorObject> {
    ctx.require_tasks()?;
    let params: TaskIdParams = parse_params(methods::TASKS_GET, params)?;
    let read = ctx
        .app
        .store
        .read_task(ctx.bottle.id, &params.task_id)
        .await
        .map_err(|e| task_store_error(&e))?
        .ok_or_else(|| not_found(&params.task_id))?;
    serde_json::to_value(task::detailed(
        ctx.app.config.task_poll_interval,
        &read,
        ctx.version,
    ))
    .map_err(ErrorObject::internal)
}

/// The one error for a task the caller cannot see, whether it is another bottle's, unknown,
/// or past its lifetime: nothing in it tells them apart.
pub(crate) fn not_found(id: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!(
        "Task not found: {id} (no task of this bottle has that id, or its lifetime is over)"
    ))
}

/// A store failure on a tasks call: a removed bottle generation has no tasks any more (the
/// same -32602); anything else is internal, with the store's message.
pub(crate) fn task_store_error(e: &supervise_store::StoreError) -> ErrorObject {
    match e {
        supervise_store::StoreError::BottleGone(_) => {
            ErrorObject::invalid_params("Task not found (the bottle of this address was removed)")
        }
        e => ErrorObject::internal(format!("failed to {e}")),
    }
}
