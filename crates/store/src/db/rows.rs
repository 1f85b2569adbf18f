//! Private row types and their fallible conversion into the domain types. A value this build
//! cannot read is [`StoreError::Corrupt`] naming the table and the row, never a default.

use std::str::FromStr;

use serde_json::Value;
use sqlx::FromRow;

use crate::change;
use crate::error::{StoreError, StoreResult};
use crate::model::{
    Bottle, BottleId, Decision, EndReason, Event, EventKind, Flag, Grant, GrantId, Kind, Operator,
    Proposal, ProposalId, Quorum, Status, Task, Timestamp, UnknownName, Via,
};

pub(super) const PROPOSAL_COLUMNS: &str = "SELECT p.id, p.bottle_id, b.host, b.slug, p.kind, p.change, \
    p.justification, p.status, p.flags, p.hits, p.created_at, p.expires_at, p.decided_at, \
    p.decided_by, p.decided_via, p.decision_note, p.decision_change, p.archived_at, \
    COALESCE(g.id, gk.id) AS grant_id, \
    CASE WHEN g.id IS NULL THEN gk.expires_at ELSE g.expires_at END AS grant_expires_at, \
    p.quorum, p.approving_change, \
    CASE WHEN p.quorum > 1 THEN (SELECT COUNT(*) FROM approvals a \
        WHERE a.proposal_id = p.id AND a.round = p.approval_round) ELSE 0 END AS approvals \
    FROM proposals p JOIN bottles b ON b.id = p.bottle_id \
    LEFT JOIN grants g ON g.proposal_id = p.id \
    LEFT JOIN grants gk ON gk.id = p.kept_grant_id";

pub(super) const EVENT_COLUMNS: &str = "SELECT e.seq, e.at, e.event, e.actor, e.via, b.host, b.slug, \
    e.bottle_id, e.proposal_id, e.grant_id, e.kind, e.change, e.note \
    FROM events e LEFT JOIN bottles b ON b.id = e.bottle_id";

pub(super) const GRANT_COLUMNS: &str = "SELECT g.id, b.host, b.slug, g.proposal_id, g.kind, g.change, \
    g.granted_by, g.created_at, g.expires_at, g.ended_at, g.end_reason \
    FROM grants g JOIN bottles b ON b.id = g.bottle_id";

/// [`GRANT_COLUMNS`] plus the grant's last recorded use (`policy`): the newest `grant-used`
/// event of its proposal, through the index of each proposal's events.
pub(super) const GRANT_COLUMNS_WITH_USE: &str = "SELECT g.id, b.host, b.slug, g.proposal_id, g.kind, \
    g.change, g.granted_by, g.created_at, g.expires_at, g.ended_at, g.end_reason, \
    (SELECT e.at FROM events e WHERE e.proposal_id = g.proposal_id AND e.event = 'grant-used' \
     ORDER BY e.seq DESC LIMIT 1) AS last_used_at \
    FROM grants g JOIN bottles b ON b.id = g.bottle_id";

pub(super) const BOTTLE_COLUMNS: &str = "SELECT id, host, slug, ip, created_at FROM bottles";

/// Reads the cells of one row, naming the table and the row in any error.
struct Cells<'a> {
    table: &'static str,
    id: &'a str,
}

impl Cells<'_> {
    fn corrupt(&self, what: String) -> StoreError {
        StoreError::Corrupt {
            table: self.table,
            id: self.id.to_string(),
            what,
        }
    }

    fn parse<T: FromStr<Err = UnknownName>>(&self, column: &str, text: &str) -> StoreResult<T> {
        text.parse()
            .map_err(|e: UnknownName| self.corrupt(format!("{column}: {e}")))
    }

    fn opt_parse<T: FromStr<Err = UnknownName>>(
        &self,
        column: &str,
        text: Option<String>,
    ) -> StoreResult<Option<T>> {
        text.map(|t| self.parse(column, &t)).transpose()
    }

    fn time(&self, column: &str, text: String) -> StoreResult<Timestamp> {
        self.parse(column, &text)
    }

    fn opt_time(&self, column: &str, text: Option<String>) -> StoreResult<Option<Timestamp>> {
        text.map(|t| self.time(column, t)).transpose()
    }

    fn json(&self, column: &str, text: &str) -> StoreResult<Value> {
        serde_json::from_str(text).map_err(|e| self.corrupt(format!("{column} is not JSON: {e}")))
    }

    fn opt_json(&self, column: &str, text: Option<String>) -> StoreResult<Option<Value>> {
        text.map(|t| self.json(column, &t)).transpose()
    }
}

