//! `supervise console` as a child process on a free loopback port, the sign-in links and
//! tokens `supervise operator` prints, and the console's JSON API over `std::net` (one
//! request per connection; the events stream read as Server-Sent Events by a thread).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{bin, exchange_raw, pipe_lines};

/// A running `supervise --db DB console`, killed on drop.
pub struct Console {
    child: Child,
    pub addr: SocketAddr,
    /// `http://127.0.0.1:PORT`, also its `--public-url`.
    pub url: String,
    log: mpsc::Receiver<String>,
}

/// A port nobody listens on right now (bound and released).
pub fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

impl Console {
    /// Starts `supervise --db DB console --listen 127.0.0.1:PORT --public-url
    /// http://127.0.0.1:PORT` on a free port and waits for its "listening" line (on another
    /// port if another process took that one in between).
    pub fn start(db: &Path) -> Console {
        let mut attempts = Vec::new();
        for _ in 0..5 {
            match Console::try_start(db, SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()))) {
                Ok(console) => return console,
                Err((seen, in_use)) => {
                    attempts.push(seen);
                    if !in_use {
                        break;
                    }
                }
            }
        }
        panic!(
            "supervise console never said it listens:\n{}",
            attempts.join("\n---\n")
        );
    }

    /// The console on `addr`, or what it printed before it exited or the time ran out, and
    /// whether the port was taken.
    fn try_start(db: &Path, addr: SocketAddr) -> Result<Console, (String, bool)> {
        let url = format!("http://{addr}");
        let mut child = Command::new(bin("supervise"))
            .arg("--db")
            .arg(db)
            .args([
                "console",
                "--listen",
                &addr.to_string(),
                "--public-url",
                &url,
            ])
            .env("SUPERVISE_LOG", "info")
            .env("NO_COLOR", "1")
            .env_remove("SUPERVISE_DB")
            .env_remove("SUPERVISE_CONSOLE_URL")
            .env_remove("SUPERVISE_CONSOLE_LISTEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn supervise console");
        let log = pipe_lines(&mut child);
        let ready = format!("supervise console listening on {url} ");
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match log.recv_timeout(left) {
                Ok(line) if line.starts_with(&ready) => {
                    return Ok(Console {
                        child,
                        addr,
                        url,
                        log,
                    });
                }
                Ok(line) => seen.push(line),
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let seen = seen.join("\n");
                    let in_use = seen.to_ascii_lowercase().contains("in use");
                    return Err((seen, in_use));
                }
            }
        }
    }

    /// Lines it printed since the last call.
    pub fn log(&self) -> Vec<String> {
        self.log.try_iter().collect()
    }

    /// One API call, `METHOD /api/v1PATH`, with a bearer token and a JSON body: the status
    /// and the JSON answer (`Value::Null` when the body is not JSON).
    pub fn api(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut head = format!(
            "{method} /api/v1{path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\n\
             Connection: close\r\nContent-Length: {len}\r\n",
            addr = self.addr,
            len = body.len()
        );
        if !body.is_empty() {
            head.push_str("Content-Type: application/json\r\n");
        }
        if let Some(t) = token {
            head.push_str(&format!("Authorization: Bearer {t}\r\n"));
        }
        head.push_str("\r\n");
        let mut raw = head.into_bytes();
        raw.extend_from_slice(body.as_bytes());
        let reply = exchange_raw(
            Ipv4Addr::LOCALHOST.into(),
            self.addr,
            &raw,
            Duration::from_secs(60),
        )
        .unwrap_or_else(|e| panic!("{method} /api/v1{path}: {e}"));
        (reply.status, reply.message.unwrap_or(Value::Null))
    }

    /// Opens `GET /api/v1/events?after=AFTER` with `Accept: text/event-stream`.
    pub fn events(&self, token: &str, after: i64) -> EventStream {
        EventStream::open(self.addr, &format!("/api/v1/events?after={after}"), token)
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The sign-in link in what `supervise operator add|link` printed: the word holding
/// `/sign-in/`.
pub fn sign_in_link(printed: &str) -> String {
    printed
        .split_whitespace()
        .find(|w| w.starts_with("http") && w.contains("/sign-in/"))
        .unwrap_or_else(|| panic!("no sign-in link in {printed:?}"))
        .to_owned()
}

/// The token in what `supervise operator token NAME` printed: the line after the one
/// that announces it.
pub fn api_token(printed: &str) -> String {
    let mut lines = printed.lines();
    lines
        .find(|l| l.starts_with("API token for"))
        .and_then(|_| lines.find(|l| !l.trim().is_empty()))
        .map(|l| l.trim().to_owned())
        .unwrap_or_else(|| panic!("no API token in {printed:?}"))
}

/// One Server-Sent Event.
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub id: Option<String>,
    pub event: Option<String>,
    /// The `data:` lines joined with newlines.
    pub data: String,
}

