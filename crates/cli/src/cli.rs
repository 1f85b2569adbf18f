//! The command line: every command, flag and help text (with an example per command).
//! Parsing problems are clap's, so they exit with [`crate::exit::USAGE`]. The `operator`
//! family is declared in [`operator`], the `rules` family in [`rules`], the `gate` family in
//! [`gate`], the `bottle` family in [`bottle`].

pub mod audit;
pub mod bottle;
pub mod gate;
pub mod operator;
pub mod rules;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::{Map, Value};
use supervise_store::{StatusFilter, clock};

pub use bottle::BottleCommand;
pub use gate::GateCommand;
pub use operator::OperatorCommand;
pub use rules::RulesCommand;

use crate::config;
use crate::render::ColorChoice;

const ABOUT: &str = "Decide what sandboxed agents may reach: the operator's side of supervise.";

const AFTER_HELP: &str = "\
Examples:
  supervise list                         # pending proposals, oldest first
  supervise show 019ad1e2                # one proposal (a unique id prefix is enough)
  supervise approve 019ad1e2 --for 8h    # grant it for eight hours
  supervise list --watch                 # follow new proposals and decisions

Exit codes: 0 done, 1 refused (stderr says why), 2 usage.";

#[derive(Debug, Parser)]
#[command(name = "supervise", version, about = ABOUT, after_help = AFTER_HELP)]
pub struct Cli {
    /// The supervise database: a SQLite file or a `postgres://` URL [env: SUPERVISE_DB]
    /// [default: ./supervise.db]
    #[arg(long, global = true, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,

    /// A file holding the database's path or URL, for a URL with a password: readable only
    /// by its owner and group (0600, or 0640 with a shared group) [env: SUPERVISE_DB_FILE]
    #[arg(long, global = true, value_name = "PATH", conflicts_with = "db")]
    pub db_file: Option<PathBuf>,

    /// This host's id, for the commands that act on this host's bottles (`bottle add`,
    /// `bottle rm`, `gate`, `squid-acl`, `check egress --ip`): bottles belong to a host
    /// [default: the hostname; on SQLite, the host the file records]
    #[arg(long, global = true, env = "SUPERVISE_HOST_ID", value_name = "NAME")]
    pub host_id: Option<String>,

    /// Operator name recorded on decisions [default: $USER, else $LOGNAME, else the login
    /// name of the user id]
    #[arg(long = "as", global = true, value_name = "NAME", value_parser = config::valid_operator)]
    pub operator: Option<String>,

    /// Colour human output: auto (on a terminal, unless NO_COLOR is set), always, never
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    pub color: ColorChoice,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List proposals, oldest first (default: pending)
    #[command(after_help = "\
Examples:
  supervise list
  supervise list --bottle demo --status all
  supervise list --json | jq -r '.proposals[].id'
  supervise list --watch            # a line per change; Ctrl-C to stop")]
    List(ListArgs),

    /// Show one proposal with its decision and history
    #[command(after_help = "\
Examples:
  supervise show 019ad1e2
  supervise show 019ad1e2-5c4b-7f3e-9a61-2b7c0e4d8f10 --json
  supervise show 019ad1e2 --diff
  supervise show 019ad1e2 --diff --stat")]
    Show {
        /// Proposal id, or a unique prefix of one
        id: String,
        /// Print one JSON document instead of text
        #[arg(long)]
        json: bool,
        /// For a push: the files and patches the gate recorded (through the pager when long)
        #[arg(long, conflicts_with = "json")]
        diff: bool,
        /// With --diff: the file list only
        #[arg(long, requires = "diff")]
        stat: bool,
        /// Also resolve an egress proposal's host from this host (one-second limit) and
        /// mark loopback, private, link-local, unspecified and metadata addresses
        #[arg(long)]
        resolve: bool,
    },