#[derive(FromRow)]
pub(super) struct ProposalRow {
    id: String,
    bottle_id: i64,
    host: String,
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
    decided_via: Option<String>,
    decision_note: Option<String>,
    decision_change: Option<String>,
    archived_at: Option<String>,
    grant_id: Option<String>,
    grant_expires_at: Option<String>,
    quorum: i64,
    approving_change: Option<String>,
    approvals: i64,
}

impl ProposalRow {
    /// The proposal as it reads at `now`: a pending one past its expiry is `Expired`.
    pub(super) fn at(self, now: &Timestamp) -> StoreResult<Proposal> {
        let mut p = Proposal::try_from(self)?;
        if p.status == Status::Pending && p.expires_at.as_ref().is_some_and(|e| e <= now) {
            p.status = Status::Expired;
        }
        Ok(p)
    }
}

impl TryFrom<ProposalRow> for Proposal {
    type Error = StoreError;

    /// The proposal as stored (no expiry applied).
    fn try_from(r: ProposalRow) -> StoreResult<Proposal> {
        let c = Cells {
            table: "proposals",
            id: &r.id,
        };
        let kind: Kind = c.parse("kind", &r.kind)?;
        let status: Status = c.parse("status", &r.status)?;
        let change = c.json("change", &r.change)?;
        let decision_change = c.opt_json("decision_change", r.decision_change)?;
        let approving_change = c.opt_json("approving_change", r.approving_change)?;
        let count = |column: &str, n: i64| {
            u32::try_from(n).map_err(|_| c.corrupt(format!("{column} is out of range: {n}")))
        };
        let quorum = Quorum {
            needed: count("quorum", r.quorum)?,
            given: count("approvals", r.approvals)?,
            change: approving_change,
        };
        let names: Vec<String> = serde_json::from_str(&r.flags)
            .map_err(|e| c.corrupt(format!("flags is not a JSON list of names: {e}")))?;
        let mut flags = names
            .iter()
            .map(|n| c.parse::<Flag>("flags", n))
            .collect::<StoreResult<Vec<Flag>>>()?;
        // The change a modify made: decided, or under approval toward a quorum.
        let modified = match status {
            Status::Modified => decision_change.as_ref(),
            Status::Pending => quorum.change.as_ref(),
            _ => None,
        };
        if let Some(modified) = modified {
            for f in change::modified_flags(kind, &change, modified) {
                if !flags.contains(&f) {
                    flags.push(f);
                }
            }
        }
        let decision = match (r.decided_at, r.decided_by) {
            (Some(decided_at), Some(decided_by)) => Some(Decision {
                change: decision_change,
                note: r.decision_note,
                via: via_of(&decided_by, c.opt_parse("decided_via", r.decided_via)?),
                decided_by,
                decided_at: c.time("decided_at", decided_at)?,
                grant_id: r.grant_id.map(GrantId::from_row),
                grant_expires_at: c.opt_time("grant_expires_at", r.grant_expires_at)?,
            }),
            _ => None,
        };
        let created_at = c.time("created_at", r.created_at)?;
        let expires_at = c.opt_time("expires_at", r.expires_at)?;
        let archived_at = c.opt_time("archived_at", r.archived_at)?;
        Ok(Proposal {
            id: ProposalId::from_row(r.id),
            host: r.host,
            bottle: r.slug,
            bottle_id: BottleId::from_row(r.bottle_id),
            kind,
            change,
            justification: r.justification,
            status,
            flags,
            hits: r.hits,
            created_at,
            expires_at,
            decision,
            archived_at,
            quorum,
        })
    }
}

