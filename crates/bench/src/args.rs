//! The command line: the hidden helper subcommands, the run's flags, and the sizes they
//! resolve to (full or `--quick`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};

use crate::client::Style;
use crate::scenarios::{ALL_SCENARIOS, NOT_QUICK, Plan};

#[derive(Parser, Debug)]
#[command(
    name = "supervise-bench",
    version,
    about = "Load generator and limit baselines for supervise-server (see docs/PERFORMANCE.md)",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
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
pub enum StyleArg {
    #[value(name = "2025-11-25", alias = "legacy")]
    Legacy,
    #[value(name = "2026-07-28", alias = "modern")]
    Modern,
    Both,
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Run every scenario (the default when no --scenario is given).
    #[arg(long)]
    pub all: bool,
    /// A seconds-long smoke pass: every scenario but sigterm-stalled, tiny sizes (no claims
    /// about speed).
    #[arg(long)]
    pub quick: bool,
    /// Scenarios to run (comma-separated or repeated): baseline-sqlite, baseline-http,
    /// propose, propose-capped, check-pending, list, deliver, hold, wake, tasks,
    /// garbage-batch, squid-acl, sigterm-stalled.
    #[arg(long, value_delimiter = ',')]
    pub scenario: Vec<String>,
    /// Protocol era the load generator speaks.
    #[arg(long, value_enum, default_value = "both")]
    pub style: StyleArg,
    /// Concurrent keep-alive connections for propose, check-pending, deliver and
    /// baseline-http [default: 64; --quick 8].
    #[arg(long)]
    pub connections: Option<usize>,
    /// Measured seconds per throughput scenario [default: 3; --quick 0.5].
    #[arg(long)]
    pub duration: Option<f64>,
    /// Unmeasured warm-up seconds before each [default: 0.5; --quick 0.1].
    #[arg(long)]
    pub warmup: Option<f64>,
    /// Run the throughput scenarios and baselines this many times; the table shows medians.
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Calls held at once in `hold` [default: 10000; --quick 200].
    #[arg(long)]
    pub hold: Option<usize>,
    /// The grace window (s) of the `hold` server [default: 20; --quick 3].
    #[arg(long)]
    pub hold_grace: Option<u64>,
    /// Held calls woken by out-of-process decisions in `wake` [default: 1000; --quick 50].
    #[arg(long)]
    pub wake: Option<usize>,
    /// Decisions per second in `wake` (`wake-burst` always decides back to back).
    #[arg(long, default_value_t = 100.0)]
    pub wake_rate: f64,
    /// Decided proposals delivered in `deliver` [default: 2000; --quick 40].
    #[arg(long)]
    pub deliver: Option<usize>,
    /// Archived rows to add before re-measuring list and check-pending [default: 0;
    /// --quick 1000]. The published figures use 1000000.
    #[arg(long)]
    pub preload: Option<u64>,
    /// Bottles (source addresses 127.0.0.2 …) registered and used [default: 32; --quick 4].
    #[arg(long)]
    pub bottles: Option<usize>,
    /// Pin the server (and the baseline server) to CPU 1, this process to CPU 0.
    #[arg(long)]
    pub pin: bool,
    /// The supervise-server binary [default: next to this executable].
    #[arg(long)]
    pub server_bin: Option<PathBuf>,
    /// Target a running server (http://127.0.0.1:PORT) instead of starting one; it must have
    /// bottles bN=127.0.0.N for N in 2..=bottles+1 and a grace window that fits the
    /// scenarios chosen.
    #[arg(long)]
    pub url: Option<String>,
    /// With --url: the server's pid, for CPU and RSS figures.
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Run the servers on PostgreSQL: each gets a fresh database on the server of this admin
    /// URL (e.g. postgres://postgres@127.0.0.1:5432/postgres) instead of a SQLite file.
    #[arg(long, value_name = "URL")]
    pub postgres: Option<String>,
    /// With --url: the server's database, for scenarios that decide or count.
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Where to write the JSON report [default: target/supervise-bench.json].
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Folder for the temporary databases [default: the system temp dir].
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the temporary folder (databases and server logs) and print its path.
    #[arg(long)]
    pub keep_dir: bool,
    /// SUPERVISE_LOG filter for the servers started.
    #[arg(long, default_value = "warn")]
    pub server_log: String,
}

impl RunArgs {
    /// A count: the flag, else the full or the `--quick` size.
    pub fn pick(&self, v: Option<usize>, full: usize, quick: usize) -> usize {
        v.unwrap_or(if self.quick { quick } else { full })
    }

    /// Seconds: the flag, else the full or the `--quick` length.
    pub fn secs(&self, v: Option<f64>, full: f64, quick: f64) -> Duration {
        Duration::from_secs_f64(v.unwrap_or(if self.quick { quick } else { full }))
    }

    /// The scenarios to run and their sizes.
    pub fn plan(&self) -> Result<Plan> {
        let q = self.quick;
        let scenarios: Vec<String> = if self.scenario.is_empty() || self.all {
            ALL_SCENARIOS
                .iter()
                .filter(|s| !(q && !self.all && NOT_QUICK.contains(s)))
                .map(|s| s.to_string())
                .collect()
        } else {
            for s in &self.scenario {
                anyhow::ensure!(
                    ALL_SCENARIOS.contains(&s.as_str()),
                    "unknown scenario {s:?}; known: {}",
                    ALL_SCENARIOS.join(", ")
                );
            }
            self.scenario.clone()
        };
        let styles = match self.style {
            StyleArg::Legacy => vec![Style::Legacy],
            StyleArg::Modern => vec![Style::Modern],
            StyleArg::Both => vec![Style::Legacy, Style::Modern],
        };
        Ok(Plan {
            scenarios,
            styles,
            quick: q,
            repeat: self.repeat.max(1),
            hold: self.pick(self.hold, 10_000, 200),
            hold_grace: self.hold_grace.unwrap_or(if q { 3 } else { 20 }),
            wake: self.pick(self.wake, 1000, 50),
            wake_grace: if q { 15 } else { 60 },
            wake_rate: self.wake_rate,
            deliver: self.pick(self.deliver, 2000, 40),
            preload: self.preload.unwrap_or(if q { 1000 } else { 0 }),
        })
    }
}
