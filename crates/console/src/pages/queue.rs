//! The queue: pending proposals in the operator's bottles, oldest first, with what an
//! operator needs to decide at a glance (change, flags, hits, age, time left,
//! justification), of every host or of one (`?host=NAME`). `live.js` refreshes it when the
//! change feed moves.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use supervise_store::{Proposal, StatusFilter, model};

use super::{Chrome, PageError, html};
use crate::app::App;
use crate::auth::PageUser;
use crate::view;

/// One card of the queue.
pub(crate) struct Row {
    pub id: String,
    pub bottle: String,
    pub kind: &'static str,
    pub change: String,
    /// (flag, meaning)
    pub flags: Vec<(&'static str, &'static str)>,
    pub hits: i64,
    pub age: String,
    pub time_left: String,
    pub justification: String,
    /// `1 of 2 approvals` when more than one approval is needed.
    pub approvals: Option<String>,
}

impl Row {
    /// `with_host`: the cards shown span several hosts, so bottles are `HOST/SLUG`.
    pub(crate) fn of(p: &Proposal, with_host: bool) -> Row {
        Row {
            id: p.id.to_string(),
            bottle: view::bottle_name(with_host, &p.host, &p.bottle),
            kind: p.kind.as_str(),
            change: match &p.quorum.change {
                Some(changed) => format!(
                    "{} -> {}",
                    view::change_text(p.kind, &p.change),
                    view::change_text(p.kind, changed)
                ),
                None => view::change_text(p.kind, &p.change),
            },
            flags: p.flags.iter().map(|f| (f.as_str(), f.meaning())).collect(),
            hits: p.hits,
            age: view::age(&p.created_at),
            time_left: match &p.expires_at {
                None => "never expires".into(),
                Some(_) => format!("{} left", view::time_left(p.expires_at.as_ref())),
            },
            justification: view::untrusted(&p.justification),
            approvals: view::approvals(p),
        }
    }
}

#[derive(Template)]
#[template(path = "queue.html")]
struct QueuePage {
    chrome: Chrome,
    rows: Vec<Row>,
    hosts: view::HostFilter,
    bottle: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct QueueQuery {
    bottle: Option<String>,
    #[serde(default)]
    host: String,
}

pub(crate) async fn page(
    State(app): State<App>,
    user: PageUser,
    Query(q): Query<QueueQuery>,
) -> Result<Response, PageError> {
    let pending = app.store().list(None, StatusFilter::Pending).await?;
    let seen: Vec<&Proposal> = pending
        .iter()
        .filter(|p| user.actor.sees(&p.bottle))
        .filter(|p| q.bottle.as_deref().is_none_or(|b| b == p.bottle))
        .collect();
    let hosts = view::HostFilter::new(seen.iter().map(|p| p.host.as_str()), &q.host);
    let shown: Vec<&Proposal> = seen
        .into_iter()
        .filter(|p| hosts.admits(Some(&p.host)))
        .collect();
    let with_host = model::hosts_differ(shown.iter().map(|p| p.host.as_str()));
    let page = QueuePage {
        chrome: Chrome::new(&user, "Queue", "queue"),
        rows: shown.iter().map(|p| Row::of(p, with_host)).collect(),
        hosts,
        bottle: q.bottle.as_deref().map(view::untrusted),
    };
    Ok(html(StatusCode::OK, &page))
}