#[derive(FromRow)]
pub(super) struct EventRow {
    seq: i64,
    at: String,
    event: String,
    actor: String,
    via: Option<String>,
    host: Option<String>,
    slug: Option<String>,
    bottle_id: Option<i64>,
    proposal_id: Option<String>,
    grant_id: Option<String>,
    kind: Option<String>,
    change: Option<String>,
    note: Option<String>,
}

impl TryFrom<EventRow> for Event {
    type Error = StoreError;

    fn try_from(r: EventRow) -> StoreResult<Event> {
        let seq = r.seq.to_string();
        let c = Cells {
            table: "events",
            id: &seq,
        };
        Ok(Event {
            seq: r.seq,
            at: c.time("at", r.at)?,
            event: c.parse::<EventKind>("event", &r.event)?,
            via: via_of(&r.actor, c.opt_parse("via", r.via)?),
            actor: r.actor,
            host: r.host,
            bottle: r.slug,
            bottle_id: r.bottle_id.map(BottleId::from_row),
            proposal_id: r.proposal_id.map(ProposalId::from_row),
            grant_id: r.grant_id.map(GrantId::from_row),
            kind: r.kind.map(|k| c.parse::<Kind>("kind", &k)).transpose()?,
            change: c.opt_json("change", r.change)?,
            note: r.note,
        })
    }
}

pub(super) const TASK_COLUMNS: &str =
    "SELECT proposal_id, bottle_id, created_at, readable_until, cancelled_at FROM tasks";

#[derive(FromRow)]
pub(super) struct TaskRow {
    proposal_id: String,
    bottle_id: i64,
    created_at: String,
    readable_until: Option<String>,
    cancelled_at: Option<String>,
}

impl TryFrom<TaskRow> for Task {
    type Error = StoreError;

    fn try_from(r: TaskRow) -> StoreResult<Task> {
        let c = Cells {
            table: "tasks",
            id: &r.proposal_id,
        };
        Ok(Task {
            created_at: c.time("created_at", r.created_at)?,
            readable_until: c.opt_time("readable_until", r.readable_until)?,
            cancelled_at: c.opt_time("cancelled_at", r.cancelled_at)?,
            bottle_id: BottleId::from_row(r.bottle_id),
            proposal_id: ProposalId::from_row(r.proposal_id),
        })
    }
}

#[derive(FromRow)]
pub(super) struct GrantRow {
    id: String,
    host: String,
    slug: String,
    proposal_id: String,
    kind: String,
    change: String,
    granted_by: String,
    created_at: String,
    expires_at: Option<String>,
    ended_at: Option<String>,
    end_reason: Option<String>,
    #[sqlx(default)]
    last_used_at: Option<String>,
}

impl TryFrom<GrantRow> for Grant {
    type Error = StoreError;

    fn try_from(r: GrantRow) -> StoreResult<Grant> {
        let c = Cells {
            table: "grants",
            id: &r.id,
        };
        Ok(Grant {
            kind: c.parse("kind", &r.kind)?,
            change: c.json("change", &r.change)?,
            created_at: c.time("created_at", r.created_at)?,
            expires_at: c.opt_time("expires_at", r.expires_at)?,
            ended_at: c.opt_time("ended_at", r.ended_at)?,
            last_used_at: c.opt_time("last_used_at", r.last_used_at)?,
            end_reason: r
                .end_reason
                .map(|e| c.parse::<EndReason>("end_reason", &e))
                .transpose()?,
            id: GrantId::from_row(r.id),
            host: r.host,
            bottle: r.slug,
            proposal_id: ProposalId::from_row(r.proposal_id),
            granted_by: r.granted_by,
        })
    }
}

#[derive(FromRow)]
pub(super) struct BottleRow {
    id: i64,
    host: String,
    slug: String,
    ip: String,
    created_at: String,
}

