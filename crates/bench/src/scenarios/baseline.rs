//! `baseline-http`: the bare hyper server under the same load as `check-pending`.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use anyhow::Result;

use super::ctx::{Ctx, check_args};
use crate::client::{Style, Target};
use crate::load::{self, LoadOpts, Plan};
use crate::procs::{Proc, free_port};
use crate::stats::Row;

/// `baseline-http`: the bare hyper server (this binary, `serve-baseline`) on the server's
/// CPU, the same request and connection count as `check-pending`.
pub async fn baseline_http(ctx: &Ctx) -> Result<Row> {
    let exe = std::env::current_exe()?;
    let port = free_port()?;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut proc = Proc::spawn(
        "baseline-http server",
        &exe,
        &["serve-baseline".into(), "--listen".into(), addr.to_string()],
        &[],
        ctx.server_cpu,
        ctx.dir.join("baseline-http.log"),
    )?;
    let target = Target::new(addr);
    proc.wait_healthy(&target).await?;
    let conns = load::open_conns(
        &target,
        ctx.connections,
        Style::Modern,
        &ctx.ips(),
        ctx.connections,
    )
    .await?;
    let plan: Plan = Arc::new(|_, _| {
        Some((
            "check-proposal",
            check_args("019ad3c2-7f10-7b4e-9a51-4c2d8e6f0a11"),
        ))
    });
    let out = load::run(
        conns,
        plan,
        LoadOpts {
            warmup: ctx.warmup,
            duration: Some(ctx.duration),
            expect: "pending",
            server_pid: Some(proc.pid),
        },
    )
    .await;
    let mut row = out.row("baseline-http", "bare", ctx.connections);
    if row.note.is_empty() {
        row.note = "bare hyper, fixed JSON-RPC body".into();
    }
    Ok(row)
}
