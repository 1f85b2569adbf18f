//! The router's lists walked over real HTTP: every state-changing page route refuses a post
//! without the session's CSRF token or from another origin, and every API route but the
//! OpenAPI document refuses a call without a token; `/metrics` needs a token of any role,
//! `/healthz` none, and both only read.

use std::time::Duration;

use supervise_store::{Actor, Role, Store, StoreOptions};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use super::{HEALTHZ, METRICS, OPENAPI, SIGN_IN, api_routes, operation_routes, page_posts};
use crate::config::Config;

struct Running {
    url: String,
    store: Store,
    _dir: tempfile::TempDir,
    _stop: oneshot::Sender<()>,
}

async fn start() -> Running {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s.db"), StoreOptions::default())
        .await
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let config = Config {
        feed_interval: Duration::from_secs(1),
        ..Config::new(url.clone())
    };
    tokio::spawn(crate::serve(listener, store.clone(), config, async move {
        let _ = stopped.await;
    }));
    Running {
        url,
        store,
        _dir: dir,
        _stop: stop,
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap()
}

/// A route's path with every `{param}` filled in.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|segment| {
            if segment.starts_with('{') {
                "x"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[tokio::test]
async fn every_page_post_needs_the_csrf_token_and_the_consoles_origin() {
    let c = start().await;
    let root = Actor::cli("root");
    let (_, link) = c
        .store
        .add_operator("ada", Role::Admin, &[], &root)
        .await
        .unwrap();
    let session = c.store.sign_in(link.secret.expose()).await.unwrap();
    let cookie = format!("supervise_session={}", session.secret.expose());
    let csrf = format!("csrf={}", session.csrf);

    let posts = page_posts();
    assert!(posts.iter().any(|(path, _)| *path == SIGN_IN));
    for (path, _) in posts {
        let url = format!("{}{}", c.url, concrete(path));
        let post = |origin: &str, body: &str| {
            client()
                .post(&url)
                .header("cookie", &cookie)
                .header("origin", origin)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body.to_owned())
                .send()
        };
        let foreign = post("https://evil.example", &csrf).await.unwrap();
        assert_eq!(foreign.status(), 403, "{path} from a foreign Origin");
        if path == SIGN_IN {
            // No session yet: the Origin check is the whole guard.
            continue;
        }
        let bare = post(&c.url, "").await.unwrap();
        assert_eq!(bare.status(), 403, "{path} without the CSRF token");
        let forged = post(&c.url, "csrf=forged").await.unwrap();
        assert_eq!(forged.status(), 403, "{path} with another CSRF token");
    }
    // The session is untouched by all of it: the operator is still there and signed in.
    assert!(
        c.store
            .session(session.secret.expose())
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn the_openapi_document_is_public_and_every_other_api_route_needs_a_token() {
    let c = start().await;
    for (path, _) in api_routes() {
        let url = format!("{}/api/v1{}", c.url, concrete(path));
        let get = client().get(&url).send().await.unwrap().status();
        let post = client().post(&url).send().await.unwrap().status();
        if path == OPENAPI {
            assert_eq!(get, 200, "{path} is public");
            continue;
        }
        // Each route answers one of the two methods; that one needs the token.
        let statuses = [get.as_u16(), post.as_u16()];
        assert!(
            statuses.contains(&401),
            "{path} without a token: {statuses:?}"
        );
        assert!(
            statuses.iter().all(|s| *s == 401 || *s == 405),
            "{path} without a token: {statuses:?}"
        );
    }
}

#[tokio::test]
async fn metrics_need_a_token_of_any_role_and_healthz_none_and_both_only_read() {
    let c = start().await;
    let routes = operation_routes();
    assert!(routes.iter().any(|(path, _)| *path == METRICS));
    assert!(routes.iter().any(|(path, _)| *path == HEALTHZ));
    let root = Actor::cli("root");
    c.store
        .add_operator("vera", Role::Viewer, &[], &root)
        .await
        .unwrap();
    let token = c.store.operator_token("vera", &root).await.unwrap();
    let bearer = format!("Bearer {}", token.expose());
    for (path, _) in routes {
        let url = format!("{}{path}", c.url);
        // Only reads: a post is refused whatever it carries.
        let post = client()
            .post(&url)
            .header("authorization", &bearer)
            .send()
            .await
            .unwrap();
        assert_eq!(post.status(), 405, "POST {path}");
        let anonymous = client().get(&url).send().await.unwrap();
        if path == HEALTHZ {
            assert_eq!(anonymous.status(), 200, "{path} is public");
            assert_eq!(anonymous.text().await.unwrap(), "ok\n");
            continue;
        }
        assert_eq!(anonymous.status(), 401, "{path} without a token");
        let forged = client()
            .get(&url)
            .header("authorization", "Bearer sv_forged")
            .send()
            .await
            .unwrap();
        assert_eq!(forged.status(), 401, "{path} with an unknown token");
        let viewer = client()
            .get(&url)
            .header("authorization", &bearer)
            .send()
            .await
            .unwrap();
        assert_eq!(viewer.status(), 200, "{path} with a viewer's token");
        let text = viewer.text().await.unwrap();
        // Its own figures only: the refused calls above are counted by route and status,
        // and nothing of the queue is there.
        assert!(
            text.contains(
                r#"supervise_console_requests_total{route="/metrics",method="GET",status="401"} 2"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"supervise_console_live_streams{kind="page"} 0"#),
            "{text}"
        );
        assert!(
            text.contains("# TYPE supervise_console_sign_ins_total counter"),
            "{text}"
        );
        assert!(!text.contains("supervise_proposals_pending"), "{text}");
    }
}

#[tokio::test]
async fn healthz_is_503_when_the_database_is_gone() {
    let c = start().await;
    std::fs::remove_file(c._dir.path().join("s.db")).unwrap();
    let r = client()
        .get(format!("{}{HEALTHZ}", c.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    assert!(r.text().await.unwrap().starts_with("unavailable: "));
}
