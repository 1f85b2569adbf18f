//! One module per command family; each takes the [`Ctx`], an open [`Store`] and stdout,
//! and returns an error that `main` turns into exit code 1 with one line on stderr.

pub mod audit;
pub mod audit_verify;
pub mod backup;
pub mod bottle;
pub mod check;
pub mod console;
pub mod decide;
pub mod decide_line;
pub mod diff;
pub mod doctor;
pub mod egress_helper;
pub mod gate;
pub mod list;
pub mod operator;
pub mod policy;
pub mod queue;
pub mod rules;
pub mod show;
pub mod show_context;
pub mod squid;
pub mod watch;

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;
use supervise_store::{Actor, Location, Store, StoreOptions};

use crate::render::{self, Style};

/// How the operator names bottle `slug` of `host` in a confirming line: `SLUG`, or
/// `HOST/SLUG` when bottles of other hosts have (or had) the slug too (SPEC "Fleets"),
/// escaped for the terminal. One read of the registry.
pub async fn bottle_name(store: &Store, host: &str, slug: &str) -> Result<String> {
    let hosts = store.slug_hosts(slug).await?;
    Ok(render::bottle_name(
        hosts.iter().any(|h| h != host),
        host,
        slug,
    ))
}

/// What every command needs besides its own arguments.
#[derive(Debug)]
pub struct Ctx {
    /// The database's path or URL (a URL may carry a password: show it through
    /// [`Ctx::shown_db`]).
    pub db: PathBuf,
    /// The `--db-file` / `SUPERVISE_DB_FILE` the location was read from, if any.
    pub db_file: Option<PathBuf>,
    /// `--host-id` (`SUPERVISE_HOST_ID`); `None`: the store's default.
    pub host: Option<String>,
    /// `--as`, else the login user ([`crate::config::login_user`]); `None` when neither
    /// names anyone, which only a command that records a name refuses.
    pub operator: Option<String>,
    pub style: Style,
    pub width: usize,
}

impl Ctx {
    /// Who the CLI acts as: the operator name, via cli, with the host's full power.
    /// Refused as a usage error (exit 2) when no name is known.
    pub fn actor(&self) -> Result<Actor> {
        match &self.operator {
            Some(name) => Ok(Actor::cli(name)),
            None => Err(crate::exit::Usage(
                "no operator name: $USER and $LOGNAME are unset and the user database has \
                 no name for this user id; give one with --as NAME"
                    .into(),
            )
            .into()),
        }
    }

    /// Opens an existing database; a missing file is refused, never created.
    pub async fn open(&self) -> Result<Store> {
        Ok(Store::open(&self.db, self.options(false)).await?)
    }

    /// Opens the database, creating and migrating it when missing (`bottle add` only).
    /// Returns whether it was created.
    pub async fn open_or_create(&self) -> Result<(Store, bool)> {
        let file = matches!(Location::parse(&self.db), Location::File(_));
        let existed = !file || self.db.exists();
        let store = Store::open(&self.db, self.options(true)).await?;
        Ok((store, !existed))
    }

    /// The database for messages: a file's path, or a URL without its password.
    pub fn shown_db(&self) -> Location {
        Location::parse(&self.db)
    }

    pub fn options(&self, create: bool) -> StoreOptions {
        StoreOptions {
            create,
            max_connections: 2,
            host: self.host.clone(),
            server_limits: true,
            ..Default::default()
        }
    }
}

/// Writes one JSON document (pretty, newline-terminated). Serialised to memory first, so
/// a closed pipe surfaces as the `io::Error` `main` recognises.
pub fn print_json(out: &mut dyn Write, value: &impl Serialize) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Writes one compact JSON document on its own line (JSON Lines, for `list --watch`).
pub fn print_json_line(out: &mut dyn Write, value: &impl Serialize) -> Result<()> {
    let mut text = serde_json::to_string(value)?;
    text.push('\n');
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}
