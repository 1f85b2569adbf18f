//! The [`Store`]: opening and migrating the database file, and every state change as one
//! transaction. Writes begin with `BEGIN IMMEDIATE`, so the write lock is held from the first
//! read, and a second process (the CLI) can never interleave between a check and its update.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use sqlx::{Connection, FromRow, Sqlite, Transaction};
use tokio::sync::{Mutex, MutexGuard};
use tracing::instrument;

use crate::change::{self, Kind};
use crate::clock;
use crate::error::{StoreError, StoreResult};
use crate::model::{
    Bottle, Decision, Delivery, Event, Grant, NewProposal, Proposal, Proposed, Registered, Status,
    StatusFilter, Swept, Verdict,
};

static MIGRATOR: Migrator = sqlx::migrate!("../../migrations");

/// Limits that shape what `propose` accepts. The server sets them from its flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// How long an undecided proposal lives (`None`: forever).
    pub proposal_ttl: Option<Duration>,
    /// An identical change rejected this recently is answered `rejected` at once.
    pub reject_cooldown: Option<Duration>,
    /// Undecided proposals one bottle may have (`None`: no cap).
    pub max_pending_per_bottle: Option<u32>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            proposal_ttl: Some(Duration::from_secs(24 * 3600)),
            reject_cooldown: Some(Duration::from_secs(600)),
            max_pending_per_bottle: Some(64),
        }
    }
}

/// How to open the database.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Create (and migrate) the file when missing. Read commands leave this off.
    pub create: bool,
    /// `synchronous=FULL` (true, the default) or `NORMAL` (a crash may lose the last
    /// commits, never corrupt).
    pub durable: bool,
    /// How long a write waits for another process's write lock before `Busy`.
    pub busy_timeout: Duration,
    /// Connections in the pool (readers run in parallel; writers are serialised).
    pub max_connections: u32,
    pub policy: Policy,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            create: true,
            durable: true,
            busy_timeout: Duration::from_secs(5),
            max_connections: 8,
            policy: Policy::default(),
        }
    }
}

/// The supervise database. Cheap to clone; clones share one pool.
#[derive(Clone, Debug)]
pub struct Store {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    pool: SqlitePool,
    /// Serialises this process's writers, so they queue here in order instead of spinning
    /// in SQLite's busy handler; other processes are kept out by `BEGIN IMMEDIATE`.
    writer: Mutex<()>,
    policy: Policy,
    path: PathBuf,
}

/// A write transaction: this process's writer slot plus `BEGIN IMMEDIATE`.
struct WriteTx<'a> {
    tx: Transaction<'static, Sqlite>,
    _slot: MutexGuard<'a, ()>,
}

impl WriteTx<'_> {
    fn conn(&mut self) -> &mut SqliteConnection {
        &mut self.tx
    }

    async fn commit(self) -> StoreResult<()> {
        self.tx.commit().await?;
        Ok(())
    }
}

const PROPOSAL_COLUMNS: &str = "SELECT p.id, p.bottle_id, b.slug, p.kind, p.change, \
    p.justification, p.status, p.flags, p.hits, p.created_at, p.expires_at, p.decided_at, \
    p.decided_by, p.decision_note, p.decision_change, p.archived_at, g.id AS grant_id \
    FROM proposals p JOIN bottles b ON b.id = p.bottle_id \
    LEFT JOIN grants g ON g.proposal_id = p.id";

const EVENT_COLUMNS: &str = "SELECT e.seq, e.at, e.event, e.actor, b.slug, e.bottle_id, \
    e.proposal_id, e.grant_id, e.kind, e.change, e.note \
    FROM events e LEFT JOIN bottles b ON b.id = e.bottle_id";

const GRANT_COLUMNS: &str = "SELECT g.id, b.slug, g.proposal_id, g.kind, g.change, \
    g.granted_by, g.created_at, g.expires_at, g.ended_at, g.end_reason \
    FROM grants g JOIN bottles b ON b.id = g.bottle_id";

#[derive(FromRow)]
struct ProposalRow {
    id: String,
    bottle_id: i64,
    slug: String,
    kind: String,
    change: String,
    justification: String,
    status: String,
    flags: String,
    hits: i64,
    created_at: String,
    expires_at: Option<String>,
    decided_at: Option<String>,
    decided_by: Option<String>,
    decision_note: Option<String>,
    decision_change: Option<String>,
    archived_at: Option<String>,
    grant_id: Option<String>,
}

impl ProposalRow {
    fn into_proposal(self, now: &str) -> Proposal {
        let kind = Kind::parse(&self.kind).unwrap_or(Kind::Egress);
        let mut status = Status::parse(&self.status);
        if status == Status::Pending && self.expires_at.as_deref().is_some_and(|e| e <= now) {
            status = Status::Expired;
        }
        let change: Value = serde_json::from_str(&self.change).unwrap_or(Value::Null);
        let decision_change: Option<Value> = self
            .decision_change
            .as_deref()
            .and_then(|c| serde_json::from_str(c).ok());
        let mut flags: Vec<String> = serde_json::from_str(&self.flags).unwrap_or_default();
        if status == Status::Modified
            && let Some(modified) = &decision_change
        {
            for f in change::modified_flags(kind, &change, modified) {
                if !flags.iter().any(|x| x == f) {
                    flags.push(f.to_string());
                }
            }
        }
        let decision = match (self.decided_at, self.decided_by) {
            (Some(decided_at), Some(decided_by)) => Some(Decision {
                change: decision_change,
                note: self.decision_note,
                decided_by,
                decided_at,
                grant_id: self.grant_id,
            }),
            _ => None,
        };
        Proposal {
            id: self.id,
            bottle: self.slug,
            bottle_id: self.bottle_id,
            kind,
            change,
            justification: self.justification,
            status,
            flags,
            hits: self.hits,
            created_at: self.created_at,
            expires_at: self.expires_at,
            decision,
            archived_at: self.archived_at,
        }
    }
}

#[derive(FromRow)]
struct EventRow {
    seq: i64,
    at: String,
    event: String,
    actor: String,
    slug: Option<String>,
    bottle_id: Option<i64>,
    proposal_id: Option<String>,
    grant_id: Option<String>,
    kind: Option<String>,
    change: Option<String>,
    note: Option<String>,
}

impl From<EventRow> for Event {
    fn from(r: EventRow) -> Event {
        Event {
            seq: r.seq,
            at: r.at,
            event: r.event,
            actor: r.actor,
            bottle: r.slug,
            bottle_id: r.bottle_id,
            proposal_id: r.proposal_id,
            grant_id: r.grant_id,
            kind: r.kind,
            change: r.change.and_then(|c| serde_json::from_str(&c).ok()),
            note: r.note,
        }
    }
}