impl SseEvent {
    /// `data` as JSON (`Value::Null` when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or(Value::Null)
    }
}

/// An open `text/event-stream` answer, read by a thread; closed on drop.
pub struct EventStream {
    pub status: u16,
    pub content_type: String,
    events: mpsc::Receiver<SseEvent>,
    socket: TcpStream,
}

impl EventStream {
    fn open(addr: SocketAddr, path: &str, token: &str) -> EventStream {
        let mut socket = TcpStream::connect(addr).expect("connect to the console");
        let head = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
             Authorization: Bearer {token}\r\n\r\n"
        );
        socket.write_all(head.as_bytes()).expect("send the request");
        let mut reader = BufReader::new(socket.try_clone().expect("a second handle"));
        let mut status_line = String::new();
        reader
            .read_line(&mut status_line)
            .expect("read the status line");
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("GET {path}: no HTTP status in {status_line:?}"));
        let (mut content_type, mut chunked) = (String::new(), false);
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).expect("read a header") == 0 {
                break;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                let v = v.trim().to_ascii_lowercase();
                if k.eq_ignore_ascii_case("content-type") {
                    content_type = v;
                } else if k.eq_ignore_ascii_case("transfer-encoding") {
                    chunked = v.contains("chunked");
                }
            }
        }
        let (tx, events) = mpsc::channel();
        std::thread::spawn(move || read_events(reader, chunked, tx));
        EventStream {
            status,
            content_type,
            events,
            socket,
        }
    }

    /// Waits up to `timeout` for an event that `want` accepts; `Err` with the events seen
    /// meanwhile when none came (or the stream ended).
    pub fn wait_for(
        &self,
        timeout: Duration,
        mut want: impl FnMut(&SseEvent) -> bool,
    ) -> Result<SseEvent, Vec<SseEvent>> {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(event) if want(&event) => return Ok(event),
                Ok(event) => seen.push(event),
                Err(_) => return Err(seen),
            }
        }
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        let _ = self.socket.shutdown(Shutdown::Both);
    }
}

/// Reads the body (de-chunked when `chunked`), splits it into events at blank lines and
/// sends each one that has data; returns when the stream or the receiver goes.
fn read_events(mut reader: BufReader<TcpStream>, chunked: bool, tx: mpsc::Sender<SseEvent>) {
    let mut text = String::new();
    loop {
        let bytes = match next_piece(&mut reader, chunked) {
            Some(b) if !b.is_empty() => b,
            _ => return,
        };
        text.push_str(&String::from_utf8_lossy(&bytes).replace('\r', ""));
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            let mut event = SseEvent {
                id: None,
                event: None,
                data: String::new(),
            };
            let mut has_data = false;
            for line in block.lines() {
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "id" => event.id = Some(value.to_owned()),
                    "event" => event.event = Some(value.to_owned()),
                    "data" => {
                        if has_data {
                            event.data.push('\n');
                        }
                        event.data.push_str(value);
                        has_data = true;
                    }
                    _ => {}
                }
            }
            if has_data && tx.send(event).is_err() {
                return;
            }
        }
    }
}

/// The next piece of the body: one chunk, or whatever one read returns.
fn next_piece(reader: &mut BufReader<TcpStream>, chunked: bool) -> Option<Vec<u8>> {
    if !chunked {
        let mut buf = vec![0; 8192];
        let n = reader.read(&mut buf).ok()?;
        buf.truncate(n);
        return Some(buf);
    }
    let mut size = String::new();
    reader.read_line(&mut size).ok()?;
    let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
    let mut chunk = vec![0; size];
    reader.read_exact(&mut chunk).ok()?;
    let mut crlf = [0; 2];
    reader.read_exact(&mut crlf).ok()?;
    Some(chunk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_link_and_the_token_in_what_the_cli_prints() {
        let added = "added operator ann (approver, all bottles)\n\
            one-time sign-in link for ann (expires 2026-12-01T13:40:00Z, in 15m):\n  \
            http://127.0.0.1:7412/sign-in/AbC-123_x\n";
        assert_eq!(
            sign_in_link(added),
            "http://127.0.0.1:7412/sign-in/AbC-123_x"
        );
        let token = "API token for ann (shown once; send it as `Authorization: Bearer TOKEN`; \
            any earlier token of ann has stopped working):\n  sv_secret\n";
        assert_eq!(api_token(token), "sv_secret");
    }
}
