//! The grants in force, by bottle, with their last recorded use, and revoke.

use askama::Template;
use axum::Form;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use supervise_store::Grant;

use super::{Chrome, PageError, html};
use crate::app::App;
use crate::auth::{PageUser, check_post};
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
    pub slug: String,
    pub grants: Vec<GrantView>,
}

#[derive(Template)]
#[template(path = "grants.html")]
struct GrantsPage {
    chrome: Chrome,
    bottles: Vec<BottleGrants>,
    may_decide: bool,
}

pub(crate) async fn page(State(app): State<App>, user: PageUser) -> Result<Response, PageError> {
    let policy = app.store().policy_all().await?;
    let bottles = policy
        .iter()
        .filter(|(b, _)| user.actor.sees(&b.slug))
        .map(|(b, grants)| BottleGrants {
            slug: view::untrusted(&b.slug),
            grants: grants.iter().map(GrantView::of).collect(),
        })
        .collect();
    let page = GrantsPage {
        chrome: Chrome::new(&user, "Grants", "grants"),
        bottles,
        may_decide: user.actor.may_decide(),
    };
    Ok(html(StatusCode::OK, &page))
}

#[derive(Deserialize)]
pub(crate) struct CsrfForm {
    pub csrf: Option<String>,
}

pub(crate) async fn revoke(
    State(app): State<App>,
    user: PageUser,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Result<Response, PageError> {
    check_post(&app, &headers, &user, form.csrf.as_deref())?;
    let grant = app.store().revoke(&id, &user.actor).await?;
    tracing::info!(bottle = %grant.bottle, proposal = %grant.proposal_id, grant = %grant.id,
        operator = %user.operator.name, "grant revoked in the console");
    Ok(Redirect::to("/grants").into_response())
}
