//! The proposal scenarios: `propose` and `propose-capped` (grace 0, a new proposal per call),
//! and filing the undecided proposals the poll scenarios read.

use std::sync::Arc;

use anyhow::{Result, bail};

use super::ctx::{Ctx, Under, propose_args};
use crate::client::Style;
use crate::load::{self, LoadOpts, Plan};
use crate::stats::Row;

/// `propose`: every call files a new proposal (distinct hosts) and, with grace 0, is
/// answered `pending` once it is durable. `scenario` names the row: `propose` runs on a
/// server without a pending cap, `propose-capped` on one with a cap too high to reach, so
/// the two rows show what checking the cap costs as the proposals waiting pile up.
pub async fn propose(
    ctx: &Ctx,
    under: &Under,
    style: Style,
    tag: &str,
    scenario: &str,
) -> Result<Row> {
    let conns = load::open_conns(
        &under.target,
        ctx.connections,
        style,
        &ctx.ips(),
        ctx.connections,
    )
    .await?;
    let tag = tag.to_string();
    let plan: Plan = Arc::new(move |i, seq| {
        Some((
            "propose-egress",
            propose_args(&format!("{tag}-c{i}-{seq}.example.com")),
        ))
    });
    let out = load::run(
        conns,
        plan,
        LoadOpts {
            warmup: ctx.warmup,
            duration: Some(ctx.duration),
            expect: "pending",
            server_pid: under.pid,
        },
    )
    .await;
    Ok(out.row(scenario, style.version(), ctx.connections))
}

/// Files `per_conn` proposals from each of `n` connections (the i-th from bottle
/// `i % bottles`) and returns their ids by connection index.
pub async fn file_proposals(
    ctx: &Ctx,
    under: &Under,
    n: usize,
    per_conn: usize,
    tag: &str,
) -> Result<Vec<Vec<String>>> {
    let conns = load::open_conns(&under.target, n, Style::Modern, &ctx.ips(), n).await?;
    let mut tasks = Vec::new();
    for (i, mut conn) in conns.into_iter().enumerate() {
        let tag = tag.to_string();
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::with_capacity(per_conn);
            for k in 0..per_conn {
                let host = format!("{tag}-c{i}-{k}.example.com");
                let reply = conn
                    .call_tool("propose-egress", &propose_args(&host))
                    .await?;
                match reply.field("proposal_id") {
                    Some(id) if reply.status() == Some("pending") => ids.push(id.to_string()),
                    _ => bail!(
                        "propose-egress did not answer pending: {}",
                        reply.describe()
                    ),
                }
            }
            Ok::<_, anyhow::Error>(ids)
        }));
    }
    let mut all = Vec::with_capacity(n);
    for t in tasks {
        all.push(t.await??);
    }
    Ok(all)
}
