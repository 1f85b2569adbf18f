//! `supervise console`: serves the review console and its API on the database (which must
//! exist: `bottle add` creates one). Flags and environment become a
//! `supervise_console::Config`; everything else is that crate's.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use supervise_console::{Config, DEFAULT_LISTEN, TlsFiles};
use supervise_store::{Store, StoreOptions};

use super::Ctx;

#[derive(Debug, Args)]
pub struct ConsoleArgs {
    /// Read settings from this TOML file: each key is a long flag (`listen`, `public-url`,
    /// `db`, `tls-cert`, ...); flags and environment variables win over it
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print the effective settings (flags, environment, file, defaults; passwords masked)
    /// as TOML and exit
    #[arg(long)]
    pub print_config: bool,
    /// Log format on stderr (the filter comes from SUPERVISE_LOG); colour only on a terminal
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Address to listen on
    #[arg(long, env = "SUPERVISE_CONSOLE_LISTEN", default_value = DEFAULT_LISTEN, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// How operators reach the console, for sign-in links and the Origin check
    /// [default: http(s)://the listen address]
    #[arg(long, env = "SUPERVISE_CONSOLE_URL", value_name = "URL")]
    pub public_url: Option<String>,
    /// Serve https with this PEM certificate chain (with --tls-key)
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

pub async fn run(ctx: &Ctx, args: ConsoleArgs, out: &mut dyn Write) -> Result<()> {
    init_logging(args.log_format);
    let store = Store::open(
        &ctx.db,
        StoreOptions {
            create: false,
            host: ctx.host.clone(),
            ..Default::default()
        },
    )
    .await?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let local = listener.local_addr()?;
    let tls = match (args.tls_cert, args.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
        _ => None,
    };
    let public_url = args
        .public_url
        .unwrap_or_else(|| default_public_url(local, tls.is_some()));
    let config = Config {
        tls,
        ..Config::new(public_url.clone())
    };
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let shutdown = shutdown_signal();
    writeln!(
        out,
        "supervise console listening on {scheme}://{local} (public URL {public_url}), database {}",
        ctx.shown_db()
    )?;
    out.flush()?;
    supervise_console::serve(listener, store, config, shutdown).await?;
    Ok(())
}

/// `http(s)://ADDR`, with a loopback address in place of an unspecified one.
fn default_public_url(local: SocketAddr, tls: bool) -> String {
    let scheme = if tls { "https" } else { "http" };
    let mut addr = local;
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    format!("{scheme}://{addr}")
}

/// `--log-format`: lines for people, or one JSON object per line for a log pipeline.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Logs to stderr, filtered by `SUPERVISE_LOG` (default `info`); colour codes only when
/// stderr is a terminal, so a log file or the journal gets plain text.
fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SUPERVISE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed when this is called, not when
/// the future is first polled, so a SIGTERM right after the "listening" line stops the
/// console cleanly.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate()).ok();
    let int = tokio::signal::ctrl_c();
    async move {
        match term {
            Some(mut term) => {
                tokio::select! {
                    _ = int => {}
                    _ = term.recv() => {}
                }
            }
            None => {
                let _ = int.await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::default_public_url;

    #[test]
    fn the_default_public_url_is_the_listen_address_or_loopback() {
        assert_eq!(
            default_public_url("127.0.0.1:7412".parse().unwrap(), false),
            "http://127.0.0.1:7412"
        );
        assert_eq!(
            default_public_url("0.0.0.0:8443".parse().unwrap(), true),
            "https://127.0.0.1:8443"
        );
    }
}
