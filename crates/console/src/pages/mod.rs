//! The operator's pages: one module per page, each with its handlers and its template
//! (in `templates/`). Every page works without JavaScript; `static/live.js` only refreshes
//! the part marked `id="live"` when the change feed says something happened.

pub(crate) mod admin;
pub(crate) mod audit;
pub(crate) mod grants;
pub(crate) mod live;
pub(crate) mod proposal;
pub(crate) mod proposal_context;
pub(crate) mod push_diff;
pub(crate) mod queue;
pub(crate) mod sign_in;

use askama::Template;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use crate::auth::PageUser;
pub(crate) use crate::error::PageError;

/// What every signed-in page's frame shows: who is signed in, the navigation (admins see
/// bottles and operators), the sign-out form with its CSRF token, and whether the page
/// follows the live feed.
pub(crate) struct Chrome {
    pub title: String,
    pub section: &'static str,
    pub name: String,
    pub role: String,
    pub admin: bool,
    pub manages_operators: bool,
    pub csrf: String,
    /// `data-live` on the body: the script refreshes `#live` on changes when set.
    pub live: bool,
}

impl Chrome {
    pub(crate) fn new(user: &PageUser, title: impl Into<String>, section: &'static str) -> Chrome {
        Chrome {
            title: title.into(),
            section,
            name: user.operator.name.clone(),
            role: user.operator.role.to_string(),
            admin: user.actor.is_admin(),
            manages_operators: user.actor.manages_operators(),
            csrf: user.csrf.clone(),
            live: true,
        }
    }
}

/// Renders a template into a page with `status`.
pub(crate) fn html(status: StatusCode, page: &impl Template) -> Response {
    match page.render() {
        Ok(body) => (status, Html(body)).into_response(),
        Err(err) => {
            tracing::error!(error = %err, "rendering a page failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page could not be rendered",
            )
                .into_response()
        }
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    title: &'a str,
    message: &'a str,
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        match self {
            PageError::SignIn(asked) => crate::auth::to_sign_in(asked.as_deref()),
            PageError::Status {
                status,
                title,
                message,
            } => html(
                status,
                &ErrorPage {
                    title,
                    message: &message,
                },
            ),
        }
    }
}

pub(crate) async fn not_found() -> PageError {
    PageError::not_found("there is no such page")
}
