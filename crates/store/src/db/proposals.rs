//! Filing proposals (coalescing repeats, the rejection cooldown, the per-bottle pending cap)
//! and reading them: the operator's list, an agent's open proposals, one with its history.

use serde_json::Value;
use sqlx::AnyConnection;
use tracing::instrument;

mod batch;

use batch::{NewRow, file_batch, insert_rows};

use super::bottles::{live_generation, live_names};
pub(super) use super::records::load_proposal;
use super::rows::{self, EVENT_COLUMNS, EventRow, PROPOSAL_COLUMNS, ProposalRow};
use super::rules::{InForce, apply, facts};
use super::trail::{
    NewEvent, SYSTEM, actor_bottle, hits_note, record, record_expired, repeat_is_due,
};
use super::{ProposalLimits, Store};
use crate::change;
use crate::error::{StoreError, StoreResult};
use crate::model::{
    Actor, BottleId, Event, EventKind, Kind, NewProposal, Proposal, Proposed, Status, StatusFilter,
    Task, Timestamp,
};

/// What filing one item gave: the proposal, and its task when one was asked for and opened.
type FiledAs = (Proposed, Option<Task>);

impl Store {
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
    pub async fn propose_many(
        &self,
        items: Vec<NewProposal>,
    ) -> StoreResult<Vec<StoreResult<Proposed>>> {
        let items = items.into_iter().map(|i| (i, false)).collect();
        Ok(self
            .propose_many_as(items)
            .await?
            .into_iter()
            .map(|r| r.map(|(p, _)| p))
            .collect())
    }

