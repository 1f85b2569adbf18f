//! The `rules` subcommands: operator rules in Cedar (docs/RULES.md).

use std::path::PathBuf;
use std::time::Duration;

use clap::Subcommand;
use supervise_store::clock;

#[derive(Debug, Subcommand)]
pub enum RulesCommand {
    /// Check FILE and store it as the new rules version (every process on the database
    /// decides by it from its next proposal); --empty removes every rule
    Set {
        /// The rules file (Cedar)
        #[arg(required_unless_present = "empty", conflicts_with = "empty")]
        file: Option<PathBuf>,
        /// Store an empty version: a human decides every proposal
        #[arg(long)]
        empty: bool,
    },
    /// The rules in force (or version N), with who set them and when
    Show {
        /// Show this version instead of the newest
        #[arg(long, value_name = "N")]
        version: Option<i64>,
        /// Print one JSON document instead of text
        #[arg(long)]
        json: bool,
    },
    /// Check FILE only: syntax, schema, an @id on every policy, annotations well formed
    Check {
        /// The rules file (Cedar)
        file: PathBuf,
    },
    /// Replay the proposals filed in a window through FILE: what it would have decided,
    /// and each disagreement with a human's decision (exits 0 whatever it finds)
    Test {
        /// The candidate rules file (Cedar)
        file: PathBuf,
        /// Only proposals filed this long ago or later (90s, 30m, 8h, 7d); default: all
        #[arg(long, value_name = "DURATION", value_parser = parse_since)]
        since: Option<Duration>,
        /// Print one JSON document instead of text
        #[arg(long)]
        json: bool,
    },
}

fn parse_since(text: &str) -> Result<Duration, String> {
    clock::parse_duration(text)
        .map_err(|_| format!("{text:?} is not a duration like 90s, 30m, 8h or 7d"))
}
