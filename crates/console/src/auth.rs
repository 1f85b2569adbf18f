//! Who is asking: a session cookie for pages, a bearer token for the API, each looked up in
//! the store on every request (a removed operator stops at once), and [`guard`], the
//! check every state-changing page request passes before its handler runs: its Origin (or
//! Fetch Metadata) is the console's own, and it carries the session's CSRF token.

use axum::body::Body;
use axum::extract::{FromRequestParts, MatchedPath, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use cookie::{Cookie, SameSite};
use serde::Deserialize;
use supervise_store::{Actor, Operator};

use crate::app::App;
use crate::error::{ApiError, PageError};

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
        // Lax: a proposal link opened from chat or mail (a top-level GET from another
        // site) carries the session; every POST still needs the CSRF token and the
        // Origin check (`guard`).
        .same_site(SameSite::Lax)
        .secure(app.secure())
        .path("/")
        .max_age(cookie::time::Duration::seconds(max_age_secs.max(0)))
        .build()
        .to_string()
}

/// The cookie that remembers, for 15 minutes (a sign-in link's life), the page that sent
/// the operator to sign in, so signing in returns there.
const RETURN_COOKIE: &str = "supervise_return";

/// Whether `path` is a path of this console to return to after signing in: it starts with
/// one `/`, has no backslash (browsers read `/\evil` as `//evil`), no scheme, nothing
/// outside printable ASCII, and is not the sign-in pages themselves.
pub(crate) fn safe_return_path(path: &str) -> bool {
    path.starts_with('/')
        && !path.starts_with("//")
        && !path.contains('\\')
        && !path.contains("://")
        && path.len() <= 512
        && path
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b';' && b != b',' && b != b'"')
        && !path.starts_with("/sign-in")
}

/// The redirect to the sign-in page, remembering `asked` when it is a safe path.
pub(crate) fn to_sign_in(asked: Option<&str>) -> axum::response::Response {
    use axum::response::{IntoResponse, Redirect};
    let mut resp = Redirect::to("/sign-in").into_response();
    if let Some(path) = asked.filter(|p| safe_return_path(p) && *p != "/") {
        let cookie = Cookie::build((RETURN_COOKIE, path.to_owned()))
            .http_only(true)
            .same_site(SameSite::Lax)
            .path("/")
            .max_age(cookie::time::Duration::minutes(15))
            .build()
            .to_string();
        if let Ok(v) = header::HeaderValue::from_str(&cookie) {
            resp.headers_mut().insert(header::SET_COOKIE, v);
        }
    }
    resp
}

/// The page to return to after signing in (from the cookie [`to_sign_in`] set), if safe,
/// and the `Set-Cookie` value that forgets it.
pub(crate) fn return_path(headers: &HeaderMap) -> (Option<String>, String) {
    let path = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == RETURN_COOKIE)
        .map(|c| c.value().to_owned())
        .filter(|p| safe_return_path(p));
    let clear = Cookie::build((RETURN_COOKIE, ""))
        .http_only(true)
        .same_site(SameSite::Lax)
        .path("/")
        .max_age(cookie::time::Duration::seconds(0))
        .build()
        .to_string();
    (path, clear)
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
#[derive(Clone)]
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
        // Already looked up by the guard of a form post.
        if let Some(user) = parts.extensions.get::<PageUser>() {
            return Ok(user.clone());
        }
        let asked = (parts.method == axum::http::Method::GET)
            .then(|| parts.uri.path_and_query().map(|p| p.as_str().to_owned()))
            .flatten();
        let Some(secret) = session_secret(app, &parts.headers) else {
            return Err(PageError::SignIn(asked));
        };
        match app.store().session(&secret).await {
            Ok(Some(session)) => Ok(PageUser {
                actor: Actor::console(&session.operator),
                operator: session.operator,
                csrf: session.csrf,
                secret,
            }),
            Ok(None) => Err(PageError::SignIn(asked)),
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
fn same_origin(app: &App, headers: &HeaderMap) -> bool {
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

/// The one state-changing page route without a session: posting a sign-in link's secret.
/// It gets the Origin check only (the secret is its own proof).
pub(crate) const SIGN_IN: &str = "/sign-in/{secret}";

/// The form field that carries the session's CSRF token.
#[derive(Deserialize)]
struct CsrfField {
    csrf: Option<String>,
}

/// The check of every state-changing page request, laid over the whole page router so no
/// route can be added without it: any method but GET, HEAD, OPTIONS and TRACE must come
/// from the console's own pages ([`same_origin`]) and, except the sign-in post
/// ([`SIGN_IN`]), from a signed-in operator whose form carries the session's CSRF token.
/// 403 when a check fails (no session: to the sign-in page), before the handler runs; the
/// operator found goes on to the handler as its [`PageUser`].
pub(crate) async fn guard(State(app): State<App>, req: Request, next: Next) -> Response {
    if req.method().is_safe() {
        return next.run(req).await;
    }
    if !same_origin(&app, req.headers()) {
        return PageError::forbidden(
            "this form was not sent from the console's own pages (Origin check)",
        )
        .into_response();
    }
    if req
        .extensions()
        .get::<MatchedPath>()
        .is_some_and(|path| path.as_str() == SIGN_IN)
    {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    let user = match PageUser::from_request_parts(&mut parts, &app).await {
        Ok(user) => user,
        Err(refused) => return refused.into_response(),
    };
    // The listener has read the body already, within its size limit.
    let Ok(body) = axum::body::to_bytes(body, usize::MAX).await else {
        return PageError::bad_request("the form could not be read").into_response();
    };
    let csrf = serde_urlencoded::from_bytes::<CsrfField>(&body)
        .ok()
        .and_then(|field| field.csrf);
    match csrf {
        Some(token) if constant_time_eq(token.as_bytes(), user.csrf.as_bytes()) => {}
        _ => {
            return PageError::forbidden(
                "the form's CSRF token is missing or stale; reload the page and try again",
            )
            .into_response();
        }
    }
    parts.extensions.insert(user);
    next.run(Request::from_parts(parts, Body::from(body))).await
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
    fn only_this_consoles_paths_are_return_paths() {
        for ok in ["/proposals/019a", "/grants?host=a", "/audit"] {
            assert!(safe_return_path(ok), "{ok}");
        }
        for bad in [
            "//evil.example/x",
            "https://evil.example/",
            "/\\evil.example",
            "\\\\evil",
            "evil",
            "/sign-in/abc",
            "/x y",
            "/a;b",
        ] {
            assert!(!safe_return_path(bad), "{bad}");
        }
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
