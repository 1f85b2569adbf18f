//! `supervise squid-acl`: Squid's `external_acl_type` helper. It reads one lookup per line,
//! `[CHANNEL] SRC HOST PORT [more fields, ignored]` (`%SRC %DST %PORT`, with or without
//! `concurrency=`), and answers each in order with `[CHANNEL] OK` or
//! `[CHANNEL] ERR message="..."`, from the store's one egress decision as the database is at
//! that moment, until stdin closes.
//!
//! It never creates the database and never exits because of it: a busy, missing or moved
//! file is an `ERR` with a message (the request is refused, which is the safe answer), and
//! the next lookup tries again, reopening the file when the path names it once more.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;
use supervise_store::present::address;
use supervise_store::{
    BottleRef, DenyReason, EgressDecision, GrantId, Proposed, Store, StoreError, StoreOptions,
};

use super::Ctx;

/// A lookup waits this long for another process's lock before answering `ERR`: Squid
/// queues the lookups behind it, so a long wait would stall every client.
const BUSY_TIMEOUT: Duration = Duration::from_millis(500);

/// How often one helper asks the store to record a grant's use (the store itself writes at
/// most one `grant-used` per grant per minute, across every helper process).
const USE_EVERY: Duration = Duration::from_secs(60);

/// Longest `message=` text sent back to Squid.
const MAX_MESSAGE: usize = 300;

#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    pub propose_on_deny: bool,
    pub record_use: bool,
}

/// Runs the helper until stdin closes.
pub async fn run(ctx: &Ctx, options: Options, out: &mut dyn Write) -> Result<()> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(64);
    // Stdin is read on a thread of its own, so the runtime stays free for the store's
    // background work between lookups.
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match input.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf).into_owned();
                    if tx.blocking_send(line).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let mut helper = Helper::new(ctx.db.clone(), ctx.host.clone(), options);
    while let Some(line) = rx.recv().await {
        let mut answer = helper.answer(&line).await;
        answer.push('\n');
        out.write_all(answer.as_bytes())?;
        out.flush()?;
    }
    helper.close().await;
    Ok(())
}

/// One parsed lookup.
#[derive(Debug, PartialEq, Eq)]
pub struct Lookup<'a> {
    pub channel: Option<&'a str>,
    pub src: IpAddr,
    pub host: &'a str,
    pub port: u16,
}

/// Splits a request line. The channel is there when the first field is all digits (an
/// address never is); everything after PORT is ignored. `Err` carries the channel (so the
/// answer can still be matched) and why the line is not a lookup.
pub fn parse_line(line: &str) -> Result<Lookup<'_>, (Option<&str>, String)> {
    let mut fields = line.split_ascii_whitespace().peekable();
    let channel = fields
        .next_if(|f| f.bytes().all(|b| b.is_ascii_digit()))
        .filter(|f| !f.is_empty());
    let fail = |why: String| Err((channel, why));
    let (Some(src), Some(host), Some(port)) = (fields.next(), fields.next(), fields.next()) else {
        return fail("expected SRC HOST PORT (external_acl_type ... %SRC %DST %PORT)".into());
    };
    let Ok(src) = src
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    else {
        return fail(format!("source {src:?} is not an IP address"));
    };
    let port = match port.parse::<u32>() {
        Ok(p @ 1..=65535) => p as u16,
        _ => return fail(format!("port {port:?} is not 1-65535")),
    };
    Ok(Lookup {
        channel,
        src,
        host,
        port,
    })
}

/// `message="..."` text Squid reads back safely: printable ASCII without quotes or
/// backslashes, one line, at most [`MAX_MESSAGE`] characters.
pub fn quote(message: &str) -> String {
    let clean: String = message
        .chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c.is_ascii_graphic() || c == ' ' => c,
            _ => '?',
        })
        .take(MAX_MESSAGE)
        .collect();
    format!("message=\"{clean}\"")
}

fn reply(channel: Option<&str>, verdict: &str) -> String {
    match channel {
        Some(c) => format!("{c} {verdict}"),
        None => verdict.to_string(),
    }
}

struct Helper {
    db: PathBuf,
    /// `--host-id`: whose bottles' addresses this proxy sees.
    host: Option<String>,
    options: Options,
    store: Option<Store>,
    /// When this helper last asked the store to record each grant's use.
    used: HashMap<GrantId, Instant>,
}

impl Helper {
    fn new(db: PathBuf, host: Option<String>, options: Options) -> Helper {
        Helper {
            db,
            host,
            options,
            store: None,
            used: HashMap::new(),
        }
    }

    async fn answer(&mut self, line: &str) -> String {
        let lookup = match parse_line(line) {
            Ok(l) => l,
            Err((channel, why)) => return reply(channel, &format!("ERR {}", quote(&why))),
        };
        let verdict = match self.decide(&lookup).await {
            Ok(()) => "OK".to_string(),
            Err(why) => format!("ERR {}", quote(&why)),
        };
        reply(lookup.channel, &verdict)
    }

