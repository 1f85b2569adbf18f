//! `supervise policy SLUG` (the grants in force, with time left) and `revoke GRANT_ID`.

use std::io::Write;

use anyhow::Result;
use supervise_store::Store;

use super::{Ctx, print_json};
use crate::json::{GrantList, GrantView};
use crate::render::{self, Cell, Color, Table};

pub async fn show(
    ctx: &Ctx,
    store: &Store,
    slug: &str,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let grants = store.grants_in_force(slug).await?;
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
    let mut t = Table::new(vec!["GRANT", "KIND", "CHANGE", "GRANTED BY", "AGE", "LEFT"]);
    for g in &grants {
        let left = match &g.expires_at {
            Some(exp) => Cell::colored(render::time_left(exp), Color::Yellow),
            None => Cell::new("until revoked"),
        };
        t.push(vec![
            Cell::colored(g.id.as_str(), Color::Cyan),
            Cell::new(g.kind.as_str()),
            Cell::new(render::change_text(g.kind.as_str(), &g.change)),
            Cell::new(render::one_line(&g.granted_by)),
            Cell::new(render::age(&g.created_at)),
            left,
        ]);
    }
    for line in t.render(ctx.style, ctx.width) {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}

pub async fn revoke(ctx: &Ctx, store: &Store, grant_id: &str, out: &mut dyn Write) -> Result<()> {
    let g = store.revoke(grant_id.trim(), &ctx.operator).await?;
    writeln!(
        out,
        "revoked grant {} ({}: {} {})",
        ctx.style.paint(Color::Cyan, &g.id),
        render::one_line(&g.bottle),
        g.kind,
        render::change_text(g.kind.as_str(), &g.change)
    )?;
    out.flush()?;
    Ok(())
}