    /// [`Store::propose_many`] where an item marked `true` was asked for as a task: a
    /// proposal that stays undecided (created or repeated, not auto-rejected) gets its task
    /// opened in the same transaction (see [`Store::open_task`]), so a task costs no commit
    /// of its own.
    #[instrument(skip_all, fields(items = items.len()), err)]
    pub async fn propose_many_as(
        &self,
        items: Vec<(NewProposal, bool)>,
    ) -> StoreResult<Vec<StoreResult<FiledAs>>> {
        let prepared: Vec<(StoreResult<Prepared>, bool)> = items
            .into_iter()
            .map(|(item, as_task)| (prepare(item), as_task))
            .collect();
        if prepared.iter().all(|(p, _)| p.is_err()) {
            return Ok(prepared
                .into_iter()
                .map(|(p, _)| p.map(|_| unreachable!()))
                .collect());
        }
        let mut w = self.write().await?;
        let now = Timestamp::now();
        let rules = self.in_force(w.conn()).await?;
        let limits = self.limits_in(w.conn()).await?;
        let filing = Filing {
            limits: &limits,
            rules: rules.as_deref(),
            deliver: true,
        };
        let out = file_batch(w.conn(), &filing, prepared, &now).await?;
        w.commit().await?;
        for (r, _) in out.iter().flatten() {
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
                Proposed::Ruled(_) => {}
            }
        }
        Ok(out)
    }

    /// A bottle's proposals not yet archived (what the agent can still poll), oldest first.
    /// Refused with [`StoreError::BottleGone`] once the generation was removed.
    pub async fn open_proposals(&self, bottle_id: BottleId) -> StoreResult<Vec<Proposal>> {
        let now = Timestamp::now();
        let mut tx = self.read().await?;
        live_generation(&mut tx, bottle_id).await?;
        let rows: Vec<ProposalRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{PROPOSAL_COLUMNS} WHERE p.bottle_id = $1 AND p.archived_at IS NULL ORDER BY p.created_at, p.id"
        )))
        .bind(bottle_id.get())
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        rows.into_iter().map(|r| r.at(&now)).collect()
    }

    /// The operator's list: proposals matching the filter, oldest first, of every host.
    /// `bottle` (`SLUG`, or `HOST/SLUG`) matches every generation of the slug.
    pub async fn list(
        &self,
        bottle: Option<&str>,
        status: StatusFilter,
    ) -> StoreResult<Vec<Proposal>> {
        self.list_on(None, bottle, status).await
    }

    /// [`Store::list`] of one host's bottles (`host`), or of every host's (`None`).
    pub async fn list_on(
        &self,
        host: Option<&str>,
        bottle: Option<&str>,
        status: StatusFilter,
    ) -> StoreResult<Vec<Proposal>> {
        let now = Timestamp::now();
        let (host, bottle) = self.bottle_filter(host, bottle).await?;
        let mut conn = self.inner.pool.acquire().await?;
        let cond = match status {
            StatusFilter::Pending => {
                "p.status = 'pending' AND p.archived_at IS NULL AND (p.expires_at IS NULL OR p.expires_at > $1)"
            }
            StatusFilter::Decided => {
                "p.status IN ('approved', 'modified', 'rejected') AND p.archived_at IS NULL AND $1 = $1"
            }
            StatusFilter::Archived => "p.archived_at IS NOT NULL AND $1 = $1",
            StatusFilter::Expired => {
                "(p.status = 'expired' OR (p.status = 'pending' AND p.expires_at <= $1))"
            }
            StatusFilter::All => "$1 = $1",
        };
        let sql = format!(
            "{PROPOSAL_COLUMNS} WHERE {cond} AND ($2 IS NULL OR b.slug = $2) \
             AND ($3 IS NULL OR b.host = $3) ORDER BY p.created_at, p.id"
        );
        let rows: Vec<ProposalRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(now.as_str())
            .bind(bottle)
            .bind(host)
            .fetch_all(&mut *conn)
            .await?;
        rows.into_iter().map(|r| r.at(&now)).collect()
    }

    /// For each id, the length of its shortest prefix that no other proposal shares (at
    /// least `min`), like git's abbreviated hashes. Two primary-key lookups per id (its
    /// neighbours in id order), so the cost does not grow with the table.
    pub async fn unique_prefix_lens(
        &self,
        ids: &[impl AsRef<str>],
        min: usize,
    ) -> StoreResult<Vec<usize>> {
        let mut conn = self.inner.pool.acquire().await?;
        let mut out = Vec::with_capacity(ids.len());
        let common =
            |a: &str, b: &str| a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        for id in ids {
            let id = id.as_ref();
            let prev: Option<String> =
                sqlx::query_scalar("SELECT MAX(id) FROM proposals WHERE id < $1")
                    .bind(id)
                    .fetch_one(&mut *conn)
                    .await?;
            let next: Option<String> =
                sqlx::query_scalar("SELECT MIN(id) FROM proposals WHERE id > $1")
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

    /// One proposal (id or unique id prefix) with its event history, as the host's CLI
    /// sees it: among every bottle's proposals.
    pub async fn show(&self, id: &str) -> StoreResult<(Proposal, Vec<Event>)> {
        self.show_for(id, &Actor::cli("show")).await
    }

    /// [`Store::show`] for `by`: the prefix is resolved among the proposals `by` sees, as a
    /// decision resolves it, and one of a bottle out of scope is
    /// [`StoreError::ProposalNotFound`]. So neither the answer nor "ambiguous" depends on
    /// what other bottles filed.
    pub async fn show_for(&self, id: &str, by: &Actor) -> StoreResult<(Proposal, Vec<Event>)> {
        let now = Timestamp::now();
        let mut conn = self.inner.pool.acquire().await?;
        let given = id;
        let id = resolve_id_for(&mut conn, id, by).await?;
        let p = load_proposal(&mut conn, &id, &now)
            .await?
            .filter(|p| by.sees(&p.bottle))
            .ok_or_else(|| StoreError::ProposalNotFound(given.to_string()))?;
        let rows: Vec<EventRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{EVENT_COLUMNS} WHERE e.proposal_id = $1 ORDER BY e.seq"
        )))
        .bind(&id)
        .fetch_all(&mut *conn)
        .await?;
        Ok((p, rows::all(rows)?))
    }
}

/// A bottle's own proposal that is not archived yet.
pub(super) async fn open_proposal_of(
    conn: &mut AnyConnection,
    bottle_id: BottleId,
    id: &str,
    now: &Timestamp,
) -> StoreResult<Option<Proposal>> {
    let row: Option<ProposalRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{PROPOSAL_COLUMNS} WHERE p.id = $1 AND p.bottle_id = $2 AND p.archived_at IS NULL"
    )))
    .bind(id)
    .bind(bottle_id.get())
    .fetch_optional(&mut *conn)
    .await?;
    row.map(|r| r.at(now)).transpose()
}

