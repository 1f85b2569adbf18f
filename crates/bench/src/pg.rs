//! PostgreSQL for the bench: a throwaway cluster started for the run (when `--backends`
//! names postgres without `--postgres URL`), durable like the SQLite side, and
//! `baseline-pg`, PostgreSQL's own one-row commit rate measured with `pgbench`.
//!
//! The cluster is Debian's `postgresql` package (`/usr/lib/postgresql/*/bin`), run as the
//! `postgres` user when this process is root (the server refuses root), in a temporary
//! folder beside the SQLite databases (same disk), listening on 127.0.0.1 only on a free
//! port, with `fsync=on`, `synchronous_commit=on` and `full_page_writes=on`: a commit is on
//! the disk when it returns, as `synchronous=FULL` makes it on SQLite. The product and
//! `pgbench` use the same cluster, so the same settings. Autovacuum looks for tables to
//! analyze every second (`autovacuum_naptime=1s`, against the default minute): every
//! scenario starts on a fresh database, and until its tables are first analyzed the
//! prepared statements run on plans made for empty tables (the change feed's read and the
//! filing's duplicate lookup scan `events` and `proposals` whole), so with the default the
//! figures would measure a database's first minute, not the running state a long-lived
//! database is in. A watchdog shell stops the server
//! and removes the folder when this process is gone, however it ends; [`Drop`] does it at
//! once.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::procs::free_port;
use crate::stats::{Latency, Row};

/// The server settings of the bench's cluster (`-c NAME=VALUE`), beside the port and the
/// socket folder.
pub const SETTINGS: [&str; 6] = [
    "listen_addresses=127.0.0.1",
    "fsync=on",
    "synchronous_commit=on",
    "full_page_writes=on",
    "max_connections=200",
    "autovacuum_naptime=1s",
];

use supervise_testpg::as_postgres;
pub use supervise_testpg::bin_dir;

/// `pgbench`: beside `initdb`, else on the PATH (`/usr/bin/pgbench`).
pub fn pgbench_bin(bin: Option<&Path>) -> Option<PathBuf> {
    bin.map(|b| b.join("pgbench"))
        .filter(|p| p.is_file())
        .or_else(|| Some(PathBuf::from("/usr/bin/pgbench")).filter(|p| p.is_file()))
}

/// A cluster this run started; stopped and removed when dropped.
#[derive(Debug)]
pub struct Cluster {
    /// `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub admin_url: String,
    bin: PathBuf,
    dir: PathBuf,
    root: bool,
    watchdog: Child,
}