    /// Approve a proposal as proposed (or every pending match with --bottle/--kind/--match)
    #[command(after_help = "\
Examples:
  supervise approve 019ad1e2
  supervise approve 019ad1e2 --for 30m --note 'for the release build'
  supervise approve 019ad1e2 --yes  # a flagged change, off a terminal
  supervise approve --bottle demo --kind egress --match '*.github.com' --dry-run
  supervise approve --bottle demo --kind git-push --match 'refs/heads/feature/*'")]
    Approve {
        /// Proposal id, or a unique prefix of one
        #[arg(required_unless_present = "bottle", conflicts_with = "bottle")]
        id: Option<String>,
        /// A note for the agent
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
        /// Let the grant end after this long (90s, 30m, 8h, 7d); default: until revoked
        #[arg(long = "for", value_name = "DURATION", value_parser = parse_grant_duration)]
        grant_for: Option<Duration>,
        /// Confirm a flagged (risky) change without the prompt (needed off a terminal)
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        bulk: BulkArgs,
    },

    /// Approve a different change of the same kind (merged over the proposed one)
    #[command(after_help = "\
The JSON object is merged over the proposed change, field by field, and the result is
validated like a proposal: egress takes host and port, git-push takes remote and ref.
A --change that is not a JSON object is a usage error (exit 2); a change the store
refuses (e.g. port 0) is refused with exit 1, naming the field.

Examples:
  supervise modify 019ad1e2 --change '{\"port\": 8443}'
  supervise modify 019ad1e2 --change '{\"host\": \"api.example.com\"}' --for 1h")]
    Modify {
        /// Proposal id, or a unique prefix of one
        id: String,
        /// Fields to change, as a JSON object
        #[arg(long, value_name = "JSON", value_parser = parse_change)]
        change: Map<String, Value>,
        /// A note for the agent
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
        /// Let the grant end after this long (90s, 30m, 8h, 7d); default: until revoked
        #[arg(long = "for", value_name = "DURATION", value_parser = parse_grant_duration)]
        grant_for: Option<Duration>,
        /// Confirm a flagged (risky) change without the prompt (needed off a terminal)
        #[arg(long)]
        yes: bool,
    },

    /// Reject a proposal (or every pending match with --bottle/--kind/--match)
    #[command(after_help = "\
Examples:
  supervise reject 019ad1e2 --note 'use the internal mirror instead'
  supervise reject --bottle demo --kind egress --match '*' --include-flagged")]
    Reject {
        /// Proposal id, or a unique prefix of one
        #[arg(required_unless_present = "bottle", conflicts_with = "bottle")]
        id: Option<String>,
        /// Why: the note reaches the agent
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
        #[command(flatten)]
        bulk: BulkArgs,
    },

    /// Manage the bottle registry used to attribute callers by source IP
    #[command(
        subcommand,
        after_help = "\
Examples:
  supervise bottle add demo --ip 10.0.3.2
  supervise bottle list
  supervise bottle rm demo"
    )]
    Bottle(BottleCommand),

    /// Manage the review console's operators: roles, sign-in links and API tokens
    #[command(
        subcommand,
        after_help = "\
Examples:
  supervise operator add alice --role approver --bottles 'team-a-*'
  supervise operator link alice     # a new one-time sign-in link
  supervise operator token ci-bot   # a new API token; the old one stops working
  supervise operator list --json
  supervise operator rm alice"
    )]
    Operator(OperatorCommand),

    /// Operator rules in Cedar: decisions that need no human, and ones that need two
    #[command(
        subcommand,
        after_help = "\
Examples:
  supervise rules check rules.cedar
  supervise rules test rules.cedar --since 30d   # replay before setting
  supervise rules set rules.cedar
  supervise rules show --json
  supervise rules set --empty                    # humans decide everything"
    )]
    Rules(RulesCommand),

    /// The grants in force for a bottle (or every bottle), with time left and last use
    #[command(after_help = "\
