//! Admins' pages: the bottle registry (add, remove) and the operators (add, remove, a new
//! sign-in link, a new API token). The store refuses anyone but an admin (and operators to
//! anyone but an admin of every bottle); the pages are only linked for them.

use std::net::IpAddr;

use askama::Template;
use axum::Form;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use supervise_store::{Role, Timestamp};

use super::{Chrome, PageError, html};
use crate::app::App;
use crate::auth::PageUser;
use crate::view;

fn operators_admin(user: &PageUser) -> Result<(), PageError> {
    if user.actor.manages_operators() {
        Ok(())
    } else {
        Err(PageError::forbidden(format!(
            "operator {} ({}) may not manage operators (an admin of every bottle may)",
            user.operator.name, user.operator.role
        )))
    }
}

fn admin_only(user: &PageUser) -> Result<(), PageError> {
    if user.actor.is_admin() {
        Ok(())
    } else {
        Err(PageError::forbidden(format!(
            "operator {} ({}) may not manage bottles or operators",
            user.operator.name, user.operator.role
        )))
    }
}

pub(crate) struct BottleView {
    pub slug: String,
    pub ip: String,
    pub created_at: String,
}

#[derive(Template)]
#[template(path = "bottles.html")]
struct BottlesPage {
    chrome: Chrome,
    bottles: Vec<BottleView>,
}

pub(crate) async fn bottles(State(app): State<App>, user: PageUser) -> Result<Response, PageError> {
    admin_only(&user)?;
    let bottles = app
        .store()
        .list_bottles()
        .await?
        .into_iter()
        .filter(|b| user.actor.sees(&b.slug))
        .map(|b| BottleView {
            slug: view::untrusted(&b.slug),
            ip: b.ip.to_string(),
            created_at: b.created_at.to_string(),
        })
        .collect();
    let page = BottlesPage {
        chrome: Chrome::new(&user, "Bottles", "bottles"),
        bottles,
    };
    Ok(html(StatusCode::OK, &page))
}

#[derive(Deserialize)]
pub(crate) struct BottleForm {
    slug: Option<String>,
    ip: Option<String>,
    confirm: Option<String>,
}

pub(crate) async fn add_bottle(
    State(app): State<App>,
    user: PageUser,
    Form(form): Form<BottleForm>,
) -> Result<Response, PageError> {
    admin_only(&user)?;
    let slug = form.slug.as_deref().unwrap_or("").trim();
    let ip: IpAddr = form
        .ip
        .as_deref()
        .unwrap_or("")
        .trim()
        .parse()
        .map_err(|_| PageError::bad_request("the source IP is not an IP address"))?;
    app.store().add_bottle(slug, ip, &user.actor).await?;
    Ok(Redirect::to("/bottles").into_response())
}

pub(crate) async fn remove_bottle(
    State(app): State<App>,
    user: PageUser,
    Path(slug): Path<String>,
    Form(form): Form<BottleForm>,
) -> Result<Response, PageError> {
    admin_only(&user)?;
    if form.confirm.as_deref() != Some("yes") {
        return Err(PageError::bad_request(
            "removing a bottle withdraws its proposals and revokes its grants: tick the box to confirm",
        ));
    }
    app.store().remove_bottle(&slug, &user.actor).await?;
    Ok(Redirect::to("/bottles").into_response())
}

pub(crate) struct OperatorView {
    pub name: String,
    pub role: String,
    pub bottles: String,
    pub token: &'static str,
    pub last_seen: String,
    pub created_by: String,
    pub created_at: String,
}

#[derive(Template)]
#[template(path = "operators.html")]
struct OperatorsPage {
    chrome: Chrome,
    operators: Vec<OperatorView>,
    /// A secret to show once: (what it is, the value).
    shown: Option<(String, String)>,
}

async fn operators_page(
    app: &App,
    user: &PageUser,
    shown: Option<(String, String)>,
) -> Result<Response, PageError> {
    let operators = app
        .store()
        .list_operators()
        .await?
        .into_iter()
        .map(|o| OperatorView {
            name: view::untrusted(&o.name),
            role: o.role.to_string(),
            bottles: if o.bottles.is_empty() {
                "all".into()
            } else {
                view::untrusted(&o.bottles.join(" "))
            },
            token: if o.has_token { "yes" } else { "none" },
            last_seen: o
                .last_seen_at
                .map(|t: Timestamp| t.to_string())
                .unwrap_or_else(|| "never".into()),
            created_by: view::untrusted(&o.created_by),
            created_at: o.created_at.to_string(),
        })
        .collect();
    let page = OperatorsPage {
        chrome: Chrome {
            // A page showing a secret is not refreshed under the operator's eyes.
            live: shown.is_none(),
            ..Chrome::new(user, "Operators", "operators")
        },
        operators,
        shown,
    };
    Ok(html(StatusCode::OK, &page))
}

pub(crate) async fn operators(
    State(app): State<App>,
    user: PageUser,
) -> Result<Response, PageError> {
    operators_admin(&user)?;
    operators_page(&app, &user, None).await
}

#[derive(Deserialize)]
pub(crate) struct OperatorForm {
    name: Option<String>,
    role: Option<String>,
    bottles: Option<String>,
}

pub(crate) async fn add_operator(
    State(app): State<App>,
    user: PageUser,
    Form(form): Form<OperatorForm>,
) -> Result<Response, PageError> {
    operators_admin(&user)?;
    let name = form.name.as_deref().unwrap_or("").trim();
    let role: Role = form
        .role
        .as_deref()
        .unwrap_or("")
        .parse()
        .map_err(|_| PageError::bad_request("the role is viewer, approver or admin"))?;
    let bottles: Vec<String> = form
        .bottles
        .as_deref()
        .unwrap_or("")
        .split([' ', ','])
        .filter(|g| !g.is_empty())
        .map(str::to_owned)
        .collect();
    let (op, link) = app
        .store()
        .add_operator(name, role, &bottles, &user.actor)
        .await?;
    let url = link.url(app.public_url());
    let what = format!(
        "Sign-in link for {} (valid until {})",
        view::untrusted(&op.name),
        link.expires_at
    );
    operators_page(&app, &user, Some((what, url))).await
}

pub(crate) async fn remove_operator(
    State(app): State<App>,
    user: PageUser,
    Path(name): Path<String>,
) -> Result<Response, PageError> {
    operators_admin(&user)?;
    app.store().remove_operator(&name, &user.actor).await?;
    Ok(Redirect::to("/operators").into_response())
}

pub(crate) async fn new_link(
    State(app): State<App>,
    user: PageUser,
    Path(name): Path<String>,
) -> Result<Response, PageError> {
    operators_admin(&user)?;
    let link = app.store().operator_link(&name, &user.actor).await?;
    let url = link.url(app.public_url());
    let what = format!(
        "Sign-in link for {} (valid until {})",
        view::untrusted(&link.operator),
        link.expires_at
    );
    operators_page(&app, &user, Some((what, url))).await
}

pub(crate) async fn new_token(
    State(app): State<App>,
    user: PageUser,
    Path(name): Path<String>,
) -> Result<Response, PageError> {
    operators_admin(&user)?;
    let token = app.store().operator_token(&name, &user.actor).await?;
    let what = format!(
        "API token for {} (the old one no longer works)",
        view::untrusted(&name)
    );
    operators_page(&app, &user, Some((what, token.expose().to_owned()))).await
}