impl TryFrom<BottleRow> for Bottle {
    type Error = StoreError;

    fn try_from(r: BottleRow) -> StoreResult<Bottle> {
        let id = r.id.to_string();
        let c = Cells {
            table: "bottles",
            id: &id,
        };
        let ip =
            r.ip.parse()
                .map_err(|_| c.corrupt(format!("ip: {:?} is not an IP address", r.ip)))?;
        Ok(Bottle {
            id: BottleId::from_row(r.id),
            host: r.host,
            slug: r.slug,
            ip,
            created_at: c.time("created_at", r.created_at)?,
        })
    }
}

/// An operator with its last use (of a session or the token) and whether a token is live.
pub(super) const OPERATOR_COLUMNS: &str = "SELECT o.id, o.name, o.role, o.bottles, \
    o.created_at, o.created_by, \
    (SELECT MAX(t) FROM (SELECT MAX(s.last_seen_at) AS t FROM sessions s \
                         WHERE s.operator_id = o.id \
                         UNION ALL SELECT MAX(k.last_used_at) FROM api_tokens k \
                         WHERE k.operator_id = o.id) AS uses) AS last_seen_at, \
    CASE WHEN EXISTS (SELECT 1 FROM api_tokens k WHERE k.operator_id = o.id \
                      AND k.ended_at IS NULL) THEN 1 ELSE 0 END AS has_token \
    FROM operators o";

#[derive(FromRow)]
pub(super) struct OperatorRow {
    pub(super) id: i64,
    name: String,
    role: String,
    bottles: String,
    created_at: String,
    created_by: String,
    last_seen_at: Option<String>,
    /// 1 or 0 (an integer on both backends: sqlx's Any driver reads no SQLite integer as bool).
    has_token: i32,
}

impl TryFrom<OperatorRow> for Operator {
    type Error = StoreError;

    fn try_from(r: OperatorRow) -> StoreResult<Operator> {
        let id = r.id.to_string();
        let c = Cells {
            table: "operators",
            id: &id,
        };
        let bottles: Vec<String> = serde_json::from_str(&r.bottles)
            .map_err(|e| c.corrupt(format!("bottles is not a JSON list of globs: {e}")))?;
        Ok(Operator {
            role: c.parse("role", &r.role)?,
            created_at: c.time("created_at", r.created_at)?,
            last_seen_at: c.opt_time("last_seen_at", r.last_seen_at)?,
            name: r.name,
            bottles,
            created_by: r.created_by,
            has_token: r.has_token != 0,
        })
    }
}

/// Converts every row, failing on the first corrupt one.
pub(super) fn all<R, T>(rows: Vec<R>) -> StoreResult<Vec<T>>
where
    T: TryFrom<R, Error = StoreError>,
{
    rows.into_iter().map(T::try_from).collect()
}

/// Parses one stored time read outside a row type.
pub(super) fn stored_time(
    table: &'static str,
    id: &str,
    column: &str,
    text: String,
) -> StoreResult<Timestamp> {
    Cells { table, id }.time(column, text)
}

/// Parses one vocabulary cell read outside a row type (a `RETURNING` list).
pub(super) fn word<T: FromStr<Err = UnknownName>>(
    table: &'static str,
    id: &str,
    column: &str,
    text: &str,
) -> StoreResult<T> {
    Cells { table, id }.parse(column, text)
}

/// Through what a decision or event was made: the stored column, or `rules` for a rule's
/// (actor `rules:ID`). The `via` columns' CHECK lists predate rules, so a rule's rows store
/// NULL there and the actor says it (no operator name holds a `:`).
fn via_of(actor: &str, stored: Option<Via>) -> Option<Via> {
    stored.or_else(|| actor.starts_with(RULES_ACTOR).then_some(Via::Rules))
}

/// The prefix of a rule's actor, `rules:ID` (`db/rules.rs`).
pub(super) const RULES_ACTOR: &str = "rules:";
