//! `supervise audit verify`, `audit head` and `audit archive`: the hash chain an auditor
//! checks, and the one way rows leave the trail.

use std::io::Write;
use std::path::Path;

use anyhow::{Result, bail};
use supervise_store::{Store, Timestamp, verify_archive};

use super::{Ctx, print_json};

/// `audit verify --archive FILE`: the file alone.
pub fn archive_file(path: &Path, json: bool, out: &mut dyn Write) -> Result<()> {
    let check = verify_archive(path)?;
    if json {
        print_json(out, &check)?;
    } else if check.broken.is_none() {
        writeln!(out, "{}: {} events verify", path.display(), check.events)?;
    }
    if let Some((line, why)) = &check.broken {
        bail!("{} does not verify at line {line}: {why}", path.display());
    }
    Ok(())
}

pub async fn verify(
    store: &Store,
    head: Option<&str>,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let check = store.verify_trail(head).await?;
    if json {
        print_json(out, &check)?;
    } else if check.ok() {
        writeln!(out, "{} events verify; head {}", check.events, check.head)?;
    }
    if let Some(b) = &check.broken {
        bail!("the trail does not verify at seq {}: {}", b.seq, b.reason);
    }
    if check.head_found == Some(false) {
        bail!(
            "head {} is not in the chain: rows were cut from the end or replaced",
            head.unwrap_or("")
        );
    }
    if let Some(m) = check.mismatches.first() {
        bail!("the trail holds but a row disagrees with it: {m}");
    }
    Ok(())
}

pub async fn head(store: &Store, out: &mut dyn Write) -> Result<()> {
    writeln!(out, "{}", store.trail_head().await?)?;
    Ok(())
}

pub async fn archive(
    ctx: &Ctx,
    store: &Store,
    before: &str,
    to: &Path,
    out: &mut dyn Write,
) -> Result<()> {
    let Some(before) = Timestamp::parse_given(before) else {
        return Err(crate::exit::Usage(format!(
            "--before {before}: give an RFC 3339 time (2026-01-01T00:00:00Z) or a date (2026-01-01)"
        ))
        .into());
    };
    let done = store.archive_trail(&before, to, &ctx.actor()?).await?;
    let c = &done.checkpoint;
    writeln!(
        out,
        "archived {} events (through seq {}), {} proposals, {} grants to {}",
        c.events,
        c.through_seq,
        c.proposals,
        c.grants,
        to.display()
    )?;
    Ok(())
}
