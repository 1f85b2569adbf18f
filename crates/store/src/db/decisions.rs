//! What happens to a filed proposal: the operator's decision (with its grant), delivery of
//! the outcome to the agent (exactly once), the agent's withdrawal, and the expiry sweep.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;
use sqlx::AnyConnection;
use tracing::instrument;

use super::Store;
use super::bottles::live_generation;
use super::fresh::Check;
use super::proposals::{expire_in, open_proposal_of, resolve_id_for};
use super::quorum::{self, Counted};
use super::records::{insert_grant, load_proposal};
use super::rows::{self, PROPOSAL_COLUMNS, ProposalRow};
use super::trail::{NewEvent, SYSTEM, actor_bottle, actor_of, record, record_delivered};
use crate::change;
use crate::error::{StoreError, StoreResult};
use crate::model::{
    Actor, BottleId, Delivery, EventKind, GrantId, Kind, Proposal, Status, Swept, Timestamp,
    Verdict,
};

impl Store {
    /// Decides a pending proposal (id or unique id prefix). Approve and modify also record a
    /// grant, lasting `grant_for` or until revoked. Anything but a pending proposal is
    /// refused and nothing changes. `by` must be an approver or admin
    /// ([`StoreError::Forbidden`]) and see the proposal's bottle (otherwise the proposal
    /// is [`StoreError::ProposalNotFound`], as if it did not exist), checked in the same
    /// transaction as the decision.
    ///
    /// A proposal whose [`Quorum`](crate::model::Quorum) needs more than one approval
    /// counts an approve (or modify, which replaces the change under approval and starts the
    /// count again) as `approval-added`, and is returned still pending until the last
    /// approval needed decides it; the same operator approving the same change again is
    /// [`StoreError::AlreadyApproved`]. One reject decides it at once.
    #[instrument(skip(self, verdict, by), fields(verdict = verdict_name(&verdict), operator = %by.name, via = %by.via), err)]
    pub async fn decide(
        &self,
        id: &str,
        verdict: Verdict,
        by: &Actor,
        note: Option<&str>,
        grant_for: Option<Duration>,
    ) -> StoreResult<Proposal> {
        let note = note.map(str::trim).filter(|n| !n.is_empty());
        if !by.may_decide() {
            return Err(StoreError::forbidden(by, "decide proposals"));
        }
        let mut w = self.write().await?;
        let now = Timestamp::now();
        let given = id;
        let id = resolve_id_for(w.conn(), id, by).await?;
        let p = load_proposal(w.conn(), &id, &now)
            .await?
            .filter(|p| by.sees(&p.bottle))
            .ok_or_else(|| StoreError::ProposalNotFound(given.to_string()))?;
        if p.status != Status::Pending {
            return Err(not_pending(id, &p));
        }
        if grant_for.is_some() && p.is_gate_push() && verdict != Verdict::Reject {
            return Err(crate::change::invalid(
                "for",
                "an approved gate push lets that one push through once, so it takes no \
                 duration; a standing git-push grant comes from propose-git-push",
            ));
        }
        let (status, event, granted) = match &verdict {
            Verdict::Approve | Verdict::Modify(_) if p.quorum.is_counted() => {
                match quorum::count(w.conn(), &p, &verdict, by, note, &now).await? {
                    Counted::Short => {
                        let counted = load_proposal(w.conn(), &id, &now)
                            .await?
                            .ok_or_else(|| StoreError::ProposalNotFound(id.clone()))?;
                        w.commit().await?;
                        tracing::info!(bottle = %counted.bottle, proposal = %id, given = counted.quorum.given, needed = counted.quorum.needed, operator = %by.name, via = %by.via, "approval counted");
                        return Ok(counted);
                    }
                    // The last approval: the change differs from the proposed one after a
                    // modify, and is then decided as modified.
                    Counted::Reached(change) if change == p.change => {
                        (Status::Approved, EventKind::Approved, Some(change))
                    }
                    Counted::Reached(change) => {
                        (Status::Modified, EventKind::Modified, Some(change))
                    }
                }
            }
            Verdict::Approve => (
                Status::Approved,
                EventKind::Approved,
                Some(p.change.clone()),
            ),
            Verdict::Modify(patch) => {
                let merged = change::merge(&p.change, patch);
                (
                    Status::Modified,
                    EventKind::Modified,
                    Some(change::normalise(p.kind, &merged)?),
                )
            }
            Verdict::Reject => (Status::Rejected, EventKind::Rejected, None),
        };
        let granted_text = granted.as_ref().map(Value::to_string);
        let actor = actor_of(by);
        let operator = by.name.as_str();
        let updated = sqlx::query(
            "UPDATE proposals SET status = $1, decided_at = $2, decided_by = $3, decided_via = $4, \
             decision_note = $5, decision_change = $6 WHERE id = $7 AND status = 'pending'",
        )
        .bind(status.as_str())
        .bind(now.as_str())
        .bind(operator)
        .bind(by.via.as_str())
        .bind(note)
        .bind(granted_text.as_deref())
        .bind(&id)
        .execute(w.conn())
        .await?;
        debug_assert_eq!(updated.rows_affected(), 1);
        let grant_id = match &granted_text {
            Some(change) => {
                Some(grant_for_decision(w.conn(), &p, change, operator, &now, grant_for).await?)
            }
            None => None,
        };
        record(
            w.conn(),
            &now,
            NewEvent {
                bottle_id: Some(p.bottle_id),
                proposal_id: Some(&id),
                grant_id: grant_id.as_deref(),
                kind: Some(p.kind),
                change: granted_text.as_deref(),
                note,
                via: Some(by.via),
                ..NewEvent::new(event, &actor)
            },
        )
        .await?;
        let decided = load_proposal(w.conn(), &id, &now)
            .await?
            .ok_or_else(|| StoreError::ProposalNotFound(id.clone()))?;
        w.commit().await?;
        tracing::info!(bottle = %decided.bottle, proposal = %id, status = %status, operator, via = %by.via, "proposal decided");
        Ok(decided)
    }