#[derive(FromRow)]
struct GrantRow {
    id: String,
    slug: String,
    proposal_id: String,
    kind: String,
    change: String,
    granted_by: String,
    created_at: String,
    expires_at: Option<String>,
    ended_at: Option<String>,
    end_reason: Option<String>,
}

impl From<GrantRow> for Grant {
    fn from(r: GrantRow) -> Grant {
        Grant {
            id: r.id,
            bottle: r.slug,
            proposal_id: r.proposal_id,
            kind: Kind::parse(&r.kind).unwrap_or(Kind::Egress),
            change: serde_json::from_str(&r.change).unwrap_or(Value::Null),
            granted_by: r.granted_by,
            created_at: r.created_at,
            expires_at: r.expires_at,
            ended_at: r.ended_at,
            end_reason: r.end_reason,
        }
    }
}

#[derive(FromRow)]
struct BottleRow {
    id: i64,
    slug: String,
    ip: String,
    created_at: String,
}

impl BottleRow {
    fn into_bottle(self) -> Bottle {
        Bottle {
            id: self.id,
            slug: self.slug,
            ip: self
                .ip
                .parse()
                .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)),
            created_at: self.created_at,
        }
    }
}

/// One audit event to append.
#[derive(Default)]
struct NewEvent<'a> {
    event: &'a str,
    actor: &'a str,
    bottle_id: Option<i64>,
    proposal_id: Option<&'a str>,
    grant_id: Option<&'a str>,
    kind: Option<&'a str>,
    change: Option<&'a str>,
    note: Option<&'a str>,
}

async fn record(conn: &mut SqliteConnection, at: &str, ev: NewEvent<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO events (at, event, actor, bottle_id, proposal_id, grant_id, kind, change, note) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(at)
    .bind(ev.event)
    .bind(ev.actor)
    .bind(ev.bottle_id)
    .bind(ev.proposal_id)
    .bind(ev.grant_id)
    .bind(ev.kind)
    .bind(ev.change)
    .bind(ev.note)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

async fn load_proposal(
    conn: &mut SqliteConnection,
    id: &str,
    now: &str,
) -> sqlx::Result<Option<Proposal>> {
    let row: Option<ProposalRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{PROPOSAL_COLUMNS} WHERE p.id = ?"
    )))
    .bind(id)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(|r| r.into_proposal(now)))
}

/// Checks a bottle slug: `[a-z0-9][a-z0-9-]{0,62}`.
pub(crate) fn validate_slug(slug: &str) -> StoreResult<()> {
    let ok = !slug.is_empty()
        && slug.len() <= 63
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !slug.starts_with('-');
    if ok {
        Ok(())
    } else {
        Err(StoreError::Invalid {
            field: "slug".into(),
            message: format!(
                "{slug:?} must be 1-63 characters of a-z, 0-9 and '-', not starting with '-'"
            ),
        })
    }
}

fn actor_bottle(slug: &str) -> String {
    format!("bottle:{slug}")
}

fn actor_operator(name: &str) -> String {
    format!("operator:{name}")
}

/// A proposal checked before the write lock is taken.
struct Prepared {
    bottle_id: i64,
    kind: Kind,
    change: Value,
    key: String,
    justification: String,
}

fn prepare(item: NewProposal) -> StoreResult<Prepared> {
    let change = change::normalise(item.kind, &item.change)?;
    let justification = change::validate_justification(&item.justification)?;
    Ok(Prepared {
        bottle_id: item.bottle_id,
        kind: item.kind,
        key: change::change_key(&change),
        change,
        justification,
    })
}

impl Store {
    /// Opens (and, with `options.create`, creates) the database at `path`, checks that it is
    /// a supervise database no newer than this build, and migrates it.
    #[instrument(skip_all, fields(path = %path.as_ref().display()), err)]
    pub async fn open(path: impl AsRef<Path>, options: StoreOptions) -> StoreResult<Store> {
        let path = path.as_ref().to_path_buf();
        let exists = path.exists();
        if !exists && !options.create {
            return Err(StoreError::Missing(path));
        }
        if exists {
            probe(&path).await?;
        } else {
            create_private(&path)?;
        }
        let connect = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(options.create)
            .journal_mode(SqliteJournalMode::Wal)
            .foreign_keys(true)
            .busy_timeout(options.busy_timeout)
            .synchronous(if options.durable {
                SqliteSynchronous::Full
            } else {
                SqliteSynchronous::Normal
            });
        let pool = SqlitePoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .min_connections(1)
            .acquire_timeout(options.busy_timeout + Duration::from_secs(5))
            .connect_with(connect)
            .await?;
        if let Err(first) = MIGRATOR.run(&pool).await {
            // Another process may have been migrating the same file at the same moment
            // (SQLite's migrator takes no lock): accept its work if the schema is now current.
            let applied: Option<i64> =
                sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success")
                    .fetch_one(&pool)
                    .await
                    .unwrap_or(None);
            if applied != Some(known_version()) {
                return Err(first.into());
            }
        }
        Ok(Store {
            inner: Arc::new(Inner {
                pool,
                writer: Mutex::new(()),
                policy: options.policy,
                path,
            }),
        })
    }

    /// The file this store was opened on.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The limits `propose` applies.
    pub fn policy(&self) -> Policy {
        self.inner.policy
    }

    /// Closes the pool, checkpointing the WAL.
    pub async fn close(&self) {
        self.inner.pool.close().await;
    }

