//! Appending to the audit trail: the one insert into `events`, who an actor is, and the
//! rule that keeps repeats from flooding it.

use std::sync::LazyLock;
use std::time::Duration;

use sqlx::AnyConnection;

use super::multirow::{CHUNKS, Insert, insert_chunked, rows_sql};
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
    grant_id, kind, change, note) VALUES ";
const EVENT_ROW: &str = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

/// The insert of one event, and of each chunk size of [`record_many`].
static ONE: LazyLock<String> = LazyLock::new(|| rows_sql(EVENT_INSERT, EVENT_ROW, 1, 1, ""));
static MANY: LazyLock<[String; 4]> =
    LazyLock::new(|| CHUNKS.map(|n| rows_sql(EVENT_INSERT, EVENT_ROW, n, 1, "")));

/// Binds one event's row.
fn bind<'q>(q: Insert<'q>, at: &Timestamp, ev: &NewEvent<'_>) -> Insert<'q> {
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
}

/// Appends one event inside the caller's transaction.
pub(super) async fn record(
    conn: &mut AnyConnection,
    at: &Timestamp,
    ev: NewEvent<'_>,
) -> sqlx::Result<()> {
    bind(sqlx::query(ONE.as_str()), at, &ev)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Appends `events` in their order inside the caller's transaction, as [`record`] would one
/// by one, in a few multi-row statements (a batch's `proposed` events).
pub(super) async fn record_many(
    conn: &mut AnyConnection,
    at: &Timestamp,
    events: &[NewEvent<'_>],
) -> sqlx::Result<()> {
    insert_chunked(conn, &MANY, events, |q, ev| bind(q, at, ev)).await
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
