//! `supervise audit`: the event trail, oldest first, with full ids.

use std::io::Write;

use anyhow::Result;
use supervise_store::Store;

use super::{Ctx, print_json};
use crate::json::{EventList, EventView};
use crate::render::{self, Cell, Color, Table};

pub async fn run(
    ctx: &Ctx,
    store: &Store,
    bottle: Option<&str>,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let events = store.audit(bottle).await?;
    if json {
        let doc = EventList {
            events: events.iter().map(EventView::from).collect(),
        };
        return print_json(out, &doc);
    }
    if events.is_empty() {
        writeln!(out, "no events")?;
        return Ok(());
    }
    let mut t = Table::new(vec![
        "SEQ", "AT", "EVENT", "ACTOR", "VIA", "BOTTLE", "PROPOSAL", "GRANT", "CHANGE", "NOTE",
    ])
    .flexible(9);
    for e in &events {
        let change = match (&e.kind, &e.change) {
            (Some(kind), Some(change)) => {
                format!("{kind} {}", render::change_text(kind.as_str(), change))
            }
            _ => "-".into(),
        };
        t.push(vec![
            Cell::new(e.seq.to_string()),
            Cell::new(e.at.as_str()),
            Cell::colored(e.event.as_str(), Color::Bold),
            Cell::new(render::one_line(&e.actor)),
            Cell::new(e.via.map(|v| v.as_str()).unwrap_or("-")),
            Cell::new(
                e.bottle
                    .as_deref()
                    .map(render::one_line)
                    .unwrap_or_else(|| "-".into()),
            ),
            Cell::colored(e.proposal_id.as_deref().unwrap_or("-"), Color::Cyan),
            Cell::new(e.grant_id.as_deref().unwrap_or("-")),
            Cell::new(change),
            Cell::new(e.note.as_deref().map(render::one_line).unwrap_or_default()),
        ]);
    }
    for line in t.render(ctx.style, ctx.width) {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}