    async fn write(&self) -> StoreResult<WriteTx<'_>> {
        let slot = self.inner.writer.lock().await;
        let tx = self.inner.pool.begin_with("BEGIN IMMEDIATE").await?;
        Ok(WriteTx { tx, _slot: slot })
    }

    /// Answers when the database does: for `/healthz`.
    pub async fn health(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1").execute(&self.inner.pool).await?;
        Ok(())
    }

    // ----- bottles -------------------------------------------------------------------------

    /// Adds a bottle. Refused when the slug or the address is already live.
    #[instrument(skip(self), err)]
    pub async fn add_bottle(&self, slug: &str, ip: IpAddr, operator: &str) -> StoreResult<Bottle> {
        validate_slug(slug)?;
        let mut w = self.write().await?;
        let now = clock::now();
        if live_bottle_by_slug(w.conn(), slug).await?.is_some() {
            return Err(StoreError::BottleExists(slug.into()));
        }
        if let Some(other) = live_bottle_by_ip(w.conn(), ip).await? {
            return Err(StoreError::IpTaken {
                ip: ip.to_string(),
                slug: other.slug,
            });
        }
        let bottle = insert_bottle(w.conn(), slug, ip, &now, &actor_operator(operator)).await?;
        w.commit().await?;
        tracing::info!(bottle = slug, %ip, "bottle added");
        Ok(bottle)
    }

    /// Registers a bottle at server start: adds it, or moves an existing slug to `ip`.
    /// Refused when `ip` belongs to another live bottle.
    #[instrument(skip(self), err)]
    pub async fn register_bottle(
        &self,
        slug: &str,
        ip: IpAddr,
    ) -> StoreResult<(Bottle, Registered)> {
        validate_slug(slug)?;
        let mut w = self.write().await?;
        let now = clock::now();
        if let Some(other) = live_bottle_by_ip(w.conn(), ip).await?
            && other.slug != slug
        {
            return Err(StoreError::IpTaken {
                ip: ip.to_string(),
                slug: other.slug,
            });
        }
        let result = match live_bottle_by_slug(w.conn(), slug).await? {
            Some(b) if b.ip == ip => (b, Registered::Unchanged),
            Some(mut b) => {
                sqlx::query("UPDATE bottles SET ip = ? WHERE id = ?")
                    .bind(ip.to_string())
                    .bind(b.id)
                    .execute(w.conn())
                    .await?;
                let note = format!("{} -> {ip}", b.ip);
                record(
                    w.conn(),
                    &now,
                    NewEvent {
                        event: "bottle-updated",
                        actor: "system",
                        bottle_id: Some(b.id),
                        note: Some(&note),
                        ..Default::default()
                    },
                )
                .await?;
                b.ip = ip;
                (b, Registered::Updated)
            }
            None => (
                insert_bottle(w.conn(), slug, ip, &now, "system").await?,
                Registered::Added,
            ),
        };
        w.commit().await?;
        Ok(result)
    }

    /// Removes a bottle: withdraws its undecided proposals and ends its grants. The slug and
    /// address are free again; a bottle added later under either is a new bottle.
    #[instrument(skip(self), err)]
    pub async fn remove_bottle(&self, slug: &str, operator: &str) -> StoreResult<Bottle> {
        let mut w = self.write().await?;
        let now = clock::now();
        let actor = actor_operator(operator);
        let bottle = live_bottle_by_slug(w.conn(), slug)
            .await?
            .ok_or_else(|| StoreError::BottleNotFound(slug.into()))?;
        sqlx::query("UPDATE bottles SET removed_at = ? WHERE id = ?")
            .bind(&now)
            .bind(bottle.id)
            .execute(w.conn())
            .await?;
        let withdrawn: Vec<(String, String, String)> = sqlx::query_as(
            "UPDATE proposals SET status = 'withdrawn', archived_at = ? \
             WHERE bottle_id = ? AND status = 'pending' RETURNING id, kind, change",
        )
        .bind(&now)
        .bind(bottle.id)
        .fetch_all(w.conn())
        .await?;
        for (id, kind, change) in &withdrawn {
            record(
                w.conn(),
                &now,
                NewEvent {
                    event: "withdrawn",
                    actor: &actor,
                    bottle_id: Some(bottle.id),
                    proposal_id: Some(id),
                    kind: Some(kind),
                    change: Some(change),
                    note: Some("bottle removed"),
                    ..Default::default()
                },
            )
            .await?;
        }
        let ended: Vec<(String, String, String, String)> = sqlx::query_as(
            "UPDATE grants SET ended_at = ?, end_reason = 'bottle-removed', ended_by = ? \
             WHERE bottle_id = ? AND ended_at IS NULL RETURNING id, proposal_id, kind, change",
        )
        .bind(&now)
        .bind(&actor)
        .bind(bottle.id)
        .fetch_all(w.conn())
        .await?;
        for (id, proposal_id, kind, change) in &ended {
            record(
                w.conn(),
                &now,
                NewEvent {
                    event: "grant-revoked",
                    actor: &actor,
                    bottle_id: Some(bottle.id),
                    proposal_id: Some(proposal_id),
                    grant_id: Some(id),
                    kind: Some(kind),
                    change: Some(change),
                    note: Some("bottle removed"),
                },
            )
            .await?;
        }
        let note = bottle.ip.to_string();
        record(
            w.conn(),
            &now,
            NewEvent {
                event: "bottle-removed",
                actor: &actor,
                bottle_id: Some(bottle.id),
                note: Some(&note),
                ..Default::default()
            },
        )
        .await?;
        w.commit().await?;
        tracing::info!(
            bottle = slug,
            withdrawn = withdrawn.len(),
            grants_ended = ended.len(),
            "bottle removed"
        );
        Ok(bottle)
    }

    /// Live bottles, by slug.
    pub async fn list_bottles(&self) -> StoreResult<Vec<Bottle>> {
        let rows: Vec<BottleRow> = sqlx::query_as(
            "SELECT id, slug, ip, created_at FROM bottles WHERE removed_at IS NULL ORDER BY slug",
        )
        .fetch_all(&self.inner.pool)
        .await?;
        Ok(rows.into_iter().map(BottleRow::into_bottle).collect())
    }

    /// The live bottle registered for a source address, if any.
    pub async fn bottle_for_ip(&self, ip: IpAddr) -> StoreResult<Option<Bottle>> {
        let mut conn = self.inner.pool.acquire().await?;
        Ok(live_bottle_by_ip(&mut conn, ip).await?)
    }

    /// The live bottle with this slug, if any.
    pub async fn bottle(&self, slug: &str) -> StoreResult<Option<Bottle>> {
        let mut conn = self.inner.pool.acquire().await?;
        Ok(live_bottle_by_slug(&mut conn, slug).await?)
    }

    // ----- proposals -----------------------------------------------------------------------

    /// Files one proposal. See [`Store::propose_many`].
    pub async fn propose(&self, item: NewProposal) -> StoreResult<Proposed> {
        self.propose_many(vec![item])
            .await?
            .pop()
            .expect("one result per item")
    }

    /// Files several proposals in one transaction (group commit): every caller's proposal is
    /// durable when this returns. Each item gets its own result; an invalid item does not
    /// spoil the others. The outer error means nothing at all was written.
    #[instrument(skip_all, fields(items = items.len()), err)]
    pub async fn propose_many(
        &self,
        items: Vec<NewProposal>,
    ) -> StoreResult<Vec<StoreResult<Proposed>>> {
        let prepared: Vec<StoreResult<Prepared>> = items.into_iter().map(prepare).collect();
        if prepared.iter().all(Result::is_err) {
            return Ok(prepared
                .into_iter()
                .map(|p| p.map(|_| unreachable!()))
                .collect());
        }
        let mut w = self.write().await?;
        let now = clock::now();
        let mut out = Vec::with_capacity(prepared.len());
        for item in prepared {
            out.push(match item {
                Err(e) => Err(e),
                Ok(p) => propose_in(w.conn(), &self.inner.policy, p, &now).await?,
            });
        }
        w.commit().await?;
        for r in out.iter().flatten() {
            let p = r.proposal();
            match r {
                Proposed::Created(_) => {
                    tracing::info!(bottle = %p.bottle, proposal = %p.id, kind = %p.kind, change = %p.change, "proposal filed")
                }
                Proposed::Repeated(_) => {
                    tracing::info!(bottle = %p.bottle, proposal = %p.id, hits = p.hits, "proposal repeated")
                }
                Proposed::AutoRejected(_) => {
                    tracing::info!(bottle = %p.bottle, proposal = %p.id, "proposal auto-rejected (cooldown)")
                }
            }
        }
        Ok(out)
    }

    /// Decides a pending proposal (id or unique id prefix). Approve and modify also record a
    /// grant, lasting `grant_for` or until revoked. Anything but a pending proposal is
    /// refused and nothing changes.
    #[instrument(skip(self, verdict), fields(verdict = verdict_name(&verdict)), err)]
    pub async fn decide(
        &self,
        id: &str,
        verdict: Verdict,
        operator: &str,
        note: Option<&str>,
        grant_for: Option<Duration>,
    ) -> StoreResult<Proposal> {
        let note = note.map(str::trim).filter(|n| !n.is_empty());
        let mut w = self.write().await?;
        let now = clock::now();
        let id = resolve_id(w.conn(), id).await?;
        let p = load_proposal(w.conn(), &id, &now)
            .await?
            .ok_or_else(|| StoreError::ProposalNotFound(id.clone()))?;
        if p.status != Status::Pending {
            return Err(StoreError::NotPending {
                id,
                status: p.status,
                decided_by: p.decision.as_ref().map(|d| d.decided_by.clone()),
                decided_at: p.decision.as_ref().map(|d| d.decided_at.clone()),
            });
        }
        let (status, granted) = match &verdict {
            Verdict::Approve => (Status::Approved, Some(p.change.clone())),
            Verdict::Modify(patch) => {
                let merged = change::merge(&p.change, patch);
                (Status::Modified, Some(change::normalise(p.kind, &merged)?))
            }
            Verdict::Reject => (Status::Rejected, None),
        };
        let granted_text = granted.as_ref().map(Value::to_string);
        let actor = actor_operator(operator);
        let updated = sqlx::query(
            "UPDATE proposals SET status = ?, decided_at = ?, decided_by = ?, decision_note = ?, \
             decision_change = ? WHERE id = ? AND status = 'pending'",
        )
        .bind(status.as_str())
        .bind(&now)
        .bind(operator)
        .bind(note)
        .bind(granted_text.as_deref())
        .bind(&id)
        .execute(w.conn())
        .await?;
        debug_assert_eq!(updated.rows_affected(), 1);
        let grant_id = match &granted_text {
            Some(change) => {
                let grant_id = uuid::Uuid::now_v7().to_string();
                sqlx::query(
                    "INSERT INTO grants (id, bottle_id, proposal_id, kind, change, granted_by, \
                     created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                )
                .bind(&grant_id)
                .bind(p.bottle_id)
                .bind(&id)
                .bind(p.kind.as_str())
                .bind(change)
                .bind(operator)
                .bind(&now)
                .bind(grant_for.map(clock::after))
                .execute(w.conn())
                .await?;
                Some(grant_id)
            }
            None => None,
        };
        record(
            w.conn(),
            &now,
            NewEvent {
                event: status.as_str(),
                actor: &actor,
                bottle_id: Some(p.bottle_id),
                proposal_id: Some(&id),
                grant_id: grant_id.as_deref(),
                kind: Some(p.kind.as_str()),
                change: granted_text.as_deref(),
                note,
            },
        )
        .await?;
        let decided = load_proposal(w.conn(), &id, &now)
            .await?
            .ok_or_else(|| StoreError::ProposalNotFound(id.clone()))?;
        w.commit().await?;
        tracing::info!(bottle = %decided.bottle, proposal = %id, status = %status, operator, "proposal decided");
        Ok(decided)
    }

    /// The agent's poll: a decision is returned and the proposal archived in one
    /// transaction, so of any number of concurrent polls exactly one gets it. An undecided
    /// proposal is returned as pending without taking the write lock.
    #[instrument(skip(self), err)]
    pub async fn take_decision(&self, bottle_id: i64, id: &str) -> StoreResult<Delivery> {
        let now = clock::now();
        let peek = {
            let mut conn = self.inner.pool.acquire().await?;
            open_proposal_of(&mut conn, bottle_id, id, &now).await?
        };
        match peek {
            None => return Ok(Delivery::Unknown),
            Some(p) if p.status == Status::Pending => return Ok(Delivery::Pending(p)),
            Some(_) => {}
        }
        let mut w = self.write().await?;
        let now = clock::now();
        let d = deliver_in(w.conn(), bottle_id, id, &now).await?;
        w.commit().await?;
        log_delivery(&d);
        Ok(d)
    }

    /// [`Store::take_decision`] for many proposals in one write transaction: the server's
    /// watcher delivers every decision a feed read names at once, so a burst of decisions
    /// costs one commit instead of one each. Results are in the order asked.
    #[instrument(skip_all, fields(items = items.len()), err)]
    pub async fn take_decisions(&self, items: &[(i64, String)]) -> StoreResult<Vec<Delivery>> {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let mut w = self.write().await?;
        let now = clock::now();
        let mut out = Vec::with_capacity(items.len());
        for (bottle_id, id) in items {
            out.push(deliver_in(w.conn(), *bottle_id, id, &now).await?);
        }
        w.commit().await?;
        out.iter().for_each(log_delivery);
        Ok(out)
    }

    /// The agent withdraws its own undecided proposal; it is archived at once.
    #[instrument(skip(self), err)]
    pub async fn withdraw(&self, bottle_id: i64, id: &str) -> StoreResult<Proposal> {
        let mut w = self.write().await?;
        let now = clock::now();
        let mut p = open_proposal_of(w.conn(), bottle_id, id, &now)
            .await?
            .ok_or_else(|| StoreError::ProposalNotFound(id.into()))?;
        if p.status != Status::Pending {
            return Err(StoreError::NotPending {
                id: id.into(),
                status: p.status,
                decided_by: p.decision.as_ref().map(|d| d.decided_by.clone()),
                decided_at: p.decision.as_ref().map(|d| d.decided_at.clone()),
            });
        }
        sqlx::query(
            "UPDATE proposals SET status = 'withdrawn', archived_at = ? WHERE id = ? AND status = 'pending'",
        )
        .bind(&now)
        .bind(id)
        .execute(w.conn())
        .await?;
        let change_text = p.change.to_string();
        record(
            w.conn(),
            &now,
            NewEvent {
                event: "withdrawn",
                actor: &actor_bottle(&p.bottle),
                bottle_id: Some(bottle_id),
                proposal_id: Some(id),
                kind: Some(p.kind.as_str()),
                change: Some(&change_text),
                ..Default::default()
            },
        )
        .await?;
        w.commit().await?;
        p.status = Status::Withdrawn;
        p.archived_at = Some(now);
        tracing::info!(bottle = %p.bottle, proposal = %id, "proposal withdrawn");
        Ok(p)
    }

    /// A bottle's proposals not yet archived (what the agent can still poll), oldest first.
    pub async fn open_proposals(&self, bottle_id: i64) -> StoreResult<Vec<Proposal>> {
        let now = clock::now();
        let rows: Vec<ProposalRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{PROPOSAL_COLUMNS} WHERE p.bottle_id = ? AND p.archived_at IS NULL ORDER BY p.created_at, p.id"
        )))
        .bind(bottle_id)
        .fetch_all(&self.inner.pool)
        .await?;
        Ok(rows.into_iter().map(|r| r.into_proposal(&now)).collect())
    }

    /// The operator's list: proposals matching the filter, oldest first. `bottle` matches
    /// every generation of the slug.
    pub async fn list(
        &self,
        bottle: Option<&str>,
        status: StatusFilter,
    ) -> StoreResult<Vec<Proposal>> {
        let now = clock::now();
        if let Some(slug) = bottle {
            self.known_slug(slug).await?;
        }
        let mut conn = self.inner.pool.acquire().await?;
        let cond = match status {
            StatusFilter::Pending => {
                "p.status = 'pending' AND p.archived_at IS NULL AND (p.expires_at IS NULL OR p.expires_at > ?1)"
            }
            StatusFilter::Decided => {
                "p.status IN ('approved', 'modified', 'rejected') AND p.archived_at IS NULL AND ?1 = ?1"
            }
            StatusFilter::Archived => "p.archived_at IS NOT NULL AND ?1 = ?1",
            StatusFilter::Expired => {
                "(p.status = 'expired' OR (p.status = 'pending' AND p.expires_at <= ?1))"
            }
            StatusFilter::All => "?1 = ?1",
        };
        let sql = format!(
            "{PROPOSAL_COLUMNS} WHERE {cond} AND (?2 IS NULL OR b.slug = ?2) ORDER BY p.created_at, p.id"
        );
        let rows: Vec<ProposalRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(&now)
            .bind(bottle)
            .fetch_all(&mut *conn)
            .await?;
        Ok(rows.into_iter().map(|r| r.into_proposal(&now)).collect())
    }

    /// Refuses a slug that no bottle, live or removed, ever had.
    async fn known_slug(&self, slug: &str) -> StoreResult<()> {
        let known: Option<i64> =
            sqlx::query_scalar("SELECT id FROM bottles WHERE slug = ? LIMIT 1")
                .bind(slug)
                .fetch_optional(&self.inner.pool)
                .await?;
        match known {
            Some(_) => Ok(()),
            None => Err(StoreError::BottleNotFound(slug.into())),
        }
    }

    /// For each id, the length of its shortest prefix that no other proposal shares (at
    /// least `min`), like git's abbreviated hashes. Two primary-key lookups per id (its
    /// neighbours in id order), so the cost does not grow with the table.
    pub async fn unique_prefix_lens(&self, ids: &[String], min: usize) -> StoreResult<Vec<usize>> {
        let mut conn = self.inner.pool.acquire().await?;
        let mut out = Vec::with_capacity(ids.len());
        let common =
            |a: &str, b: &str| a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        for id in ids {
            let prev: Option<String> =
                sqlx::query_scalar("SELECT MAX(id) FROM proposals WHERE id < ?")
                    .bind(id)
                    .fetch_one(&mut *conn)
                    .await?;
            let next: Option<String> =
                sqlx::query_scalar("SELECT MIN(id) FROM proposals WHERE id > ?")
                    .bind(id)
                    .fetch_one(&mut *conn)
                    .await?;
            let shared = prev
                .as_deref()
                .map_or(0, |p| common(id, p))
                .max(next.as_deref().map_or(0, |n| common(id, n)));
            out.push((shared + 1).max(min).min(id.len()));
        }
        Ok(out)
    }

    /// One proposal (id or unique id prefix) with its event history.
    pub async fn show(&self, id: &str) -> StoreResult<(Proposal, Vec<Event>)> {
        let now = clock::now();
        let mut conn = self.inner.pool.acquire().await?;
        let id = resolve_id(&mut conn, id).await?;
        let p = load_proposal(&mut conn, &id, &now)
            .await?
            .ok_or_else(|| StoreError::ProposalNotFound(id.clone()))?;
        let rows: Vec<EventRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{EVENT_COLUMNS} WHERE e.proposal_id = ? ORDER BY e.seq"
        )))
        .bind(&id)
        .fetch_all(&mut *conn)
        .await?;
        Ok((p, rows.into_iter().map(Event::from).collect()))
    }

    /// The grants in force for a live bottle, oldest first.
    pub async fn policy_of(&self, slug: &str) -> StoreResult<Vec<Grant>> {
        let now = clock::now();
        let mut conn = self.inner.pool.acquire().await?;
        let bottle = live_bottle_by_slug(&mut conn, slug)
            .await?
            .ok_or_else(|| StoreError::BottleNotFound(slug.into()))?;
        let rows: Vec<GrantRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{GRANT_COLUMNS} WHERE g.bottle_id = ? AND g.ended_at IS NULL \
             AND (g.expires_at IS NULL OR g.expires_at > ?) ORDER BY g.created_at"
        )))
        .bind(bottle.id)
        .bind(&now)
        .fetch_all(&mut *conn)
        .await?;
        Ok(rows.into_iter().map(Grant::from).collect())
    }

    /// Ends a grant now.
    #[instrument(skip(self), err)]
    pub async fn revoke(&self, grant_id: &str, operator: &str) -> StoreResult<Grant> {
        let mut w = self.write().await?;
        let now = clock::now();
        let g: Option<GrantRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{GRANT_COLUMNS} WHERE g.id = ?"
        )))
        .bind(grant_id)
        .fetch_optional(w.conn())
        .await?;
        let g = g.ok_or_else(|| StoreError::GrantNotFound(grant_id.into()))?;
        if let (Some(at), Some(reason)) = (&g.ended_at, &g.end_reason) {
            return Err(StoreError::GrantEnded {
                id: grant_id.into(),
                reason: reason.clone(),
                at: at.clone(),
            });
        }
        if let Some(exp) = g.expires_at.as_deref().filter(|e| *e <= now.as_str()) {
            return Err(StoreError::GrantEnded {
                id: grant_id.into(),
                reason: "expired".into(),
                at: exp.into(),
            });
        }
        let actor = actor_operator(operator);
        let bottle_id: i64 = sqlx::query_scalar(
            "UPDATE grants SET ended_at = ?, end_reason = 'revoked', ended_by = ? WHERE id = ? \
             RETURNING bottle_id",
        )
        .bind(&now)
        .bind(&actor)
        .bind(grant_id)
        .fetch_one(w.conn())
        .await?;
        record(
            w.conn(),
            &now,
            NewEvent {
                event: "grant-revoked",
                actor: &actor,
                bottle_id: Some(bottle_id),
                proposal_id: Some(&g.proposal_id),
                grant_id: Some(grant_id),
                kind: Some(&g.kind),
                change: Some(&g.change),
                ..Default::default()
            },
        )
        .await?;
        w.commit().await?;
        let mut grant = Grant::from(g);
        grant.ended_at = Some(now);
        grant.end_reason = Some("revoked".into());
        tracing::info!(bottle = %grant.bottle, grant = grant_id, operator, "grant revoked");
        Ok(grant)
    }

    /// The audit trail, oldest first: every event, or one bottle slug's (all generations).
    pub async fn audit(&self, bottle: Option<&str>) -> StoreResult<Vec<Event>> {
        if let Some(slug) = bottle {
            self.known_slug(slug).await?;
        }
        let rows: Vec<EventRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{EVENT_COLUMNS} WHERE (?1 IS NULL OR b.slug = ?1) ORDER BY e.seq"
        )))
        .bind(bottle)
        .fetch_all(&self.inner.pool)
        .await?;
        Ok(rows.into_iter().map(Event::from).collect())
    }

    /// The change feed: events after `seq`, oldest first, at most `limit`. One range scan on
    /// the primary key, whatever the number of waiters asking.
    pub async fn events_after(&self, seq: i64, limit: u32) -> StoreResult<Vec<Event>> {
        let rows: Vec<EventRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{EVENT_COLUMNS} WHERE e.seq > ? ORDER BY e.seq LIMIT ?"
        )))
        .bind(seq)
        .bind(limit)
        .fetch_all(&self.inner.pool)
        .await?;
        Ok(rows.into_iter().map(Event::from).collect())
    }

    /// The newest event's sequence number (0 when there are none).
    pub async fn last_seq(&self) -> StoreResult<i64> {
        let seq: Option<i64> = sqlx::query_scalar("SELECT MAX(seq) FROM events")
            .fetch_one(&self.inner.pool)
            .await?;
        Ok(seq.unwrap_or(0))
    }

    /// Expires undecided proposals and grants past their time, recording an event for each.
    /// Takes the write lock only when there is something to expire.
    #[instrument(skip(self), err)]
    pub async fn sweep(&self) -> StoreResult<Swept> {
        let now = clock::now();
        let due: i64 = sqlx::query_scalar(
            "SELECT (SELECT COUNT(*) FROM proposals WHERE status = 'pending' AND archived_at IS NULL \
               AND expires_at <= ?1) \
             + (SELECT COUNT(*) FROM grants WHERE ended_at IS NULL AND expires_at <= ?1)",
        )
        .bind(&now)
        .fetch_one(&self.inner.pool)
        .await?;
        if due == 0 {
            return Ok(Swept::default());
        }
        let mut w = self.write().await?;
        let now = clock::now();
        let rows: Vec<ProposalRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{PROPOSAL_COLUMNS} WHERE p.status = 'pending' AND p.archived_at IS NULL AND p.expires_at <= ?"
        )))
        .bind(&now)
        .fetch_all(w.conn())
        .await?;
        for r in rows {
            let p = r.into_proposal(&now);
            sqlx::query(
                "UPDATE proposals SET status = 'expired' WHERE id = ? AND status = 'pending'",
            )
            .bind(&p.id)
            .execute(w.conn())
            .await?;
            record_expired(w.conn(), &now, &p).await?;
            tracing::info!(bottle = %p.bottle, proposal = %p.id, "proposal expired");
        }
        let grants: Vec<(String, i64, String, String, String)> = sqlx::query_as(
            "UPDATE grants SET ended_at = expires_at, end_reason = 'expired', ended_by = 'system' \
             WHERE ended_at IS NULL AND expires_at <= ? \
             RETURNING id, bottle_id, proposal_id, kind, change",
        )
        .bind(&now)
        .fetch_all(w.conn())
        .await?;
        for (id, bottle_id, proposal_id, kind, change) in &grants {
            record(
                w.conn(),
                &now,
                NewEvent {
                    event: "grant-expired",
                    actor: "system",
                    bottle_id: Some(*bottle_id),
                    proposal_id: Some(proposal_id),
                    grant_id: Some(id),
                    kind: Some(kind),
                    change: Some(change),
                    ..Default::default()
                },
            )
            .await?;
            tracing::info!(grant = %id, proposal = %proposal_id, "grant expired");
        }
        w.commit().await?;
        Ok(Swept {
            expired_proposals: (due as u64).saturating_sub(grants.len() as u64),
            expired_grants: grants.len() as u64,
        })
    }
}