Examples:
  supervise policy demo
  supervise policy demo --json | jq '.grants[] | {id, change, seconds_left, last_used_at}'
  supervise policy --all --json   # every bottle, with its address, for other proxies")]
    Policy {
        /// The bottle: its slug, or HOST/SLUG when bottles of several hosts have the slug
        #[arg(
            required_unless_present = "all",
            conflicts_with = "all",
            value_name = "NAME"
        )]
        slug: Option<String>,
        /// Every live bottle of every host (named HOST/SLUG when they span hosts) with its
        /// address and grants in force
        #[arg(long)]
        all: bool,
        /// With --all: only this host's bottles
        #[arg(long, requires = "all", value_name = "NAME")]
        host: Option<String>,
        /// Print one JSON document instead of text
        #[arg(long)]
        json: bool,
    },

    /// Ask the egress decision the proxy asks: may a bottle reach HOST[:PORT] now?
    #[command(
        subcommand,
        after_help = "\
Exit codes: 0 allowed, 1 not allowed (or no database), 2 usage.

Examples:
  supervise check egress --bottle demo pypi.org          # port 443
  supervise check egress --ip 10.0.3.2 a.example.com:8443 --json"
    )]
    Check(CheckCommand),

    /// The Squid external_acl_type helper: answers OK/ERR per lookup from the grants in force
    #[command(after_help = "\
Reads `[CHANNEL] SRC HOST PORT` lines (squid.conf `%SRC %DST %PORT`, with or without
concurrency=; further fields are ignored) and answers `[CHANNEL] OK` or
`[CHANNEL] ERR message=\"...\"` per line, in order, until stdin closes. The database is
read as it is at each lookup and never created; a busy or missing one is answered ERR.

Examples:
  # squid.conf
  external_acl_type supervise ttl=5 negative_ttl=5 children-max=4 %SRC %DST %PORT \\
      /usr/local/bin/supervise --db /var/lib/supervise/supervise.db squid-acl --propose-on-deny --record-use
  acl supervised external supervise
  http_access allow supervised
  http_access deny all")]
    SquidAcl {
        /// File (or count a hit on) an `observed` egress proposal for a refused connection
        #[arg(long)]
        propose_on_deny: bool,
        /// Record `grant-used` when a grant lets a connection through (at most once a
        /// minute per grant)
        #[arg(long)]
        record_use: bool,
    },

    /// The line helper of the mitmproxy addon: answers OK/INTERCEPT/ERR per connection or request
    #[command(after_help = "\
Reads `ID SRC HOST PORT [METHOD PATH]` lines and answers, in order, `ID OK GRANT_ID`,
`ID INTERCEPT GRANT_ID` (only grants limited to methods or paths cover the connection:
intercept it and ask again for each request inside) or `ID ERR PROPOSAL_ID message=\"...\"`
(`-` when no proposal was filed or found), until stdin closes. The database is never
created; a busy or missing one is answered ERR. contrib/mitmproxy/supervise_addon.py runs it.

Examples:
  printf '1 10.0.3.2 pypi.org 443 GET /simple/\\n' | supervise decide --propose-on-deny")]
    Decide {
        /// File (or count a hit on) an `observed` egress proposal for a refused request
        #[arg(long)]
        propose_on_deny: bool,
        /// Record `grant-used` when a grant lets a request through (at most once a minute
        /// per grant)
        #[arg(long)]
        record_use: bool,
    },

    /// Serve the review console and its JSON API (see docs/SECURITY.md)
    #[command(after_help = "\
Examples:
  supervise console                                    # http://127.0.0.1:7412
  supervise console --listen 0.0.0.0:7412 --public-url https://console.example.org \\
      --tls-cert cert.pem --tls-key key.pem")]
    Console(crate::cmd::console::ConsoleArgs),

    /// End a grant now
    #[command(after_help = "\
Examples:
  supervise revoke 019ad1f0-0a1b-7c2d-8e3f-405162738495   # the full id, from `policy`")]
    Revoke {
        /// The grant's full id (see `supervise policy SLUG`)
        grant_id: String,
    },

    /// Check the set-up: the database (reachable, schema, file and directory modes and
    /// group, and whether --proxy-user can open it), the recorded gate hooks, PostgreSQL's
    /// version and role, the console URL and certificate; one line per check with its fix,
    /// exit 1 when any fails
    #[command(after_help = "\
