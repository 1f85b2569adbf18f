//! The router's lists walked over real HTTP: every state-changing page route refuses a post
//! without the session's CSRF token or from another origin, and every API route but the
//! OpenAPI document refuses a call without a token.

use std::time::Duration;

use supervise_store::{Actor, Role, Store, StoreOptions};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use super::{OPENAPI, SIGN_IN, api_routes, page_posts};
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
