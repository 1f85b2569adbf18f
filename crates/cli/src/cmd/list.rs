//! `supervise list`: the operator's queue as an aligned table or one JSON document
//! (`main` routes `list --watch` to `watch.rs`).

use std::io::Write;

use anyhow::Result;
use supervise_store::Store;

use super::{Ctx, print_json, queue};
use crate::cli::ListArgs;

pub async fn run(ctx: &Ctx, store: &Store, args: &ListArgs, out: &mut dyn Write) -> Result<()> {
    let proposals = queue::snapshot(store, args).await?;
    if args.json {
        return print_json(out, &queue::document(&proposals));
    }
    queue::print_table(ctx, store, &proposals, args, out).await
}
