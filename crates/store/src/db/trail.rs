//! Appending to the audit trail: the one insert into `events`, each row chained to the one
//! before by its hash ([`chain`]), who an actor is, and the rule that keeps repeats from
//! flooding it.

use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use sqlx::AnyConnection;

use super::chain;
use super::multirow::{CHUNKS, Insert, chunks, rows_sql};
use crate::model::{Actor, BottleId, EventKind, Kind, Proposal, Timestamp, Via};

/// One audit event to append.
pub(super) struct NewEvent<'a> {
    pub event: EventKind,
    pub actor: &'a str,
    /// Through what an operator acted (`None` for a bottle or the system).
    pub via: Option<Via>,
    pub bottle_id: Option<BottleId>,
    pub proposal_id: Option<&'a str>,
    pub grant_id: Option<&'a str>,
    pub kind: Option<Kind>,
    pub change: Option<&'a str>,
    pub note: Option<&'a str>,
}

impl<'a> NewEvent<'a> {
    /// An event with only its name and actor; set the rest with struct update syntax.
    pub fn new(event: EventKind, actor: &'a str) -> NewEvent<'a> {
        NewEvent {
            event,
            actor,
            via: None,
            bottle_id: None,
            proposal_id: None,
            grant_id: None,
            kind: None,
            change: None,
            note: None,
        }
    }
}

const EVENT_INSERT: &str = "INSERT INTO events (at, event, actor, via, bottle_id, proposal_id, \
    grant_id, kind, change, note, hash) SELECT * FROM (VALUES ";
/// One row; the bottle id is cast so PostgreSQL types a NULL in `VALUES` as the column's.
const EVENT_ROW: &str = "(?, ?, ?, ?, CAST(? AS BIGINT), ?, ?, ?, ?, ?, ?)";
const EVENT_ROW_PARAMS: usize = 11;

/// The chain's tail: the newest row's hash, or the genesis while the trail is empty.
const TAIL: &str = "(SELECT COALESCE((SELECT hash FROM events ORDER BY seq DESC LIMIT 1), \
    (SELECT hash FROM trail_genesis)))";

/// The insert of each chunk size: the rows go in only if the chain's tail is still the
/// hash they were chained from (the last parameter), checked in the same statement.
static MANY: LazyLock<[String; 4]> = LazyLock::new(|| {
    CHUNKS.map(|n| {
        let tail = format!(") AS v WHERE {TAIL} = ${}", n * EVENT_ROW_PARAMS + 1);
        rows_sql(EVENT_INSERT, EVENT_ROW, n, 1, &tail)
    })
});

/// The tail this process last appended to: a hint that saves reading the tail before
/// each append. Each insert checks it against the database in the same statement, so a
/// stale hint (another process appended, a transaction rolled back, another database)
/// costs one extra read and never a wrong link.
static TAIL_HINT: Mutex<Option<String>> = Mutex::new(None);

/// Binds one event's row and its hash.
fn bind<'q>(q: Insert<'q>, at: &Timestamp, ev: &NewEvent<'_>, hash: &str) -> Insert<'q> {
    q.bind(at.as_str())
        .bind(ev.event.as_str())
        .bind(ev.actor)
        .bind(ev.via.map(Via::as_str))
        .bind(ev.bottle_id.map(BottleId::get))
        .bind(ev.proposal_id)
        .bind(ev.grant_id)
        .bind(ev.kind.map(Kind::as_str))
        .bind(ev.change)
        .bind(ev.note)
        .bind(hash.to_string())
}

/// The event's link in the chain after `prev`.
fn link_of(prev: &str, at: &Timestamp, ev: &NewEvent<'_>) -> String {
    chain::link(
        prev,
        &chain::Link {
            at: at.as_str(),
            event: ev.event.as_str(),
            actor: ev.actor,
            via: ev.via.map(Via::as_str),
            bottle_id: ev.bottle_id.map(BottleId::get),
            proposal_id: ev.proposal_id,
            grant_id: ev.grant_id,
            kind: ev.kind.map(Kind::as_str),
            change: ev.change,
            note: ev.note,
        },
    )
}

/// Reads the chain's tail (inside the caller's write transaction).
pub(super) async fn tail(conn: &mut AnyConnection) -> sqlx::Result<String> {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT {TAIL}")))
        .fetch_one(&mut *conn)
        .await
}

/// Appends one event inside the caller's transaction.
pub(super) async fn record(
    conn: &mut AnyConnection,
    at: &Timestamp,
    ev: NewEvent<'_>,
) -> sqlx::Result<()> {
    record_many(conn, at, std::slice::from_ref(&ev)).await
}

/// Appends `events` in their order inside the caller's transaction, each chained to the
/// one before, in a few multi-row statements (a batch's `proposed` events). Every event of
/// the store is appended here.
pub(super) async fn record_many(
    conn: &mut AnyConnection,
    at: &Timestamp,
    events: &[NewEvent<'_>],
) -> sqlx::Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let hint = TAIL_HINT.lock().expect("not poisoned").clone();
    let prev = match hint {
        Some(prev) => prev,
        None => tail(conn).await?,
    };
    let last = match append(conn, at, events, prev).await? {
        Some(last) => last,
        None => {
            let prev = tail(conn).await?;
            append(conn, at, events, prev).await?.ok_or_else(|| {
                sqlx::Error::Protocol("the trail's tail moved under the write lock".into())
            })?
        }
    };
    *TAIL_HINT.lock().expect("not poisoned") = Some(last);
    Ok(())
}

/// Appends `events` chained from `prev`, returning the new tail, or `None` (nothing
/// written) when `prev` is not the tail.
async fn append(
    conn: &mut AnyConnection,
    at: &Timestamp,
    events: &[NewEvent<'_>],
    mut prev: String,
) -> sqlx::Result<Option<String>> {
    let mut expect = prev.clone();
    let mut hashes = Vec::with_capacity(events.len());
    for ev in events {
        let h = link_of(&prev, at, ev);
        hashes.push(h.clone());
        prev = h;
    }
    let mut from = 0;
    for (i, n) in chunks(events.len()) {
        let q = (from..from + n).fold(sqlx::query(MANY[i].as_str()), |q, k| {
            bind(q, at, &events[k], &hashes[k])
        });
        let done = q.bind(expect).execute(&mut *conn).await?.rows_affected();
        if done != n as u64 {
            if from == 0 {
                return Ok(None);
            }
            return Err(sqlx::Error::Protocol(
                "the trail's tail moved under the write lock".into(),
            ));
        }
        from += n;
        expect = hashes[from - 1].clone();
    }
    Ok(Some(prev))
}
/// Records that a decided (or expired) proposal's outcome was delivered, by `actor`: the
/// agent that took it, or the gate that used it. The change is the decision's, the note the
/// outcome.
pub(super) async fn record_delivered(
    conn: &mut AnyConnection,
    now: &Timestamp,
    p: &Proposal,
    actor: &str,
) -> sqlx::Result<()> {
    let change = p
        .decision
        .as_ref()
        .and_then(|d| d.change.as_ref())
        .map(|c| c.to_string());
    record(
        conn,
        now,
        NewEvent {
            bottle_id: Some(p.bottle_id),
            proposal_id: Some(&p.id),
            kind: Some(p.kind),
            change: change.as_deref(),
            note: Some(p.status.as_str()),
            ..NewEvent::new(EventKind::Delivered, actor)
        },
    )
    .await
}

/// Records that an undecided proposal ran out of time.
pub(super) async fn record_expired(
    conn: &mut AnyConnection,
    now: &Timestamp,
    p: &Proposal,
) -> sqlx::Result<()> {
    let change = p.change.to_string();
    record(
        conn,
        now,
        NewEvent {
            bottle_id: Some(p.bottle_id),
            proposal_id: Some(&p.id),
            kind: Some(p.kind),
            change: Some(&change),
            ..NewEvent::new(EventKind::Expired, SYSTEM)
        },
    )
    .await
}

/// At most one `repeated` (and one `auto-rejected`) event per proposal in this interval: a
/// bottle asking for the same change in a loop raises the proposal's `hits` every time (the
/// count stays exact), but writes to the trail, and so runs the hooks, once a minute at most.
pub(crate) const REPEAT_EVENT_EVERY: Duration = Duration::from_secs(60);

/// Whether a repeat of `proposal_id` is recorded as an `event` now: only when no such event
/// was recorded within [`REPEAT_EVENT_EVERY`]. One descending lookup in the index of the
/// proposal's events, which the rule itself keeps short.
pub(super) async fn repeat_is_due(
    conn: &mut AnyConnection,
    proposal_id: &str,
    event: EventKind,
) -> sqlx::Result<bool> {
    let last: Option<String> = sqlx::query_scalar(
        "SELECT at FROM events WHERE proposal_id = $1 AND event = $2 ORDER BY seq DESC LIMIT 1",
    )
    .bind(proposal_id)
    .bind(event.as_str())
    .fetch_optional(&mut *conn)
    .await?;
    let since = Timestamp::before(REPEAT_EVENT_EVERY);
    Ok(last.is_none_or(|at| at.as_str() <= since.as_str()))
}

/// The note of a `repeated` event: the proposal's hit count when it was written.
pub(super) fn hits_note(hits: i64) -> String {
    format!("hits: {hits}")
}

/// The actor of what the server does on its own (expiry, cooldown, registration).
pub(super) const SYSTEM: &str = "system";

pub(super) fn actor_bottle(slug: &str) -> String {
    format!("bottle:{slug}")
}

pub(super) fn actor_operator(name: &str) -> String {
    format!("operator:{name}")
}

/// The event actor of an operator-facing write: `operator:NAME`.
pub(super) fn actor_of(by: &Actor) -> String {
    actor_operator(&by.name)
}