fn verdict_name(v: &Verdict) -> &'static str {
    match v {
        Verdict::Approve => "approve",
        Verdict::Modify(_) => "modify",
        Verdict::Reject => "reject",
    }
}

/// Creates an empty database file readable by its owner only: it holds every bottle's
/// justifications and the operators' notes. SQLite gives the `-wal` and `-shm` files the
/// same mode. (An existing file keeps the mode its owner chose.)
fn create_private(path: &Path) -> StoreResult<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        // Another process (the CLI, a second server) created it a moment ago.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(StoreError::Database(format!(
            "cannot create {}: {e}",
            path.display()
        ))),
    }
}

/// The highest migration version this build knows.
fn known_version() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

/// Looks at an existing file without changing it: it must be empty, or a supervise
/// database no newer than this build.
async fn probe(path: &Path) -> StoreResult<()> {
    let opts = SqliteConnectOptions::from_str("sqlite:")
        .map_err(StoreError::from)?
        .filename(path)
        .create_if_missing(false)
        .foreign_keys(false);
    let not_ours = || StoreError::NotSupervise(path.to_path_buf());
    let mut conn = match SqliteConnection::connect_with(&opts).await {
        Ok(c) => c,
        Err(_) => return Err(not_ours()),
    };
    let tables: Vec<String> =
        match sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'")
            .fetch_all(&mut conn)
            .await
        {
            Ok(t) => t,
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("26") => {
                return Err(not_ours());
            }
            Err(e) => return Err(e.into()),
        };
    // Only sqlx's bookkeeping table, still empty: another process is creating this database
    // right now (its first migration is in flight). Treat the file as new; the migrator
    // will find the work done or do it.
    let being_created = tables
        .iter()
        .all(|t| t == "_sqlx_migrations" || t == "sqlite_sequence")
        && sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM _sqlx_migrations")
            .fetch_one(&mut conn)
            .await
            .map_or(true, |n| n == 0);
    let result = if tables.is_empty() || being_created {
        Ok(())
    } else if !tables.iter().any(|t| t == "meta") || !tables.iter().any(|t| t == "_sqlx_migrations")
    {
        Err(not_ours())
    } else {
        let app: Option<String> =
            sqlx::query_scalar("SELECT value FROM meta WHERE key = 'application'")
                .fetch_optional(&mut conn)
                .await
                .unwrap_or(None);
        let version: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
            .fetch_one(&mut conn)
            .await
            .unwrap_or(None);
        match (app.as_deref(), version) {
            (Some("supervise"), Some(v)) if v > known_version() => Err(StoreError::SchemaTooNew {
                found: v,
                known: known_version(),
            }),
            (Some("supervise"), _) => Ok(()),
            _ => Err(not_ours()),
        }
    };
    let _ = conn.close().await;
    result
}

