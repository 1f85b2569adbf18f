//! The proposal queue as the operator sees it: the snapshot, its short ids, and the table
//! rows and cells that `list`, `list --watch`, `show` and the decide commands all share.

use std::collections::HashMap;
use std::io::Write;

use anyhow::Result;
use supervise_store::{Flag, Proposal, Status, StatusFilter, Store};

use super::Ctx;
use crate::cli::{ListArgs, StatusArg};
use crate::json::{ProposalList, ProposalView};
use crate::render::{self, Cell, Color, Style, Table};

/// The proposals `args` selects (bottle and status), in the order the store lists them.
pub async fn snapshot(store: &Store, args: &ListArgs) -> Result<Vec<Proposal>> {
    Ok(store
        .list_on(
            args.host.as_deref(),
            args.bottle.as_deref(),
            StatusFilter::from(args.status),
        )
        .await?)
}

/// The snapshot as its JSON document.
pub fn document(proposals: &[Proposal]) -> ProposalList {
    ProposalList {
        proposals: proposals.iter().map(ProposalView::from).collect(),
    }
}

/// Prints the snapshot as a table (or the line saying there is nothing) and flushes.
pub async fn print_table(
    ctx: &Ctx,
    store: &Store,
    proposals: &[Proposal],
    args: &ListArgs,
    out: &mut dyn Write,
) -> Result<()> {
    let ids = ShortIds::load(store, proposals).await?;
    for line in table(ctx, proposals, args, &ids) {
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
    let hosts = render::hosts_differ(proposals.iter().map(|p| p.host.as_str()));
    for p in proposals {
        let mut row = vec![Cell::colored(ids.short(&p.id), Color::Cyan)];
        if with_status {
            row.push(status_cell(p.status));
        }
        row.push(Cell::new(render::bottle_name(hosts, &p.host, &p.bottle)));
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

/// The change in one line; for a modified decision, `proposed -> granted`; for a pending
/// proposal that needs a quorum, the change under approval and `(1 of 2 approvals)`.
pub fn change_cell(p: &Proposal) -> String {
    let proposed = render::change_text(p.kind, &p.change);
    match (
        &p.status,
        p.decision.as_ref().and_then(|d| d.change.as_ref()),
    ) {
        (Status::Modified, Some(granted)) => {
            format!("{proposed} -> {}", render::change_text(p.kind, granted))
        }
        (Status::Pending, _) if p.quorum.is_counted() => {
            let mut text = proposed;
            if let Some(changed) = &p.quorum.change {
                text = format!("{text} -> {}", render::change_text(p.kind, changed));
            }
            format!("{text} ({})", approvals_text(p))
        }
        _ => proposed,
    }
}

/// `1 of 2 approvals`.
pub fn approvals_text(p: &Proposal) -> String {
    format!("{} of {} approvals", p.quorum.given, p.quorum.needed)
}

pub fn flags_cell(flags: &[Flag]) -> Cell {
    if flags.is_empty() {
        Cell::new("-")
    } else {
        Cell::colored(flag_names(flags, ","), Color::Red)
    }
}

/// The flags' short names joined by `sep`, in the store's order.
pub fn flag_names(flags: &[Flag], sep: &str) -> String {
    flags
        .iter()
        .map(|f| f.as_str())
        .collect::<Vec<_>>()
        .join(sep)
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

/// Colours a status word for the `show` block and the decide commands' confirmations.
pub fn paint_status(style: Style, status: Status) -> String {
    let cell = status_cell(status);
    style.paint(cell.color.unwrap_or(Color::Bold), &cell.text)
}

/// Shortest unique prefixes of proposal ids, like git's abbreviated hashes, but never
/// shorter than [`ShortIds::MIN`]: the UUIDv7's whole millisecond timestamp, so a prefix
/// shown once stays unique as later proposals arrive (they have later timestamps). The
/// store accepts any unique prefix, so these can be pasted back into `show`, `approve`...
#[derive(Debug, Default)]
pub struct ShortIds {
    lens: HashMap<String, usize>,
}

impl ShortIds {
    /// `xxxxxxxx-xxxx`: the 48-bit millisecond timestamp of a UUIDv7.
    pub const MIN: usize = 13;

    /// Computes prefixes for the proposals about to be shown, against their neighbours in
    /// the whole database (two index lookups each, however many rows are archived).
    pub async fn load(store: &Store, shown: &[Proposal]) -> Result<ShortIds> {
        let ids: Vec<String> = shown.iter().map(|p| p.id.to_string()).collect();
        let lens = store.unique_prefix_lens(&ids, Self::MIN).await?;
        Ok(ShortIds {
            lens: ids.into_iter().zip(lens).collect(),
        })
    }

    /// The prefix to print for `id` (the whole id when unknown).
    pub fn short<'a>(&self, id: &'a str) -> &'a str {
        match self.lens.get(id) {
            Some(&len) => &id[..len.min(id.len())],
            None => id,
        }
    }
}