impl Cluster {
    /// `initdb` and the server in a new folder under `base`.
    pub fn start(bin: &Path, base: &Path) -> Result<Cluster> {
        let dir = tempfile::Builder::new()
            .prefix("supervise-bench-pg-")
            .tempdir_in(base)
            .with_context(|| format!("making the cluster's folder in {}", base.display()))?
            .keep();
        let root = supervise_testpg::is_root();
        supervise_testpg::init(root, bin, &dir).map_err(anyhow::Error::msg)?;
        let port = free_port()?;
        let watchdog = supervise_testpg::spawn_watched(root, bin, &dir, port, &SETTINGS)
            .context("starting postgres")?;
        let cluster = Cluster {
            admin_url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
            bin: bin.to_path_buf(),
            dir: dir.clone(),
            root,
            watchdog,
        };
        supervise_testpg::wait_ready(bin, &dir, port).map_err(|log| {
            anyhow::anyhow!("the bench's PostgreSQL cluster did not start: {log}")
        })?;
        Ok(cluster)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = as_postgres(self.root, &self.bin.join("pg_ctl"))
            .args(["stop", "-m", "fast", "-w", "-D"])
            .arg(self.dir.join("data"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        // The watchdog sees the server gone and empties the folder; the folder itself is
        // removed here too, in case its parent is not writable by the postgres user.
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.watchdog.try_wait(), Ok(Some(_))) {
                let _ = std::fs::remove_dir_all(&self.dir);
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!(
            "supervise-bench: the PostgreSQL cluster in {} did not stop within 10 s",
            self.dir.display()
        );
    }
}

/// The table `baseline-pg` inserts into: the columns of a small `proposals` row, text
/// primary key, no other index, no checks (PostgreSQL's own cost, not the schema's).
pub const TABLE: &str = "CREATE TABLE IF NOT EXISTS bench_proposals (\
    id TEXT COLLATE \"C\" PRIMARY KEY, bottle_id BIGINT NOT NULL, kind TEXT NOT NULL, \
    change TEXT NOT NULL, change_key TEXT NOT NULL, justification TEXT NOT NULL, \
    status TEXT NOT NULL, flags TEXT NOT NULL, hits BIGINT NOT NULL, created_at TEXT NOT NULL)";

/// The `pgbench` script: one one-row INSERT, one commit per transaction.
pub const SCRIPT: &str = "INSERT INTO bench_proposals (id, bottle_id, kind, change, change_key, \
    justification, status, flags, hits, created_at) VALUES (gen_random_uuid()::text, 1, 'egress', \
    '{\"host\":\"mirror.example.com\",\"port\":443}', '{\"host\":\"mirror.example.com\",\"port\":443}', \
    'supervise-bench load', 'pending', '[]', 0, '2026-12-01T00:00:00.000Z');\n";

/// What `pgbench` printed that the row needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PgbenchOut {
    pub tps: f64,
    pub transactions: u64,
    pub failed: u64,
    /// `latency average`, µs.
    pub latency_avg_us: Option<f64>,
}

/// Reads `pgbench`'s summary: `tps = N (without initial connection time)` (PostgreSQL 14+;
/// `(excluding connections establishing)` before), `number of transactions actually
/// processed: N`, `number of failed transactions: N (…)` and `latency average = N ms`.
pub fn parse_pgbench(out: &str) -> Result<PgbenchOut> {
    let mut tps = None;
    let mut transactions = None;
    let mut failed = 0;
    let mut latency_avg_us = None;
    let num = |s: &str| {
        s.split_whitespace()
            .next()
            .and_then(|n| n.parse::<f64>().ok())
    };
    for line in out.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("tps = ") {
            // Older versions print two tps lines; keep the one without connection time.
            if tps.is_none() || !rest.contains("including") {
                tps = num(rest).or(tps);
            }
        } else if let Some(rest) = line.strip_prefix("number of transactions actually processed:") {
            transactions = rest.split('/').next().and_then(num).map(|n| n as u64);
        } else if let Some(rest) = line.strip_prefix("number of failed transactions:") {
            failed = num(rest).map_or(0, |n| n as u64);
        } else if let Some(rest) = line.strip_prefix("latency average =") {
            latency_avg_us = num(rest).map(|ms| ms * 1000.0);
        }
    }
    Ok(PgbenchOut {
        tps: tps.context("pgbench printed no tps line")?,
        transactions: transactions.context("pgbench printed no transaction count")?,
        failed,
        latency_avg_us,
    })
}

/// The `pgbench` arguments for `clients` connections over `seconds` against `db_url`.
pub fn pgbench_args(script: &Path, clients: usize, seconds: u64, db_url: &str) -> Vec<String> {
    vec![
        "-n".into(),
        "-M".into(),
        "prepared".into(),
        "-c".into(),
        clients.to_string(),
        "-j".into(),
        clients.min(2).to_string(),
        "-T".into(),
        seconds.max(1).to_string(),
        "-f".into(),
        script.display().to_string(),
        db_url.into(),
    ]
}

/// The row of `pgbench` with `clients` connections: `baseline-pg` for one (the PostgreSQL
/// target's denominator), else `baseline-pg-cN`.
pub fn baseline_pg_name(clients: usize) -> String {
    if clients == 1 {
        "baseline-pg".to_string()
    } else {
        format!("baseline-pg-c{clients}")
    }
}

