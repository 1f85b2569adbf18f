//! `baseline-http`: the bare hyper server under the same load as `check-pending`;
//! `baseline-pg`: `pgbench` on the postgres pass's server ([`crate::pg`]).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use anyhow::{Context, Result};
use sqlx::Connection;

use super::ctx::{Ctx, check_args, fresh_database};
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

/// The database `pgbench` inserts into and its script.
#[derive(Debug)]
pub struct PgbenchDb {
    url: String,
    script: std::path::PathBuf,
}

/// A fresh database with [`crate::pg::TABLE`] on the postgres pass's server, and the
/// script file.
pub async fn pgbench_db(ctx: &Ctx) -> Result<PgbenchDb> {
    let admin = ctx
        .postgres
        .as_deref()
        .context("baseline-pg runs on the postgres pass (--backends postgres)")?;
    let url = fresh_database(admin, "pgbench")
        .await?
        .display()
        .to_string();
    let mut conn = sqlx::PgConnection::connect(&url).await?;
    sqlx::query(crate::pg::TABLE).execute(&mut conn).await?;
    let _ = conn.close().await;
    let script = ctx.dir.join("baseline-pg.sql");
    std::fs::write(&script, crate::pg::SCRIPT)?;
    Ok(PgbenchDb { url, script })
}

/// `baseline-pg` (one client: the PostgreSQL target's denominator) or `baseline-pg-cN`:
/// `pgbench` for the measured seconds (whole, at least one), on the load generator's CPU
/// when pinned.
pub async fn baseline_pg(ctx: &Ctx, db: &PgbenchDb, clients: usize) -> Result<Row> {
    let pgbench = ctx
        .pgbench
        .as_deref()
        .context("pgbench not found (apt-get install postgresql)")?;
    let seconds = ctx.duration.as_secs_f64().ceil() as u64;
    let args = crate::pg::pgbench_args(&db.script, clients, seconds, &db.url);
    crate::pg::pgbench_row(pgbench, args, ctx.server_cpu.map(|_| 0), clients).await
}
