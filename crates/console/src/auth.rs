//! Who is asking: a session cookie for pages, a bearer token for the API, each looked up in
//! the store on every request (a removed operator stops at once), and the checks every
//! form post passes before anything changes: its Origin (or Fetch Metadata) is the
//! console's own, and it carries the session's CSRF token.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use cookie::{Cookie, SameSite};
use supervise_store::{Actor, Operator};

use crate::api::ApiError;
use crate::app::App;
use crate::error::PageError;

/// The session cookie's name; over https the `__Host-` prefix also pins it to this host,
/// path `/` and `Secure`.
fn cookie_name(app: &App) -> &'static str {
    if app.secure() {
        "__Host-supervise_session"
    } else {
        "supervise_session"
    }
}

/// The `Set-Cookie` value that starts a session.
pub(crate) fn session_cookie(app: &App, secret: &str, max_age_secs: i64) -> String {
    Cookie::build((cookie_name(app), secret.to_owned()))
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(app.secure())
        .path("/")
        .max_age(cookie::time::Duration::seconds(max_age_secs.max(0)))
        .build()
        .to_string()
}

/// The `Set-Cookie` value that ends it in the browser.
pub(crate) fn clear_cookie(app: &App) -> String {
    session_cookie(app, "", 0)
}

fn session_secret(app: &App, headers: &HeaderMap) -> Option<String> {
    let name = cookie_name(app);
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == name && !c.value().is_empty())
        .map(|c| c.value().to_owned())
}

/// A signed-in operator on a page request.
pub(crate) struct PageUser {
    pub operator: Operator,
    pub actor: Actor,
    pub csrf: String,
    /// The cookie value, for signing out.
    pub secret: String,
}

impl FromRequestParts<App> for PageUser {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<PageUser, PageError> {
        let Some(secret) = session_secret(app, &parts.headers) else {
            return Err(PageError::SignIn);
        };
        match app.store().session(&secret).await {
            Ok(Some(session)) => Ok(PageUser {
                actor: Actor::console(&session.operator),
                operator: session.operator,
                csrf: session.csrf,
                secret,
            }),
            Ok(None) => Err(PageError::SignIn),
            Err(err) => Err(PageError::from(err)),
        }
    }
}

/// An operator identified by `Authorization: Bearer TOKEN` on an API request.
pub(crate) struct ApiUser {
    pub actor: Actor,
    /// The bearer token, for live streams to check again that it still holds.
    pub token: String,
}

impl FromRequestParts<App> for ApiUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<ApiUser, ApiError> {
        let token = bearer(&parts.headers).ok_or_else(|| {
            ApiError::unauthorized(
                "missing Authorization: Bearer TOKEN (see supervise operator token)",
            )
        })?;
        match app.store().token_operator(token).await {
            Ok(Some(operator)) => Ok(ApiUser {
                actor: Actor::console(&operator),
                token: token.to_owned(),
            }),
            Ok(None) => Err(ApiError::unauthorized(
                "unknown or revoked token; ask an admin for a new one (supervise operator token NAME)",
            )),
            Err(err) => Err(ApiError::from(err)),
        }
    }
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Whether a state-changing request comes from the console's own pages: an `Origin` that
/// is the console's (or `null` with `Sec-Fetch-Site: same-origin`, what browsers send on a
/// same-origin form post under `no-referrer`), and no Fetch Metadata saying otherwise.
/// A request without either header (a script, curl) passes this check and still needs the
/// CSRF token.
pub(crate) fn same_origin(app: &App, headers: &HeaderMap) -> bool {
    let fetch_site = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase);
    if let Some(site) = &fetch_site
        && site != "same-origin"
        && site != "none"
    {
        return false;
    }
    match headers.get(header::ORIGIN).map(|v| v.to_str()) {
        None => true,
        Some(Ok("null")) => fetch_site.as_deref() == Some("same-origin"),
        Some(Ok(origin)) => origin.eq_ignore_ascii_case(app.origin()),
        Some(Err(_)) => false,
    }
}

/// The checks of every form post by a signed-in operator; 403 when either fails.
pub(crate) fn check_post(
    app: &App,
    headers: &HeaderMap,
    user: &PageUser,
    csrf: Option<&str>,
) -> Result<(), PageError> {
    if !same_origin(app, headers) {
        return Err(PageError::forbidden(
            "this form was not sent from the console's own pages (Origin check)",
        ));
    }
    match csrf {
        Some(token) if constant_time_eq(token.as_bytes(), user.csrf.as_bytes()) => Ok(()),
        _ => Err(PageError::forbidden(
            "the form's CSRF token is missing or stale; reload the page and try again",
        )),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_token_is_read_from_either_case_of_the_scheme() {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, "Bearer sv_abc".parse().unwrap());
        assert_eq!(bearer(&h), Some("sv_abc"));
        h.insert(header::AUTHORIZATION, "bearer  sv_abc ".parse().unwrap());
        assert_eq!(bearer(&h), Some("sv_abc"));
        h.insert(header::AUTHORIZATION, "Basic sv_abc".parse().unwrap());
        assert_eq!(bearer(&h), None);
        h.insert(header::AUTHORIZATION, "Bearer ".parse().unwrap());
        assert_eq!(bearer(&h), None);
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
