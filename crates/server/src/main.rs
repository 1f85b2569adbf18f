//! `supervise-server`: parses flags, starts logging, opens the database and claims it
//! (one server per database on a host), registers `--bottle`s, binds, and serves until SIGINT/SIGTERM.

use std::io::IsTerminal;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};
use supervise_server::Config;
use supervise_server::open_files::{self, OpenFiles, WaitCaps};
use supervise_store::clock::parse_duration;
use supervise_store::{ProposalLimits, Registered, Store, StoreError, StoreOptions};
use tracing_subscriber::EnvFilter;

/// The supervise MCP server: agents in bottles propose egress and git-push changes; a human
/// decides them with the `supervise` CLI.
#[derive(Debug, Parser)]
#[command(name = "supervise-server", version, max_term_width = 100)]
struct Args {
    /// Read settings from this TOML file: each key is a long flag (`listen = "0.0.0.0:7411"`,
    /// `grace = 30`, `bottle = ["demo=10.0.0.2"]`); flags and environment variables win
    /// over it, and a flag given on the command line replaces the file's list.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Print the effective settings (flags, environment, file, defaults; passwords masked)
    /// as TOML and exit.
    #[arg(long)]
    print_config: bool,

    /// Database: a SQLite file, created and migrated on start, or a `postgres://` URL (an
    /// existing database, migrated on start) shared by many hosts [env: SUPERVISE_DB]
    /// [default: ./supervise.db]. Resolved by the same rule as the `supervise` CLI's `--db`.
    #[arg(long, value_name = "PATH|URL")]
    db: Option<PathBuf>,

    /// A file holding the database's path or URL, for a URL with a password: readable only
    /// by its owner and group (0600, or 0640 with a shared group) [env: SUPERVISE_DB_FILE]
    #[arg(long, value_name = "PATH", conflicts_with = "db")]
    db_file: Option<PathBuf>,

    /// This host's id: the server attributes callers only to this host's bottles, and
    /// `--bottle` registers them on it (default: the hostname; on SQLite, the host the file
    /// records).
    #[arg(long, env = "SUPERVISE_HOST_ID", value_name = "NAME")]
    host_id: Option<String>,

    /// Address to listen on (port 0 picks a free port; the address is logged).
    #[arg(long, env = "SUPERVISE_LISTEN", default_value = "127.0.0.1:7411")]
    listen: SocketAddr,

    /// Grace window: how long a proposal waits for a decision before answering `pending`
    /// (seconds, or 90s/10m; 0 answers `pending` at once).
    #[arg(long, env = "SUPERVISE_RESPONSE_TIMEOUT_SECONDS", default_value = "30", value_parser = duration)]
    grace: Duration,

    /// Register a bottle at start (updates its IP if the slug exists; refuses to start if
    /// the IP belongs to another bottle). Repeatable; SUPERVISE_BOTTLES takes a
    /// comma-separated list.
    #[arg(long = "bottle", env = "SUPERVISE_BOTTLES", value_name = "SLUG=IP", value_parser = bottle, value_delimiter = ',')]
    bottles: Vec<(String, IpAddr)>,

    /// How long an undecided proposal lives (0 = forever).
    #[arg(long, env = "SUPERVISE_PROPOSAL_TTL", default_value = "24h", value_parser = duration)]
    proposal_ttl: Duration,

    /// An identical change rejected this recently is answered `rejected` at once (0 = off).
    #[arg(long, env = "SUPERVISE_REJECT_COOLDOWN", default_value = "10m", value_parser = duration)]
    reject_cooldown: Duration,

    /// Undecided proposals one bottle may have (0 = no cap).
    #[arg(long, env = "SUPERVISE_MAX_PENDING_PER_BOTTLE", default_value_t = 64)]
    max_pending_per_bottle: u32,

    /// Calls held in their grace window and listen streams at once, server-wide [default:
    /// 16384, or less when the open-file limit allows less]. Past it a proposal is still
    /// filed, and its call answers `pending` at once. Held to what the open-file limit
    /// allows (0 asks for that most).
    #[arg(long, env = "SUPERVISE_MAX_WAITING")]
    max_waiting: Option<usize>,

