//! The held-call scenarios: `hold` (calls waiting in the grace window at once) and
//! `hold-bare` (the same on the bare hyper server), and holding calls for `wake`.

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::ctx::{Ctx, Under, check_args, propose_args};
use crate::client::{Conn, Style, Target};
use crate::db;
use crate::load::{self, LoadOpts, Plan};
use crate::procs::{Proc, free_port};
use crate::stats::Row;
use crate::sys;

/// One held call's outcome.
pub(super) struct Held {
    pub(super) status: Option<String>,
    pub(super) id: Option<String>,
    pub(super) sent_ns: u64,
    pub(super) at_ns: u64,
    pub(super) error: Option<String>,
}

/// Opens `n` connections and sends one `propose-egress` on each (they wait in the grace
/// window). Returns the tasks, which finish when their call is answered.
pub(super) async fn hold_calls(
    ctx: &Ctx,
    target: &Target,
    style: Style,
    n: usize,
    call: impl Fn(usize) -> (&'static str, String),
) -> Result<Vec<tokio::task::JoinHandle<Held>>> {
    let conns: Vec<Conn> = load::open_conns(target, n, style, &ctx.ips(), 256).await?;
    let mut tasks = Vec::with_capacity(n);
    for (i, mut conn) in conns.into_iter().enumerate() {
        let (tool, args) = call(i);
        tasks.push(tokio::spawn(async move {
            let sent_ns = sys::monotonic_ns();
            match conn.call_tool(tool, &args).await {
                Ok(reply) => Held {
                    status: reply.status().map(str::to_string),
                    id: reply.field("proposal_id").map(str::to_string),
                    sent_ns,
                    at_ns: sys::monotonic_ns(),
                    error: reply.status().is_none().then(|| reply.describe()),
                },
                Err(e) => Held {
                    status: None,
                    id: None,
                    sent_ns,
                    at_ns: sys::monotonic_ns(),
                    error: Some(format!("{e:#}")),
                },
            }
        }));
    }
    Ok(tasks)
}

/// `hold`: `n` calls waiting in the grace window at once. Reports the server's RSS per held
/// call, then decides a tenth of them through a second store and checks that every call
/// answers: the decided ones `approved`, the rest `pending` when the window closes.
pub async fn hold(ctx: &Ctx, style: Style, n: usize, grace_secs: u64) -> Result<Row> {
    let under = Under::start(ctx, "hold", grace_secs).await?;
    let pid = under.pid.context("hold needs the server's pid")?;
    let db_path = under.db()?.to_path_buf();
    // Warm the server up with calls that are answered at once, then let it settle.
    {
        let conns = load::open_conns(&under.target, 16, style, &ctx.ips(), 16).await?;
        let plan: Plan = Arc::new(|_, seq| {
            (seq < 20).then(|| {
                (
                    "check-proposal",
                    check_args("00000000-0000-7000-8000-000000000000"),
                )
            })
        });
        load::run(
            conns,
            plan,
            LoadOpts {
                warmup: Duration::ZERO,
                duration: None,
                expect: "unknown",
                server_pid: None,
            },
        )
        .await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss_idle = sys::process_rss(pid).context("reading the server's RSS")?;
    let started = Instant::now();
    let tasks = hold_calls(ctx, &under.target, style, n, |i| {
        (
            "propose-egress",
            propose_args(&format!("hold-{i}.example.com")),
        )
    })
    .await?;
    let window = Duration::from_secs(grace_secs);
    let held = db::wait_pending(&db_path, n as i64, window.mul_f64(0.6)).await?;
    let ramp = started.elapsed();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss_held = sys::process_rss(pid).context("reading the server's RSS")?;
    // What holding costs the server's CPU while nothing happens (per-waiter rechecks).
    let idle_window = Duration::from_secs(1);
    let cpu_a = sys::process_cpu(pid);
    tokio::time::sleep(idle_window).await;
    let idle_cores = match (cpu_a, sys::process_cpu(pid)) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a).as_secs_f64() / idle_window.as_secs_f64()),
        _ => None,
    };
    // Decide a tenth while they wait.
    let decide_n = (n / 10).max(1);
    let to_decide = db::pending_ids(&db_path, decide_n as i64).await?;
    let store = db::open_store(&db_path, false).await?;
    db::approve_all(&store, &to_decide).await?;
    store.close().await;
    let decided: HashSet<String> = to_decide.into_iter().collect();

    let mut approved = 0u64;
    let mut pending = 0u64;
    let mut errors = 0u64;
    let mut first_error = None;
    let deadline = window + Duration::from_secs(30);
    let window_ns = window.as_nanos() as u64;
    for t in tasks {
        let held = match tokio::time::timeout(deadline, t).await {
            Ok(Ok(h)) => h,
            _ => {
                errors += 1;
                continue;
            }
        };
        let want = match &held.id {
            Some(id) if decided.contains(id) => "approved",
            _ => "pending",
        };
        // A `pending` before the window closed means the call was never held (e.g. the
        // server's --max-waiting budget was full).
        let early =
            held.at_ns.saturating_sub(held.sent_ns) < window_ns.saturating_sub(1_000_000_000);
        match held.status.as_deref() {
            Some(s) if s == want && s == "approved" => approved += 1,
            Some(s) if s == want && !early => pending += 1,
            Some(s) if s == want => {
                errors += 1;
                if first_error.is_none() {
                    first_error =
                        Some("answered pending before its grace window closed: not held".into());
                }
            }
            other => {
                errors += 1;
                if first_error.is_none() {
                    first_error = Some(
                        held.error
                            .unwrap_or_else(|| format!("answered {other:?}, wanted {want}")),
                    );
                }
            }
        }
    }
    let per_call = rss_held.saturating_sub(rss_idle) as f64 / n as f64;
    let mut row = Row {
        scenario: "hold".into(),
        style: style.version().into(),
        connections: n,
        requests: n as u64,
        errors,
        seconds: started.elapsed().as_secs_f64(),
        note: format!(
            "{:.1} KiB RSS/held call ({} held; RSS {:.0}→{:.0} MiB); answered {approved} approved + {pending} pending of {n}",
            per_call / 1024.0,
            held,
            rss_idle as f64 / 1048576.0,
            rss_held as f64 / 1048576.0,
        ),
        ..Default::default()
    };
    if let Some(e) = first_error {
        row.note.push_str(&format!("; first error: {e}"));
    }
    let extra = &mut row.extra;
    extra.insert("rss_idle_bytes".into(), rss_idle.into());
    extra.insert("rss_held_bytes".into(), rss_held.into());
    extra.insert("rss_per_held_call_bytes".into(), per_call.into());
    extra.insert("held".into(), held.into());
    extra.insert("ramp_seconds".into(), ramp.as_secs_f64().into());
    extra.insert("approved".into(), approved.into());
    extra.insert("pending".into(), pending.into());
    extra.insert("grace_seconds".into(), grace_secs.into());
    if let Some(c) = idle_cores {
        extra.insert("server_cores_while_held".into(), c.into());
        row.note
            .push_str(&format!("; server {c:.2} cores busy while held"));
    }
    Ok(row)
}

