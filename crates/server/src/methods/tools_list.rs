//! `tools/list`: the five tools, with output schemas where the revision has them and cache
//! hints in 2026-07-28.

use serde_json::Value;
use supervise_protocol::{CacheScope, ListToolsResult};

use super::ctx::{CACHE_TTL_MS, Ctx};
use crate::tools;

pub(crate) fn call(ctx: &Ctx<'_>) -> Value {
    let result = ListToolsResult::new(tools::definitions())
        .with_cache(CACHE_TTL_MS, CacheScope::Public)
        .for_version(ctx.version);
    serde_json::to_value(result).expect("tool definitions serialise")
}
