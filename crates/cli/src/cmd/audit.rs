//! `supervise audit`: the event trail, oldest first, with full ids, filtered in the store
//! (time window, event, actor, bottle, newest N), as a table, one JSON array or JSON lines.

use std::io::Write;

use anyhow::Result;
use supervise_store::{AuditFilter, EVENT_SCHEMA_VERSION, Event, EventKind, Store, Timestamp};

use super::{Ctx, print_json, print_json_line};
use crate::cli::audit::AuditFilterArgs;
use crate::exit::Usage;
use crate::json::EventList;
use crate::render::{self, Cell, Color, Table};

/// A time given to `--since`/`--until`: RFC 3339, a date, or a duration ago.
fn when(flag: &str, text: Option<&str>) -> Result<Option<Timestamp>> {
    let Some(text) = text else { return Ok(None) };
    if let Some(t) = Timestamp::parse_given(text) {
        return Ok(Some(t));
    }
    match supervise_store::clock::parse_duration(text) {
        Ok(d) => Ok(Some(Timestamp::before(d))),
        Err(_) => Err(Usage(format!(
            "{flag} {text}: give an RFC 3339 time, a date (2026-12-01) or a duration (2h, 7d)"
        ))
        .into()),
    }
}

pub async fn run(
    ctx: &Ctx,
    store: &Store,
    host: Option<String>,
    bottle: Option<String>,
    json: bool,
    args: AuditFilterArgs,
    out: &mut dyn Write,
) -> Result<()> {
    let event = match args.event.as_deref() {
        Some(e) => Some(e.parse::<EventKind>().map_err(|_| {
            Usage(format!(
                "--event {e}: not an event name (see docs/SCHEMA.md)"
            ))
        })?),
        None => None,
    };
    let filter = AuditFilter {
        host,
        bottle,
        since: when("--since", args.since.as_deref())?,
        until: when("--until", args.until.as_deref())?,
        event,
        actor: args.actor,
        limit: args.limit,
    };
    let rows = store.audit_filtered(&filter).await?;
    if args.format.is_some() {
        for (e, hash) in rows {
            let mut doc = serde_json::to_value(e.into_document())?;
            doc["hash"] = serde_json::json!(hash);
            doc["schema_version"] = serde_json::json!(EVENT_SCHEMA_VERSION);
            print_json_line(out, &doc)?;
        }
        return Ok(());
    }
    let events: Vec<Event> = rows.into_iter().map(|(e, _)| e).collect();
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
    // The wide free-text columns are cut to a share of the terminal (the note takes what
    // is left); the ids stay whole.
    let share = |part: usize| (ctx.width / part).max(12);
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
            Cell::new(render::cut(&render::one_line(&e.actor), share(8).max(24))),
            Cell::new(e.via.map(|v| v.as_str()).unwrap_or("-")),
            Cell::new(match (&e.host, &e.bottle) {
                (Some(h), Some(b)) => render::bottle_name(hosts, h, b),
                (_, Some(b)) => render::one_line(b),
                _ => "-".into(),
            }),
            Cell::colored(e.proposal_id.as_deref().unwrap_or("-"), Color::Cyan),
            Cell::new(e.grant_id.as_deref().unwrap_or("-")),
            Cell::new(render::cut(&change, share(10))),
            Cell::new(e.note.as_deref().map(render::one_line).unwrap_or_default()),
        ]);
    }
    for line in t.render(ctx.style, ctx.width) {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}
