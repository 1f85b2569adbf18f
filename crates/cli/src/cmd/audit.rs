//! `supervise audit`: the event trail, oldest first, with full ids.

use std::io::Write;

use anyhow::Result;
use supervise_store::{Event, Store};

use super::{Ctx, print_json};
use crate::json::EventList;
use crate::render::{self, Cell, Color, Table};

pub async fn run(
    ctx: &Ctx,
    store: &Store,
    host: Option<&str>,
    bottle: Option<&str>,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let events = store.audit_on(host, bottle).await?;
    if json {
        let doc = EventList {
            events: events.iter().map(Event::document).collect(),
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
    let hosts = render::hosts_differ(events.iter().filter_map(|e| e.host.as_deref()));
    for e in &events {
        let change = match (&e.kind, &e.change) {
            (Some(kind), Some(change)) => {
                format!("{kind} {}", render::change_text(*kind, change))
            }
            _ => "-".into(),
        };
        t.push(vec![
            Cell::new(e.seq.to_string()),
            Cell::new(e.at.as_str()),
            Cell::colored(e.event.as_str(), Color::Bold),
            Cell::new(render::one_line(&e.actor)),
            Cell::new(e.via.map(|v| v.as_str()).unwrap_or("-")),
            Cell::new(match (&e.host, &e.bottle) {
                (Some(h), Some(b)) => render::bottle_name(hosts, h, b),
                (_, Some(b)) => render::one_line(b),
                _ => "-".into(),
            }),
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
