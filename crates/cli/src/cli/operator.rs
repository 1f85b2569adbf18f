//! The `operator` subcommands and the console's public URL they print links on.

use clap::{Args, Subcommand};
use supervise_store::Role;

#[derive(Debug, Subcommand)]
pub enum OperatorCommand {
    /// Add an operator and print a one-time sign-in link (valid 15 minutes)
    Add {
        /// 1-64 of A-Z, a-z, 0-9, '.', '_', '@' and '-'
        name: String,
        /// viewer (reads), approver (also decides and revokes), admin (also manages
        /// bottles and operators)
        #[arg(long, value_parser = parse_role)]
        role: Role,
        /// Limit the operator to bottles whose slug matches (`*` any text, `?` one
        /// character); repeatable; default every bottle
        #[arg(long = "bottles", value_name = "GLOB")]
        bottles: Vec<String>,
        #[command(flatten)]
        console: ConsoleUrl,
    },
    /// Print a new one-time sign-in link (older unused links stay valid until they expire)
    Link {
        name: String,
        #[command(flatten)]
        console: ConsoleUrl,
        /// Also draw the link as a QR code on the terminal (scan it with a phone)
        #[arg(long)]
        qr: bool,
    },
    /// Print a new API bearer token, shown once; the operator's old token stops working
    Token { name: String },
    /// List operators
    List {
        /// Print one JSON document instead of a table
        #[arg(long)]
        json: bool,
    },
    /// Remove an operator: their sessions, token and sign-in links end at once
    Rm { name: String },
}

/// Where operators reach the console, for the sign-in links printed.
#[derive(Debug, Args)]
pub struct ConsoleUrl {
    /// The console's public URL
    #[arg(
        long,
        env = "SUPERVISE_CONSOLE_URL",
        value_name = "URL",
        default_value = "http://127.0.0.1:7412",
        value_parser = parse_public_url
    )]
    pub public_url: String,
}

fn parse_role(s: &str) -> Result<Role, String> {
    s.parse()
        .map_err(|_| format!("{s:?} is not a role: viewer, approver or admin"))
}

/// An http(s) URL, without the trailing slash (the link's path is added to it).
fn parse_public_url(s: &str) -> Result<String, String> {
    let url = s.trim().trim_end_matches('/');
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or("must start with http:// or https://")?;
    if rest.is_empty() || rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must name a host, without spaces".into());
    }
    Ok(url.to_string())
}