    /// The agent's poll: a decision is returned and the proposal archived in one
    /// transaction, so of any number of concurrent polls exactly one gets it. An undecided
    /// proposal is returned as pending without taking the write lock, from memory when
    /// nothing was committed, by any process, since it was last read pending (the SQLite
    /// data version or the PostgreSQL snapshot says so: [`fresh`](super::fresh)).
    ///
    /// Refused with [`StoreError::BottleGone`] once the caller's generation was removed, so
    /// a new bottle on the same address is never handed the old one's decisions.
    #[instrument(skip(self), err)]
    pub async fn take_decision(&self, bottle_id: BottleId, id: &str) -> StoreResult<Delivery> {
        let now = Timestamp::now();
        // The data version (SQLite) or snapshot (PostgreSQL), read after the poll arrived and
        // before the peek: unchanged since a pending answer was read means nothing was
        // committed since, so that answer is the peek's. Not once the path names another
        // file (the pool may reopen it).
        let fresh = (!self.inner.replaced.load(Ordering::Relaxed))
            .then_some(self.inner.fresh.as_ref())
            .flatten();
        let check = match fresh {
            Some(f) => Some(f.check(bottle_id, id, &now).await),
            None => None,
        };
        let version = match check {
            Some(Check::Pending(p)) => return Ok(Delivery::Pending(p)),
            Some(Check::Peek(version)) => Some(version),
            Some(Check::Unread) | None => None,
        };
        // The peek is one read, without the write lock or a transaction. A pending proposal
        // found here proves its generation live: removing a bottle withdraws its undecided
        // proposals in the same transaction, so a removed generation has none. Only when
        // nothing is found is the generation looked up, to tell a removed bottle (which
        // the server re-attributes) from an unknown id. A decided proposal is checked
        // again below, inside the write transaction that delivers it.
        let mut conn = self.inner.pool.acquire().await?;
        let peek = open_proposal_of(&mut conn, bottle_id, id, &now).await?;
        match peek {
            None => {
                live_generation(&mut conn, bottle_id).await?;
                return Ok(Delivery::Unknown);
            }
            Some(p) if p.status == Status::Pending => {
                if let (Some(fresh), Some(version)) = (fresh, version) {
                    fresh.remember(version, bottle_id, id, &p);
                }
                return Ok(Delivery::Pending(p));
            }
            Some(_) => {}
        }
        drop(conn);
        let mut w = self.write().await?;
        let now = Timestamp::now();
        live_generation(w.conn(), bottle_id).await?;
        let d = deliver_in(w.conn(), bottle_id, id, &now).await?;
        w.commit().await?;
        log_delivery(&d);
        Ok(d)
    }

