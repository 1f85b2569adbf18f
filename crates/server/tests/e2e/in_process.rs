//! The library entry point, in-process: `serve(listener, store, config, shutdown)` with a
//! listener bound to port 0 first, for settings the binary does not expose as flags.

use std::time::{Duration, Instant};

use supervise_server::{Config, serve};
use supervise_store::{Store, StoreOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

struct InProcess {
    addr: std::net::SocketAddr,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
    _dir: tempfile::TempDir,
}

async fn start(config: Config) -> InProcess {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s.db"), StoreOptions::default())
        .await
        .unwrap();
    store
        .register_bottle("alpha", "127.0.0.1".parse().unwrap())
        .await
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(serve(listener, store, config, async move {
        let _ = stopped.await;
    }));
    InProcess {
        addr,
        stop,
        task,
        _dir: dir,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_finishes_its_headers_is_cut_off() {
    let server = start(Config {
        header_read_timeout: Duration::from_millis(300),
        ..Config::default()
    })
    .await;
    let mut conn = TcpStream::connect(server.addr).await.unwrap();
    conn.write_all(format!("POST /mcp HTTP/1.1\r\nHost: {}\r\n", server.addr).as_bytes())
        .await
        .unwrap();
    let started = Instant::now();
    let mut buf = Vec::new();
    // The server closes the connection (possibly after a 408); it never waits forever.
    let read = tokio::time::timeout(Duration::from_secs(5), conn.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "connection still open after 5 s");
    assert!(started.elapsed() >= Duration::from_millis(250));
    let text = String::from_utf8_lossy(&buf);
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 408"),
        "{text}"
    );

    server.stop.send(()).unwrap();
    server.task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_returns_on_shutdown_even_with_an_idle_keep_alive_connection() {
    let server = start(Config::default()).await;
    let mut conn = TcpStream::connect(server.addr).await.unwrap();
    let req = format!(
        "GET /healthz HTTP/1.1\r\nHost: {}\r\nConnection: keep-alive\r\n\r\n",
        server.addr
    );
    conn.write_all(req.as_bytes()).await.unwrap();
    let mut buf = [0u8; 512];
    let n = conn.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let started = Instant::now();
    server.stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), server.task)
        .await
        .expect("serve returned")
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    // And no longer accepts.
    assert!(TcpStream::connect(server.addr).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_its_answer_is_dropped_after_the_write_timeout() {
    use std::io::Read;
    let server = start(Config {
        write_timeout: Duration::from_millis(500),
        ..Config::default()
    })
    .await;
    let mut stalled = crate::harness::non_reading_client(
        server.addr,
        crate::harness::ALPHA,
        &crate::harness::tools_list_batch(32),
    );
    let read = tokio::task::spawn_blocking(move || {
        // The answer fills the socket buffers, then nothing moves for longer than the
        // timeout and the server closes its end.
        assert!(
            crate::harness::wait_until_the_server_closes(&stalled, Duration::from_secs(60)),
            "the server kept the connection of a client that reads nothing for 60 s"
        );
        stalled
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut buf = Vec::new();
        let ended = stalled.read_to_end(&mut buf);
        (ended, buf)
    })
    .await
    .unwrap();
    let (ended, buf) = read;
    if let Err(e) = &ended {
        assert_ne!(e.kind(), std::io::ErrorKind::WouldBlock, "still open: {e}");
        assert_ne!(e.kind(), std::io::ErrorKind::TimedOut, "still open: {e}");
    }
    // The first status line was read before; count the answers that started after it.
    let text = String::from_utf8_lossy(&buf);
    let answers = 1 + text.matches("HTTP/1.1 200").count();
    assert!(
        answers < crate::harness::STALLED_REQUESTS,
        "all {answers} answers arrived"
    );
    eprintln!(
        "got {} bytes before the server dropped the connection",
        buf.len()
    );

    server.stop.send(()).unwrap();
    server.task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_returns_within_the_drain_time_even_if_a_client_never_reads() {
    let drain = Duration::from_secs(1);
    let server = start(Config {
        drain_timeout: drain,
        // Only the drain deadline can end this connection.
        write_timeout: Duration::from_secs(3600),
        ..Config::default()
    })
    .await;
    let stalled = crate::harness::non_reading_client(
        server.addr,
        crate::harness::ALPHA,
        &crate::harness::tools_list_batch(32),
    );
    // The server answers the pipelined requests until the socket buffers are full and one
    // answer is stuck half-written.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    server.stop.send(()).unwrap();
    tokio::time::timeout(drain + Duration::from_secs(1), server.task)
        .await
        .expect("serve returned within the drain time plus a second")
        .unwrap()
        .unwrap();
    eprintln!("serve returned {:?} after shutdown", started.elapsed());
    drop(stalled);
}