async fn live_bottle_by_slug(
    conn: &mut SqliteConnection,
    slug: &str,
) -> sqlx::Result<Option<Bottle>> {
    let row: Option<BottleRow> = sqlx::query_as(
        "SELECT id, slug, ip, created_at FROM bottles WHERE slug = ? AND removed_at IS NULL",
    )
    .bind(slug)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(BottleRow::into_bottle))
}

async fn live_bottle_by_ip(
    conn: &mut SqliteConnection,
    ip: IpAddr,
) -> sqlx::Result<Option<Bottle>> {
    let row: Option<BottleRow> = sqlx::query_as(
        "SELECT id, slug, ip, created_at FROM bottles WHERE ip = ? AND removed_at IS NULL",
    )
    .bind(canonical_ip(ip).to_string())
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(BottleRow::into_bottle))
}

/// IPv4-mapped IPv6 addresses (`::ffff:127.0.0.1`, as a dual-stack socket reports them)
/// are the IPv4 address they carry.
fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

async fn insert_bottle(
    conn: &mut SqliteConnection,
    slug: &str,
    ip: IpAddr,
    now: &str,
    actor: &str,
) -> sqlx::Result<Bottle> {
    let ip = canonical_ip(ip);
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO bottles (slug, ip, created_at) VALUES (?, ?, ?) RETURNING id",
    )
    .bind(slug)
    .bind(ip.to_string())
    .bind(now)
    .fetch_one(&mut *conn)
    .await?;
    let note = ip.to_string();
    record(
        conn,
        now,
        NewEvent {
            event: "bottle-added",
            actor,
            bottle_id: Some(id),
            note: Some(&note),
            ..Default::default()
        },
    )
    .await?;
    Ok(Bottle {
        id,
        slug: slug.into(),
        ip,
        created_at: now.into(),
    })
}

