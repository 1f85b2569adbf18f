//! What hostile clients cost the server: `garbage-batch` (memory for a 1 MiB batch of
//! garbage, then for clients that never read their answers) and `sigterm-stalled` (how long
//! shutdown takes while such a client holds an answer).
//!
//! The server's write timeout and drain time have no flags; both are 10 s by default
//! (`Config::write_timeout`, `Config::drain_timeout`), and the waits here are sized for that.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::ctx::{Ctx, Under};
use crate::raw::{self, Stalled};
use crate::stats::Row;
use crate::sys;

/// The revision without `MCP-Protocol-Version`, the one with batches.
const REVISION: &str = "2025-03-26";
/// The garbage body: `[1,1,…]`, one byte under the server's 1 MiB body limit.
const GARBAGE_BYTES: usize = 1024 * 1024 - 1;
/// Clients that never read, held at once.
const STALLED_CLIENTS: usize = 8;
/// Pipelined requests per stalled client, each a batch of [`STALLED_BATCH`] `tools/list`:
/// about 11 MB of answers per client, far more than the socket buffers hold.
const STALLED_REQUESTS: usize = 100;
const STALLED_BATCH: usize = 32;
/// The server's default write timeout and drain time.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
const DRAIN_TIME: Duration = Duration::from_secs(10);

fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1_048_576.0
}

/// `VmRSS` and `VmHWM` of the server now.
fn memory(pid: u32) -> Result<(u64, u64)> {
    let rss = sys::process_status_bytes(pid, "VmRSS").context("reading the server's VmRSS")?;
    let hwm = sys::process_status_bytes(pid, "VmHWM").context("reading the server's VmHWM")?;
    Ok((rss, hwm))
}

/// `garbage-batch`: one server; its RSS before, at the peak and 2 s after one 1 MiB body of
/// `[1,1,…]`, then while [`STALLED_CLIENTS`] clients that never read hold their answers, and
/// after the write timeout dropped them (`quick`: after the clients closed, without waiting
/// for the timeout). Two rows: `garbage-batch` and `stalled-readers`.
pub async fn garbage_batch(ctx: &Ctx, quick: bool) -> Result<Vec<Row>> {
    let under = Under::start(ctx, "garbage-batch", 0).await?;
    let pid = under.pid.context("garbage-batch needs the server's pid")?;
    let ips: Vec<IpAddr> = ctx.ips().into_iter().map(IpAddr::V4).collect();
    let ping = br#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#.to_vec();
    raw::post_legacy(&under.target, Some(ips[0]), ping).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (rss_before, _) = memory(pid)?;

    // `--quick` shortens the waits: its figures are for the smoke pass, not for the record.
    let settle = if quick {
        Duration::from_millis(500)
    } else {
        Duration::from_secs(2)
    };
    let answer = raw::post_legacy(&under.target, Some(ips[0]), raw::ones(GARBAGE_BYTES)).await;
    let (_, hwm) = memory(pid)?;
    tokio::time::sleep(settle).await;
    let (rss_after, _) = memory(pid)?;
    let (errors, answered) = match &answer {
        Ok(a) if a.status.is_client_error() => (0, format!("{} bytes", a.bytes)),
        Ok(a) => (1, format!("{} bytes (wanted a 4xx refusal)", a.bytes)),
        Err(e) => (1, format!("failed: {e:#}")),
    };
    let status = answer.as_ref().map_or(0, |a| a.status.as_u16());
    let took = answer.as_ref().map_or(Duration::ZERO, |a| a.took);
    let mut garbage = Row {
        scenario: "garbage-batch".into(),
        style: REVISION.into(),
        connections: 1,
        requests: 1,
        errors,
        seconds: took.as_secs_f64(),
        note: format!(
            "1 MiB [1,1,…] body: HTTP {status}, {answered} in {:.0} ms; VmRSS {:.1} → {:.1} MiB {:.1} s after, peak (VmHWM) {:.1} MiB",
            took.as_secs_f64() * 1000.0,
            mib(rss_before),
            mib(rss_after),
            settle.as_secs_f64(),
            mib(hwm),
        ),
        ..Default::default()
    };
    let extra = &mut garbage.extra;
    extra.insert("body_bytes".into(), GARBAGE_BYTES.into());
    extra.insert("http_status".into(), status.into());
    extra.insert("rss_before_bytes".into(), rss_before.into());
    extra.insert("hwm_bytes".into(), hwm.into());
    extra.insert("rss_after_bytes".into(), rss_after.into());
    extra.insert("after_seconds".into(), settle.as_secs_f64().into());

    let stalled = match stalled_readers(&under, pid, &ips, rss_before, settle, quick).await {
        Ok(row) => row,
        Err(e) => super::failed_row("stalled-readers", REVISION, &e),
    };
    Ok(vec![garbage, stalled])
}

