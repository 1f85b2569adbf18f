//! `supervise-bench`: the project's load generator and limit baselines (issue 5).
//!
//! It starts its own `supervise-server` processes on temporary databases (or targets
//! `--url`), registers bottles on many loopback addresses, drives MCP traffic over
//! keep-alive HTTP/1.1 in either protocol era, measures the two physical limits in the same
//! run, and prints one table plus a JSON file. `docs/PERFORMANCE.md` explains the figures.
//!
//! Layout: [`client`] is the MCP connection; [`load`] the closed-loop driver; [`scenarios`]
//! the scenarios; [`baseline`] the SQLite and bare-hyper limits; [`procs`] child processes;
//! [`db`] work on the server's file beside it (deciding, counting, preloading); [`report`]
//! the table, the targets and the JSON; [`sys`] pinning, rlimits and /proc; [`stats`]
//! percentiles and the row type.

mod baseline;
mod client;
mod db;
mod load;
mod procs;
mod report;
mod scenarios;
mod stats;
mod sys;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};

use crate::client::Style;
use crate::scenarios::{Ctx, External, Under};
use crate::stats::Row;

const ALL_SCENARIOS: [&str; 9] = [
    "baseline-sqlite",
    "baseline-http",
    "propose",
    "propose-capped",
    "check-pending",
    "list",
    "deliver",
    "hold",
    "wake",
];

/// The pending cap of the `propose-capped` server: far above what a run files, so every
/// proposal is accepted and only the cost of checking the cap shows.
const PROPOSE_CAP: u64 = 100_000_000;

