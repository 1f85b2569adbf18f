//! The `gate` subcommands: installing a bare repository's pre-receive hook, and the hook.

use std::path::PathBuf;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum GateCommand {
    /// Make a bare repository a gate: write its pre-receive hook, enable push options
    #[command(after_help = "\
Examples:
  supervise gate install /srv/gate/demo.git --bottle demo
  supervise gate install /srv/gate/demo.git --bottle demo --remote upstream --force
  # a PostgreSQL URL with a password: the hook names the file, never the password
  supervise --db-file /etc/supervise/db-url gate install /srv/gate/demo.git --bottle demo")]
    Install {
        /// The bare repository the bottle pushes to
        repo: PathBuf,
        /// The bottle whose pushes it receives
        #[arg(long, value_name = "SLUG")]
        bottle: String,
        /// The upstream remote the gate stands for
        #[arg(long, value_name = "NAME", default_value = "origin")]
        remote: String,
        /// Replace a pre-receive hook supervise did not write
        #[arg(long)]
        force: bool,
    },
    /// The hook itself: decide the push git describes on stdin (exit 0 accept, 1 refuse)
    #[command(after_help = "\
Examples:
  # run by git as hooks/pre-receive; `gate install` writes the line
  exec supervise --db /srv/supervise/supervise.db gate pre-receive --bottle demo
  exec supervise --db-file /etc/supervise/db-url gate pre-receive --bottle demo")]
    PreReceive {
        /// The bottle pushing
        #[arg(long, value_name = "SLUG")]
        bottle: String,
        /// The upstream remote the gate stands for
        #[arg(long, value_name = "NAME", default_value = "origin")]
        remote: String,
        /// Wait up to this many seconds for a decision before refusing
        #[arg(long, value_name = "SECONDS", default_value_t = 0)]
        grace: u64,
    },
}
