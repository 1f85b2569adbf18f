//! What every scenario shares: the run's settings ([`Ctx`]), the server under test ([`Under`]),
//! and the tool arguments the scenarios send.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::client::Target;
use crate::procs::{Server, ServerSpec};

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
    /// On the postgres pass: an admin URL (`--postgres`, or the cluster started for the
    /// run); each server started gets a fresh database there.
    pub postgres: Option<String>,
    /// `pgbench`, for `baseline-pg`.
    pub pgbench: Option<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct External {
    pub addr: SocketAddr,
    pub pid: Option<u32>,
    pub db: Option<PathBuf>,
}

impl Ctx {
    /// The `supervise` CLI beside the server binary (the helpers' and `rules test`'s
    /// scenarios run it).
    pub fn cli_bin(&self) -> Result<PathBuf> {
        self.server_bin
            .as_ref()
            .and_then(|s| s.parent())
            .map(|d| d.join(format!("supervise{}", std::env::consts::EXE_SUFFIX)))
            .filter(|p| p.is_file())
            .context("the supervise CLI was not found next to supervise-server")
    }

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
        let db = match &ctx.postgres {
            Some(admin) => fresh_database(admin, name).await?,
            None => ctx.dir.join(format!("{name}.db")),
        };
        let spec = ServerSpec {
            bin: bin.clone(),
            db,
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

    /// SIGTERM to the server this run started; how long it took to exit, and its status
    /// (`None`: still running after `within`).
    pub(super) async fn terminate(
        &mut self,
        within: Duration,
    ) -> Result<(Duration, Option<ExitStatus>)> {
        match &mut self._server {
            Some(server) => server.proc.terminate_timed(within).await,
            None => bail!("this scenario stops the server: it cannot run with --url"),
        }
    }

    pub(super) fn db(&self) -> Result<&Path> {
        self.db
            .as_deref()
            .context("this scenario needs the server's database file (--db with --url)")
    }
}

/// Creates the empty database `bench_NAME_PID` on the server of `admin` (a
/// `postgres://…/DB` URL) and returns its URL.
pub(super) async fn fresh_database(admin: &str, name: &str) -> Result<PathBuf> {
    use sqlx::Connection;
    let db = format!("bench_{}_{}", name.replace('-', "_"), std::process::id());
    let mut conn = sqlx::PgConnection::connect(admin).await.with_context(|| {
        format!(
            "--postgres: cannot connect to {}",
            supervise_store::Location::parse(admin)
        )
    })?;
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {db}")))
        .execute(&mut conn)
        .await?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {db}")))
        .execute(&mut conn)
        .await?;
    let _ = conn.close().await;
    let (base, _) = admin
        .rsplit_once('/')
        .context("--postgres: expected postgres://USER@HOST:PORT/DB")?;
    Ok(PathBuf::from(format!("{base}/{db}")))
}

pub(super) fn propose_args(host: &str) -> String {
    format!(r#"{{"host":"{host}","port":443,"justification":"supervise-bench load"}}"#)
}

pub(super) fn check_args(id: &str) -> String {
    format!(r#"{{"proposal_id":"{id}"}}"#)
}

/// Runs this executable's `decide` subcommand in another process, as an operator's CLI
/// would: it decides the proposals listed in `ids_file` at `rate` per second (0: back to
/// back) and prints each one's commit time, returned here by proposal id.
pub(super) async fn run_decider(
    db_path: &Path,
    ids_file: &Path,
    rate: f64,
    expected: usize,
) -> Result<std::collections::HashMap<String, u64>> {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .arg("decide")
        .arg("--db")
        .arg(db_path)
        .arg("--ids")
        .arg(ids_file)
        .arg("--rate")
        .arg(rate.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .context("starting the decider")?;
    let stdout = child.stdout.take().context("decider stdout")?;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let mut committed = std::collections::HashMap::with_capacity(expected);
    while let Some(line) = lines.next_line().await? {
        if let Some((id, ns)) = line.split_once(' ')
            && let Ok(ns) = ns.parse()
        {
            committed.insert(id.to_string(), ns);
        }
    }
    let status = child.wait().await?;
    if !status.success() {
        bail!("the decider failed ({status})");
    }
    Ok(committed)
}
