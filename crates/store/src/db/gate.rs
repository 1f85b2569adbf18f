//! The git gate's question, asked for a whole push in one transaction: is each ref update
//! covered (a one-shot approval of exactly its (ref, old, new) not used yet, or a standing
//! `git-push` grant for fast-forwards and creations)? If all are, the one-shot approvals
//! are used; if not, a proposal is filed (or found) for each update that is not.

use serde_json::{Value, json};
use sqlx::AnyConnection;
use tracing::instrument;

use super::bottles::live_bottle_by_slug;
use super::diffs::record_diff;
use super::proposals::{Filing, prepare, propose_in};
use super::rows::{GRANT_COLUMNS, GrantRow, PROPOSAL_COLUMNS, ProposalRow};
use super::trail::{NewEvent, actor_bottle, record, record_delivered};
use super::{Backend, Store};
use crate::change;
use crate::error::{StoreError, StoreResult};
use crate::model::{
    Bottle, BottleId, EventKind, GateRef, GateVerdict, Grant, Kind, NewProposal, Proposal,
    Proposed, RefUpdate, Status, Timestamp,
};

/// The actor of what the gate does: using an approval for a push.
pub(super) const GATE: &str = "system:gate";

impl Store {
    /// Decides one push of bottle `slug` to the upstream `remote` the gate stands for. All
    /// or nothing: accepted only when every update is covered, and only then are the
    /// one-shot approvals used (each proposal marked used, archived if the agent had not
    /// polled it, and a `delivered` event by `system:gate`). Otherwise nothing is used and
    /// each uncovered update is filed like any proposal of the bottle (identical undecided
    /// ones count a hit, a rejection within the cooldown answers at once). The rules in
    /// force decide each filed update as they decide any proposal: an update a rule approves
    /// counts as covered in this same push, one a rule rejects refuses it with the rule's
    /// note. An invalid update refuses the whole push and writes nothing.
    #[instrument(skip(self, updates), fields(updates = updates.len()), err)]
    pub async fn gate_push(
        &self,
        slug: &str,
        remote: &str,
        updates: Vec<RefUpdate>,
    ) -> StoreResult<GateVerdict> {
        let mut w = self.write().await?;
        let now = Timestamp::now();
        let bottle = live_bottle_by_slug(w.conn(), &self.inner.host, slug)
            .await?
            .ok_or_else(|| StoreError::BottleNotFound(slug.into()))?;
        let mut items = Vec::with_capacity(updates.len());
        for u in updates {
            let change = change::normalise(
                Kind::GitPush,
                &json!({ "remote": remote, "ref": u.reference, "old": u.old, "new": u.new,
                         "summary": u.summary }),
            )?;
            let covered = covered(self.backend(), w.conn(), bottle.id, &change, &now).await?;
            items.push((change, u.justification, covered, u.diff));
        }
        // Each uncovered update is filed first: a rule may approve it, covering it.
        let rules = self.in_force(w.conn()).await?;
        let limits = self.limits_in(w.conn()).await?;
        let filing = Filing {
            limits: &limits,
            rules: rules.as_deref(),
            deliver: false,
        };
        let mut decided = Vec::with_capacity(items.len());
        for (change, justification, covered, diff) in items {
            decided.push(match covered {
                Some(c) => (change, c, true),
                None => {
                    let item = prepare(NewProposal {
                        bottle_id: bottle.id,
                        kind: Kind::GitPush,
                        change: change.clone(),
                        justification,
                        quorum: None,
                    })?;
                    match propose_in(w.conn(), &filing, item, &now).await? {
                        Ok(proposed) => {
                            if let (
                                Proposed::Created(p) | Proposed::Repeated(p) | Proposed::Ruled(p),
                                Some(diff),
                            ) = (&proposed, &diff)
                            {
                                record_diff(w.conn(), &p.id, diff, &now).await?;
                            }
                            match proposed {
                                Proposed::Ruled(p) if p.status == Status::Approved => {
                                    (change, GateRef::Approved(p), true)
                                }
                                proposed => (change, GateRef::Proposed(proposed), false),
                            }
                        }
                        Err(e @ StoreError::PendingCapReached { .. }) => {
                            (change, GateRef::Refused(e.to_string()), false)
                        }
                        Err(e) => return Err(e),
                    }
                }
            });
        }
        let accepted = decided.iter().all(|(_, _, covered)| *covered);
        let mut refs = Vec::with_capacity(decided.len());
        for (change, r, _) in decided {
            refs.push(match r {
                GateRef::Approved(p) if accepted => {
                    let p = use_approval(w.conn(), p, &now).await?;
                    record_accepted(w.conn(), &now, &bottle, &change, Cover::Approval(&p)).await?;
                    GateRef::Approved(p)
                }
                GateRef::Granted(g) if accepted => {
                    record_accepted(w.conn(), &now, &bottle, &change, Cover::Grant(&g)).await?;
                    GateRef::Granted(g)
                }
                other => other,
            });
        }
        w.commit().await?;
        for r in &refs {
            match r {
                GateRef::Approved(p) => {
                    tracing::info!(bottle = %p.bottle, proposal = %p.id, "approval used by the gate")
                }
                GateRef::Granted(g) => {
                    tracing::info!(bottle = %g.bottle, grant = %g.id, "push covered by a grant")
                }
                GateRef::Proposed(p) => {
                    let p = p.proposal();
                    tracing::info!(bottle = %p.bottle, proposal = %p.id, hits = p.hits, "push needs a decision")
                }
                GateRef::Refused(why) => tracing::info!(bottle = slug, why, "push refused"),
            }
        }
        Ok(GateVerdict { accepted, refs })
    }
}