    /// [`Store::take_decision`] for many proposals in one write transaction: the server's
    /// watcher delivers every decision a feed read names at once, so a burst of decisions
    /// costs one commit instead of one each. Results are in the order asked; an item of a
    /// removed generation is its own [`StoreError::BottleGone`], the outer error means
    /// nothing was delivered.
    #[instrument(skip_all, fields(items = items.len()), err)]
    pub async fn take_decisions(
        &self,
        items: &[(BottleId, impl AsRef<str>)],
    ) -> StoreResult<Vec<StoreResult<Delivery>>> {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let mut w = self.write().await?;
        let now = Timestamp::now();
        let mut out = Vec::with_capacity(items.len());
        for (bottle_id, id) in items {
            out.push(match live_generation(w.conn(), *bottle_id).await {
                Ok(_) => Ok(deliver_in(w.conn(), *bottle_id, id.as_ref(), &now).await?),
                Err(e @ (StoreError::BottleGone(_) | StoreError::BottleNotFound(_))) => Err(e),
                Err(e) => return Err(e),
            });
        }
        w.commit().await?;
        out.iter().flatten().for_each(log_delivery);
        Ok(out)
    }

    /// The generation's proposal `id` if it was withdrawn (by the agent, or because the
    /// bottle was removed): what a call that was waiting on it is told. A read for the
    /// waiting call's own answer, so a removed generation may still read it.
    pub async fn withdrawn_proposal(
        &self,
        bottle_id: BottleId,
        id: &str,
    ) -> StoreResult<Option<Proposal>> {
        let now = Timestamp::now();
        let mut conn = self.inner.pool.acquire().await?;
        Ok(load_proposal(&mut conn, id, &now)
            .await?
            .filter(|p| p.bottle_id == bottle_id && p.status == Status::Withdrawn))
    }

    /// The agent withdraws its own undecided proposal; it is archived at once.
    #[instrument(skip(self), err)]
    pub async fn withdraw(&self, bottle_id: BottleId, id: &str) -> StoreResult<Proposal> {
        let mut w = self.write().await?;
        let now = Timestamp::now();
        live_generation(w.conn(), bottle_id).await?;
        let p = withdraw_in(w.conn(), bottle_id, id, &now).await?;
        w.commit().await?;
        tracing::info!(bottle = %p.bottle, proposal = %id, "proposal withdrawn");
        Ok(p)
    }

    /// Expires undecided proposals and grants past their time, recording an event for each.
    /// Takes the write lock only when there is something to expire; the counts are of what
    /// this transaction expired (a concurrent sweep or delivery may have expired the rest).
    #[instrument(skip(self), err)]
    pub async fn sweep(&self) -> StoreResult<Swept> {
        let now = Timestamp::now();
        let due: i64 = sqlx::query_scalar(
            "SELECT (SELECT COUNT(*) FROM proposals WHERE status = 'pending' AND archived_at IS NULL \
               AND expires_at <= $1) \
             + (SELECT COUNT(*) FROM grants WHERE ended_at IS NULL AND expires_at <= $1)",
        )
        .bind(now.as_str())
        .fetch_one(&self.inner.pool)
        .await?;
        if due == 0 {
            return Ok(Swept::default());
        }
        let mut w = self.write().await?;
        let now = Timestamp::now();
        let rows: Vec<ProposalRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{PROPOSAL_COLUMNS} WHERE p.status = 'pending' AND p.archived_at IS NULL AND p.expires_at <= $1"
        )))
        .bind(now.as_str())
        .fetch_all(w.conn())
        .await?;
        let mut expired_proposals = 0u64;
        for r in rows {
            let p = r.at(&now)?;
            if expire_in(w.conn(), &now, &p).await? {
                expired_proposals += 1;
                tracing::info!(bottle = %p.bottle, proposal = %p.id, "proposal expired");
            }
        }
        let grants: Vec<(String, i64, String, String, String)> = sqlx::query_as(
            "UPDATE grants SET ended_at = expires_at, end_reason = 'expired', ended_by = 'system' \
             WHERE ended_at IS NULL AND expires_at <= $1 \
             RETURNING id, bottle_id, proposal_id, kind, change",
        )
        .bind(now.as_str())
        .fetch_all(w.conn())
        .await?;
        for (id, bottle_id, proposal_id, kind, change) in &grants {
            let kind: Kind = rows::word("grants", id, "kind", kind)?;
            record(
                w.conn(),
                &now,
                NewEvent {
                    bottle_id: Some(BottleId::from_row(*bottle_id)),
                    proposal_id: Some(proposal_id),
                    grant_id: Some(id),
                    kind: Some(kind),
                    change: Some(change),
                    ..NewEvent::new(EventKind::GrantExpired, SYSTEM)
                },
            )
            .await?;
            tracing::info!(grant = %id, proposal = %proposal_id, "grant expired");
        }
        w.commit().await?;
        Ok(Swept {
            expired_proposals,
            expired_grants: grants.len() as u64,
        })
    }
}