/// Resolves a full id or a unique prefix of one.
pub(super) async fn resolve_id(conn: &mut AnyConnection, id: &str) -> StoreResult<String> {
    let id = id.trim().to_ascii_lowercase();
    if id.is_empty() {
        return Err(StoreError::ProposalNotFound(id));
    }
    let hits: Vec<String> =
        sqlx::query_scalar("SELECT id FROM proposals WHERE id >= $1 AND id < $1 || '~' LIMIT 2")
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

/// [`resolve_id`] among the proposals `by` sees: for an actor limited to some bottles, a
/// prefix is matched only against their proposals, so neither "ambiguous" nor the full id
/// says anything about another bottle's. The matches are read in id order a page at a
/// time and the reading stops at the second one in scope, so a short prefix costs no more
/// than the proposals before it.
pub(super) async fn resolve_id_for(
    conn: &mut AnyConnection,
    id: &str,
    by: &Actor,
) -> StoreResult<String> {
    /// Matches read per query.
    const PAGE: i64 = 256;
    if by.bottles.is_empty() {
        return resolve_id(conn, id).await;
    }
    let given = id.trim().to_ascii_lowercase();
    if given.is_empty() {
        return Err(StoreError::ProposalNotFound(given));
    }
    let mut seen: Vec<String> = Vec::new();
    // The last id read: the next page starts after it (the prefix itself sorts first).
    let mut after: Option<String> = None;
    'pages: loop {
        let page: Vec<(String, String)> = sqlx::query_as(
            "SELECT p.id, b.slug FROM proposals p JOIN bottles b ON b.id = p.bottle_id \
             WHERE p.id >= $1 AND p.id < $1 || '~' AND ($2 IS NULL OR p.id > $2) \
             ORDER BY p.id LIMIT $3",
        )
        .bind(&given)
        .bind(after.as_deref())
        .bind(PAGE)
        .fetch_all(&mut *conn)
        .await?;
        let full = page.len() as i64 == PAGE;
        for (id, slug) in page {
            if by.sees(&slug) {
                seen.push(id.clone());
                if seen.len() == 2 {
                    break 'pages;
                }
            }
            after = Some(id);
        }
        if !full {
            break;
        }
    }
    match seen.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(StoreError::ProposalNotFound(given)),
        // The full id sorts first among the ids it prefixes.
        [first, ..] if *first == given => Ok(given),
        _ => Err(StoreError::AmbiguousId(given)),
    }
}

/// Marks a pending proposal expired and records it; whether it did (a no-op, `false`, when
/// it is no longer pending).
pub(super) async fn expire_in(
    conn: &mut AnyConnection,
    now: &Timestamp,
    p: &Proposal,
) -> StoreResult<bool> {
    let r =
        sqlx::query("UPDATE proposals SET status = 'expired' WHERE id = $1 AND status = 'pending'")
            .bind(p.id.as_str())
            .execute(&mut *conn)
            .await?;
    let expired = r.rows_affected() == 1;
    if expired {
        record_expired(conn, now, p).await?;
    }
    Ok(expired)
}

/// How a transaction files proposals: the limits, the rules in force (`None`: none), and
/// whether a rule's decision is delivered at once (the agent's own filing, which answers
/// with it; not the gate's or the egress helper's, whose proposals the agent polls).
pub(super) struct Filing<'a> {
    pub(super) limits: &'a ProposalLimits,
    pub(super) rules: Option<&'a InForce>,
    pub(super) deliver: bool,
}

/// A proposal checked before the write lock is taken.
pub(super) struct Prepared {
    bottle_id: BottleId,
    kind: Kind,
    pub(super) change: Value,
    key: String,
    justification: String,
    /// Filed by the egress proxy's helper for a refused connection (`db/egress.rs`): flagged
    /// `observed`, and the actor is `system`, not the bottle.
    pub(super) observed: bool,
    /// Approvals it needs from distinct operators (at least 1).
    quorum: u32,
}

