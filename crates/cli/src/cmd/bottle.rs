//! `supervise bottle add|list|rm`: the registry that attributes callers by source IP.
//! `add` is the one command that may create (and migrate) the database; `add` and `rm` act
//! on the CLI's host (`--host-id`), `list` shows every host's bottles unless `--host`
//! filters.

use std::io::Write;
use std::net::IpAddr;

use anyhow::Result;
use supervise_store::{StatusFilter, Store};

use super::{Ctx, bottle_name, print_json};
use crate::json::{BottleList, BottleView};
use crate::render::{self, Cell, Color, Table};

pub async fn add(ctx: &Ctx, slug: &str, ip: IpAddr, out: &mut dyn Write) -> Result<()> {
    let (store, created) = ctx.open_or_create().await?;
    if created {
        eprintln!("created supervise database at {}", ctx.shown_db());
    }
    let bottle = store.add_bottle(slug, ip, &ctx.actor()?).await?;
    let name = bottle_name(&store, &bottle.host, &bottle.slug).await?;
    writeln!(
        out,
        "added bottle {} ({})",
        ctx.style.paint(Color::Cyan, &name),
        bottle.ip
    )?;
    out.flush()?;
    Ok(())
}

pub async fn list(
    ctx: &Ctx,
    store: &Store,
    host: Option<&str>,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let bottles = store.list_bottles_on(host).await?;
    if json {
        let doc = BottleList {
            bottles: bottles.iter().map(BottleView::from).collect(),
        };
        return print_json(out, &doc);
    }
    if bottles.is_empty() {
        let on = host.map_or(String::new(), |h| {
            format!(" on host {}", render::one_line(h))
        });
        writeln!(
            out,
            "no bottles registered{on} (add one with `supervise bottle add SLUG --ip IP`)"
        )?;
        return Ok(());
    }
    let with_host = render::hosts_differ(bottles.iter().map(|b| b.host.as_str()));
    let mut t = Table::new(vec![
        if with_host { "BOTTLE" } else { "SLUG" },
        "IP",
        "ADDED",
    ]);
    for b in &bottles {
        t.push(vec![
            Cell::colored(
                render::bottle_name(with_host, &b.host, &b.slug),
                Color::Cyan,
            ),
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
    // transaction in the store. The bottle is this host's.
    let own = format!("{}/{slug}", store.host());
    let pending = store
        .list(Some(&own), StatusFilter::Pending)
        .await
        .map(|p| p.len())
        .unwrap_or(0);
    let grants = store
        .grants_in_force(&own)
        .await
        .map(|g| g.len())
        .unwrap_or(0);
    let bottle = store.remove_bottle(slug, &ctx.actor()?).await?;
    let name = bottle_name(store, &bottle.host, &bottle.slug).await?;
    writeln!(
        out,
        "removed bottle {} ({}): withdrew {pending} pending proposal(s), ended {grants} grant(s)",
        ctx.style.paint(Color::Cyan, &name),
        bottle.ip
    )?;
    out.flush()?;
    Ok(())
}
