//! The scenarios: each starts (or reuses) what it needs, drives load and returns report rows.

use std::collections::{HashMap, HashSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tokio::io::AsyncBufReadExt;

use crate::client::{Conn, Style, Target};
use crate::db;
use crate::load::{self, LoadOpts, Plan};
use crate::procs::{Proc, Server, ServerSpec, free_port};
use crate::stats::{Latency, Row, fmt_us, rate};
use crate::sys;

/// Everything a scenario needs to know about the run.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub dir: PathBuf,
    pub server_bin: Option<PathBuf>,
    /// CPU for the server and the baseline server (`--pin`: 1).
    pub server_cpu: Option<usize>,
    pub bottles: Vec<(String, Ipv4Addr)>,
    pub connections: usize,
    pub warmup: Duration,
    pub duration: Duration,
    pub log_filter: String,
    /// `--url`: a running server to target instead of starting one.
    pub external: Option<External>,
}

#[derive(Debug, Clone)]
pub struct External {
    pub addr: SocketAddr,
    pub pid: Option<u32>,
    pub db: Option<PathBuf>,
}

impl Ctx {
    pub fn ips(&self) -> Vec<Ipv4Addr> {
        self.bottles.iter().map(|(_, ip)| *ip).collect()
    }
}

/// The server a scenario talks to: one this run started, or the `--url` one.
#[derive(Debug)]
pub struct Under {
    pub target: Target,
    pub pid: Option<u32>,
    pub db: Option<PathBuf>,
    _server: Option<Server>,
}

impl Under {
    /// Starts a fresh server on `NAME.db` with this grace window (or wraps `--url`).
    pub async fn start(ctx: &Ctx, name: &str, grace_secs: u64) -> Result<Under> {
        Under::start_capped(ctx, name, grace_secs, 0).await
    }

    /// [`Under::start`] with `--max-pending-per-bottle CAP` (0: no cap).
    pub async fn start_capped(ctx: &Ctx, name: &str, grace_secs: u64, cap: u64) -> Result<Under> {
        if let Some(ext) = &ctx.external {
            return Ok(Under {
                target: Target::new(ext.addr),
                pid: ext.pid,
                db: ext.db.clone(),
                _server: None,
            });
        }
        let Some(bin) = &ctx.server_bin else {
            bail!(
                "supervise-server not found (build it: cargo build --release -p supervise-server, or pass --server-bin)"
            );
        };
        let spec = ServerSpec {
            bin: bin.clone(),
            db: ctx.dir.join(format!("{name}.db")),
            grace_secs,
            bottles: ctx.bottles.clone(),
            cpu: ctx.server_cpu,
            max_pending_per_bottle: cap,
            log_filter: ctx.log_filter.clone(),
        };
        let server = Server::start(&spec, ctx.dir.join(format!("{name}.log"))).await?;
        Ok(Under {
            target: server.target.clone(),
            pid: Some(server.pid()),
            db: Some(server.db.clone()),
            _server: Some(server),
        })
    }

    fn db(&self) -> Result<&Path> {
        self.db
            .as_deref()
            .context("this scenario needs the server's database file (--db with --url)")
    }
}

fn propose_args(host: &str) -> String {
    format!(r#"{{"host":"{host}","port":443,"justification":"supervise-bench load"}}"#)
}

fn check_args(id: &str) -> String {
    format!(r#"{{"proposal_id":"{id}"}}"#)
}

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

/// One held call's outcome.
struct Held {
    status: Option<String>,
    id: Option<String>,
    sent_ns: u64,
    at_ns: u64,
    error: Option<String>,
}

/// Opens `n` connections and sends one `propose-egress` on each (they wait in the grace
/// window). Returns the tasks, which finish when their call is answered.
async fn hold_calls(
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
    let exe = std::env::current_exe()?;
    let cpu0 = under.pid.and_then(sys::process_cpu);
    let started = Instant::now();
    let mut child = tokio::process::Command::new(exe)
        .arg("decide")
        .arg("--db")
        .arg(&db_path)
        .arg("--ids")
        .arg(&ids_file)
        .arg("--rate")
        .arg(rate_limit.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .context("starting the decider")?;
    let stdout = child.stdout.take().context("decider stdout")?;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let mut committed: HashMap<String, u64> = HashMap::with_capacity(n);
    while let Some(line) = lines.next_line().await? {
        if let Some((id, ns)) = line.split_once(' ')
            && let Ok(ns) = ns.parse()
        {
            committed.insert(id.to_string(), ns);
        }
    }
    let status = child.wait().await?;
    let decide_time = started.elapsed();
    if !status.success() {
        bail!("the decider failed ({status})");
    }

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