    /// Calls of one bottle held in their grace window and its listen streams at once
    /// [default: 1024, or a quarter of --max-waiting's most]. A connection holds at most one:
    /// HTTP/1.1 serves its requests one at a time. Held to what the open-file limit allows
    /// (0 asks for that most).
    #[arg(long, env = "SUPERVISE_MAX_WAITING_PER_BOTTLE")]
    max_waiting_per_bottle: Option<usize>,

    /// How often a client of the tasks extension is told to poll `tasks/get` (its
    /// `pollIntervalMs`; a `subscriptions/listen` stream needs no polling).
    #[arg(long, env = "SUPERVISE_TASK_POLL_INTERVAL", default_value = "5s", value_parser = duration)]
    task_poll_interval: Duration,

    /// Command run once per event (decisions made by the CLI included), with the event as
    /// JSON on stdin and SUPERVISE_EVENT / SUPERVISE_PROPOSAL_ID in its environment.
    #[arg(long, env = "SUPERVISE_ON_EVENT", value_name = "CMD")]
    on_event: Option<String>,

    /// The review console's public URL, e.g. https://console.internal:8443: each event
    /// document a hook reads then carries its proposal's page as `url`.
    #[arg(long, env = "SUPERVISE_CONSOLE_URL", value_name = "URL")]
    console_url: Option<String>,

    /// Extra allowed Origin value, e.g. http://tools.internal:7411. Repeatable.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    allowed_origins: Vec<String>,

    /// Extra allowed Host value, e.g. supervise.internal:7411. Repeatable.
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,

    /// Serve Prometheus metrics (`GET /metrics`) on this address, a listener of its own and
    /// never the MCP one (`off`: none).
    #[arg(long, env = "SUPERVISE_METRICS_LISTEN", value_name = "ADDR|off", value_parser = metrics_listen)]
    metrics_listen: Option<MetricsListen>,

