//! `wake` and `wake-burst`: held calls woken by decisions committed in another process.

use std::time::{Duration, Instant};

use anyhow::Result;

use super::ctx::{Ctx, Under, propose_args, run_decider};
use super::hold::hold_calls;
use crate::client::Style;
use crate::db;
use crate::stats::{Latency, Row, fmt_us, rate};
use crate::sys;

/// `wake`: `n` held calls; a separate process (this binary, `decide`) approves them one
/// transaction each, as the CLI does, printing each commit's time; the latency is from
/// each commit to the matching call's answer.
pub async fn wake(
    ctx: &Ctx,
    style: Style,
    n: usize,
    grace_secs: u64,
    rate_limit: f64,
    name: &str,
) -> Result<Row> {
    let under = Under::start(ctx, name, grace_secs).await?;
    let db_path = under.db()?.to_path_buf();
    let tag = name.to_string();
    let tasks = hold_calls(ctx, &under.target, style, n, |i| {
        (
            "propose-egress",
            propose_args(&format!("{tag}-{i}.example.com")),
        )
    })
    .await?;
    let held = db::wait_pending(&db_path, n as i64, Duration::from_secs(grace_secs) / 2).await?;
    let ids = db::pending_ids(&db_path, n as i64).await?;
    let ids_file = ctx.dir.join(format!("{name}-ids.txt"));
    std::fs::write(&ids_file, ids.join("\n"))?;
    let cpu0 = under.pid.and_then(sys::process_cpu);
    let started = Instant::now();
    let committed = run_decider(&db_path, &ids_file, rate_limit, n).await?;
    let decide_time = started.elapsed();

    let mut samples = Vec::with_capacity(n);
    let mut errors = 0u64;
    let mut first_error = None;
    for t in tasks {
        let held = match tokio::time::timeout(Duration::from_secs(grace_secs + 30), t).await {
            Ok(Ok(h)) => h,
            _ => {
                errors += 1;
                continue;
            }
        };
        let commit = held.id.as_ref().and_then(|id| committed.get(id));
        match (held.status.as_deref(), commit) {
            (Some("approved"), Some(&c)) => samples.push(held.at_ns.saturating_sub(c)),
            (other, _) => {
                errors += 1;
                if first_error.is_none() {
                    first_error = Some(held.error.unwrap_or_else(|| format!("answered {other:?}")));
                }
            }
        }
    }
    let answered = samples.len();
    let cpu = match (cpu0, under.pid.and_then(sys::process_cpu)) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    let latency = Latency::from_ns(&mut samples);
    let mut row = Row {
        scenario: name.into(),
        style: style.version().into(),
        connections: n,
        requests: n as u64,
        errors,
        seconds: decide_time.as_secs_f64(),
        throughput: rate(committed.len() as u64, decide_time),
        latency,
        // Not per request: it includes holding the calls (see hold).
        server_cpu_us: None,
        note: format!(
            "commit→answer, {} decisions from another process at {:.0}/s{}; {answered}/{n} answered approved ({held} held); max {}",
            committed.len(),
            rate(committed.len() as u64, decide_time),
            if rate_limit > 0.0 {
                " (paced)"
            } else {
                " (back to back)"
            },
            fmt_us(latency.max_us),
        ),
        ..Default::default()
    };
    if let Some(e) = first_error {
        row.note.push_str(&format!("; first error: {e}"));
    }
    if let Some(c) = cpu {
        row.extra
            .insert("server_cpu_seconds".into(), c.as_secs_f64().into());
    }
    Ok(row)
}
