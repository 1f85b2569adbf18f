//! The `audit` subcommands: checking the hash chain, its head, and archiving.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `audit`'s filters and export format.
#[derive(Debug, Args)]
pub struct AuditFilterArgs {
    /// Only events at or after T: an RFC 3339 time, a date, or a duration meaning that
    /// long ago (`2h`, `7d`)
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
    /// Only events before T (as --since)
    #[arg(long, value_name = "T")]
    pub until: Option<String>,
    /// Only events of this name (`approved`, `grant-used`, …)
    #[arg(long, value_name = "EVENT")]
    pub event: Option<String>,
    /// Only this actor (`operator:ana`), or every actor starting with a prefix ending in
    /// `:` (`rules:`, `bottle:`)
    #[arg(long, value_name = "ACTOR")]
    pub actor: Option<String>,
    /// Only the newest N events (still shown oldest first)
    #[arg(long, value_name = "N")]
    pub limit: Option<u32>,
    /// `jsonl`: one JSON event per line, with `seq`, `hash` and `schema_version`
    #[arg(long, value_name = "FORMAT", value_parser = ["jsonl"], conflicts_with = "json")]
    pub format: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Recompute the hash chain and cross-check proposals, decisions and grants against
    /// it; exit 1 naming the first row that does not follow
    #[command(after_help = "\
Examples:
  supervise audit verify
  supervise audit verify --head 3f7a…   # a head kept from `audit head`
  supervise audit verify --archive trail-2026.jsonl")]
    Verify {
        /// Print one JSON document instead of text
        #[arg(long)]
        json: bool,
        /// Also check that this hash (from an earlier `audit head`) is still in the chain
        #[arg(long, value_name = "HASH")]
        head: Option<String>,
        /// Verify this archive file on its own (no database needed)
        #[arg(long, value_name = "FILE")]
        archive: Option<PathBuf>,
    },
    /// Print the chain's current head, for an auditor to keep elsewhere
    Head,
    /// Move the events before TIME (and what ended before it) to FILE, then remove them
    #[command(after_help = "\
Examples:
  supervise audit archive --before 2026-01-01 --to /srv/audit/trail-2025.jsonl")]
    Archive {
        /// An RFC 3339 time or a date (midnight UTC)
        #[arg(long, value_name = "TIME")]
        before: String,
        /// The file to write; never overwritten
        #[arg(long, value_name = "FILE")]
        to: PathBuf,
    },
}