    /// Log format (the filter comes from SUPERVISE_LOG, e.g. `info` or `supervise_server=debug`).
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// `--metrics-listen`: an address, or `off`.
#[derive(Debug, Clone, Copy)]
enum MetricsListen {
    Off,
    At(SocketAddr),
}

fn metrics_listen(s: &str) -> Result<MetricsListen, String> {
    match s.trim() {
        "" | "off" => Ok(MetricsListen::Off),
        addr => addr
            .parse()
            .map(MetricsListen::At)
            .map_err(|_| format!("{s:?} is not an address like 127.0.0.1:9411, or `off`")),
    }
}

fn duration(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

fn bottle(s: &str) -> Result<(String, IpAddr), String> {
    let (slug, ip) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not SLUG=IP (e.g. dev=127.0.0.1)"))?;
    let ip: IpAddr = ip
        .trim()
        .parse()
        .map_err(|_| format!("{ip:?} is not an IP address"))?;
    Ok((slug.trim().to_owned(), ip))
}

fn non_zero<T: PartialEq + Default>(v: T) -> Option<T> {
    (v != T::default()).then_some(v)
}

/// Environment variables the server reads itself (`supervise_store::paths`), by argument:
/// set, they beat the config file as clap's own ones do.
const OWN_ENV: &[(&str, &str)] = &[("db", "SUPERVISE_DB"), ("db_file", "SUPERVISE_DB_FILE")];

fn main() -> ExitCode {
    let layered =
        match supervise_settings::parse(Args::command(), std::env::args_os().collect(), OWN_ENV) {
            Ok(l) => l,
            Err(supervise_settings::SettingsError::Clap(e)) => e.exit(),
            Err(e) => {
                eprintln!("supervise-server: {e}");
                return ExitCode::from(2);
            }
        };
    if layered.print_requested() {
        print!("{}", layered.describe());
        return ExitCode::SUCCESS;
    }
    let args = match Args::from_arg_matches(&layered.matches) {
        Ok(a) => a,
        Err(e) => e.exit(),
    };
    init_tracing(args.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("supervise-server: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("supervise-server: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing(format: LogFormat) {
    let filter =
        EnvFilter::try_from_env("SUPERVISE_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => builder.json().init(),
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    let caps = wait_caps(args.max_waiting, args.max_waiting_per_bottle);
    let options = StoreOptions {
        create: true,
        limits: ProposalLimits {
            proposal_ttl: non_zero(args.proposal_ttl),
            reject_cooldown: non_zero(args.reject_cooldown),
            max_pending_per_bottle: non_zero(args.max_pending_per_bottle),
        },
        host: args.host_id.clone(),
        ..StoreOptions::default()
    };
    let db = supervise_store::paths::db_setting(args.db.as_deref(), args.db_file.as_deref())?.db;
    let shown = supervise_store::Location::parse(&db);
    let store = Store::open(&db, options)
        .await
        .with_context(|| format!("cannot open the database {shown}"))?;
    // One server per database on a host (a second one would tell waiting calls `unknown`
    // for decisions the first delivered, and run every hook twice): held until exit.
    let _claim = store.claim_server().await?;
    // The helpers on this host (the proxy's, the gate) apply the same cooldown.
    store
        .record_limits()
        .await
        .context("cannot record the server's limits in the database")?;
    for (slug, ip) in &args.bottles {
        match store.register_bottle(slug, *ip).await {
            Ok((b, how)) => {
                let how = match how {
                    Registered::Added => "added",
                    Registered::Updated => "updated",
                    Registered::Unchanged => "unchanged",
                };
                tracing::info!(bottle = %b.slug, ip = %b.ip, how, "bottle registered");
            }
            Err(StoreError::IpTaken { ip, slug: other }) => {
                bail!(
                    "--bottle {slug}={ip}: address {ip} already belongs to bottle {other}; \
                     remove it first (`supervise bottle rm {other}`) or pick another address"
                );
            }
            Err(e) => bail!("--bottle {slug}={ip}: {e}"),
        }
    }
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = listener.local_addr()?;
    let metrics = match args.metrics_listen {
        Some(MetricsListen::At(at)) => {
            let l = tokio::net::TcpListener::bind(at)
                .await
                .with_context(|| format!("cannot listen on {at} for --metrics-listen"))?;
            let bound = l.local_addr()?;
            tracing::info!(address = %bound, "metrics on http://{bound}/metrics");
            Some(l)
        }
        Some(MetricsListen::Off) | None => None,
    };
    let shutdown = shutdown_signal();
    tracing::info!(
        address = %addr,
        db = %shown,
        host = store.host(),
        grace_s = args.grace.as_secs_f64(),
        "supervise-server listening on http://{addr}/mcp"
    );
    let config = Config {
        grace: args.grace,
        allowed_origins: args.allowed_origins,
        allowed_hosts: args.allowed_hosts,
        on_event: args.on_event,
        console_url: args.console_url.filter(|u| !u.trim().is_empty()),
        max_waiting: caps.total,
        max_waiting_per_bottle: caps.per_bottle,
        task_poll_interval: args.task_poll_interval,
        ..Config::default()
    };
    supervise_server::serve_with_metrics(listener, metrics, store, config, shutdown).await
}

/// Raises the open-file limit and sizes the wait caps from it (see
/// `supervise_server::open_files`), saying what it did.
fn wait_caps(total: Option<usize>, per_bottle: Option<usize>) -> WaitCaps {
    let limit = match open_files::raise() {
        Ok(OpenFiles {
            limit,
            raised_from: Some(from),
        }) => {
            tracing::info!(from, to = limit, "open-file limit raised to the hard limit");
            limit
        }
        Ok(found) => found.limit,
        Err(e) => {
            let limit = open_files::current();
            tracing::warn!(error = %e, limit, "cannot raise the open-file limit; the wait caps fit the current one");
            limit
        }
    };
    let (caps, clamped) = WaitCaps::resolve(limit, total, per_bottle);
    for c in clamped {
        tracing::warn!(
            flag = c.flag,
            asked = c.asked,
            used = c.used,
            open_file_limit = limit,
            "{} {} is more than the open-file limit allows; using {} (raise the hard limit, e.g. LimitNOFILE=, for more)",
            c.flag,
            c.asked,
            c.used
        );
    }
    tracing::info!(
        open_file_limit = limit,
        max_waiting = caps.total,
        max_waiting_per_bottle = caps.per_bottle,
        "wait caps"
    );
    caps
}

/// Resolves on the first SIGINT or SIGTERM. The SIGTERM handler is installed when this is
/// called (before the "listening" line), so a service manager's stop right after the start
/// still shuts down cleanly.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate());
    async move {
        let mut term = match term {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM; only Ctrl-C stops the server");
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT: shutting down"),
            _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
        }
    }
}
