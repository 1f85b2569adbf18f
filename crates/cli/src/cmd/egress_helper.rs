//! What the proxies' line helpers (`squid-acl`, `decide`) share: the loop that reads stdin
//! and answers each line in order ([`serve`]), one lookup answered from the store's one
//! egress decision (remembered by the store while the database is unchanged), the
//! `observed` proposal filed for a refusal, the `grant-used` record, and a store that is
//! opened lazily, never created, and reopened when the file is replaced.
//!
//! A busy, missing or moved database is a refusal with a message (the safe answer), never
//! an exit: the next lookup tries again.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use supervise_store::present::address;
use supervise_store::{
    Bottle, BottleId, BottleRef, DenyReason, EgressDecision, EgressLookups, Grant, GrantId,
    HttpRequest, ProposalId, Proposed, REFUSAL_EVERY, Store, StoreError, StoreOptions,
};

use super::Ctx;

/// A lookup waits this long for another process's lock before answering a refusal: the
/// proxy queues the lookups behind it, so a long wait would stall every client.
const BUSY_TIMEOUT: Duration = Duration::from_millis(500);

/// How often one helper asks the store to record a grant's use (the store itself writes at
/// most one `grant-used` per grant per minute, across every helper process).
const USE_EVERY: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    pub propose_on_deny: bool,
    pub record_use: bool,
    /// The proxy can intercept a connection and ask about each request inside it
    /// (`decide`): a connection only limited grants cover is [`Verdict::Intercept`], not a
    /// refusal.
    pub intercept: bool,
}

/// The answer to one lookup.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Let it through, by this grant.
    Allow(Arc<Grant>),
    /// A connection only grants limited to methods or paths cover: open it, intercept,
    /// and ask again for each request inside.
    Intercept(GrantId),
    /// Refuse it, naming the proposal filed or found for it, if any.
    Refuse {
        proposal: Option<ProposalId>,
        why: String,
    },
}

/// Bytes read from stdin at most at once: the lines that arrived together, answered
/// together and written back in one write (a few hundred lines at most, so the first of
/// them waits well under a millisecond for the last).
const READ_SIZE: usize = 16 * 1024;

/// Runs a line helper (`name`, for messages) until stdin closes: each line is answered by
/// `answer` (which appends its reply to the buffer it is given), in order. The lines read
/// from stdin together (a batch: every complete line one read returned) are answered
/// against one check that the database is where it was and one read of its version
/// ([`Store::egress_lookups`]), and their answers written and flushed together; a proxy
/// that waits for each answer before sending the next line gets batches of one.
///
/// Why that is as fresh as a check per line: every line of a batch had been read from
/// stdin, so had arrived, before the batch's check; an approval or revoke that committed
/// before the proxy wrote a line therefore committed before the check, which sees it.
pub async fn serve(
    name: &'static str,
    ctx: &Ctx,
    options: Options,
    out: &mut dyn Write,
    answer: impl AsyncFn(&mut Helper, &str, &mut String),
) -> anyhow::Result<()> {
    let mut rx = stdin_batches();
    let mut helper = Helper::new(name, ctx.db.clone(), ctx.host.clone(), options);
    let mut replies = String::with_capacity(READ_SIZE);
    while let Some(batch) = rx.recv().await {
        helper.begin_batch();
        for line in batch.split_inclusive(|b| *b == b'\n') {
            answer(&mut helper, &String::from_utf8_lossy(line), &mut replies).await;
            replies.push('\n');
        }
        out.write_all(replies.as_bytes())?;
        out.flush()?;
        replies.clear();
    }
    helper.close().await;
    Ok(())
}

/// Reads stdin on a thread of its own (so the runtime stays free for the store's
/// background work between lookups) and hands over, from each read, the complete lines it
/// holds (with their newlines); a last line without a newline is handed over at the end.
fn stdin_batches() -> tokio::sync::mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(4);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        let mut buf = vec![0u8; READ_SIZE];
        // The bytes read that do not yet end a line.
        let mut pending: Vec<u8> = Vec::new();
        loop {
            let n = match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            pending.extend_from_slice(&buf[..n]);
            if let Some(last) = pending.iter().rposition(|b| *b == b'\n') {
                let rest = pending.split_off(last + 1);
                let batch = std::mem::replace(&mut pending, rest);
                if tx.blocking_send(batch).is_err() {
                    return;
                }
            }
        }
        if !pending.is_empty() {
            let _ = tx.blocking_send(pending);
        }
    });
    rx
}

pub struct Helper {
    /// The command's name, for messages on stderr.
    name: &'static str,
    db: PathBuf,
    /// `--host-id`: whose bottles' addresses this proxy sees.
    host: Option<String>,
    options: Options,
    store: Option<Store>,
    /// The current batch's lookups: one version read for the lines that arrived together
    /// ([`serve`]); `None` until the batch's first lookup, and again after this helper
    /// wrote (so a line after the write reads the version anew, as it would alone).
    lookups: Option<EgressLookups>,
    /// When this helper last asked the store to record each grant's use.
    used: HashMap<GrantId, Instant>,
    /// When this helper last recorded a refusal of each bottle and port, by destination.
    refused: HashMap<(BottleId, u16), HashMap<String, Instant>>,
}

impl Helper {
    pub fn new(name: &'static str, db: PathBuf, host: Option<String>, options: Options) -> Helper {
        Helper {
            name,
            db,
            host,
            options,
            store: None,
            lookups: None,
            used: HashMap::new(),
            refused: HashMap::new(),
        }
    }

