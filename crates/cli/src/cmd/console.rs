//! `supervise console`: serves the review console and its API on the database (which must
//! exist: `bottle add` creates one). Flags and environment become a
//! `supervise_console::Config`; everything else is that crate's.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use supervise_console::{Config, DEFAULT_LISTEN, TlsFiles};
use supervise_store::{Store, StoreOptions};

use super::Ctx;

#[derive(Debug, Args)]
pub struct ConsoleArgs {
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
    init_logging();
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
    writeln!(
        out,
        "supervise console listening on {scheme}://{local} (public URL {public_url}), database {}",
        ctx.shown_db()
    )?;
    out.flush()?;
    supervise_console::serve(listener, store, config, shutdown_signal()).await?;
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

/// Logs to stderr, filtered by `SUPERVISE_LOG` (default `info`).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SUPERVISE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
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
