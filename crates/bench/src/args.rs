//! The command line: the hidden helper subcommands, the run's flags, and the sizes they
//! resolve to (full or `--quick`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};

use crate::client::Style;
use crate::scenarios::{ALL_SCENARIOS, Backend, NOT_QUICK, Plan};

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
    /// Scenarios to run (comma-separated or repeated): baseline-sqlite, baseline-sqlx,
    /// baseline-pg, baseline-http, propose, propose-capped, check-pending, list, deliver,
    /// hold, wake, tasks, garbage-batch, squid-acl, decide, console,
    /// sigterm-stalled.
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
    /// The grace window (s) of the `hold` server, tripled on postgres [default: 20;
    /// --quick 3].
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
    /// The databases to run the scenarios on, one pass each, in this order (comma-separated):
    /// sqlite, postgres. The baselines that do not depend on the database run once, in the
    /// first pass; baseline-pg runs in the postgres pass. postgres without --postgres starts
    /// a throwaway durable cluster for the run [default: sqlite; with --postgres alone:
    /// postgres].
    #[arg(long, value_enum, value_delimiter = ',')]
    pub backends: Vec<Backend>,
    /// The postgres pass runs its servers on this server instead of a cluster of its own:
    /// each gets a fresh database there, from this admin URL (e.g.
    /// postgres://postgres@127.0.0.1:5432/postgres).
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

    /// The backends to run on, in order, without repeats.
    pub fn backends(&self) -> Vec<Backend> {
        let mut out: Vec<Backend> = Vec::new();
        for &b in &self.backends {
            if !out.contains(&b) {
                out.push(b);
            }
        }
        if out.is_empty() {
            out.push(if self.postgres.is_some() {
                Backend::Postgres
            } else {
                Backend::Sqlite
            });
        }
        out
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
            backend: Backend::Sqlite,
            shared: true,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(argv: &[&str]) -> RunArgs {
        let mut all = vec!["supervise-bench"];
        all.extend_from_slice(argv);
        Cli::try_parse_from(all).expect("parses").run
    }

    fn names(plan: &Plan) -> Vec<&str> {
        plan.scenarios.iter().map(String::as_str).collect()
    }

    #[test]
    fn backends_default_to_sqlite_and_to_postgres_with_a_url_alone() {
        assert_eq!(parse(&[]).backends(), vec![Backend::Sqlite]);
        assert_eq!(parse(&["--quick"]).backends(), vec![Backend::Sqlite]);
        assert_eq!(
            parse(&["--postgres", "postgres://postgres@127.0.0.1:5432/postgres"]).backends(),
            vec![Backend::Postgres]
        );
    }

    #[test]
    fn backends_keep_their_order_without_repeats() {
        assert_eq!(
            parse(&["--backends", "sqlite,postgres"]).backends(),
            vec![Backend::Sqlite, Backend::Postgres]
        );
        assert_eq!(
            parse(&["--backends", "postgres", "--backends", "sqlite,postgres"]).backends(),
            vec![Backend::Postgres, Backend::Sqlite]
        );
        let mut all = vec!["supervise-bench", "--backends", "mysql"];
        assert!(Cli::try_parse_from(&all).is_err());
        all[2] = "sqlite,";
        assert!(Cli::try_parse_from(&all).is_err());
    }

    #[test]
    fn shared_baselines_run_in_the_first_pass_only() {
        let plan = parse(&["--all"]).plan().unwrap();
        let first = plan.for_backend(Backend::Sqlite, true);
        let second = plan.for_backend(Backend::Postgres, false);
        for s in [
            "baseline-sqlite",
            "baseline-sqlx",
            "baseline-http",
            "console",
        ] {
            assert!(names(&first).contains(&s), "{s} in the first pass");
            assert!(!names(&second).contains(&s), "{s} not in the second");
        }
        assert!(first.shared && !second.shared);
        assert!(!names(&first).contains(&"baseline-pg"));
        assert!(names(&second).contains(&"baseline-pg"));
        for s in ["propose", "check-pending", "hold", "wake", "tasks"] {
            assert!(
                names(&first).contains(&s) && names(&second).contains(&s),
                "{s}"
            );
        }
        assert_eq!(second.backend, Backend::Postgres);
        assert_eq!((first.hold_grace, second.hold_grace), (20, 60));
    }

    #[test]
    fn a_postgres_only_run_keeps_the_baselines_and_drops_the_preload() {
        let args = parse(&[
            "--scenario",
            "baseline-http,baseline-pg,check-pending",
            "--preload",
            "1000",
            "--backends",
            "postgres",
        ]);
        let plan = args.plan().unwrap().for_backend(Backend::Postgres, true);
        assert_eq!(
            names(&plan),
            ["baseline-http", "baseline-pg", "check-pending"]
        );
        assert_eq!(plan.preload, 0);
        let sqlite = args.plan().unwrap().for_backend(Backend::Sqlite, true);
        assert_eq!(names(&sqlite), ["baseline-http", "check-pending"]);
        assert_eq!(sqlite.preload, 1000);
    }

    #[test]
    fn quick_runs_every_scenario_but_sigterm_stalled_and_baseline_pg_is_known() {
        let plan = parse(&["--quick"]).plan().unwrap();
        assert!(!names(&plan).contains(&"sigterm-stalled"));
        assert!(names(&plan).contains(&"baseline-pg"));
        let sqlite = plan.for_backend(Backend::Sqlite, true);
        assert!(!names(&sqlite).contains(&"baseline-pg"));
        assert!(parse(&["--scenario", "baseline-pg"]).plan().is_ok());
        assert!(parse(&["--scenario", "baseline-mysql"]).plan().is_err());
    }

    #[test]
    fn rows_name_their_backend() {
        use crate::scenarios::row_backend;
        assert_eq!(row_backend("propose", Backend::Postgres), "postgres");
        assert_eq!(row_backend("propose", Backend::Sqlite), "sqlite");
        assert_eq!(row_backend("baseline-http", Backend::Postgres), "-");
        assert_eq!(row_backend("hold-bare", Backend::Sqlite), "-");
        assert_eq!(row_backend("baseline-sqlite", Backend::Postgres), "sqlite");
        assert_eq!(row_backend("baseline-pg-c8", Backend::Postgres), "postgres");
    }
}
