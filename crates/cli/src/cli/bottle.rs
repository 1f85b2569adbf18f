//! The `bottle` subcommands: the registry that attributes callers by source address.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum BottleCommand {
    /// Register a bottle (creates and migrates the database if it does not exist)
    Add {
        /// Short name: a-z, 0-9 and '-'
        slug: String,
        /// The source address its calls come from
        #[arg(long, value_name = "IP")]
        ip: std::net::IpAddr,
    },
    /// List registered bottles: every host's (named HOST/SLUG when they span hosts)
    List {
        /// Only this host's bottles
        #[arg(long, value_name = "NAME")]
        host: Option<String>,
        /// Print one JSON document instead of a table
        #[arg(long)]
        json: bool,
    },
    /// Remove a bottle: withdraws its undecided proposals and ends its grants
    Rm {
        /// The bottle's slug
        slug: String,
    },
}