Examples:
  supervise --db /var/lib/supervise/supervise.db doctor --proxy-user proxy
  supervise doctor --console-url https://console.example.org
  supervise doctor --json | jq '.checks[] | select(.ok | not)'")]
    Doctor {
        /// The checks as one JSON document: {"ok": BOOL, "checks": [{"check", "ok", "detail", "fix"}]}
        #[arg(long)]
        json: bool,
        /// Also check that this user (e.g. the proxy's, for the Squid helper) can open the database
        #[arg(long, value_name = "USER")]
        proxy_user: Option<String>,
        /// The console's public URL to check (GET /healthz; for https the certificate's name
        /// and expiry); unchecked when not given
        #[arg(long, env = "SUPERVISE_CONSOLE_URL", value_name = "URL")]
        console_url: Option<String>,
    },

    /// A consistent copy of the SQLite database, taken while servers run (never over an
    /// existing file; mode 0600, or 0660 for a group-shared database). PostgreSQL: pg_dump
    #[command(after_help = "\
Examples:
  supervise --db /var/lib/supervise/supervise.db backup /var/backups/supervise-$(date +%F).db
  sqlite3 /var/backups/supervise-2026-12-01.db 'PRAGMA integrity_check'")]
    Backup {
        /// The new file to write
        file: PathBuf,
    },

    /// The audit trail: every event, oldest first, with full ids
    #[command(after_help = "\
Examples:
  supervise audit
  supervise audit --bottle demo --json | jq -c '.events[]'
  supervise audit --since 1h --actor rules: --limit 50
  supervise audit --since 2026-12-01 --format jsonl > trail.jsonl")]
    #[command(args_conflicts_with_subcommands = true)]
    Audit {
        #[command(subcommand)]
        action: Option<audit::AuditCommand>,
        /// Only this bottle's events (every bottle ever registered under the slug; `HOST/SLUG`
        /// for one host's)
        #[arg(long, value_name = "SLUG")]
        bottle: Option<String>,
        /// Only this host's bottles' events (and those of no bottle)
        #[arg(long, value_name = "NAME")]
        host: Option<String>,
        /// Print one JSON document instead of text
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        filter: audit::AuditFilterArgs,
    },

    /// The git gate: a bare repository whose pre-receive hook asks supervise
    #[command(
        subcommand,
        after_help = "\
Examples:
  git init --bare /srv/gate/demo.git
  supervise gate install /srv/gate/demo.git --bottle demo
  # in the bottle: git remote set-url origin <URL of /srv/gate/demo.git>"
    )]
    Gate(GateCommand),

    /// Print shell completions
    #[command(after_help = "\
Examples:
  supervise completions bash > /etc/bash_completion.d/supervise
  supervise completions zsh > \"${fpath[1]}/_supervise\"
  supervise completions fish > ~/.config/fish/completions/supervise.fish")]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only this bottle's proposals (`HOST/SLUG` for one host's)
    #[arg(long, value_name = "SLUG")]
    pub bottle: Option<String>,
    /// Only this host's bottles' proposals
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Which proposals: pending, decided (not yet delivered), archived, expired, all
    #[arg(long, value_enum, default_value = "pending")]
    pub status: StatusArg,
    /// Print one JSON document instead of a table (with --watch: JSON Lines)
    #[arg(long)]
    pub json: bool,
    /// Keep running: print a line for each new proposal, decision or other change
    #[arg(long)]
    pub watch: bool,
}

/// Deciding many proposals at once: every pending proposal of one bottle whose change
/// matches a glob.
#[derive(Debug, Args)]
pub struct BulkArgs {
    /// Decide every pending proposal of this bottle that matches --kind and --match
    #[arg(long, value_name = "SLUG", requires_all = ["kind", "pattern"])]
    pub bottle: Option<String>,
    /// With --bottle: the kind of change
    #[arg(long, value_enum, requires = "bottle")]
    pub kind: Option<KindArg>,
    /// With --bottle: a glob (`*` any text, `?` one character) over the host (egress) or
    /// the ref (git-push; `feature/*` also matches refs/heads/feature/...)
    #[arg(
        long = "match",
        id = "pattern",
        value_name = "GLOB",
        requires = "bottle"
    )]
    pub pattern: Option<String>,
    /// With --bottle: decide flagged (risky) proposals too; by default they are skipped
    #[arg(long, requires = "bottle")]
    pub include_flagged: bool,
    /// With --bottle: print what would be decided, change nothing
    #[arg(long, requires = "bottle")]
    pub dry_run: bool,
}

