//! The API's documents: the store's types as the JSON the API promises (and the OpenAPI
//! document describes), converted explicitly so a store change cannot silently change
//! the wire.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use supervise_store::{Decision, EventDoc, Grant, Proposal};
use utoipa::ToSchema;

/// A proposal with its current state.
#[derive(Serialize, ToSchema)]
pub(crate) struct ProposalDoc {
    pub id: String,
    /// The bottle's host (`--host-id`).
    pub host: String,
    /// The bottle's slug.
    pub bottle: String,
    /// `egress` or `git-push`.
    #[schema(example = "egress")]
    pub kind: String,
    /// `pending`, `approved`, `modified`, `rejected`, `expired` or `withdrawn`.
    #[schema(example = "pending")]
    pub status: String,
    /// The normalised change, e.g. `{"host": "example.com", "port": 443}`.
    #[schema(value_type = Object)]
    pub change: Value,
    pub justification: String,
    /// Risk flags (short names), empty when none.
    pub flags: Vec<String>,
    /// Times the change was asked for.
    pub hits: i64,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub expires_at: Option<String>,
    pub decision: Option<DecisionDoc>,
    #[schema(format = DateTime)]
    pub archived_at: Option<String>,
    pub quorum: QuorumDoc,
}

/// The approvals a proposal needs from distinct operators (fixed when it was filed) and
/// those counted so far: an approve that does not reach `needed` answers 200 with the
/// proposal still `pending` and `given` one higher.
#[derive(Serialize, ToSchema)]
pub(crate) struct QuorumDoc {
    /// Approvals needed; 1 means the first decision decides.
    #[schema(example = 2)]
    pub needed: u32,
    /// Approvals counted for the change under approval.
    #[schema(example = 1)]
    pub given: u32,
    /// The change under approval when a modify replaced the proposed one.
    #[schema(value_type = Option<Object>)]
    pub change: Option<Value>,
}

/// An operator's decision.
#[derive(Serialize, ToSchema)]
pub(crate) struct DecisionDoc {
    /// The change granted; null when rejected.
    #[schema(value_type = Option<Object>)]
    pub change: Option<Value>,
    pub note: Option<String>,
    pub decided_by: String,
    #[schema(format = DateTime)]
    pub decided_at: String,
    /// `cli`, `console` or `gate`.
    pub via: Option<String>,
    pub grant_id: Option<String>,
    #[schema(format = DateTime)]
    pub grant_expires_at: Option<String>,
}

/// One audit event as the OpenAPI document describes it: a declaration only, for the
/// schema. The bytes served are the store's one event document ([`supervise_store::EventDoc`]),
/// and a test holds this declaration to exactly its fields.
#[derive(ToSchema)]
#[schema(as = EventDoc)]
#[allow(dead_code)]
pub(crate) struct EventSchema {
    /// The change feed's cursor.
    pub seq: i64,
    #[schema(format = DateTime)]
    pub at: String,
    /// `proposed`, `approved`, `rejected`, `delivered`, ...
    pub event: String,
    /// `bottle:SLUG`, `operator:NAME` or `system`.
    pub actor: String,
    /// `cli`, `console` or `gate` for an operator's event; null otherwise.
    pub via: Option<String>,
    /// The bottle's host; null for an event of no bottle.
    pub host: Option<String>,
    /// The bottle's slug; null for an event of no bottle.
    pub bottle: Option<String>,
    pub proposal_id: Option<String>,
    pub grant_id: Option<String>,
    pub kind: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub change: Option<Value>,
    pub note: Option<String>,
    /// The proposal's page in this console; absent for an event of no proposal.
    #[schema(nullable = false)]
    pub url: Option<String>,
}

/// A grant in force.
#[derive(Serialize, ToSchema)]
pub(crate) struct GrantDoc {
    pub id: String,
    /// The bottle's host.
    pub host: String,
    /// The bottle's slug.
    pub bottle: String,
    pub proposal_id: String,
    pub kind: String,
    #[schema(value_type = Object)]
    pub change: Value,
    pub granted_by: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Null: until revoked.
    #[schema(format = DateTime)]
    pub expires_at: Option<String>,
    #[schema(format = DateTime)]
    pub ended_at: Option<String>,
    /// The last recorded use by the egress proxy's helper.
    #[schema(format = DateTime)]
    pub last_used_at: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct ProposalList {
    pub proposals: Vec<ProposalDoc>,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct ProposalDetail {
    pub proposal: ProposalDoc,
    #[schema(value_type = Vec<EventSchema>)]
    pub history: Vec<EventDoc>,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct GrantList {
    pub grants: Vec<GrantDoc>,
}

/// The body of approve, modify and reject. Every field is optional; an empty body is `{}`.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct DecideBody {
    /// A note for the agent.
    pub note: Option<String>,
    /// Let the grant end after this long (`90s`, `30m`, `8h`, `7d`); approve and modify only.
    #[serde(rename = "for")]
    #[schema(pattern = "^[0-9]+[smhd]?$", example = "8h")]
    pub grant_for: Option<String>,
    /// Modify only (and required there): fields merged over the proposed change.
    #[schema(value_type = Option<Object>)]
    pub change: Option<Map<String, Value>>,
    /// Approve and modify: `true` confirms a change with a risk flag (any flag but
    /// `observed`, the modified change's included); without it such a decision is refused
    /// with 400 and `"field": "confirm"`, deciding nothing.
    pub confirm: Option<bool>,
}

/// Every error answer.
#[derive(Serialize, ToSchema)]
pub(crate) struct ErrorDoc {
    pub error: String,
    /// The input field to blame, when one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// 409 on a decision: who decided first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// 409 on a decision: when.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub decided_at: Option<String>,
}

fn text(t: &impl ToString) -> String {
    t.to_string()
}

impl From<&Decision> for DecisionDoc {
    fn from(d: &Decision) -> DecisionDoc {
        DecisionDoc {
            change: d.change.clone(),
            note: d.note.clone(),
            decided_by: d.decided_by.clone(),
            decided_at: text(&d.decided_at),
            via: d.via.map(|v| v.to_string()),
            grant_id: d.grant_id.as_ref().map(text),
            grant_expires_at: d.grant_expires_at.as_ref().map(text),
        }
    }
}

impl From<&Proposal> for ProposalDoc {
    fn from(p: &Proposal) -> ProposalDoc {
        ProposalDoc {
            id: text(&p.id),
            host: p.host.clone(),
            bottle: p.bottle.clone(),
            kind: text(&p.kind),
            status: text(&p.status),
            change: p.change.clone(),
            justification: p.justification.clone(),
            flags: p.flags.iter().map(text).collect(),
            hits: p.hits,
            created_at: text(&p.created_at),
            expires_at: p.expires_at.as_ref().map(text),
            decision: p.decision.as_ref().map(DecisionDoc::from),
            archived_at: p.archived_at.as_ref().map(text),
            quorum: QuorumDoc {
                needed: p.quorum.needed,
                given: p.quorum.given,
                change: p.quorum.change.clone(),
            },
        }
    }
}

impl From<&Grant> for GrantDoc {
    fn from(g: &Grant) -> GrantDoc {
        GrantDoc {
            id: text(&g.id),
            host: g.host.clone(),
            bottle: g.bottle.clone(),
            proposal_id: text(&g.proposal_id),
            kind: text(&g.kind),
            change: g.change.clone(),
            granted_by: g.granted_by.clone(),
            created_at: text(&g.created_at),
            expires_at: g.expires_at.as_ref().map(text),
            ended_at: g.ended_at.as_ref().map(text),
            last_used_at: g.last_used_at.as_ref().map(text),
        }
    }
}
