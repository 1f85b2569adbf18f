//! Signing in and out. Opening a link shows a button and changes nothing (a link preview
//! or a scanner cannot use it up); pressing it posts, spends the link and starts a session
//! cookie. The pages' guard refuses a post from another origin first
//! (`auth::guard`); the attempts that pass it are rate-limited per source address and in
//! total.

use askama::Template;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use supervise_store::{SignInRefusal, StoreError, Timestamp};

use super::{PageError, html};
use crate::app::App;
use crate::auth::{self, PageUser};
use crate::limit::Over;
use crate::listener::Peer;
use crate::metrics::SignIn;

#[derive(Template)]
#[template(path = "sign_in.html")]
struct SignInPage {
    /// The form's target; `None` on the "sign in with your link" page.
    action: Option<String>,
    message: Option<String>,
}

pub(crate) async fn need_link() -> Response {
    html(
        StatusCode::OK,
        &SignInPage {
            action: None,
            message: None,
        },
    )
}

pub(crate) async fn page(Path(secret): Path<String>) -> Response {
    // The secret goes back only into this page's own form (escaped); nothing is looked up.
    html(
        StatusCode::OK,
        &SignInPage {
            action: Some(format!("/sign-in/{secret}")),
            message: None,
        },
    )
}

fn refused(status: StatusCode, message: &str) -> Response {
    html(
        status,
        &SignInPage {
            action: None,
            message: Some(message.to_owned()),
        },
    )
}

pub(crate) async fn spend(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path(secret): Path<String>,
    headers: header::HeaderMap,
) -> Response {
    if let Err(over) = app.limiter().allow(peer.0.ip()) {
        tracing::info!(peer = %peer.0.ip(), ?over, "sign-in rate limit reached");
        app.metrics().sign_in(SignIn::Limited);
        let message = match over {
            Over::Address => "too many sign-in attempts from this address; wait a minute",
            Over::Total => "too many sign-in attempts to this console; wait a minute",
        };
        let mut resp = refused(StatusCode::TOO_MANY_REQUESTS, message);
        resp.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("60"));
        return resp;
    }
    match app.store().sign_in(&secret).await {
        Ok(session) => {
            tracing::info!(operator = %session.operator.name, "signed in");
            app.metrics().sign_in(SignIn::Started);
            let max_age = session.expires_at.seconds_until();
            let cookie = auth::session_cookie(&app, session.secret.expose(), max_age);
            let (back, forget) = auth::return_path(&headers);
            let mut resp = Redirect::to(back.as_deref().unwrap_or("/")).into_response();
            for c in [cookie, forget] {
                if let Ok(v) = header::HeaderValue::from_str(&c) {
                    resp.headers_mut().append(header::SET_COOKIE, v);
                }
            }
            resp
        }
        Err(StoreError::SignInRefused(why)) => {
            app.metrics().sign_in(SignIn::Refused);
            let message = match why {
                SignInRefusal::Spent => "this sign-in link was already used",
                SignInRefusal::Expired => "this sign-in link has expired (links last 15 minutes)",
                _ => "this sign-in link is not valid",
            };
            refused(
                StatusCode::FORBIDDEN,
                &format!("{message}; ask an admin for a new one (supervise operator link NAME)"),
            )
        }
        Err(err) => PageError::from(err).into_response(),
    }
}

pub(crate) async fn sign_out(
    State(app): State<App>,
    user: PageUser,
) -> Result<Response, PageError> {
    app.store().sign_out(&user.secret).await?;
    app.metrics().sign_out();
    tracing::info!(operator = %user.operator.name, at = %Timestamp::now(), "signed out");
    let mut resp = Redirect::to("/sign-in").into_response();
    if let Ok(v) = header::HeaderValue::from_str(&auth::clear_cookie(&app)) {
        resp.headers_mut().insert(header::SET_COOKIE, v);
    }
    Ok(resp)
}