pub(super) fn prepare(item: NewProposal) -> StoreResult<Prepared> {
    let change = change::normalise(item.kind, &item.change)?;
    let justification = change::validate_justification(&item.justification)?;
    let quorum = match item.quorum {
        None => 1,
        Some(0) => {
            return Err(StoreError::Invalid {
                field: "quorum".into(),
                message: "a quorum needs at least 1 approval".into(),
            });
        }
        Some(n) => n,
    };
    Ok(Prepared {
        quorum,
        bottle_id: item.bottle_id,
        kind: item.kind,
        key: change::change_key(&change),
        change,
        justification,
        observed: false,
    })
}

/// Files one prepared proposal inside the caller's transaction. The outer error aborts the
/// whole batch; the inner one is this item's refusal.
pub(super) async fn propose_in(
    conn: &mut AnyConnection,
    filing: &Filing<'_>,
    p: Prepared,
    now: &Timestamp,
) -> StoreResult<StoreResult<Proposed>> {
    let limits = filing.limits;
    let (host, slug) = match live_names(conn, p.bottle_id).await {
        Ok(names) => names,
        Err(e @ (StoreError::BottleGone(_) | StoreError::BottleNotFound(_))) => return Ok(Err(e)),
        Err(e) => return Err(e),
    };
    let actor = if p.observed {
        SYSTEM.to_string()
    } else {
        actor_bottle(&slug)
    };
    let change_text = p.change.to_string();

    if let Some(old) = same_undecided(conn, &p, now).await? {
        if old.status == Status::Expired {
            // Its time is up: expire it and file the new one below.
            expire_in(conn, now, &old).await?;
        } else {
            return Ok(Ok(repeat(conn, &p, old, &actor, &change_text, now).await?));
        }
    }
    if let Some(cooldown) = limits.reject_cooldown.filter(|d| !d.is_zero())
        && let Some(old) = recently_rejected(conn, &p, &now.minus(cooldown), now).await?
    {
        return Ok(Ok(auto_reject(conn, &p, old, &change_text, now).await?));
    }
    let bottle_id = p.bottle_id;
    let row = NewRow::new(limits, p, (host, slug.clone()), actor, change_text, now);
    let ruled = filing
        .rules
        .map(|r| (r, r.rules.evaluate(&facts(&row.proposal, now))));
    // A rule's decision leaves nothing pending, so the cap does not stop it.
    let automatic = ruled
        .as_ref()
        .is_some_and(|(_, e)| e.outcome.is_automatic());
    if !automatic
        && let Some(limit) = limits.max_pending_per_bottle.filter(|&n| n > 0)
        && !has_room(conn, bottle_id, limit, now).await?
    {
        return Ok(Err(StoreError::PendingCapReached { slug, limit }));
    }
    insert_rows(conn, std::slice::from_ref(&row), now).await?;
    Ok(Ok(match ruled {
        Some((in_force, eval)) => {
            match apply(conn, now, row.proposal, in_force, &eval, filing.deliver).await? {
                (p, true) => Proposed::Ruled(p),
                (p, false) => Proposed::Created(p),
            }
        }
        None => Proposed::Created(row.proposal),
    }))
}

/// An identical undecided proposal of the same bottle, as it reads at `now`.
async fn same_undecided(
    conn: &mut AnyConnection,
    p: &Prepared,
    now: &Timestamp,
) -> StoreResult<Option<Proposal>> {
    let row: Option<ProposalRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{PROPOSAL_COLUMNS} WHERE p.bottle_id = $1 AND p.kind = $2 AND p.change_key = $3 AND p.status = 'pending'"
    )))
    .bind(p.bottle_id.get())
    .bind(p.kind.as_str())
    .bind(&p.key)
    .fetch_optional(&mut *conn)
    .await?;
    row.map(|r| r.at(now)).transpose()
}

