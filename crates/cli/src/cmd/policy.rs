//! `supervise policy NAME` and `policy --all` (the grants in force, with time left and last
//! use; every host's bottles, named `HOST/SLUG` when they span hosts) and `revoke GRANT_ID`.

use std::io::Write;

use anyhow::Result;
use supervise_store::Store;

use super::{Ctx, bottle_name, print_json};
use crate::json::{BottlePolicy, GrantList, GrantView, PolicyAll};
use crate::render::{self, Cell, Color, Table};
use supervise_store::Grant;

pub async fn show(
    ctx: &Ctx,
    store: &Store,
    slug: &str,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    // `SLUG` names the bottle of whichever host has it; `HOST/SLUG` when several do.
    let bottle = store.named_bottle(slug).await?;
    let grants = store
        .grants_in_force(&format!("{}/{}", bottle.host, bottle.slug))
        .await?;
    if json {
        let doc = GrantList {
            bottle: slug.to_string(),
            grants: grants.iter().map(GrantView::from).collect(),
        };
        return print_json(out, &doc);
    }
    if grants.is_empty() {
        writeln!(out, "no grants in force for bottle {slug}")?;
        return Ok(());
    }
    let mut t = Table::new(vec![
        "GRANT",
        "KIND",
        "CHANGE",
        "GRANTED BY",
        "AGE",
        "LEFT",
        "LAST USE",
    ]);
    for g in &grants {
        t.push(grant_cells(g));
    }
    for line in t.render(ctx.style, ctx.width) {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}

/// One grant's row: id, kind, change, granter, age, time left, last recorded use.
fn grant_cells(g: &Grant) -> Vec<Cell> {
    let left = match &g.expires_at {
        Some(exp) => Cell::colored(render::time_left(exp), Color::Yellow),
        None => Cell::new("until revoked"),
    };
    let used = match &g.last_used_at {
        Some(at) => Cell::new(format!("{} ago", render::age(at))),
        None => Cell::colored("-", Color::Dim),
    };
    vec![
        Cell::colored(g.id.as_str(), Color::Cyan),
        Cell::new(g.kind.as_str()),
        Cell::new(render::change_text(g.kind, &g.change)),
        Cell::new(render::one_line(&g.granted_by)),
        Cell::new(render::age(&g.created_at)),
        left,
        used,
    ]
}

/// `policy --all`: every live bottle (of every host, or of `host`) with its address and
/// grants in force.
pub async fn all(
    ctx: &Ctx,
    store: &Store,
    host: Option<&str>,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let policy = store.policy_on(host).await?;
    if json {
        let doc = PolicyAll {
            bottles: policy
                .iter()
                .map(|(b, grants)| BottlePolicy {
                    host: b.host.clone(),
                    slug: b.slug.clone(),
                    ip: b.ip.to_string(),
                    grants: grants.iter().map(GrantView::from).collect(),
                })
                .collect(),
        };
        return print_json(out, &doc);
    }
    if policy.is_empty() {
        let on = host.map_or(String::new(), |h| {
            format!(" on host {}", render::one_line(h))
        });
        writeln!(out, "no bottles registered{on}")?;
        return Ok(());
    }
    let with_host = render::hosts_differ(policy.iter().map(|(b, _)| b.host.as_str()));
    let mut t = Table::new(vec![
        "BOTTLE",
        "IP",
        "GRANT",
        "KIND",
        "CHANGE",
        "GRANTED BY",
        "AGE",
        "LEFT",
        "LAST USE",
    ]);
    for (b, grants) in &policy {
        let head = || {
            vec![
                Cell::new(render::bottle_name(with_host, &b.host, &b.slug)),
                Cell::new(b.ip.to_string()),
            ]
        };
        if grants.is_empty() {
            let mut row = head();
            row.push(Cell::colored("(no grants)", Color::Dim));
            row.extend((0..6).map(|_| Cell::new("")));
            t.push(row);
        }
        for g in grants {
            let mut row = head();
            row.extend(grant_cells(g));
            t.push(row);
        }
    }
    for line in t.render(ctx.style, ctx.width) {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}

pub async fn revoke(ctx: &Ctx, store: &Store, grant_id: &str, out: &mut dyn Write) -> Result<()> {
    let g = store.revoke(grant_id.trim(), &ctx.actor()?).await?;
    let name = bottle_name(store, &g.host, &g.bottle).await?;
    writeln!(
        out,
        "revoked grant {} ({name}: {} {})",
        ctx.style.paint(Color::Cyan, &g.id),
        g.kind,
        render::change_text(g.kind, &g.change)
    )?;
    out.flush()?;
    Ok(())
}