fn text<'a>(change: &'a Value, field: &str) -> &'a str {
    change.get(field).and_then(Value::as_str).unwrap_or("")
}

/// What covers one normalised gate change, if anything: a one-shot approval first (it is
/// exact), else a standing grant when the update is neither a force push nor a deletion.
async fn covered(
    backend: Backend,
    conn: &mut AnyConnection,
    bottle_id: BottleId,
    change: &Value,
    now: &Timestamp,
) -> StoreResult<Option<GateRef>> {
    // An approval counts while its grant is in force: a revoked or expired one covers nothing.
    let field = |f| backend.json_text("p.decision_change", f);
    let row: Option<ProposalRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{PROPOSAL_COLUMNS} WHERE p.bottle_id = $1 AND p.kind = 'git-push' \
         AND p.status IN ('approved', 'modified') AND p.gate_used_at IS NULL \
         AND g.ended_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > $2) \
         AND {} = $3 AND {} = $4 AND {} = $5 AND {} = $6 \
         ORDER BY p.decided_at LIMIT 1",
        field("remote"),
        field("ref"),
        field("old"),
        field("new"),
    )))
    .bind(bottle_id.get())
    .bind(now.as_str())
    .bind(text(change, "remote"))
    .bind(text(change, "ref"))
    .bind(text(change, "old"))
    .bind(text(change, "new"))
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(row) = row {
        return Ok(Some(GateRef::Approved(row.at(now)?)));
    }
    let summary = &change["summary"];
    if summary["force"] == true || summary["delete"] == true {
        return Ok(None);
    }
    // Standing grants carry no `new`: they came from `propose-git-push`, not from a push.
    let grants: Vec<GrantRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{GRANT_COLUMNS} WHERE g.bottle_id = $1 AND g.kind = 'git-push' AND g.ended_at IS NULL \
         AND (g.expires_at IS NULL OR g.expires_at > $2) \
         AND {} IS NULL AND {} = $3 ORDER BY g.created_at",
        backend.json_text("g.change", "new"),
        backend.json_text("g.change", "remote"),
    )))
    .bind(bottle_id.get())
    .bind(now.as_str())
    .bind(text(change, "remote"))
    .fetch_all(&mut *conn)
    .await?;
    for row in grants {
        let grant = Grant::try_from(row)?;
        if change::ref_covers(text(&grant.change, "ref"), text(change, "ref")) {
            return Ok(Some(GateRef::Granted(grant)));
        }
    }
    Ok(None)
}

/// Uses a one-shot approval: marks it used (once: the guard is `gate_used_at IS NULL`),
/// archives it if the agent had not polled it, and records the use as `delivered`.
async fn use_approval(
    conn: &mut AnyConnection,
    mut p: Proposal,
    now: &Timestamp,
) -> StoreResult<Proposal> {
    sqlx::query(
        "UPDATE proposals SET gate_used_at = $1, archived_at = COALESCE(archived_at, $1) \
         WHERE id = $2 AND gate_used_at IS NULL",
    )
    .bind(now.as_str())
    .bind(p.id.as_str())
    .execute(&mut *conn)
    .await?;
    record_delivered(conn, now, &p, GATE).await?;
    p.archived_at.get_or_insert_with(|| now.clone());
    Ok(p)
}

/// What let an accepted update through.
enum Cover<'a> {
    Approval(&'a Proposal),
    Grant(&'a Grant),
}

/// Records an accepted update: `push-accepted` (the update as its change; the note names
/// what covered it and the content flags), and for a standing grant `grant-used`, so the
/// grant's last use in `policy` is this push.
async fn record_accepted(
    conn: &mut AnyConnection,
    now: &Timestamp,
    bottle: &Bottle,
    change: &Value,
    cover: Cover<'_>,
) -> StoreResult<()> {
    let actor = actor_bottle(&bottle.slug);
    let flags = change::flags(Kind::GitPush, change);
    let (what, proposal_id, grant_id) = match cover {
        Cover::Approval(p) => (
            format!("approval {}", p.id),
            p.id.to_string(),
            p.decision
                .as_ref()
                .and_then(|d| d.grant_id.as_ref())
                .map(ToString::to_string),
        ),
        Cover::Grant(g) => (
            format!("grant {}", g.id),
            g.proposal_id.to_string(),
            Some(g.id.to_string()),
        ),
    };
    let mut note = format!("accepted by {what}");
    if !flags.is_empty() {
        let names: Vec<&str> = flags.iter().map(|f| f.as_str()).collect();
        note.push_str(&format!("; flags: {}", names.join(", ")));
    }
    let json = change.to_string();
    let event = |kind, note| NewEvent {
        bottle_id: Some(bottle.id),
        proposal_id: Some(&proposal_id),
        grant_id: grant_id.as_deref(),
        kind: Some(Kind::GitPush),
        change: Some(&json),
        note,
        ..NewEvent::new(kind, &actor)
    };
    record(conn, now, event(EventKind::PushAccepted, Some(&note))).await?;
    if let Cover::Grant(_) = cover {
        let reference = format!("{} {}", text(change, "ref"), text(change, "new"));
        record(conn, now, event(EventKind::GrantUsed, Some(&reference))).await?;
    }
    Ok(())
}