    /// A new batch of lines begins: its first lookup checks the file and reads the
    /// database's version again.
    pub fn begin_batch(&mut self) {
        self.lookups = None;
    }

    /// The batch's lookups: the store (reopened if the file moved, [`Helper::store`]) and
    /// its version, read at the batch's first lookup.
    async fn lookups(&mut self) -> Result<EgressLookups, String> {
        if let Some(l) = &self.lookups {
            return Ok(l.clone());
        }
        let store = self.store().await?;
        let l = store.egress_lookups().await;
        self.lookups = Some(l.clone());
        Ok(l)
    }

    /// May the bottle at `src` reach `host:port`, with `request` when the proxy sees it?
    pub async fn decide(
        &mut self,
        src: IpAddr,
        host: &str,
        port: u16,
        request: Option<HttpRequest<'_>>,
    ) -> Verdict {
        let refuse = |why: String| Verdict::Refuse {
            proposal: None,
            why,
        };
        let lookups = match self.lookups().await {
            Ok(l) => l,
            Err(why) => return refuse(why),
        };
        let decision = match lookups
            .decision(BottleRef::Ip(src), host, port, request)
            .await
        {
            Ok(d) => d,
            Err(e) => {
                let why = format!("cannot decide now: {e}");
                self.forget_store_after(&e).await;
                return refuse(why);
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
                    let store = lookups.store();
                    self.wrote();
                    match store.record_grant_use(&bottle, &grant, &host, port).await {
                        Ok(_) => {
                            self.used.insert(grant.id.clone(), Instant::now());
                        }
                        // The grant is in force whether or not its use could be written;
                        // the next lookup tries again.
                        Err(e) => eprintln!("supervise {}: grant use not recorded: {e}", self.name),
                    }
                }
                Verdict::Allow(grant)
            }
            EgressDecision::Denied {
                reason: DenyReason::RequestUnseen(grant),
                ..
            } if self.options.intercept => Verdict::Intercept(grant),
            EgressDecision::Denied {
                bottle,
                host,
                port,
                reason,
                mut proposal_id,
            } => {
                let dest = address(&host, port);
                let what = match request {
                    Some(r) => format!("{} {} on {dest}", r.method, r.path),
                    None => dest.clone(),
                };
                let mut why = match (&reason, &bottle) {
                    (DenyReason::UnknownBottle, _) => {
                        format!("no bottle is registered at {src}")
                    }
                    (_, Some(b)) => format!("bottle {} may not reach {what}: {reason}", b.slug),
                    (_, None) => format!("{what}: {reason}"),
                };
                let file = matches!(reason, DenyReason::NoGrant | DenyReason::OutsideLimits);
                let store = lookups.store();
                if let (true, Some(b)) = (file, &bottle) {
                    self.record_refusal(store, b, &host, port).await;
                }
                let mut filed = false;
                if let (true, true, Some(b)) = (self.options.propose_on_deny, file, &bottle) {
                    self.wrote();
                    match store.propose_observed(b, &host, port).await {
                        Ok(Some(Proposed::Created(p))) => {
                            filed = true;
                            proposal_id = Some(p.id);
                        }
                        Ok(Some(Proposed::Repeated(p))) => {
                            proposal_id = Some(p.id);
                        }
                        Ok(Some(Proposed::AutoRejected(p))) => {
                            why.push_str(&format!("; rejected recently as proposal {}", p.id));
                            proposal_id = Some(p.id);
                        }
                        Ok(Some(Proposed::Ruled(p))) => {
                            let by = p.decision.as_ref().map_or("", |d| d.decided_by.as_str());
                            why.push_str(&format!("; proposal {} {} by {by}", p.id, p.status));
                            proposal_id = Some(p.id);
                        }
                        Ok(_) => {}
                        Err(e) => {
                            why.push_str(&format!("; could not file a proposal: {e}"));
                            self.forget_store_after(&e).await;
                        }
                    }
                }
                // The proposal comes first: a proxy may cut a long message short.
                if let Some(id) = &proposal_id {
                    let state = if filed {
                        format!("filed proposal {id} for the operator")
                    } else {
                        format!("proposal {id} waits for the operator")
                    };
                    why = format!("{state}: poll check-proposal with proposal_id {id}. {why}");
                }
                Verdict::Refuse {
                    proposal: proposal_id,
                    why,
                }
            }
        }
    }

    /// Records the refusal for the operator's view of the proposal (at most once a minute
    /// per bottle and destination, here and in the store). A refusal not written stays a
    /// refusal.
    async fn record_refusal(&mut self, store: &Store, bottle: &Bottle, host: &str, port: u16) {
        let key = (bottle.id, port);
        if self
            .refused
            .get(&key)
            .and_then(|hosts| hosts.get(host))
            .is_some_and(|at| at.elapsed() < REFUSAL_EVERY)
        {
            return;
        }
        self.wrote();
        match store.record_refusal(bottle, host, port).await {
            Ok(_) => {
                self.refused
                    .entry(key)
                    .or_default()
                    .insert(host.to_string(), Instant::now());
            }
            Err(e) => eprintln!("supervise {}: refusal not recorded: {e}", self.name),
        }
    }

    /// This helper is about to write (a commit it knows of): the next lookup reads the
    /// version again rather than answer from before the write.
    fn wrote(&mut self) {
        self.lookups = None;
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
            server_limits: true,
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
        self.lookups = None;
        if matches!(e, StoreError::Busy) {
            return;
        }
        if let Some(s) = self.store.take() {
            s.close().await;
        }
    }

    pub async fn close(self) {
        if let Some(s) = self.store {
            s.close().await;
        }
    }
}