#[derive(Parser, Debug)]
#[command(
    name = "supervise-bench",
    version,
    about = "Load generator and limit baselines for supervise-server (see docs/PERFORMANCE.md)",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Internal: the bare hyper baseline server.
    #[command(hide = true)]
    ServeBaseline {
        #[arg(long)]
        listen: SocketAddr,
        /// Hold every request this many milliseconds before answering.
        #[arg(long)]
        hold_ms: Option<u64>,
    },
    /// Internal: approve the ids in a file through a durable store, printing commit times.
    #[command(hide = true)]
    Decide {
        #[arg(long)]
        db: PathBuf,
        #[arg(long)]
        ids: PathBuf,
        /// Decisions per second (0: back to back).
        #[arg(long, default_value_t = 0.0)]
        rate: f64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum StyleArg {
    #[value(name = "2025-11-25", alias = "legacy")]
    Legacy,
    #[value(name = "2026-07-28", alias = "modern")]
    Modern,
    Both,
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    /// Run every scenario (the default when no --scenario is given).
    #[arg(long)]
    all: bool,
    /// A seconds-long smoke pass: every scenario, tiny sizes (no claims about speed).
    #[arg(long)]
    quick: bool,
    /// Scenarios to run (comma-separated or repeated): baseline-sqlite, baseline-http,
    /// propose, propose-capped, check-pending, list, deliver, hold, wake.
    #[arg(long, value_delimiter = ',')]
    scenario: Vec<String>,
    /// Protocol era the load generator speaks.
    #[arg(long, value_enum, default_value = "both")]
    style: StyleArg,
    /// Concurrent keep-alive connections for propose, check-pending, deliver and
    /// baseline-http [default: 64; --quick 8].
    #[arg(long)]
    connections: Option<usize>,
    /// Measured seconds per throughput scenario [default: 3; --quick 0.5].
    #[arg(long)]
    duration: Option<f64>,
    /// Unmeasured warm-up seconds before each [default: 0.5; --quick 0.1].
    #[arg(long)]
    warmup: Option<f64>,
    /// Run the throughput scenarios and baselines this many times; the table shows medians.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Calls held at once in `hold` [default: 10000; --quick 200].
    #[arg(long)]
    hold: Option<usize>,
    /// The grace window (s) of the `hold` server [default: 20; --quick 3].
    #[arg(long)]
    hold_grace: Option<u64>,
    /// Held calls woken by out-of-process decisions in `wake` [default: 1000; --quick 50].
    #[arg(long)]
    wake: Option<usize>,
    /// Decisions per second in `wake` (`wake-burst` always decides back to back).
    #[arg(long, default_value_t = 100.0)]
    wake_rate: f64,
    /// Decided proposals delivered in `deliver` [default: 2000; --quick 40].
    #[arg(long)]
    deliver: Option<usize>,
    /// Archived rows to add before re-measuring list and check-pending [default: 0;
    /// --quick 1000]. The issue asks for 1000000.
    #[arg(long)]
    preload: Option<u64>,
    /// Bottles (source addresses 127.0.0.2 …) registered and used [default: 32; --quick 4].
    #[arg(long)]
    bottles: Option<usize>,
    /// Pin the server (and the baseline server) to CPU 1, this process to CPU 0.
    #[arg(long)]
    pin: bool,
    /// The supervise-server binary [default: next to this executable].
    #[arg(long)]
    server_bin: Option<PathBuf>,
    /// Target a running server (http://127.0.0.1:PORT) instead of starting one; it must have
    /// bottles bN=127.0.0.N for N in 2..=bottles+1 and a grace window that fits the
    /// scenarios chosen.
    #[arg(long)]
    url: Option<String>,
    /// With --url: the server's pid, for CPU and RSS figures.
    #[arg(long)]
    server_pid: Option<u32>,
    /// With --url: the server's database, for scenarios that decide or count.
    #[arg(long)]
    db: Option<PathBuf>,
    /// Where to write the JSON report [default: target/supervise-bench.json].
    #[arg(long)]
    json: Option<PathBuf>,
    /// Folder for the temporary databases [default: the system temp dir].
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Keep the temporary folder (databases and server logs) and print its path.
    #[arg(long)]
    keep_dir: bool,
    /// SUPERVISE_LOG filter for the servers started.
    #[arg(long, default_value = "warn")]
    server_log: String,
}

/// Resolved sizes.
#[derive(Debug, Clone)]
struct Plan {
    scenarios: Vec<String>,
    styles: Vec<Style>,
    repeat: usize,
    hold: usize,
    hold_grace: u64,
    wake: usize,
    wake_grace: u64,
    wake_rate: f64,
    deliver: usize,
    preload: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Some(Cmd::ServeBaseline { listen, hold_ms }) => finish(runtime().and_then(|rt| {
            rt.block_on(baseline::serve_fixed(
                listen,
                hold_ms.map(Duration::from_millis),
            ))
        })),
        Some(Cmd::Decide { db, ids, rate }) => {
            finish(runtime().and_then(|rt| rt.block_on(db::decide_command(&db, &ids, rate))))
        }
        None => match run(cli.run) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(e) => {
                eprintln!("supervise-bench: {e:#}");
                ExitCode::FAILURE
            }
        },
    }
}