/// `hold-bare`: the same number of held requests on the bare hyper server, each answered
/// after `hold_secs`: what a held request costs hyper + tokio alone on this machine.
pub async fn hold_bare(ctx: &Ctx, n: usize, hold_secs: u64) -> Result<Row> {
    let exe = std::env::current_exe()?;
    let port = free_port()?;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut proc = Proc::spawn(
        "hold-bare server",
        &exe,
        &[
            "serve-baseline".into(),
            "--listen".into(),
            addr.to_string(),
            "--hold-ms".into(),
            (hold_secs * 1000).to_string(),
        ],
        &[],
        ctx.server_cpu,
        ctx.dir.join("hold-bare.log"),
    )?;
    let target = Target::new(addr);
    proc.wait_healthy(&target).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss_idle = sys::process_rss(proc.pid).context("reading the server's RSS")?;
    let started = Instant::now();
    let tasks = hold_calls(ctx, &target, Style::Modern, n, |_| {
        (
            "check-proposal",
            check_args("019ad3c2-7f10-7b4e-9a51-4c2d8e6f0a11"),
        )
    })
    .await?;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let rss_held = sys::process_rss(proc.pid).context("reading the server's RSS")?;
    let mut ok = 0u64;
    let mut errors = 0u64;
    for t in tasks {
        match tokio::time::timeout(Duration::from_secs(hold_secs + 30), t).await {
            Ok(Ok(h)) if h.status.as_deref() == Some("pending") => ok += 1,
            _ => errors += 1,
        }
    }
    let per_call = rss_held.saturating_sub(rss_idle) as f64 / n as f64;
    let mut row = Row {
        scenario: "hold-bare".into(),
        style: "bare".into(),
        connections: n,
        requests: n as u64,
        errors,
        seconds: started.elapsed().as_secs_f64(),
        note: format!(
            "{:.1} KiB RSS/held request on bare hyper (RSS {:.0}→{:.0} MiB); {ok}/{n} answered",
            per_call / 1024.0,
            rss_idle as f64 / 1048576.0,
            rss_held as f64 / 1048576.0,
        ),
        ..Default::default()
    };
    row.extra
        .insert("rss_per_held_call_bytes".into(), per_call.into());
    Ok(row)
}
