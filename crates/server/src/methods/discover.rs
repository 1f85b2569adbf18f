//! `server/discover` (2026-07-28): versions, capabilities (the tasks extension among them),
//! identity and cache hints.

use serde_json::Value;
use supervise_protocol::{CacheScope, DiscoverResult, ServerCapabilities, TASKS_EXTENSION};

use super::ctx::{CACHE_TTL_MS, Ctx, INSTRUCTIONS};

pub(crate) fn call(ctx: &Ctx<'_>) -> Value {
    let result = DiscoverResult::new(
        &ctx.app.server_info,
        super::empty::declare(
            ServerCapabilities::default()
                .with_tools(false)
                .with_extension(TASKS_EXTENSION, serde_json::json!({})),
        ),
    )
    .with_instructions(INSTRUCTIONS)
    .with_cache(CACHE_TTL_MS, CacheScope::Public);
    serde_json::to_value(result).expect("discover result serialises")
}