/// Withdraws the bottle's own undecided proposal `id` (archived at once, `withdrawn` event,
/// actor the bottle); anything but an open pending proposal is refused.
pub(super) async fn withdraw_in(
    conn: &mut AnyConnection,
    bottle_id: BottleId,
    id: &str,
    now: &Timestamp,
) -> StoreResult<Proposal> {
    let mut p = open_proposal_of(conn, bottle_id, id, now)
        .await?
        .ok_or_else(|| StoreError::ProposalNotFound(id.into()))?;
    if p.status != Status::Pending {
        return Err(not_pending(id.into(), &p));
    }
    sqlx::query(
        "UPDATE proposals SET status = 'withdrawn', archived_at = $1 WHERE id = $2 AND status = 'pending'",
    )
    .bind(now.as_str())
    .bind(id)
    .execute(&mut *conn)
    .await?;
    let change_text = p.change.to_string();
    record(
        conn,
        now,
        NewEvent {
            bottle_id: Some(bottle_id),
            proposal_id: Some(id),
            kind: Some(p.kind),
            change: Some(&change_text),
            ..NewEvent::new(EventKind::Withdrawn, &actor_bottle(&p.bottle))
        },
    )
    .await?;
    p.status = Status::Withdrawn;
    p.archived_at = Some(now.clone());
    Ok(p)
}

/// Refuses an action `by`'s role does not include.
fn not_pending(id: String, p: &Proposal) -> StoreError {
    StoreError::NotPending {
        id,
        status: p.status,
        decided_by: p.decision.as_ref().map(|d| d.decided_by.clone()),
        decided_at: p.decision.as_ref().map(|d| d.decided_at.clone()),
    }
}

/// The grant an approval or modification stands on: the bottle's grant in force for exactly
/// this change, kept, its end moved to the later of the two (`None`, until revoked, is the
/// latest) and the proposal pointed at it; else a new grant. A gate push's approval is one
/// push, never merged into another.
async fn grant_for_decision(
    conn: &mut AnyConnection,
    p: &Proposal,
    change: &str,
    operator: &str,
    now: &Timestamp,
    grant_for: Option<Duration>,
) -> StoreResult<GrantId> {
    if !p.is_gate_push() {
        let kept: Option<(String, Option<String>)> = sqlx::query_as(
            "SELECT id, expires_at FROM grants WHERE bottle_id = $1 AND kind = $2 \
             AND change = $3 AND ended_at IS NULL AND (expires_at IS NULL OR expires_at > $4) \
             ORDER BY created_at LIMIT 1",
        )
        .bind(p.bottle_id.get())
        .bind(p.kind.as_str())
        .bind(change)
        .bind(now.as_str())
        .fetch_optional(&mut *conn)
        .await?;
        if let Some((id, ends)) = kept {
            let asked = grant_for.map(|d| Timestamp::after(d).as_str().to_owned());
            let later = match (ends, asked) {
                (Some(a), Some(b)) => Some(a.max(b)),
                _ => None,
            };
            sqlx::query("UPDATE grants SET expires_at = $1 WHERE id = $2")
                .bind(later.as_deref())
                .bind(&id)
                .execute(&mut *conn)
                .await?;
            sqlx::query("UPDATE proposals SET kept_grant_id = $1 WHERE id = $2")
                .bind(&id)
                .bind(p.id.as_str())
                .execute(&mut *conn)
                .await?;
            return Ok(GrantId::from_row(id));
        }
    }
    insert_grant(conn, p, change, operator, now, grant_for).await
}

/// Inside a write transaction: delivers a decided (or expired) open proposal of the bottle
/// (archives it and records `delivered`); a pending one is returned as is, anything else is
/// `Unknown`.
pub(super) async fn deliver_in(
    conn: &mut AnyConnection,
    bottle_id: BottleId,
    id: &str,
    now: &Timestamp,
) -> StoreResult<Delivery> {
    let Some(mut p) = open_proposal_of(conn, bottle_id, id, now).await? else {
        return Ok(Delivery::Unknown);
    };
    if p.status == Status::Pending {
        return Ok(Delivery::Pending(p));
    }
    if p.status == Status::Expired {
        // Materialise an expiry the sweep has not reached yet.
        expire_in(conn, now, &p).await?;
    }
    sqlx::query("UPDATE proposals SET archived_at = $1 WHERE id = $2 AND archived_at IS NULL")
        .bind(now.as_str())
        .bind(id)
        .execute(&mut *conn)
        .await?;
    record_delivered(conn, now, &p, &actor_bottle(&p.bottle)).await?;
    p.archived_at = Some(now.clone());
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

fn verdict_name(v: &Verdict) -> &'static str {
    match v {
        Verdict::Approve => "approve",
        Verdict::Modify(_) => "modify",
        Verdict::Reject => "reject",
    }
}
