//! The clients a well-behaved MCP client never is: a one-shot `POST /mcp` of an arbitrary
//! body in revision 2025-03-26 (no `MCP-Protocol-Version` header, no handshake: the revision
//! with JSON-RPC batches), and a connection that pipelines requests but does not read its
//! answers.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;

use crate::client::{Target, tcp_connect};

/// A batch of `n` `tools/list` requests: a small body whose answer is several kilobytes per
/// item (about 110 KB for 32).
pub fn tools_list_batch(n: usize) -> String {
    let item = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    format!("[{}]", vec![item; n].join(","))
}

/// A JSON array of ones exactly `bytes` long (`bytes` odd, at least 3): `[1,1,…,1]`.
pub fn ones(bytes: usize) -> Vec<u8> {
    let items = (bytes - 1) / 2;
    let mut body = Vec::with_capacity(bytes);
    body.push(b'[');
    for i in 0..items {
        if i > 0 {
            body.push(b',');
        }
        body.push(b'1');
    }
    body.push(b']');
    body
}

/// One answer to [`post_legacy`].
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub bytes: usize,
    pub took: Duration,
}

/// POSTs `body` to `/mcp` from `local` on a fresh connection, without
/// `MCP-Protocol-Version` (so revision 2025-03-26), and reads the whole answer.
pub async fn post_legacy(target: &Target, local: Option<IpAddr>, body: Vec<u8>) -> Result<Answer> {
    let started = Instant::now();
    let stream = tcp_connect(target, local).await?;
    let (mut sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let req = Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header(HOST, target.addr.to_string())
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/event-stream")
        .body(Full::new(Bytes::from(body)))?;
    let resp = sender.send_request(req).await.context("request failed")?;
    let status = resp.status();
    let body = resp
        .into_body()
        .collect()
        .await
        .context("reading the answer")?;
    Ok(Answer {
        status,
        bytes: body.to_bytes().len(),
        took: started.elapsed(),
    })
}

/// Receive buffer of a [`Stalled`] client: the kernel doubles it and then keeps it tiny, so
/// the answers back up into the server's send buffer.
const TINY_RCVBUF: usize = 4096;

/// A connection that sent `requests` pipelined `POST /mcp` of one body and reads its
/// answers.
pub struct Stalled {
    reader: tokio::net::tcp::OwnedReadHalf,
    writer: JoinHandle<()>,
}

impl Stalled {
    /// Connects from `local` with a tiny receive buffer, sends the requests (in a task, as
    /// the server takes them) and returns once the first answer has started: it is built
    /// before its first byte is sent, so from then on the server holds it.
    pub async fn open(
        addr: SocketAddr,
        local: IpAddr,
        body: &str,
        requests: usize,
    ) -> Result<Stalled> {
        use socket2::{Domain, Socket, Type};
        let socket = Socket::new(Domain::IPV4, Type::STREAM, None)?;
        socket.set_recv_buffer_size(TINY_RCVBUF)?;
        socket
            .bind(&SocketAddr::new(local, 0).into())
            .with_context(|| format!("binding a client socket to {local}"))?;
        socket
            .connect(&addr.into())
            .with_context(|| format!("connecting to {addr}"))?;
        socket.set_nonblocking(true)?;
        let stream = tokio::net::TcpStream::from_std(socket.into())?;
        let (mut reader, mut write) = stream.into_split();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let all = format!("{head}{body}").repeat(requests).into_bytes();
        // The server reads the next request only after answering one: the writes stall too,
        // so they go on in a task that ends when the connection does.
        let writer = tokio::spawn(async move {
            let _ = write.write_all(&all).await;
            std::future::pending::<()>().await;
        });
        let mut start = [0u8; 12];
        tokio::time::timeout(Duration::from_secs(10), reader.read_exact(&mut start))
            .await
            .context("no answer within 10 s")?
            .context("reading the start of the answer")?;
        if &start != b"HTTP/1.1 200" {
            bail!("answered {:?}", String::from_utf8_lossy(&start));
        }
        Ok(Stalled { reader, writer })
    }

    /// Whether the server has closed the connection: reads what is buffered (at most
    /// `limit` bytes, for at most `within`) and looks for the end or a reset.
    pub async fn closed_by_server(&mut self, limit: usize, within: Duration) -> bool {
        let reader = &mut self.reader;
        let deadline = tokio::time::Instant::now() + within;
        let mut buf = vec![0u8; 64 * 1024];
        let mut read = 0;
        while read < limit {
            match tokio::time::timeout_at(deadline, reader.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(n)) => read += n,
                Err(_) => return false,
            }
        }
        false
    }
}

impl Drop for Stalled {
    fn drop(&mut self) {
        self.writer.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ones_is_a_json_array_of_the_asked_length() {
        let body = ones(1024 * 1024 - 1);
        assert_eq!(body.len(), 1024 * 1024 - 1);
        let items: Vec<u8> = serde_json::from_slice(&body).expect("a JSON array");
        assert_eq!(items.len(), 524_287);
        assert!(items.iter().all(|&i| i == 1));
    }
}