/// The second half of `garbage-batch`, on the same server.
async fn stalled_readers(
    under: &Under,
    pid: u32,
    ips: &[IpAddr],
    rss_start: u64,
    settle: Duration,
    quick: bool,
) -> Result<Row> {
    let (rss_before, _) = memory(pid)?;
    let body = raw::tools_list_batch(STALLED_BATCH);
    let started = Instant::now();
    let mut clients = Vec::with_capacity(STALLED_CLIENTS);
    for i in 0..STALLED_CLIENTS {
        let ip = ips[i % ips.len()];
        clients.push(Stalled::open(under.target.addr, ip, &body, STALLED_REQUESTS).await?);
    }
    tokio::time::sleep(settle).await;
    let (rss_held, _) = memory(pid)?;

    let mut errors = 0;
    let after = if quick {
        clients.clear();
        tokio::time::sleep(settle).await;
        format!(
            "{:.1} s after the clients closed (--quick)",
            settle.as_secs_f64()
        )
    } else {
        // Past the write timeout, counted from the last stall.
        tokio::time::sleep(
            (WRITE_TIMEOUT + Duration::from_secs(2)).saturating_sub(started.elapsed()),
        )
        .await;
        let mut dropped = 0;
        for c in &mut clients {
            if c.closed_by_server(1 << 20, Duration::from_secs(2)).await {
                dropped += 1;
            }
        }
        errors = (STALLED_CLIENTS - dropped) as u64;
        format!(
            "{:.0} s after they stalled, the server having dropped {dropped}/{STALLED_CLIENTS} (write timeout {} s)",
            started.elapsed().as_secs_f64(),
            WRITE_TIMEOUT.as_secs()
        )
    };
    let (rss_after, hwm) = memory(pid)?;
    drop(clients);
    let mut row = Row {
        scenario: "stalled-readers".into(),
        style: REVISION.into(),
        connections: STALLED_CLIENTS,
        requests: (STALLED_CLIENTS * STALLED_REQUESTS) as u64,
        errors,
        seconds: started.elapsed().as_secs_f64(),
        note: format!(
            "{STALLED_CLIENTS} clients not reading {STALLED_REQUESTS} pipelined {STALLED_BATCH}-item tools/list batches: VmRSS {:.1} → {:.1} MiB held, {:.1} MiB {after}; peak (VmHWM) {:.1} MiB; {:.1} MiB at start",
            mib(rss_before),
            mib(rss_held),
            mib(rss_after),
            mib(hwm),
            mib(rss_start),
        ),
        ..Default::default()
    };
    let extra = &mut row.extra;
    extra.insert("rss_before_bytes".into(), rss_before.into());
    extra.insert("rss_held_bytes".into(), rss_held.into());
    extra.insert("rss_after_bytes".into(), rss_after.into());
    extra.insert("hwm_bytes".into(), hwm.into());
    extra.insert("waited_out_write_timeout".into(), (!quick).into());
    Ok(row)
}

/// `sigterm-stalled`: the time from SIGTERM to the server's exit while one client holds an
/// answer it does not read. With both at their defaults, the write timeout (counted from the
/// stall, just before the signal) or the drain time (counted from the signal) ends it,
/// whichever comes first; the server's own tests cover each bound alone.
pub async fn sigterm_stalled(ctx: &Ctx) -> Result<Row> {
    let mut under = Under::start(ctx, "sigterm-stalled", 0).await?;
    let ip = IpAddr::V4(ctx.ips()[0]);
    let body = raw::tools_list_batch(STALLED_BATCH);
    let client = Stalled::open(under.target.addr, ip, &body, STALLED_REQUESTS).await?;
    let lead = Duration::from_millis(500);
    tokio::time::sleep(lead).await;
    let (took, status) = under.terminate(DRAIN_TIME + Duration::from_secs(5)).await?;
    let ok = status.is_some_and(|s| s.success()) && took <= DRAIN_TIME + Duration::from_secs(2);
    let ended = match status {
        Some(s) => format!("{s}"),
        None => "still running, killed".into(),
    };
    let mut row = Row {
        scenario: "sigterm-stalled".into(),
        style: REVISION.into(),
        connections: 1,
        requests: STALLED_REQUESTS as u64,
        errors: u64::from(!ok),
        seconds: took.as_secs_f64(),
        note: format!(
            "SIGTERM → exit {:.2} s ({ended}), one client not reading since {:.1} s before; write timeout {} s, drain time {} s",
            took.as_secs_f64(),
            lead.as_secs_f64(),
            WRITE_TIMEOUT.as_secs(),
            DRAIN_TIME.as_secs()
        ),
        ..Default::default()
    };
    row.extra
        .insert("sigterm_to_exit_seconds".into(), took.as_secs_f64().into());
    row.extra.insert("exit_ok".into(), ok.into());
    drop(client);
    Ok(row)
}