/// Coalesces a repeat into the undecided proposal: one more hit, always; a `repeated` event
/// (noting the hits so far) only when none was written in the last
/// [`REPEAT_EVENT_EVERY`](super::trail::REPEAT_EVENT_EVERY).
async fn repeat(
    conn: &mut AnyConnection,
    p: &Prepared,
    mut old: Proposal,
    actor: &str,
    change_text: &str,
    now: &Timestamp,
) -> StoreResult<Proposed> {
    sqlx::query("UPDATE proposals SET hits = hits + 1 WHERE id = $1")
        .bind(old.id.as_str())
        .execute(&mut *conn)
        .await?;
    old.hits += 1;
    if repeat_is_due(conn, &old.id, EventKind::Repeated).await? {
        let note = hits_note(old.hits);
        record(
            conn,
            now,
            NewEvent {
                bottle_id: Some(p.bottle_id),
                proposal_id: Some(&old.id),
                kind: Some(p.kind),
                change: Some(change_text),
                note: Some(&note),
                ..NewEvent::new(EventKind::Repeated, actor)
            },
        )
        .await?;
    }
    Ok(Proposed::Repeated(old))
}

/// The same change rejected after `since`, newest first.
async fn recently_rejected(
    conn: &mut AnyConnection,
    p: &Prepared,
    since: &Timestamp,
    now: &Timestamp,
) -> StoreResult<Option<Proposal>> {
    let row: Option<ProposalRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{PROPOSAL_COLUMNS} WHERE p.bottle_id = $1 AND p.kind = $2 AND p.change_key = $3 \
         AND p.status = 'rejected' AND p.decided_at > $4 ORDER BY p.decided_at DESC LIMIT 1"
    )))
    .bind(p.bottle_id.get())
    .bind(p.kind.as_str())
    .bind(&p.key)
    .bind(since.as_str())
    .fetch_optional(&mut *conn)
    .await?;
    row.map(|r| r.at(now)).transpose()
}

/// Answers with the earlier rejection: one more hit on it, always; an `auto-rejected` event
/// at most once per [`REPEAT_EVENT_EVERY`](super::trail::REPEAT_EVENT_EVERY), as for repeats.
async fn auto_reject(
    conn: &mut AnyConnection,
    p: &Prepared,
    mut old: Proposal,
    change_text: &str,
    now: &Timestamp,
) -> StoreResult<Proposed> {
    sqlx::query("UPDATE proposals SET hits = hits + 1 WHERE id = $1")
        .bind(old.id.as_str())
        .execute(&mut *conn)
        .await?;
    old.hits += 1;
    if repeat_is_due(conn, &old.id, EventKind::AutoRejected).await? {
        let note = old.decision.as_ref().and_then(|d| d.note.clone());
        record(
            conn,
            now,
            NewEvent {
                bottle_id: Some(p.bottle_id),
                proposal_id: Some(&old.id),
                kind: Some(p.kind),
                change: Some(change_text),
                note: note.as_deref(),
                ..NewEvent::new(EventKind::AutoRejected, SYSTEM)
            },
        )
        .await?;
    }
    Ok(Proposed::AutoRejected(old))
}

/// Whether the bottle has fewer than `limit` undecided proposals that are not past their
/// expiry. One primary-key read of the count the triggers keep (`bottles.pending_count`);
/// only at the cap are the bottle's due proposals expired (through an index, so the cost is
/// what expires, not what waits) and the count read again.
async fn has_room(
    conn: &mut AnyConnection,
    bottle_id: BottleId,
    limit: u32,
    now: &Timestamp,
) -> StoreResult<bool> {
    let pending = pending_count(conn, bottle_id).await?;
    if pending < i64::from(limit) {
        return Ok(true);
    }
    let due: Vec<ProposalRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{PROPOSAL_COLUMNS} WHERE p.bottle_id = $1 AND p.status = 'pending' \
         AND p.expires_at IS NOT NULL AND p.expires_at <= $2"
    )))
    .bind(bottle_id.get())
    .bind(now.as_str())
    .fetch_all(&mut *conn)
    .await?;
    if due.is_empty() {
        return Ok(false);
    }
    for row in due {
        let p = row.at(now)?;
        expire_in(conn, now, &p).await?;
        tracing::info!(bottle = %p.bottle, proposal = %p.id, "proposal expired");
    }
    Ok(pending_count(conn, bottle_id).await? < i64::from(limit))
}

async fn pending_count(conn: &mut AnyConnection, bottle_id: BottleId) -> StoreResult<i64> {
    Ok(
        sqlx::query_scalar("SELECT pending_count FROM bottles WHERE id = $1")
            .bind(bottle_id.get())
            .fetch_one(&mut *conn)
            .await?,
    )
}
