//! The `--json` documents: the CLI's own views of store types, so the field names scripts
//! rely on are chosen here, once, and documented in OPERATOR.md; an event is the store's
//! one event document ([`EventDoc`]), as hooks and the console's API read it. Every key is always
//! present (`null` when empty); one document per call (`list --watch` prints JSON Lines).

use serde::Serialize;
use serde_json::Value;
use supervise_store::{
    Bottle, EventDoc, Flag, Grant, GrantId, Operator, Proposal, ProposalId, Role, Timestamp, Via,
};

#[derive(Debug, Serialize)]
pub struct ProposalView {
    /// The full proposal id (what SPEC's tools call `proposal_id`).
    pub id: ProposalId,
    /// The bottle's host (`--host-id` of the server it belongs to).
    pub host: String,
    pub bottle: String,
    pub kind: &'static str,
    pub status: &'static str,
    /// The normalised change the agent asked for.
    pub change: Value,
    pub justification: String,
    /// Risk flags, short names, empty when none.
    pub flags: Vec<Flag>,
    /// Times the change was asked for (1 + repeats).
    pub hits: i64,
    pub created_at: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub decision: Option<DecisionView>,
    pub archived_at: Option<Timestamp>,
    /// Present when more than one approval is needed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quorum: Option<QuorumView>,
}

/// The approvals a proposal needs from distinct operators and those counted so far.
#[derive(Debug, Serialize)]
pub struct QuorumView {
    pub needed: u32,
    /// Approvals counted for the change under approval.
    pub given: u32,
    /// The change under approval when a modify replaced the proposed one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Value>,
}

#[derive(Debug, Serialize)]
pub struct DecisionView {
    /// The change granted; `null` when rejected.
    pub change: Option<Value>,
    pub note: Option<String>,
    pub decided_by: String,
    /// `cli`, `console` or `gate`; `null` for a decision recorded before via was kept.
    pub via: Option<Via>,
    pub decided_at: Timestamp,
}

impl From<&Proposal> for ProposalView {
    fn from(p: &Proposal) -> Self {
        ProposalView {
            id: p.id.clone(),
            host: p.host.clone(),
            bottle: p.bottle.clone(),
            kind: p.kind.as_str(),
            status: p.status.as_str(),
            change: p.change.clone(),
            justification: p.justification.clone(),
            flags: p.flags.clone(),
            hits: p.hits,
            created_at: p.created_at.clone(),
            expires_at: p.expires_at.clone(),
            decision: p.decision.as_ref().map(|d| DecisionView {
                change: d.change.clone(),
                note: d.note.clone(),
                decided_by: d.decided_by.clone(),
                via: d.via,
                decided_at: d.decided_at.clone(),
            }),
            archived_at: p.archived_at.clone(),
            quorum: p.quorum.is_counted().then(|| QuorumView {
                needed: p.quorum.needed,
                given: p.quorum.given,
                change: p.quorum.change.clone(),
            }),
        }
    }
}

/// `list --json`.
#[derive(Debug, Serialize)]
pub struct ProposalList {
    pub proposals: Vec<ProposalView>,
}

/// `show --json`: the proposal's fields plus its history.
#[derive(Debug, Serialize)]
pub struct ProposalDetail {
    #[serde(flatten)]
    pub proposal: ProposalView,
    /// The store's one event document each ([`EventDoc`]).
    pub events: Vec<EventDoc>,
    /// For a push the gate filed: what it contains (`commits`, `files`, `truncated`,
    /// `findings`); `null` otherwise.
    pub diff: Option<supervise_store::PushDiff>,
    /// An egress proposal's context (grants in force, decisions on the destination,
    /// refusals, `--resolve`'s addresses); `null` for other kinds.
    pub context: Option<ContextDoc>,
}

/// `audit --json`.
#[derive(Debug, Serialize)]
pub struct EventList {
    pub events: Vec<EventDoc>,
}