    /// `Ok` lets the connection through; `Err` says why not.
    async fn decide(&mut self, l: &Lookup<'_>) -> Result<(), String> {
        let store = self.store().await?;
        let decision = match store
            .egress_decision(BottleRef::Ip(l.src), l.host, l.port)
            .await
        {
            Ok(d) => d,
            Err(e) => {
                let why = format!("cannot decide now: {e}");
                self.forget_store_after(&e).await;
                return Err(why);
            }
        };
        match decision {
            EgressDecision::Allowed {
                bottle,
                host,
                port,
                grant,
            } => {
                if self.options.record_use && self.use_is_due(&grant.id) {
                    match store.record_grant_use(&bottle, &grant, &host, port).await {
                        Ok(_) => {
                            self.used.insert(grant.id.clone(), Instant::now());
                        }
                        // The grant is in force whether or not its use could be written;
                        // the next lookup tries again.
                        Err(e) => eprintln!("supervise squid-acl: grant use not recorded: {e}"),
                    }
                }
                Ok(())
            }
            EgressDecision::Denied {
                bottle,
                host,
                port,
                reason,
                proposal_id,
            } => {
                let dest = address(&host, port);
                let mut why = match (&reason, &bottle) {
                    (DenyReason::UnknownBottle, _) => {
                        format!("no bottle is registered at {}", l.src)
                    }
                    (_, Some(b)) => format!("bottle {} may not reach {dest}: {reason}", b.slug),
                    (_, None) => format!("{dest}: {reason}"),
                };
                if let Some(id) = &proposal_id {
                    why.push_str(&format!("; proposal {id} waits for the operator"));
                }
                if let (true, DenyReason::NoGrant, Some(b)) =
                    (self.options.propose_on_deny, &reason, &bottle)
                {
                    match store.propose_observed(b, &host, port).await {
                        Ok(Some(Proposed::Created(p))) => {
                            why.push_str(&format!("; filed proposal {} for the operator", p.id));
                        }
                        Ok(Some(Proposed::Repeated(p))) if proposal_id.is_none() => {
                            why.push_str(&format!("; proposal {} waits for the operator", p.id));
                        }
                        Ok(Some(Proposed::AutoRejected(p))) => {
                            why.push_str(&format!("; rejected recently as proposal {}", p.id));
                        }
                        Ok(Some(Proposed::Ruled(p))) => {
                            let by = p.decision.as_ref().map_or("", |d| d.decided_by.as_str());
                            why.push_str(&format!("; proposal {} {} by {by}", p.id, p.status));
                        }
                        Ok(_) => {}
                        Err(e) => {
                            why.push_str(&format!("; could not file a proposal: {e}"));
                            self.forget_store_after(&e).await;
                        }
                    }
                }
                Err(why)
            }
        }
    }

    fn use_is_due(&self, grant: &GrantId) -> bool {
        self.used
            .get(grant)
            .is_none_or(|at| at.elapsed() >= USE_EVERY)
    }

    /// The open store, reopened when the path no longer names the file it opened (moved
    /// away, replaced) or when none is open; never created.
    async fn store(&mut self) -> Result<Store, String> {
        if let Some(s) = &self.store {
            if s.still_at_path() {
                return Ok(s.clone());
            }
            s.close().await;
            self.store = None;
        }
        let options = StoreOptions {
            create: false,
            busy_timeout: BUSY_TIMEOUT,
            max_connections: 2,
            host: self.host.clone(),
            ..StoreOptions::default()
        };
        match Store::open(&self.db, options).await {
            Ok(s) => {
                self.store = Some(s.clone());
                Ok(s)
            }
            Err(e) => Err(format!("the supervise database is unavailable: {e}")),
        }
    }

    /// After a failure other than a busy lock, the next lookup starts from a fresh open.
    async fn forget_store_after(&mut self, e: &StoreError) {
        if matches!(e, StoreError::Busy) {
            return;
        }
        if let Some(s) = self.store.take() {
            s.close().await;
        }
    }

    async fn close(self) {
        if let Some(s) = self.store {
            s.close().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_with_and_without_channels() {
        let l = parse_line("127.0.0.2 pypi.org 443\n").unwrap();
        assert_eq!((l.channel, l.host, l.port), (None, "pypi.org", 443));
        let l = parse_line("7 127.0.0.2 pypi.org 443 - extra").unwrap();
        assert_eq!((l.channel, l.port), (Some("7"), 443));
        let l = parse_line("0 ::1 [::1] 80").unwrap();
        assert_eq!(l.src, "::1".parse::<IpAddr>().unwrap());
        assert_eq!(parse_line("3 127.0.0.2 a.test 0").unwrap_err().0, Some("3"));
        assert_eq!(parse_line("127.0.0.2 a.test 65536").unwrap_err().0, None);
        assert!(parse_line("").is_err());
        assert!(parse_line("garbage").is_err());
        assert!(parse_line("1 not-an-ip a.test 443").is_err());
    }

    #[test]
    fn messages_cannot_break_the_reply() {
        assert_eq!(quote("a \"b\" \\ c\nd"), "message=\"a 'b' ' c?d\"");
        assert_eq!(quote(&"x".repeat(1000)).len(), MAX_MESSAGE + 10);
    }
}