#[derive(Debug, Subcommand)]
pub enum CheckCommand {
    /// May the bottle reach HOST[:PORT] (default port 443) through the egress proxy now?
    Egress {
        /// The bottle: its slug, or HOST/SLUG when bottles of several hosts have the slug
        #[arg(
            long,
            value_name = "NAME",
            required_unless_present = "ip",
            conflicts_with = "ip"
        )]
        bottle: Option<String>,
        /// The bottle, by the source address its connections come from (a bottle of this
        /// host, --host-id)
        #[arg(long, value_name = "IP")]
        ip: Option<std::net::IpAddr>,
        /// The destination: host, host:port, [ipv6]:port
        #[arg(value_name = "HOST[:PORT]", value_parser = crate::cmd::check::parse_target)]
        target: crate::cmd::check::Target,
        /// The request's method, for grants limited to methods (with --path); without
        /// them a limited grant never allows
        #[arg(long, value_name = "M", requires = "path")]
        method: Option<String>,
        /// The request's path, for grants limited to a path prefix (with --method)
        #[arg(long, value_name = "P", requires = "method")]
        path: Option<String>,
        /// Print one JSON document instead of text
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatusArg {
    Pending,
    Decided,
    Archived,
    Expired,
    All,
}

impl From<StatusArg> for StatusFilter {
    fn from(s: StatusArg) -> StatusFilter {
        match s {
            StatusArg::Pending => StatusFilter::Pending,
            StatusArg::Decided => StatusFilter::Decided,
            StatusArg::Archived => StatusFilter::Archived,
            StatusArg::Expired => StatusFilter::Expired,
            StatusArg::All => StatusFilter::All,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    Egress,
    GitPush,
}

impl KindArg {
    pub fn as_str(self) -> &'static str {
        match self {
            KindArg::Egress => "egress",
            KindArg::GitPush => "git-push",
        }
    }
}

/// `--for`: a duration the store's syntax accepts, longer than zero.
fn parse_grant_duration(text: &str) -> Result<Duration, String> {
    let d = clock::parse_duration(text)
        .map_err(|_| format!("{text:?} is not a duration like 90s, 30m, 8h or 7d"))?;
    if d.is_zero() {
        return Err(
            "a grant must last longer than 0; leave --for out for one until revoked".into(),
        );
    }
    Ok(d)
}

/// `--change`: a non-empty JSON object.
fn parse_change(text: &str) -> Result<Map<String, Value>, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        format!("not valid JSON ({e}); write an object such as '{{\"port\": 8443}}'")
    })?;
    match value {
        Value::Object(map) if map.is_empty() => {
            Err("the object is empty, so nothing would change; use `approve`".into())
        }
        Value::Object(map) => Ok(map),
        other => Err(format!(
            "must be a JSON object such as '{{\"port\": 8443}}', not {}",
            json_type(&other)
        )),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_command_has_an_example() {
        let cmd = Cli::command();
        for sub in cmd.get_subcommands() {
            let help = sub
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            assert!(
                help.contains("Examples:"),
                "{} has no example",
                sub.get_name()
            );
        }
    }

    #[test]
    fn change_must_be_an_object() {
        assert!(parse_change(r#"{"port": 8443}"#).is_ok());
        assert!(parse_change("{}").is_err());
        assert!(parse_change("[1]").unwrap_err().contains("an array"));
        assert!(
            parse_change("{port: 1}")
                .unwrap_err()
                .contains("not valid JSON")
        );
    }

    #[test]
    fn grant_durations() {
        assert_eq!(parse_grant_duration("2s").unwrap(), Duration::from_secs(2));
        assert!(parse_grant_duration("0").is_err());
        assert!(parse_grant_duration("soon").is_err());
    }
}
