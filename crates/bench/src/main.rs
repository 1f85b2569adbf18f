//! `supervise-bench`: the project's load generator and limit baselines.
//!
//! It starts its own `supervise-server` processes on temporary databases (or targets
//! `--url`), registers bottles on many loopback addresses, drives MCP traffic over
//! keep-alive HTTP/1.1 in either protocol era, measures the two physical limits in the same
//! run, measures what hostile clients cost the server, and prints one table plus a JSON
//! file. `docs/PERFORMANCE.md` explains the figures.
//!
//! Layout: [`args`] the command line; [`client`] the MCP connection; [`raw`] hand-written
//! requests for the clients a well-behaved one never is (garbage bodies, clients that do not
//! read); [`load`] the closed-loop driver; [`scenarios`] the scenarios by family and their
//! dispatch; [`baseline`] the SQLite and bare-hyper limits; [`pg`] the PostgreSQL cluster
//! of a run and `pgbench`; [`procs`] child processes; [`db`]
//! work on the server's file beside it (deciding, counting, preloading); [`report`] the
//! table, the targets and the JSON; [`sys`] pinning, rlimits and /proc; [`stats`]
//! percentiles and the row type.

mod args;
mod baseline;
mod client;
mod db;
mod load;
mod pg;
mod procs;
mod raw;
mod report;
mod scenarios;
mod stats;
mod sys;

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;

use crate::args::{Cli, Cmd, RunArgs};
use crate::scenarios::Backend;
use crate::scenarios::{Ctx, External};

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

/// The postgres pass's server: `--postgres`, else a cluster started for the run. `Err`: the
/// pass cannot run (said loudly); `Ok(None)`: PostgreSQL is not installed (said loudly too).
fn postgres(
    args: &RunArgs,
    base: &std::path::Path,
) -> Result<Option<(String, Option<pg::Cluster>)>> {
    if let Some(url) = &args.postgres {
        return Ok(Some((url.clone(), None)));
    }
    let Some(bin) = pg::bin_dir() else {
        eprintln!(
            "supervise-bench: PostgreSQL IS NOT INSTALLED (no /usr/lib/postgresql/*/bin/initdb): \
             the postgres pass is SKIPPED, running SQLite only (apt-get install postgresql)"
        );
        return Ok(None);
    };
    let cluster = pg::Cluster::start(&bin, base)?;
    eprintln!(
        "supervise-bench: PostgreSQL cluster in {} at {} ({})",
        cluster.dir().display(),
        cluster.admin_url,
        pg::SETTINGS.join(" ")
    );
    Ok(Some((cluster.admin_url.clone(), Some(cluster))))
}

fn run(args: RunArgs) -> Result<bool> {
    let plan = args.plan()?;
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);

    // The cluster before pinning: its processes run on every CPU, not the load generator's.
    let mut backends = args.backends();
    let mut setup_rows = Vec::new();
    let mut pg_admin = None;
    let mut cluster = None;
    if backends.contains(&Backend::Postgres) {
        match postgres(&args, &base) {
            Ok(Some((url, started))) => {
                pg_admin = Some(url);
                cluster = started;
            }
            Ok(None) => backends.retain(|b| *b != Backend::Postgres),
            Err(e) => {
                let mut row = scenarios::failed_row("postgres-cluster", "-", &e);
                row.backend = Backend::Postgres.name().into();
                setup_rows.push(row);
                backends.retain(|b| *b != Backend::Postgres);
            }
        }
        if backends.is_empty() {
            backends.push(Backend::Sqlite);
        }
    }

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

    let dir = tempfile::Builder::new()
        .prefix("supervise-bench-")
        .disable_cleanup(args.keep_dir)
        .tempdir_in(&base)
        .with_context(|| format!("making a temporary folder in {}", base.display()))?;
    if args.keep_dir {
        eprintln!("supervise-bench: keeping {}", dir.path().display());
    }
    let nbottles = args.pick(args.bottles, 32, 4).clamp(1, 250);
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
        connections: args.pick(args.connections, 64, 8),
        warmup: args.secs(args.warmup, 0.5, 0.1),
        duration: args.secs(args.duration, 3.0, 0.5),
        log_filter: args.server_log.clone(),
        external,
        postgres: None,
        pgbench: pg::pgbench_bin(pg::bin_dir().as_deref()),
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
    let mut all_rows = setup_rows;
    for (k, &backend) in backends.iter().enumerate() {
        let pass = plan.for_backend(backend, k == 0);
        if pass.scenarios.is_empty() {
            continue;
        }
        if backends.len() > 1 {
            eprintln!("supervise-bench: the {} pass", backend.name());
        }
        if backend == Backend::Postgres && plan.preload > 0 {
            eprintln!("supervise-bench: --preload runs on SQLite only; the postgres pass skips it");
        }
        let ctx = Ctx {
            postgres: pg_admin.clone().filter(|_| backend == Backend::Postgres),
            ..ctx.clone()
        };
        let mut rows = rt.block_on(scenarios::run_all(&ctx, &pass));
        for row in &mut rows {
            row.extra.insert("pass".into(), k.into());
        }
        all_rows.extend(rows);
    }
    drop(rt);

    let medians = report::medians(&all_rows);
    let targets = report::targets(&medians, &all_rows);
    println!();
    print!("{}", report::table(&medians));
    let side = report::side_by_side(&medians);
    if !side.is_empty() {
        println!();
        print!("{side}");
    }
    if !targets.is_empty() {
        println!();
        print!("{}", report::targets_text(&targets));
    }
    let verdicts = report::verdict_table(&targets);
    if !verdicts.is_empty() {
        println!();
        print!("{verdicts}");
    }

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
        "backends": backends.iter().map(|b| b.name()).collect::<Vec<_>>(),
        "postgres": pg_admin.as_ref().map(|url| serde_json::json!({
            "server": if cluster.is_some() { "started for the run" } else { "--postgres" },
            "url": supervise_store::Location::parse(url).to_string(),
            "settings": if cluster.is_some() { pg::SETTINGS.to_vec() } else { Vec::new() },
        })),
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