/// `baseline-pg` (`-c 1`) or `baseline-pg-c8`: runs `pgbench` (pinned to `cpu`, the load
/// generator's, when given) and makes its row; the command is in the row's `extra`.
pub async fn pgbench_row(
    pgbench: &Path,
    args: Vec<String>,
    cpu: Option<usize>,
    clients: usize,
) -> Result<Row> {
    let mut cmd = match cpu {
        Some(cpu) => {
            let mut c = tokio::process::Command::new("taskset");
            c.arg("-c").arg(cpu.to_string()).arg(pgbench);
            c
        }
        None => tokio::process::Command::new(pgbench),
    };
    cmd.args(&args).stdin(Stdio::null());
    let shown = format!("{} {}", pgbench.display(), args.join(" "));
    let out = cmd.output().await.context("running pgbench")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "{shown} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let p = parse_pgbench(&stdout).with_context(|| format!("{shown}: {stdout}"))?;
    let mut row = Row {
        scenario: baseline_pg_name(clients),
        style: "-".into(),
        connections: clients,
        requests: p.transactions,
        errors: p.failed,
        seconds: if p.tps > 0.0 {
            p.transactions as f64 / p.tps
        } else {
            0.0
        },
        throughput: p.tps,
        latency: Latency::default(),
        note: format!(
            "pgbench -c {clients}: one-row INSERT commits/s, fsync=on, synchronous_commit=on{}",
            p.latency_avg_us
                .map(|us| format!(", latency average {us:.0}µs"))
                .unwrap_or_default()
        ),
        ..Default::default()
    };
    row.extra.insert("command".into(), shown.into());
    if let Some(us) = p.latency_avg_us {
        row.extra.insert("latency_avg_us".into(), us.into());
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PG15: &str = "pgbench (15.14 (Debian 15.14-0+deb12u1))
transaction type: /tmp/x/baseline-pg.sql
scaling factor: 1
query mode: prepared
number of clients: 8
number of threads: 2
maximum number of tries: 1
duration: 3 s
number of transactions actually processed: 4521
number of failed transactions: 0 (0.000%)
latency average = 5.309 ms
initial connection time = 9.871 ms
tps = 1506.902188 (without initial connection time)
";

    const PG13: &str = "transaction type: x.sql
number of transactions actually processed: 300/300
latency average = 10.000 ms
tps = 99.500000 (including connections establishing)
tps = 100.250000 (excluding connections establishing)
";

    #[test]
    fn parses_pgbench_15_summary() {
        let p = parse_pgbench(PG15).unwrap();
        assert_eq!(p.transactions, 4521);
        assert_eq!(p.failed, 0);
        assert!((p.tps - 1506.902188).abs() < 1e-9);
        assert!((p.latency_avg_us.unwrap() - 5309.0).abs() < 1e-6);
    }

    #[test]
    fn parses_older_summary_keeping_tps_without_connections() {
        let p = parse_pgbench(PG13).unwrap();
        assert_eq!(p.transactions, 300);
        assert!((p.tps - 100.25).abs() < 1e-9);
    }

    #[test]
    fn failed_transactions_are_counted() {
        let out = PG15.replace(
            "failed transactions: 0 (0.000%)",
            "failed transactions: 7 (0.155%)",
        );
        assert_eq!(parse_pgbench(&out).unwrap().failed, 7);
    }

    #[test]
    fn output_without_tps_is_an_error() {
        assert!(parse_pgbench("pgbench: error: connection failed").is_err());
    }

    #[test]
    fn pgbench_args_are_whole_seconds_and_prepared() {
        let a = pgbench_args(Path::new("/d/s.sql"), 8, 0, "postgres://p@127.0.0.1:5/db");
        assert_eq!(
            a.join(" "),
            "-n -M prepared -c 8 -j 2 -T 1 -f /d/s.sql postgres://p@127.0.0.1:5/db"
        );
    }

    /// The cluster the bench starts answers on loopback and syncs every commit.
    #[tokio::test]
    async fn the_cluster_is_durable() {
        use sqlx::Connection;
        let Some(bin) = bin_dir() else {
            let line = "SKIPPED: the bench's PostgreSQL cluster (apt-get install postgresql)";
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{line}");
            eprintln!("{line}");
            return;
        };
        let base = tempfile::tempdir().unwrap();
        let cluster = Cluster::start(&bin, base.path()).unwrap();
        let dir = cluster.dir().to_path_buf();
        let mut conn = sqlx::PgConnection::connect(&cluster.admin_url)
            .await
            .unwrap();
        for (name, want) in [
            ("fsync", "on"),
            ("synchronous_commit", "on"),
            ("full_page_writes", "on"),
            ("autovacuum_naptime", "1s"),
        ] {
            let got: String = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SHOW {name}")))
                .fetch_one(&mut conn)
                .await
                .unwrap();
            assert_eq!(got, want, "{name}");
        }
        conn.close().await.unwrap();
        drop(cluster);
        assert!(
            !dir.exists(),
            "the cluster's folder is removed when dropped"
        );
    }
}
