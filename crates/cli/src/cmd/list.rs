//! `supervise list`: the operator's queue as an aligned table or one JSON document.

use std::io::Write;

use anyhow::Result;
use supervise_store::{Flag, Proposal, Status, StatusFilter, Store};

use super::{Ctx, ShortIds, print_json};
use crate::cli::{ListArgs, StatusArg};
use crate::json::{ProposalList, ProposalView};
use crate::render::{self, Cell, Color, Style, Table};

pub async fn run(ctx: &Ctx, store: &Store, args: &ListArgs, out: &mut dyn Write) -> Result<()> {
    if args.watch {
        return super::watch::run(ctx, store, args, out).await;
    }
    let proposals = store
        .list(args.bottle.as_deref(), StatusFilter::from(args.status))
        .await?;
    if args.json {
        let doc = ProposalList {
            proposals: proposals.iter().map(ProposalView::from).collect(),
        };
        return print_json(out, &doc);
    }
    let ids = ShortIds::load(store, &proposals).await?;
    for line in table(ctx, &proposals, args, &ids) {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}

/// The table's lines, or one line saying there is nothing.
pub fn table(ctx: &Ctx, proposals: &[Proposal], args: &ListArgs, ids: &ShortIds) -> Vec<String> {
    if proposals.is_empty() {
        let which = match args.status {
            StatusArg::All => String::new(),
            other => format!("{} ", format!("{other:?}").to_lowercase()),
        };
        let bottle = args
            .bottle
            .as_deref()
            .map(|b| format!(" for bottle {b}"))
            .unwrap_or_default();
        return vec![format!("no {which}proposals{bottle}")];
    }
    let with_status = args.status != StatusArg::Pending;
    let mut headers = vec!["ID"];
    if with_status {
        headers.push("STATUS");
    }
    headers.extend([
        "BOTTLE",
        "KIND",
        "CHANGE",
        "FLAGS",
        "HITS",
        "AGE",
        "JUSTIFICATION",
    ]);
    let flexible = headers.len() - 1;
    let mut t = Table::new(headers).flexible(flexible);
    for p in proposals {
        let mut row = vec![Cell::colored(ids.short(&p.id), Color::Cyan)];
        if with_status {
            row.push(status_cell(p.status));
        }
        row.push(Cell::new(render::one_line(&p.bottle)));
        row.push(Cell::new(p.kind.as_str()));
        row.push(Cell::new(change_cell(p)));
        row.push(flags_cell(&p.flags));
        row.push(Cell::new(p.hits.to_string()));
        row.push(Cell::new(render::age(&p.created_at)));
        row.push(Cell::new(render::one_line(&p.justification)));
        t.push(row);
    }
    t.render(ctx.style, ctx.width)
}

/// The change in one line; for a modified decision, `proposed -> granted`.
pub fn change_cell(p: &Proposal) -> String {
    let proposed = render::change_text(p.kind.as_str(), &p.change);
    match (
        &p.status,
        p.decision.as_ref().and_then(|d| d.change.as_ref()),
    ) {
        (Status::Modified, Some(granted)) => {
            format!(
                "{proposed} -> {}",
                render::change_text(p.kind.as_str(), granted)
            )
        }
        _ => proposed,
    }
}

pub fn flags_cell(flags: &[Flag]) -> Cell {
    if flags.is_empty() {
        Cell::new("-")
    } else {
        Cell::colored(
            flags
                .iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(","),
            Color::Red,
        )
    }
}

pub fn status_cell(status: Status) -> Cell {
    let color = match status {
        Status::Pending => Color::Yellow,
        Status::Approved | Status::Modified => Color::Green,
        Status::Rejected => Color::Red,
        Status::Expired | Status::Withdrawn => Color::Dim,
    };
    Cell::colored(status.as_str(), color)
}

/// Colours a status word for the `show` block.
pub fn paint_status(style: Style, status: Status) -> String {
    let cell = status_cell(status);
    style.paint(cell.color.unwrap_or(Color::Bold), &cell.text)
}