fn finish(r: Result<()>) -> ExitCode {
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("supervise-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

fn machine() -> serde_json::Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    serde_json::json!({ "nproc": nproc, "cpu": cpu, "kernel": kernel })
}

fn run(args: RunArgs) -> Result<bool> {
    let q = args.quick;
    let pick =
        |v: Option<usize>, full: usize, quick: usize| v.unwrap_or(if q { quick } else { full });
    let secs = |v: Option<f64>, full: f64, quick: f64| {
        Duration::from_secs_f64(v.unwrap_or(if q { quick } else { full }))
    };
    let scenarios: Vec<String> = if args.scenario.is_empty() || args.all {
        ALL_SCENARIOS.iter().map(|s| s.to_string()).collect()
    } else {
        for s in &args.scenario {
            anyhow::ensure!(
                ALL_SCENARIOS.contains(&s.as_str()),
                "unknown scenario {s:?}; known: {}",
                ALL_SCENARIOS.join(", ")
            );
        }
        args.scenario.clone()
    };
    let styles = match args.style {
        StyleArg::Legacy => vec![Style::Legacy],
        StyleArg::Modern => vec![Style::Modern],
        StyleArg::Both => vec![Style::Legacy, Style::Modern],
    };
    let plan = Plan {
        scenarios,
        styles,
        repeat: args.repeat.max(1),
        hold: pick(args.hold, 10_000, 200),
        hold_grace: args.hold_grace.unwrap_or(if q { 3 } else { 20 }),
        wake: pick(args.wake, 1000, 50),
        wake_grace: if q { 15 } else { 60 },
        wake_rate: args.wake_rate,
        deliver: pick(args.deliver, 2000, 40),
        preload: args.preload.unwrap_or(if q { 1000 } else { 0 }),
    };

    // Pin before the runtime exists, so its threads inherit the mask.
    let nproc = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut server_cpu = None;
    if args.pin {
        if nproc < 2 {
            eprintln!("supervise-bench: --pin needs 2 CPUs; running unpinned");
        } else if !sys::have_taskset() {
            eprintln!("supervise-bench: --pin needs taskset (util-linux); running unpinned");
        } else {
            sys::pin_self_to_cpu(0).context("pinning the load generator to CPU 0")?;
            server_cpu = Some(1);
        }
    }
    let nofile = sys::raise_nofile().unwrap_or(1024);
    if plan.scenarios.iter().any(|s| s == "hold") && (nofile as usize) < plan.hold + 512 {
        eprintln!(
            "supervise-bench: the open-file limit is {nofile}; hold with {} calls may fail",
            plan.hold
        );
    }

    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::Builder::new()
        .prefix("supervise-bench-")
        .disable_cleanup(args.keep_dir)
        .tempdir_in(&base)
        .with_context(|| format!("making a temporary folder in {}", base.display()))?;
    if args.keep_dir {
        eprintln!("supervise-bench: keeping {}", dir.path().display());
    }
    let nbottles = pick(args.bottles, 32, 4).clamp(1, 250);
    let bottles: Vec<(String, Ipv4Addr)> = (0..nbottles)
        .map(|i| {
            let n = (i + 2) as u8;
            (format!("b{n}"), Ipv4Addr::new(127, 0, 0, n))
        })
        .collect();
    let external = match &args.url {
        Some(url) => {
            let hostport = url
                .trim_start_matches("http://")
                .trim_end_matches('/')
                .trim_end_matches("/mcp");
            Some(External {
                addr: hostport
                    .parse()
                    .with_context(|| format!("--url {url}: expected http://IP:PORT"))?,
                pid: args.server_pid,
                db: args.db.clone(),
            })
        }
        None => None,
    };
    let ctx = Ctx {
        dir: dir.path().to_path_buf(),
        server_bin: procs::find_server_bin(args.server_bin.as_deref()),
        server_cpu,
        bottles,
        connections: pick(args.connections, 64, 8),
        warmup: secs(args.warmup, 0.5, 0.1),
        duration: secs(args.duration, 3.0, 0.5),
        log_filter: args.server_log.clone(),
        external,
    };
    if ctx.external.is_none() {
        match &ctx.server_bin {
            Some(p) => eprintln!("supervise-bench: server {}", p.display()),
            None => {
                eprintln!("supervise-bench: supervise-server not found; its scenarios will fail")
            }
        }
    }

    let rt = runtime()?;
    let all_rows = rt.block_on(run_scenarios(&ctx, &plan));
    drop(rt);

    let medians = report::medians(&all_rows);
    let targets = report::targets(&medians, &all_rows);
    println!();
    print!("{}", report::table(&medians));
    println!();
    println!("targets (issue 5):");
    print!("{}", report::targets_text(&targets));

    let json_path = args.json.clone().unwrap_or_else(|| {
        std::env::current_exe()
            .ok()
            .and_then(|e| e.parent()?.parent().map(|t| t.join("supervise-bench.json")))
            .unwrap_or_else(|| PathBuf::from("supervise-bench.json"))
    });
    let doc = serde_json::json!({
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "machine": machine(),
        "pinned": server_cpu.is_some(),
        "server_bin": ctx.server_bin.as_ref().map(|p| p.display().to_string()),
        "git_head": git_head(),
        "rows": medians,
        "runs": all_rows,
        "targets": targets,
    });
    std::fs::write(&json_path, serde_json::to_string_pretty(&doc)?)
        .with_context(|| format!("writing {}", json_path.display()))?;
    println!("\nJSON: {}", json_path.display());

    let failed = all_rows
        .iter()
        .any(|r| r.errors > 0 || r.note.starts_with("failed"));
    Ok(!failed)
}

/// `git rev-parse --short HEAD` of the current folder, when there is one.
fn git_head() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn failed_row(scenario: &str, style: &str, e: &anyhow::Error) -> Row {
    eprintln!("supervise-bench: {scenario} failed: {e:#}");
    Row {
        scenario: scenario.into(),
        style: style.into(),
        note: format!("failed: {e:#}").replace('\n', " "),
        ..Default::default()
    }
}

async fn run_scenarios(ctx: &Ctx, plan: &Plan) -> Vec<Row> {
    let want = |s: &str| plan.scenarios.iter().any(|x| x == s);
    let mut rows: Vec<Row> = Vec::new();
    let primary = if plan.styles.contains(&Style::Modern) {
        Style::Modern
    } else {
        Style::Legacy
    };
    let push = |r: Result<Row>, scenario: &str, style: &str| {
        let row = r.unwrap_or_else(|e| failed_row(scenario, style, &e));
        eprintln!(
            "  {:<16} {:<10} {:>9.0}/s  errors {}  {}",
            row.scenario, row.style, row.throughput, row.errors, row.note
        );
        row
    };

    // Servers shared by the repeated scenarios, started on first use.
    let mut propose_server: Option<Result<Under>> = None;
    let mut capped_server: Option<Result<Under>> = None;
    let mut check_server: Option<Result<CheckServer>> = None;

    for rep in 0..plan.repeat {
        let first_of_round = rows.len();
        if plan.repeat > 1 {
            eprintln!("supervise-bench: round {} of {}", rep + 1, plan.repeat);
        }
        if want("baseline-sqlite") {
            let r = baseline::sqlite_commits(&ctx.dir, ctx.duration + ctx.warmup).await;
            rows.push(push(r, "baseline-sqlite", "-"));
        }
        if want("baseline-http") {
            let r = scenarios::baseline_http(ctx).await;
            rows.push(push(r, "baseline-http", "bare"));
        }
        if want("propose") {
            if propose_server.is_none() {
                propose_server = Some(Under::start(ctx, "propose", 0).await);
            }
            for &style in &plan.styles {
                let r = match propose_server.as_ref().expect("started") {
                    Ok(u) => {
                        let tag = format!("r{rep}{}", style_tag(style));
                        scenarios::propose(ctx, u, style, &tag, "propose").await
                    }
                    Err(e) => Err(anyhow::anyhow!("{e:#}")),
                };
                rows.push(push(r, "propose", style.version()));
            }
        }
        if want("propose-capped") {
            if capped_server.is_none() {
                capped_server =
                    Some(Under::start_capped(ctx, "propose-capped", 0, PROPOSE_CAP).await);
            }
            for &style in &plan.styles {
                let r = match capped_server.as_ref().expect("started") {
                    Ok(u) => {
                        let tag = format!("r{rep}{}", style_tag(style));
                        scenarios::propose(ctx, u, style, &tag, "propose-capped").await
                    }
                    Err(e) => Err(anyhow::anyhow!("{e:#}")),
                };
                rows.push(push(r, "propose-capped", style.version()));
            }
        }
        if (want("check-pending") || want("list") || want("deliver")) && check_server.is_none() {
            check_server = Some(start_check_server(ctx).await);
        }
        if want("check-pending") {
            for &style in &plan.styles {
                let r = match check_server.as_ref().expect("started") {
                    Ok((u, ids)) => {
                        scenarios::check_pending(ctx, u, style, ids.clone(), "check-pending").await
                    }
                    Err(e) => Err(anyhow::anyhow!("{e:#}")),
                };
                rows.push(push(r, "check-pending", style.version()));
            }
        }
        for row in &mut rows[first_of_round..] {
            row.extra.insert("round".into(), rep.into());
        }
    }
    drop(propose_server);
    drop(capped_server);

    if let Some(Ok((under, ids))) = &check_server {
        if want("list") {
            rows.push(push(
                scenarios::list(ctx, under, "list", 0).await,
                "list",
                "-",
            ));
        }
        // Before the preload, so it measures the same database as check-pending.
        if want("deliver") {
            let r = scenarios::deliver(ctx, under, primary, plan.deliver).await;
            rows.push(push(r, "deliver", primary.version()));
        }
        if plan.preload > 0 && (want("list") || want("check-pending")) {
            let label = if plan.preload.is_multiple_of(1_000_000) {
                format!("{}M", plan.preload / 1_000_000)
            } else if plan.preload.is_multiple_of(1000) {
                format!("{}k", plan.preload / 1000)
            } else {
                plan.preload.to_string()
            };
            eprintln!("supervise-bench: preloading {} archived rows", plan.preload);
            match db::preload(under.db.as_deref().unwrap_or(&ctx.dir), plan.preload).await {
                Ok(took) => {
                    eprintln!("  preloaded in {:.1}s", took.as_secs_f64());
                    if want("list") {
                        let name = format!("list@{label}");
                        let r = scenarios::list(ctx, under, &name, plan.preload).await;
                        rows.push(push(r, &name, "-"));
                    }
                    if want("check-pending") {
                        let name = format!("check-pending@{label}");
                        for &style in &plan.styles {
                            let r = scenarios::check_pending(ctx, under, style, ids.clone(), &name)
                                .await;
                            rows.push(push(r, &name, style.version()));
                        }
                    }
                }
                Err(e) => rows.push(push(Err(e), "preload", "-")),
            }
        }
    } else if let Some(Err(e)) = &check_server {
        for s in ["list", "deliver"] {
            if want(s) {
                rows.push(push(Err(anyhow::anyhow!("{e:#}")), s, "-"));
            }
        }
    }
    drop(check_server);

    if want("hold") {
        let r = scenarios::hold_bare(ctx, plan.hold, plan.hold_grace.min(10)).await;
        rows.push(push(r, "hold-bare", "bare"));
        let r = scenarios::hold(ctx, primary, plan.hold, plan.hold_grace).await;
        rows.push(push(r, "hold", primary.version()));
    }
    if want("wake") {
        let r = scenarios::wake(
            ctx,
            primary,
            plan.wake,
            plan.wake_grace,
            plan.wake_rate,
            "wake",
        )
        .await;
        rows.push(push(r, "wake", primary.version()));
        let r = scenarios::wake(ctx, primary, plan.wake, plan.wake_grace, 0.0, "wake-burst").await;
        rows.push(push(r, "wake-burst", primary.version()));
    }
    rows
}

fn style_tag(style: Style) -> &'static str {
    match style {
        Style::Legacy => "l",
        Style::Modern => "m",
    }
}

/// The check-pending server and the ids of its undecided proposals, by connection.
type CheckServer = (Under, Arc<Vec<Vec<String>>>);

/// The server for check-pending, list and deliver, with four undecided proposals filed
/// from each connection's bottle.
async fn start_check_server(ctx: &Ctx) -> Result<CheckServer> {
    let under = Under::start(ctx, "check", 0).await?;
    let ids = scenarios::file_proposals(ctx, &under, ctx.connections, 4, "check").await?;
    Ok((under, Arc::new(ids)))
}
