//! The poll and read scenarios: `check-pending`, `deliver` and the operator's `list`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::ctx::{Ctx, Under, check_args};
use super::propose::file_proposals;
use crate::client::Style;
use crate::db;
use crate::load::{self, LoadOpts, Plan};
use crate::stats::{Latency, Row, rate};

/// `check-pending`: `check-proposal` on undecided proposals of the caller's own bottle.
pub async fn check_pending(
    ctx: &Ctx,
    under: &Under,
    style: Style,
    ids: Arc<Vec<Vec<String>>>,
    name: &str,
) -> Result<Row> {
    let conns = load::open_conns(
        &under.target,
        ctx.connections,
        style,
        &ctx.ips(),
        ctx.connections,
    )
    .await?;
    let plan: Plan = Arc::new(move |i, seq| {
        let mine = &ids[i % ids.len()];
        let id = &mine[(seq as usize) % mine.len()];
        Some(("check-proposal", check_args(id)))
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
    Ok(out.row(name, style.version(), ctx.connections))
}

/// `deliver`: `total` proposals decided through a second store, then each polled once with
/// `check-proposal`, which delivers the decision and archives the proposal.
pub async fn deliver(ctx: &Ctx, under: &Under, style: Style, total: usize) -> Result<Row> {
    let per_conn = total.div_ceil(ctx.connections).max(1);
    let ids = file_proposals(ctx, under, ctx.connections, per_conn, "deliver").await?;
    let store = db::open_store(under.db()?, false).await?;
    let flat: Vec<String> = ids.iter().flatten().cloned().collect();
    db::approve_all(&store, &flat).await?;
    store.close().await;
    let conns = load::open_conns(
        &under.target,
        ctx.connections,
        style,
        &ctx.ips(),
        ctx.connections,
    )
    .await?;
    let ids = Arc::new(ids);
    let plan: Plan = Arc::new(move |i, seq| {
        ids[i]
            .get(seq as usize)
            .map(|id| ("check-proposal", check_args(id)))
    });
    let out = load::run(
        conns,
        plan,
        LoadOpts {
            warmup: Duration::ZERO,
            duration: None,
            expect: "approved",
            server_pid: under.pid,
        },
    )
    .await;
    let mut row = out.row("deliver", style.version(), ctx.connections);
    if row.note.is_empty() {
        row.note = format!("{} decided proposals delivered and archived", flat.len());
    }
    Ok(row)
}

/// `list`: the operator's `list` (store.list of pending proposals) through a second store.
pub async fn list(ctx: &Ctx, under: &Under, name: &str, archived: u64) -> Result<Row> {
    let store = db::open_store(under.db()?, true).await?;
    let mut samples = Vec::new();
    let mut rows = 0;
    let start = Instant::now();
    let budget = ctx.duration.min(Duration::from_secs(2));
    while start.elapsed() < budget || samples.len() < 5 {
        let t0 = Instant::now();
        rows = store
            .list(None, supervise_store::StatusFilter::Pending)
            .await?
            .len();
        samples.push(t0.elapsed().as_nanos() as u64);
    }
    let elapsed = start.elapsed();
    store.close().await;
    let n = samples.len() as u64;
    Ok(Row {
        scenario: name.into(),
        style: "-".into(),
        connections: 1,
        requests: n,
        errors: 0,
        seconds: elapsed.as_secs_f64(),
        throughput: rate(n, elapsed),
        latency: Latency::from_ns(&mut samples),
        note: format!("store.list(pending): {rows} pending rows, {archived} archived"),
        ..Default::default()
    })
}