#[derive(Debug, Serialize)]
pub struct GrantView {
    pub id: GrantId,
    pub bottle: String,
    pub proposal_id: ProposalId,
    pub kind: &'static str,
    pub change: Value,
    pub granted_by: String,
    pub created_at: Timestamp,
    /// `null`: until revoked.
    pub expires_at: Option<Timestamp>,
    /// Whole seconds left; `null` when the grant lasts until revoked.
    pub seconds_left: Option<i64>,
    /// The last `grant-used` the proxy's helper recorded (`squid-acl --record-use`);
    /// `null`: none recorded.
    pub last_used_at: Option<Timestamp>,
}

impl From<&Grant> for GrantView {
    fn from(g: &Grant) -> Self {
        GrantView {
            id: g.id.clone(),
            bottle: g.bottle.clone(),
            proposal_id: g.proposal_id.clone(),
            kind: g.kind.as_str(),
            change: g.change.clone(),
            granted_by: g.granted_by.clone(),
            created_at: g.created_at.clone(),
            expires_at: g.expires_at.clone(),
            seconds_left: g.expires_at.as_ref().map(|t| t.seconds_until().max(0)),
            last_used_at: g.last_used_at.clone(),
        }
    }
}

/// `policy --json`.
#[derive(Debug, Serialize)]
pub struct GrantList {
    pub bottle: String,
    pub grants: Vec<GrantView>,
}

/// One bottle of `policy --all --json`: where its connections come from and what they may
/// reach.
#[derive(Debug, Serialize)]
pub struct BottlePolicy {
    pub host: String,
    pub slug: String,
    pub ip: String,
    pub grants: Vec<GrantView>,
}

/// `policy --all --json`: every live bottle, with no grants as an empty list.
#[derive(Debug, Serialize)]
pub struct PolicyAll {
    pub bottles: Vec<BottlePolicy>,
}

#[derive(Debug, Serialize)]
pub struct BottleView {
    /// The host the bottle belongs to (`--host-id` of its server).
    pub host: String,
    pub slug: String,
    pub ip: String,
    pub created_at: Timestamp,
}

impl From<&Bottle> for BottleView {
    fn from(b: &Bottle) -> Self {
        BottleView {
            host: b.host.clone(),
            slug: b.slug.clone(),
            ip: b.ip.to_string(),
            created_at: b.created_at.clone(),
        }
    }
}

/// `bottle list --json`.
#[derive(Debug, Serialize)]
pub struct BottleList {
    pub bottles: Vec<BottleView>,
}

#[derive(Debug, Serialize)]
pub struct OperatorView {
    pub name: String,
    pub role: Role,
    /// Bottle slug globs; empty: every bottle.
    pub bottles: Vec<String>,
    pub created_at: Timestamp,
    pub created_by: String,
    pub last_seen_at: Option<Timestamp>,
    pub has_token: bool,
}

impl From<&Operator> for OperatorView {
    fn from(o: &Operator) -> Self {
        OperatorView {
            name: o.name.clone(),
            role: o.role,
            bottles: o.bottles.clone(),
            created_at: o.created_at.clone(),
            created_by: o.created_by.clone(),
            last_seen_at: o.last_seen_at.clone(),
            has_token: o.has_token,
        }
    }
}

/// `operator list --json`.
#[derive(Debug, Serialize)]
pub struct OperatorList {
    pub operators: Vec<OperatorView>,
}

/// `show --json`'s `context`.
#[derive(Debug, Serialize)]
pub struct ContextDoc {
    pub host: String,
    pub port: u16,
    pub grants: Vec<GrantView>,
    pub decisions: Vec<EventDoc>,
    /// `null` when the proxy recorded no refusal of this bottle and destination.
    pub refusals: Option<RefusalsDoc>,
    /// `null` unless `--resolve` asked for it.
    pub resolved: Option<ResolvedDoc>,
}

#[derive(Debug, Serialize)]
pub struct RefusalsDoc {
    /// Refusals recorded, at most one a minute.
    pub count: i64,
    pub first_seen: Timestamp,
    pub last_seen: Timestamp,
}

#[derive(Debug, Serialize)]
pub struct ResolvedDoc {
    pub addresses: Vec<AddressDoc>,
    /// Why the name did not resolve (`null` when it did).
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct AddressDoc {
    pub address: String,
    /// `loopback`, `private-ip`, `link-local`, `unspecified`, `cloud-metadata`, `cgnat`.
    pub marks: Vec<&'static str>,
}
