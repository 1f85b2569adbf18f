//! One module per command family; each takes the [`Ctx`], an open [`Store`] and stdout,
//! and returns an error that `main` turns into exit code 1 with one line on stderr.

pub mod audit;
pub mod bottle;
pub mod decide;
pub mod list;
pub mod policy;
pub mod show;
pub mod watch;

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;
use supervise_store::{Proposal, Store, StoreOptions};

use crate::render::Style;

/// What every command needs besides its own arguments.
#[derive(Debug)]
pub struct Ctx {
    pub db: PathBuf,
    pub operator: String,
    pub style: Style,
    pub width: usize,
}

impl Ctx {
    /// Opens an existing database; a missing file is refused, never created.
    pub async fn open(&self) -> Result<Store> {
        Ok(Store::open(&self.db, options(false)).await?)
    }

    /// Opens the database, creating and migrating it when missing (`bottle add` only).
    /// Returns whether it was created.
    pub async fn open_or_create(&self) -> Result<(Store, bool)> {
        let existed = self.db.exists();
        let store = Store::open(&self.db, options(true)).await?;
        Ok((store, !existed))
    }
}

fn options(create: bool) -> StoreOptions {
    StoreOptions {
        create,
        max_connections: 2,
        ..Default::default()
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

/// Shortest unique prefixes of proposal ids, like git's abbreviated hashes, but never
/// shorter than [`ShortIds::MIN`]: the UUIDv7's whole millisecond timestamp, so a prefix
/// shown once stays unique as later proposals arrive (they have later timestamps). The
/// store accepts any unique prefix, so these can be pasted back into `show`, `approve`...
#[derive(Debug, Default)]
pub struct ShortIds {
    lens: std::collections::HashMap<String, usize>,
}

impl ShortIds {
    /// `xxxxxxxx-xxxx`: the 48-bit millisecond timestamp of a UUIDv7.
    pub const MIN: usize = 13;

    /// Computes prefixes for the proposals about to be shown, against their neighbours in
    /// the whole database (two index lookups each, however many rows are archived).
    pub async fn load(store: &Store, shown: &[Proposal]) -> Result<ShortIds> {
        let ids: Vec<String> = shown.iter().map(|p| p.id.to_string()).collect();
        let lens = store.unique_prefix_lens(&ids, Self::MIN).await?;
        Ok(ShortIds {
            lens: ids.into_iter().zip(lens).collect(),
        })
    }

    /// The prefix to print for `id` (the whole id when unknown).
    pub fn short<'a>(&self, id: &'a str) -> &'a str {
        match self.lens.get(id) {
            Some(&len) => &id[..len.min(id.len())],
            None => id,
        }
    }
}
