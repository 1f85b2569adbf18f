//! `supervise bottle add|list|rm`: the registry that attributes callers by source IP.
//! `add` is the one command that may create (and migrate) the database.

use std::io::Write;
use std::net::IpAddr;

use anyhow::Result;
use supervise_store::{StatusFilter, Store};

use super::{Ctx, print_json};
use crate::json::{BottleList, BottleView};
use crate::render::{self, Cell, Color, Table};

pub async fn add(ctx: &Ctx, slug: &str, ip: IpAddr, out: &mut dyn Write) -> Result<()> {
    let (store, created) = ctx.open_or_create().await?;
    if created {
        eprintln!("created supervise database at {}", ctx.db.display());
    }
    let bottle = store.add_bottle(slug, ip, &ctx.actor()?).await?;
    writeln!(
        out,
        "added bottle {} ({})",
        ctx.style.paint(Color::Cyan, &bottle.slug),
        bottle.ip
    )?;
    out.flush()?;
    Ok(())
}

pub async fn list(ctx: &Ctx, store: &Store, json: bool, out: &mut dyn Write) -> Result<()> {
    let bottles = store.list_bottles().await?;
    if json {
        let doc = BottleList {
            bottles: bottles.iter().map(BottleView::from).collect(),
        };
        return print_json(out, &doc);
    }
    if bottles.is_empty() {
        writeln!(
            out,
            "no bottles registered (add one with `supervise bottle add SLUG --ip IP`)"
        )?;
        return Ok(());
    }
    let mut t = Table::new(vec!["SLUG", "IP", "ADDED"]);
    for b in &bottles {
        t.push(vec![
            Cell::colored(&b.slug, Color::Cyan),
            Cell::new(b.ip.to_string()),
            Cell::new(format!(
                "{} ({} ago)",
                b.created_at,
                render::age(&b.created_at)
            )),
        ]);
    }
    for line in t.render(ctx.style, ctx.width) {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}

pub async fn remove(ctx: &Ctx, store: &Store, slug: &str, out: &mut dyn Write) -> Result<()> {
    // Counted before the removal, for the confirming line; the removal itself is one
    // transaction in the store.
    let pending = store
        .list(Some(slug), StatusFilter::Pending)
        .await
        .map(|p| p.len())
        .unwrap_or(0);
    let grants = store
        .grants_in_force(slug)
        .await
        .map(|g| g.len())
        .unwrap_or(0);
    let bottle = store.remove_bottle(slug, &ctx.actor()?).await?;
    writeln!(
        out,
        "removed bottle {} ({}): withdrew {pending} pending proposal(s), ended {grants} grant(s)",
        ctx.style.paint(Color::Cyan, &bottle.slug),
        bottle.ip
    )?;
    out.flush()?;
    Ok(())
}