/// A bottle's own proposal that is not archived yet.
async fn open_proposal_of(
    conn: &mut SqliteConnection,
    bottle_id: i64,
    id: &str,
    now: &str,
) -> sqlx::Result<Option<Proposal>> {
    let row: Option<ProposalRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{PROPOSAL_COLUMNS} WHERE p.id = ? AND p.bottle_id = ? AND p.archived_at IS NULL"
    )))
    .bind(id)
    .bind(bottle_id)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(|r| r.into_proposal(now)))
}

/// Resolves a full id or a unique prefix of one.
async fn resolve_id(conn: &mut SqliteConnection, id: &str) -> StoreResult<String> {
    let id = id.trim().to_ascii_lowercase();
    if id.is_empty() {
        return Err(StoreError::ProposalNotFound(id));
    }
    let hits: Vec<String> =
        sqlx::query_scalar("SELECT id FROM proposals WHERE id >= ?1 AND id < ?1 || '~' LIMIT 2")
            .bind(&id)
            .fetch_all(&mut *conn)
            .await?;
    match hits.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(StoreError::ProposalNotFound(id)),
        _ if hits.contains(&id) => Ok(id),
        _ => Err(StoreError::AmbiguousId(id)),
    }
}

/// Inside a write transaction: delivers a decided (or expired) open proposal of the bottle
/// (archives it and records `delivered`); a pending one is returned as is, anything else is
/// `Unknown`.
async fn deliver_in(
    conn: &mut SqliteConnection,
    bottle_id: i64,
    id: &str,
    now: &str,
) -> sqlx::Result<Delivery> {
    let Some(mut p) = open_proposal_of(conn, bottle_id, id, now).await? else {
        return Ok(Delivery::Unknown);
    };
    if p.status == Status::Pending {
        return Ok(Delivery::Pending(p));
    }
    if p.status == Status::Expired {
        // Materialise an expiry the sweep has not reached yet.
        let r = sqlx::query(
            "UPDATE proposals SET status = 'expired' WHERE id = ? AND status = 'pending'",
        )
        .bind(id)
        .execute(&mut *conn)
        .await?;
        if r.rows_affected() == 1 {
            record_expired(conn, now, &p).await?;
        }
    }
    sqlx::query("UPDATE proposals SET archived_at = ? WHERE id = ? AND archived_at IS NULL")
        .bind(now)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    let change_text = p
        .decision
        .as_ref()
        .and_then(|d| d.change.as_ref())
        .map(Value::to_string);
    record(
        conn,
        now,
        NewEvent {
            event: "delivered",
            actor: &actor_bottle(&p.bottle),
            bottle_id: Some(bottle_id),
            proposal_id: Some(id),
            kind: Some(p.kind.as_str()),
            change: change_text.as_deref(),
            note: Some(p.status.as_str()),
            ..Default::default()
        },
    )
    .await?;
    p.archived_at = Some(now.to_string());
    Ok(match p.status {
        Status::Expired => Delivery::Expired(p),
        _ => Delivery::Decided(p),
    })
}

