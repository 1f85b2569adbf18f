//! `supervise show ID`: one proposal as a readable block (change, flags one per line,
//! justification, decision, grant, history) or one JSON document.

use std::io::Write;

use anyhow::Result;
use supervise_store::change::describe_push;
use supervise_store::{Actor, Event, EventKind, Proposal, Status, Store};

use super::{Ctx, print_json, show_context};
use crate::json::{ProposalDetail, ProposalView};
use crate::render::{self, Color};

const INDENT: &str = "  ";

/// What `show` prints: the block, JSON, or the recorded diff (`stat`: its file list).
#[derive(Debug, Clone, Copy)]
pub struct Shown {
    pub json: bool,
    pub diff: bool,
    pub stat: bool,
    /// Also resolve an egress proposal's host (`--resolve`).
    pub resolve: bool,
}

pub async fn run(
    ctx: &Ctx,
    store: &Store,
    id: &str,
    shown: Shown,
    out: &mut dyn Write,
) -> Result<()> {
    let (p, events) = store.show(id).await?;
    let diff = store.push_diff(&p.id).await?;
    let context = match store.context_of(&p, &Actor::cli("show")).await? {
        Some(c) => Some(show_context::document(&c, shown.resolve).await),
        None => None,
    };
    if shown.json {
        let doc = ProposalDetail {
            proposal: ProposalView::from(&p),
            events: events.iter().map(Event::document).collect(),
            diff,
            context,
        };
        return print_json(out, &doc);
    }
    if shown.diff {
        let Some(diff) = diff else {
            anyhow::bail!(
                "proposal {} has no recorded diff (only pushes the gate filed have one)",
                p.id
            );
        };
        return super::diff::print(&super::diff::lines(ctx.style, &diff, shown.stat), out);
    }
    let grant = grant_line(store, &p, &events).await;
    for line in block(ctx, &p, &events, grant) {
        writeln!(out, "{line}")?;
    }
    if let Some(diff) = diff {
        writeln!(
            out,
            "{}{} files recorded{}: supervise show {} --diff",
            ctx.style.paint(Color::Bold, &format!("{:<14}", "diff")),
            diff.files.len(),
            if diff.truncated { " (patches cut)" } else { "" },
            p.id
        )?;
    }
    for line in context.iter().flat_map(|c| show_context::lines(ctx, c)) {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}

fn block(ctx: &Ctx, p: &Proposal, events: &[Event], grant: Option<String>) -> Vec<String> {
    let s = ctx.style;
    let label = |name: &str| s.paint(Color::Bold, &format!("{name:<14}"));
    let kind = p.kind.as_str();
    let mut lines = vec![
        format!("{}{}", label("proposal"), s.paint(Color::Cyan, &p.id)),
        format!("{}{}", label("bottle"), render::one_line(&p.bottle)),
        format!("{}{kind}", label("kind")),
        format!(
            "{}{}",
            label("change"),
            render::change_text(p.kind, &p.change)
        ),
        format!("{}{}", label("status"), status_text(ctx, p)),
    ];
    if p.quorum.is_counted() {
        let mut text = super::queue::approvals_text(p);
        if let Some(changed) = &p.quorum.change {
            text.push_str(&format!(
                " of the modified change {}",
                render::change_text(p.kind, changed)
            ));
        }
        lines.push(format!("{}{text}", label("approvals")));
    }
    lines.extend([
        format!("{}{}", label("hits"), p.hits),
        format!(
            "{}{} ({} ago)",
            label("created"),
            p.created_at,
            render::age(&p.created_at)
        ),
    ]);
    if let Some(summary) = p.change.get("summary") {
        lines.push(s.paint(Color::Bold, "push"));
        lines.extend(
            summary_lines(summary)
                .into_iter()
                .map(|l| format!("{INDENT}{l}")),
        );
    }
    if p.flags.is_empty() {
        lines.push(format!("{}none", label("flags")));
    } else {
        lines.push(s.paint(Color::Bold, "flags"));
        let width = p.flags.iter().map(|f| f.as_str().len()).max().unwrap_or(0);
        for f in &p.flags {
            lines.push(format!(
                "{INDENT}{} {}  {}",
                s.paint(Color::Red, "!"),
                s.paint(Color::Red, &format!("{f:<width$}")),
                f.meaning()
            ));
        }
    }
    lines.push(s.paint(Color::Bold, "justification"));
    let wrap_at = ctx.width.saturating_sub(INDENT.len()).clamp(20, 100);
    for l in render::wrap(&render::multi_line(&p.justification), wrap_at) {
        lines.push(format!("{INDENT}{l}").trim_end().to_string());
    }
    match &p.decision {
        None => lines.push(format!("{}none yet", label("decision"))),
        Some(d) => {
            lines.push(format!(
                "{}{} by {}{} at {}",
                label("decision"),
                super::queue::paint_status(s, p.status),
                render::one_line(&d.decided_by),
                d.via.map(|v| format!(" via {v}")).unwrap_or_default(),
                d.decided_at
            ));
            if let Some(granted) = &d.change {
                lines.push(format!(
                    "{INDENT}{:<12}{}",
                    "granted",
                    render::change_text(p.kind, granted)
                ));
            }
            if let Some(note) = &d.note {
                lines.push(format!("{INDENT}{:<12}{}", "note", render::one_line(note)));
            }
            if let Some(grant) = grant {
                lines.push(format!("{INDENT}{:<12}{grant}", "grant"));
            }
        }
    }
    lines.push(s.paint(Color::Bold, "history"));
    let actor_width = events
        .iter()
        .map(|e| render::one_line(&e.actor).chars().count())
        .max()
        .unwrap_or(0);
    for e in events {
        lines.push(format!("{INDENT}{}", event_text(e, actor_width)));
    }
    lines
}

/// A gate push's summary in words: what kind of update, the diffstat, the subjects.
fn summary_lines(summary: &serde_json::Value) -> Vec<String> {
    let (mut lines, unlisted) = describe_push(summary, render::one_line);
    if unlisted > 0 {
        lines.push(format!("  ... and {unlisted} more"));
    }
    lines
}

fn status_text(ctx: &Ctx, p: &Proposal) -> String {
    let word = super::queue::paint_status(ctx.style, p.status);
    match (p.status, &p.expires_at, &p.archived_at) {
        (_, _, Some(at)) => format!("{word} (archived {at})"),
        (Status::Pending, Some(exp), None) => {
            format!("{word} (expires in {})", render::time_left(exp))
        }
        (Status::Pending, None, None) => format!("{word} (never expires)"),
        (Status::Approved | Status::Modified | Status::Rejected, _, None) => {
            format!("{word} (not yet delivered to the agent)")
        }
        _ => word,
    }
}

/// `at  event  actor  [change]  [note]` for the history.
fn event_text(e: &Event, actor_width: usize) -> String {
    let mut parts = vec![
        e.at.to_string(),
        format!("{:<13}", e.event),
        format!("{:<actor_width$}", render::one_line(&e.actor)),
    ];
    if let Some(via) = e.via {
        parts.push(format!("via {via}"));
    }
    if let (Some(kind), Some(change)) = (&e.kind, &e.change) {
        parts.push(render::change_text(*kind, change));
    }
    if let Some(grant) = &e.grant_id {
        parts.push(format!("grant {grant}"));
    }
    if let Some(note) = &e.note {
        parts.push(format!("\"{}\"", render::cut(&render::one_line(note), 80)));
    }
    parts.join("  ").trim_end().to_string()
}

/// The grant a decision made and whether it is still in force.
async fn grant_line(store: &Store, p: &Proposal, events: &[Event]) -> Option<String> {
    let grant_id = events
        .iter()
        .rev()
        .find(|e| EventKind::of_decision(p.status) == Some(e.event) && e.grant_id.is_some())
        .or_else(|| events.iter().rev().find(|e| e.grant_id.is_some()))
        .and_then(|e| e.grant_id.clone())?;
    if let Some(end) = events.iter().find(|e| {
        e.grant_id.as_ref() == Some(&grant_id)
            && matches!(e.event, EventKind::GrantExpired | EventKind::GrantRevoked)
    }) {
        return Some(format!("{grant_id} (ended: {} at {})", end.event, end.at));
    }
    let in_force = store
        .grants_in_force(&format!("{}/{}", p.host, p.bottle))
        .await
        .ok()
        .and_then(|grants| grants.into_iter().find(|g| g.id == grant_id));
    Some(match in_force {
        Some(g) => match g.expires_at {
            Some(exp) => format!(
                "{grant_id} (in force, {} left)",
                render::time_left(exp.as_str())
            ),
            None => format!("{grant_id} (in force until revoked)"),
        },
        None => format!("{grant_id} (no longer in force)"),
    })
}
