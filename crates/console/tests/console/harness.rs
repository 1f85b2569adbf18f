//! A console on a throwaway database, operators with sign-in links, signed-in HTTP clients,
//! and proposals filed as the server files them.

use std::net::SocketAddr;

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};
use supervise_console::{Config, serve};
use supervise_store::{Actor, Kind, NewProposal, Proposal, Role, Store, StoreOptions};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

pub struct Console {
    pub url: String,
    pub store: Store,
    pub dir: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), supervise_console::ConsoleError>>>,
}

/// The actor the tests set things up as: the host's CLI.
pub fn root() -> Actor {
    Actor::cli("root")
}

impl Console {
    /// A console reached at `http://127.0.0.1:PORT`.
    pub async fn start() -> Console {
        Console::start_with(|addr| Config::new(format!("http://{addr}"))).await
    }

    pub async fn start_with(config: impl FnOnce(SocketAddr) -> Config) -> Console {
        install_crypto();
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s.db"), StoreOptions::default())
            .await
            .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(listener, store.clone(), config(addr), async move {
            let _ = stopped.await;
        }));
        Console {
            url: format!("http://{addr}"),
            store,
            dir,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Stops the console and waits for it to return.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap().unwrap();
        }
    }

    /// A bottle on a loopback address of its own.
    pub async fn bottle(&self, slug: &str, ip: &str) {
        self.store
            .add_bottle(slug, ip.parse().unwrap(), &root())
            .await
            .unwrap();
    }

    /// Files an egress proposal as the server would for `slug`.
    pub async fn propose(&self, slug: &str, host: &str, port: u16, why: &str) -> Proposal {
        let bottle = self.store.bottle(slug).await.unwrap().unwrap();
        self.store
            .propose(NewProposal {
                bottle_id: bottle.id,
                kind: Kind::Egress,
                change: json!({"host": host, "port": port}),
                justification: why.into(),
                quorum: None,
            })
            .await
            .unwrap()
            .into_proposal()
    }

    /// Adds an operator; returns the secret of its sign-in link.
    pub async fn operator(&self, name: &str, role: Role, bottles: &[&str]) -> String {
        let globs: Vec<String> = bottles.iter().map(|s| s.to_string()).collect();
        let (_, link) = self
            .store
            .add_operator(name, role, &globs, &root())
            .await
            .unwrap();
        link.secret.expose().to_owned()
    }

    /// An API token for an operator.
    pub async fn token(&self, name: &str) -> String {
        self.store
            .operator_token(name, &root())
            .await
            .unwrap()
            .expose()
            .to_owned()
    }

    /// Signs in with a link as a browser would (the page's POST with its own Origin).
    pub async fn sign_in(&self, secret: &str) -> Browser {
        let resp = client()
            .post(format!("{}/sign-in/{secret}", self.url))
            .header("origin", &self.url)
            .header("sec-fetch-site", "same-origin")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 303, "sign-in refused");
        let cookie = resp
            .headers()
            .get("set-cookie")
            .expect("a session cookie")
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_owned();
        let mut b = Browser {
            url: self.url.clone(),
            cookie,
            csrf: String::new(),
        };
        let (status, page) = b.get("/").await;
        assert_eq!(status, 200, "{page}");
        b.csrf = csrf_of(&page);
        b
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A signed-in browser's cookie and CSRF token.
pub struct Browser {
    pub url: String,
    pub cookie: String,
    pub csrf: String,
}

impl Browser {
    pub async fn get(&self, path: &str) -> (u16, String) {
        let resp = client()
            .get(format!("{}{path}", self.url))
            .header("cookie", &self.cookie)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.text().await.unwrap())
    }

    /// A form post from the console's own page: its Origin, the session's CSRF token.
    pub async fn post(&self, path: &str, fields: &[(&str, &str)]) -> (u16, String) {
        let mut form: Vec<(&str, &str)> = vec![("csrf", &self.csrf)];
        form.extend_from_slice(fields);
        self.post_raw(path, &form, &[("origin", &self.url)]).await
    }

    /// A form post with exactly these fields and headers.
    pub async fn post_raw(
        &self,
        path: &str,
        form: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> (u16, String) {
        let mut h = HeaderMap::new();
        h.insert("cookie", HeaderValue::from_str(&self.cookie).unwrap());
        for (k, v) in headers {
            h.insert(
                reqwest::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        let body: String = form
            .iter()
            .map(|(k, v)| format!("{}={}", urlencode(k), urlencode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let resp = client()
            .post(format!("{}{path}", self.url))
            .headers(h)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.text().await.unwrap())
    }
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The CSRF token in a page's sign-out form.
pub fn csrf_of(page: &str) -> String {
    let at = page
        .find("name=\"csrf\" value=\"")
        .unwrap_or_else(|| panic!("no CSRF field in {page}"));
    let rest = &page[at + "name=\"csrf\" value=\"".len()..];
    rest[..rest.find('"').unwrap()].to_owned()
}

/// A client that follows no redirects and uses no proxy.
pub fn client() -> reqwest::Client {
    install_crypto();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap()
}

/// An API call with a bearer token; the status and the JSON body.
pub async fn api(
    console: &Console,
    method: reqwest::Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = client().request(method, format!("{}/api/v1{path}", console.url));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.unwrap();
    let json = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "{path}: body is not JSON ({e}): {}",
            String::from_utf8_lossy(&bytes)
        )
    });
    (status, json)
}

/// reqwest is built with rustls but no crypto provider: the tests install ring's.
pub fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Whether the CI run demands every component (a missing one fails instead of skipping).
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}
