//! The `audit` subcommands: checking the hash chain, its head, and archiving.

use std::path::PathBuf;

use clap::Subcommand;

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
