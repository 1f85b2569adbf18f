//! What a client that stalls or floods gets: connections that stop sending their headers or
//! their body are closed while an operator's API call is answered, cross-site sign-in posts
//! do not spend the sign-in limit, and rotating source addresses meets a global bound.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use reqwest::Method;
use supervise_console::Config;
use supervise_store::Role;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::harness::{Console, api, client, install_crypto};

/// Connections that send part of their headers, and part of their body.
const STALLED_HEADERS: usize = 300;
const STALLED_BODIES: usize = 100;

/// Opens a connection to the console and sends `bytes`, then nothing more.
async fn stall(addr: SocketAddr, bytes: String) -> TcpStream {
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(bytes.as_bytes()).await.unwrap();
    conn
}

/// Reads until the console closes the connection (whatever it answers first).
async fn closed(mut conn: TcpStream) {
    let mut buf = [0u8; 1024];
    loop {
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_connections_are_closed_and_an_operator_is_still_served() {
    // Short timeouts and few connections at once, so the test waits seconds, not minutes:
    // most stalled connections wait in the backlog for a slot, as in a flood.
    let c = Console::start_with(|addr| Config {
        header_timeout: Duration::from_secs(1),
        body_timeout: Duration::from_secs(1),
        max_connections: 64,
        ..Config::new(format!("http://{addr}"))
    })
    .await;
    c.operator("ops", Role::Approver, &[]).await;
    let token = c.token("ops").await;
    let addr: SocketAddr = c.url.trim_start_matches("http://").parse().unwrap();

    let mut stalled = Vec::new();
    for i in 0..STALLED_HEADERS {
        let partial = format!("GET /api/v1/proposals?n={i} HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ");
        stalled.push(stall(addr, partial).await);
    }
    for _ in 0..STALLED_BODIES {
        let partial = format!(
            "POST /api/v1/grants/g/revoke HTTP/1.1\r\nHost: {addr}\r\n\
             Authorization: Bearer {token}\r\nContent-Length: 100\r\n\r\n{{\"no"
        );
        stalled.push(stall(addr, partial).await);
    }

    let (status, _) = api(&c, Method::GET, "/proposals", Some(&token), None).await;
    assert_eq!(status, 200, "the operator is served");

    // Every stalled connection is closed by the console; the bound is generous, the point
    // is that none stays open.
    let all = futures_util::future::join_all(stalled.into_iter().map(closed));
    tokio::time::timeout(Duration::from_secs(60), all)
        .await
        .expect("the console closed every stalled connection");
    let (status, _) = api(&c, Method::GET, "/proposals", Some(&token), None).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn cross_site_sign_in_posts_do_not_spend_the_limit() {
    let c = Console::start().await;
    for i in 0..20 {
        let r = client()
            .post(format!("{}/sign-in/guess-{i}", c.url))
            .header("origin", "https://evil.example")
            .header("sec-fetch-site", "cross-site")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "attempt {i}");
    }
    // The operator's own sign-in from the same address still works.
    let secret = c.operator("max", Role::Viewer, &[]).await;
    let r = client()
        .post(format!("{}/sign-in/{secret}", c.url))
        .header("origin", &c.url)
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
}

#[tokio::test]
async fn rotating_source_addresses_meets_the_global_sign_in_bound() {
    install_crypto();
    let c = Console::start().await;
    let mut refused = 0;
    // One attempt from each of 200 loopback addresses: far below any per-address limit.
    for i in 0..200u32 {
        let from = IpAddr::from([127, 0, 1 + (i / 250) as u8, 2 + (i % 250) as u8]);
        let r = reqwest::Client::builder()
            .no_proxy()
            .local_address(from)
            .build()
            .unwrap()
            .post(format!("{}/sign-in/guess-{i}", c.url))
            .header("origin", &c.url)
            .send()
            .await
            .unwrap();
        match r.status().as_u16() {
            403 => {}
            429 => refused += 1,
            other => panic!("attempt {i} from {from}: {other}"),
        }
    }
    assert!(refused > 0, "no attempt met the global bound");
}