fn log_delivery(d: &Delivery) {
    if let Delivery::Decided(p) | Delivery::Expired(p) = d {
        tracing::info!(bottle = %p.bottle, proposal = %p.id, status = %p.status, "decision delivered");
    }
}

async fn record_expired(conn: &mut SqliteConnection, now: &str, p: &Proposal) -> sqlx::Result<()> {
    let change = p.change.to_string();
    record(
        conn,
        now,
        NewEvent {
            event: "expired",
            actor: "system",
            bottle_id: Some(p.bottle_id),
            proposal_id: Some(&p.id),
            kind: Some(p.kind.as_str()),
            change: Some(&change),
            ..Default::default()
        },
    )
    .await
}

/// Files one prepared proposal inside the caller's transaction. The outer error aborts the
/// whole batch; the inner one is this item's refusal.
async fn propose_in(
    conn: &mut SqliteConnection,
    policy: &Policy,
    p: Prepared,
    now: &str,
) -> StoreResult<StoreResult<Proposed>> {
    let Some(slug): Option<String> =
        sqlx::query_scalar("SELECT slug FROM bottles WHERE id = ? AND removed_at IS NULL")
            .bind(p.bottle_id)
            .fetch_optional(&mut *conn)
            .await?
    else {
        return Ok(Err(StoreError::BottleNotFound(format!("#{}", p.bottle_id))));
    };
    let actor = actor_bottle(&slug);
    let kind = p.kind.as_str();
    let change_text = p.change.to_string();

    // An identical undecided proposal: expire it if its time is up, else coalesce.
    let existing: Option<ProposalRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{PROPOSAL_COLUMNS} WHERE p.bottle_id = ? AND p.kind = ? AND p.change_key = ? AND p.status = 'pending'"
    )))
    .bind(p.bottle_id)
    .bind(kind)
    .bind(&p.key)
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(row) = existing {
        let old = row.into_proposal(now);
        if old.status == Status::Expired {
            sqlx::query("UPDATE proposals SET status = 'expired' WHERE id = ?")
                .bind(&old.id)
                .execute(&mut *conn)
                .await?;
            record_expired(conn, now, &old).await?;
        } else {
            sqlx::query("UPDATE proposals SET hits = hits + 1 WHERE id = ?")
                .bind(&old.id)
                .execute(&mut *conn)
                .await?;
            record(
                conn,
                now,
                NewEvent {
                    event: "repeated",
                    actor: &actor,
                    bottle_id: Some(p.bottle_id),
                    proposal_id: Some(&old.id),
                    kind: Some(kind),
                    change: Some(&change_text),
                    ..Default::default()
                },
            )
            .await?;
            let mut old = old;
            old.hits += 1;
            return Ok(Ok(Proposed::Repeated(old)));
        }
    }

    // The same change rejected within the cooldown: answer with that rejection.
    if let Some(cooldown) = policy.reject_cooldown.filter(|d| !d.is_zero()) {
        let since = clock::before(cooldown);
        let rejected: Option<ProposalRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{PROPOSAL_COLUMNS} WHERE p.bottle_id = ? AND p.kind = ? AND p.change_key = ? \
             AND p.status = 'rejected' AND p.decided_at > ? ORDER BY p.decided_at DESC LIMIT 1"
        )))
        .bind(p.bottle_id)
        .bind(kind)
        .bind(&p.key)
        .bind(&since)
        .fetch_optional(&mut *conn)
        .await?;
        if let Some(row) = rejected {
            let mut old = row.into_proposal(now);
            sqlx::query("UPDATE proposals SET hits = hits + 1 WHERE id = ?")
                .bind(&old.id)
                .execute(&mut *conn)
                .await?;
            let note = old.decision.as_ref().and_then(|d| d.note.clone());
            record(
                conn,
                now,
                NewEvent {
                    event: "auto-rejected",
                    actor: "system",
                    bottle_id: Some(p.bottle_id),
                    proposal_id: Some(&old.id),
                    kind: Some(kind),
                    change: Some(&change_text),
                    note: note.as_deref(),
                    ..Default::default()
                },
            )
            .await?;
            old.hits += 1;
            return Ok(Ok(Proposed::AutoRejected(old)));
        }
    }

    if let Some(limit) = policy.max_pending_per_bottle.filter(|&n| n > 0) {
        let open: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM proposals WHERE bottle_id = ? AND archived_at IS NULL \
             AND status = 'pending' AND (expires_at IS NULL OR expires_at > ?)",
        )
        .bind(p.bottle_id)
        .bind(now)
        .fetch_one(&mut *conn)
        .await?;
        if open >= i64::from(limit) {
            return Ok(Err(StoreError::PendingCapReached { slug, limit }));
        }
    }

    let id = uuid::Uuid::now_v7().to_string();
    let flags: Vec<String> = change::flags(p.kind, &p.change)
        .into_iter()
        .map(String::from)
        .collect();
    let flags_text = serde_json::to_string(&flags).unwrap_or_else(|_| "[]".into());
    let expires_at = policy
        .proposal_ttl
        .filter(|d| !d.is_zero())
        .map(clock::after);
    sqlx::query(
        "INSERT INTO proposals (id, bottle_id, kind, change, change_key, justification, flags, \
         created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&id)
    .bind(p.bottle_id)
    .bind(kind)
    .bind(&change_text)
    .bind(&p.key)
    .bind(&p.justification)
    .bind(&flags_text)
    .bind(now)
    .bind(expires_at.as_deref())
    .execute(&mut *conn)
    .await?;
    record(
        conn,
        now,
        NewEvent {
            event: "proposed",
            actor: &actor,
            bottle_id: Some(p.bottle_id),
            proposal_id: Some(&id),
            kind: Some(kind),
            change: Some(&change_text),
            note: Some(&p.justification),
            ..Default::default()
        },
    )
    .await?;
    Ok(Ok(Proposed::Created(Proposal {
        id,
        bottle: slug,
        bottle_id: p.bottle_id,
        kind: p.kind,
        change: p.change,
        justification: p.justification,
        status: Status::Pending,
        flags,
        hits: 1,
        created_at: now.into(),
        expires_at,
        decision: None,
        archived_at: None,
    })))
}
