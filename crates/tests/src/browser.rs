//! Real headless Chromium through Debian's chromedriver, driven over WebDriver with
//! fantoccini. [`Browser`] owns a small tokio runtime of its own and blocks on each step, so
//! a story reads top to bottom like the suite's other (synchronous) tests and can run the
//! CLI between clicks. Every wait has a generous timeout and fails naming what it waited
//! for.

use std::net::{Ipv4Addr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long any one wait in the browser may take.
pub const WAIT: Duration = Duration::from_secs(30);

/// Whether Chromium and chromedriver are installed. When not: a loud `SKIPPED` line, or,
/// under `CI=true`, a failure.
pub fn available(test: &str) -> bool {
    if Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists() {
        return true;
    }
    let msg = format!(
        "SKIPPED: {test}: {CHROMIUM} or {CHROMEDRIVER} not found \
         (apt-get install chromium chromium-driver)"
    );
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{msg}; under CI=true a test may not skip"
    );
    eprintln!("{msg}");
    false
}

/// chromedriver on a free loopback port and one Chromium session through it; both end on
/// drop.
pub struct Browser {
    rt: tokio::runtime::Runtime,
    client: Option<Client>,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// A desktop-sized headless Chromium with a throwaway profile.
    pub fn start() -> Browser {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let profile = tempfile::tempdir().expect("a profile directory");
        let args = vec![
            "--headless".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--no-first-run".into(),
            "--disable-quic".into(),
            "--disable-dev-shm-usage".into(),
            "--window-size=1280,900".into(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({ "binary": CHROMIUM, "args": args }),
        );
        let url = format!("http://127.0.0.1:{port}");
        let client = rt.block_on(async {
            let started = Instant::now();
            loop {
                let attempt =
                    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                        .capabilities(caps.clone())
                        .connect(&url)
                        .await;
                match attempt {
                    Ok(c) => break c,
                    // chromedriver takes a moment to listen.
                    Err(_) if started.elapsed() < WAIT => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    Err(e) => panic!("no WebDriver session from {CHROMEDRIVER} in {WAIT:?}: {e}"),
                }
            }
        });
        Browser {
            rt,
            client: Some(client),
            driver,
            _profile: profile,
        }
    }

    fn c(&self) -> &Client {
        self.client.as_ref().expect("an open session")
    }

    /// Opens `url` and waits for it to load.
    pub fn goto(&self, url: &str) {
        self.rt
            .block_on(self.c().goto(url))
            .unwrap_or_else(|e| panic!("open {url}: {e}"));
    }

    /// The value of a JavaScript expression on the current page.
    pub fn js(&self, expr: &str) -> Value {
        self.rt
            .block_on(self.c().execute(&format!("return ({expr});"), vec![]))
            .unwrap_or_else(|e| panic!("evaluate {expr}: {e}"))
    }

    /// Waits until the JavaScript expression is true; fails naming `what` after [`WAIT`].
    pub fn until(&self, what: &str, expr: &str) {
        let started = Instant::now();
        loop {
            // A page that is navigating may refuse the script once; ask again.
            let v = self
                .rt
                .block_on(self.c().execute(&format!("return !!({expr});"), vec![]));
            if matches!(v, Ok(Value::Bool(true))) {
                return;
            }
            assert!(
                started.elapsed() < WAIT,
                "timed out after {WAIT:?} waiting for {what} (on {}; last answer {v:?})",
                self.js("document.location.href")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Clicks the element; again if a live refresh replaced it between finding and clicking.
    pub fn click(&self, css: &str) {
        self.rt.block_on(async {
            let started = Instant::now();
            loop {
                let el = self
                    .c()
                    .wait()
                    .at_most(WAIT)
                    .for_element(Locator::Css(css))
                    .await
                    .unwrap_or_else(|e| panic!("no {css} on the page: {e}"));
                match el.click().await {
                    Ok(()) => return,
                    Err(e) if e.to_string().contains("stale") && started.elapsed() < WAIT => {}
                    Err(e) => panic!("click {css}: {e}"),
                }
            }
        });
    }

    /// Replaces the text in an input.
    pub fn fill(&self, css: &str, text: &str) {
        self.rt.block_on(async {
            let el = self
                .c()
                .find(Locator::Css(css))
                .await
                .unwrap_or_else(|e| panic!("no {css} on the page: {e}"));
            el.clear()
                .await
                .unwrap_or_else(|e| panic!("clear {css}: {e}"));
            el.send_keys(text)
                .await
                .unwrap_or_else(|e| panic!("type into {css}: {e}"));
        });
    }

    /// Chooses the option with `value` in a `<select>`.
    pub fn select(&self, css: &str, value: &str) {
        self.rt.block_on(async {
            let el = self
                .c()
                .find(Locator::Css(css))
                .await
                .unwrap_or_else(|e| panic!("no {css} on the page: {e}"));
            el.select_by_value(value)
                .await
                .unwrap_or_else(|e| panic!("choose {value} in {css}: {e}"));
        });
    }

    /// The text content of the element matching `css` (`None` when there is none).
    pub fn text(&self, css: &str) -> Option<String> {
        let css = serde_json::to_string(css).expect("a JSON string");
        self.js(&format!(
            "document.querySelector({css}) && document.querySelector({css}).textContent"
        ))
        .as_str()
        .map(String::from)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(c) = self.client.take() {
            let _ = self
                .rt
                .block_on(async { tokio::time::timeout(Duration::from_secs(10), c.close()).await });
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
