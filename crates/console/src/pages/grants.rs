//! The grants in force, by bottle, with their last recorded use, of every host or of one
//! (`?host=NAME`), and revoke.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use supervise_store::{Grant, model};

use super::{Chrome, PageError, html};
use crate::app::App;
use crate::auth::PageUser;
use crate::view;

pub(crate) struct GrantView {
    pub id: String,
    pub proposal_id: String,
    pub kind: &'static str,
    pub change: String,
    pub granted_by: String,
    pub created_at: String,
    pub ends: String,
    pub last_used: String,
}

impl GrantView {
    fn of(g: &Grant) -> GrantView {
        GrantView {
            id: g.id.to_string(),
            proposal_id: g.proposal_id.to_string(),
            kind: g.kind.as_str(),
            change: view::change_text(g.kind, &g.change),
            granted_by: view::untrusted(&g.granted_by),
            created_at: g.created_at.to_string(),
            ends: match &g.expires_at {
                Some(at) => format!("until {at} ({} left)", view::time_left(Some(at))),
                None => "until revoked".into(),
            },
            last_used: match &g.last_used_at {
                Some(at) => format!("{at} ({} ago)", view::age(at)),
                None => "never recorded".into(),
            },
        }
    }
}

pub(crate) struct BottleGrants {
    /// `SLUG`, or `HOST/SLUG` when the bottles shown span several hosts.
    pub name: String,
    pub grants: Vec<GrantView>,
}

#[derive(Template)]
#[template(path = "grants.html")]
struct GrantsPage {
    chrome: Chrome,
    bottles: Vec<BottleGrants>,
    hosts: view::HostFilter,
    may_decide: bool,
}

#[derive(Deserialize)]
pub(crate) struct GrantsQuery {
    #[serde(default)]
    host: String,
}

pub(crate) async fn page(
    State(app): State<App>,
    user: PageUser,
    Query(q): Query<GrantsQuery>,
) -> Result<Response, PageError> {
    let policy = app.store().policy_on(None).await?;
    let seen: Vec<_> = policy
        .iter()
        .filter(|(b, _)| user.actor.sees(&b.slug))
        .collect();
    let hosts = view::HostFilter::new(seen.iter().map(|(b, _)| b.host.as_str()), &q.host);
    let shown: Vec<_> = seen
        .into_iter()
        .filter(|(b, _)| hosts.admits(Some(&b.host)))
        .collect();
    let with_host = model::hosts_differ(shown.iter().map(|(b, _)| b.host.as_str()));
    let bottles = shown
        .iter()
        .map(|(b, grants)| BottleGrants {
            name: view::bottle_name(with_host, &b.host, &b.slug),
            grants: grants.iter().map(GrantView::of).collect(),
        })
        .collect();
    let page = GrantsPage {
        chrome: Chrome::new(&user, "Grants", "grants"),
        bottles,
        hosts,
        may_decide: user.actor.may_decide(),
    };
    Ok(html(StatusCode::OK, &page))
}

pub(crate) async fn revoke(
    State(app): State<App>,
    user: PageUser,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    let grant = app.store().revoke(&id, &user.actor).await?;
    tracing::info!(host = %grant.host, bottle = %grant.bottle, proposal = %grant.proposal_id, grant = %grant.id,
        operator = %user.operator.name, "grant revoked in the console");
    Ok(Redirect::to("/grants").into_response())
}
