//! The store's vocabulary and domain types: the words ([`Kind`], [`Status`], [`EventKind`],
//! [`Flag`], [`EndReason`]), ids and [`Timestamp`], and the bottles, proposals, decisions,
//! grants and events built from them. These are what callers see; the SQLite rows behind
//! them stay private to `db/rows.rs`. Nothing here depends on another module of the crate
//! but [`crate::glob`] (an operator's bottle scope).

mod diff;
mod egress;
mod ids;
mod operators;
mod vocab;

use std::net::IpAddr;

use serde_json::Value;

pub use diff::{
    DiffFile, Finding, MAX_DIFF_COMMITS, MAX_FILE_PATCH, MAX_PUSH_PATCH, PushCommit, PushDiff,
    mask_secret,
};
pub use egress::{BottleRef, DenyReason, EgressDecision, HttpRequest};
pub(crate) use ids::parse_time;
pub use ids::{BottleId, GrantId, ProposalId, Timestamp};
pub use operators::{
    Actor, NewSession, Operator, Role, Secret, Session, SignInLink, SignInRefusal, Via,
};
pub use vocab::{EndReason, EventKind, Flag, Kind, Status, UnknownName};

/// A registered bottle (one generation of a slug).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bottle {
    /// Generation id: a removed and re-added slug gets a new one.
    pub id: BottleId,
    /// The host it belongs to (`--host-id`); slugs and addresses are unique per host.
    pub host: String,
    pub slug: String,
    pub ip: IpAddr,
    pub created_at: Timestamp,
}

/// Whether the rows shown span more than one host: then each bottle is named `HOST/SLUG`
/// rather than `SLUG` (SPEC "Fleets"), see [`bottle_name`].
pub fn hosts_differ<'a>(mut hosts: impl Iterator<Item = &'a str>) -> bool {
    match hosts.next() {
        Some(first) => hosts.any(|h| h != first),
        None => false,
    }
}

/// A bottle as the operator names it: `HOST/SLUG` when `with_host` (the rows shown span
/// several hosts, [`hosts_differ`]), else `SLUG`. Not escaped: callers escape for where
/// they show it.
pub fn bottle_name(with_host: bool, host: &str, slug: &str) -> String {
    if with_host {
        format!("{host}/{slug}")
    } else {
        slug.to_owned()
    }
}

/// An operator's decision on a proposal.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The change granted (as proposed, or the operator's); `None` when rejected.
    pub change: Option<Value>,
    pub note: Option<String>,
    pub decided_by: String,
    /// Through what it was decided (`None`: recorded before this was kept).
    pub via: Option<Via>,
    pub decided_at: Timestamp,
    /// The grant approve or modify recorded (`None` for reject).
    pub grant_id: Option<GrantId>,
    /// When that grant ends (`None`: until revoked, or no grant).
    pub grant_expires_at: Option<Timestamp>,
}

/// A proposal with its current state.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    pub id: ProposalId,
    /// The bottle's host.
    pub host: String,
    /// The bottle's slug.
    pub bottle: String,
    pub bottle_id: BottleId,
    pub kind: Kind,
    /// The normalised change, e.g. `{"host": "example.com", "port": 443}`.
    pub change: Value,
    pub justification: String,
    /// Effective status: a pending proposal past its expiry reads as `Expired`.
    pub status: Status,
    /// Risk flags of the proposed change (and of the decision's change, for `modify`).
    pub flags: Vec<Flag>,
    /// Times this change was asked for (1 + repeats + cooldown hits).
    pub hits: i64,
    pub created_at: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub decision: Option<Decision>,
    /// When the outcome reached the agent (or could no longer reach it).
    pub archived_at: Option<Timestamp>,
    /// The approvals it needs from distinct operators, and those counted so far.
    pub quorum: Quorum,
}

/// A proposal's quorum: `needed` approvals from distinct operators, fixed when it was
/// filed (1: the first decision decides). Approvals bind to the exact change: a modify
/// replaces the change under approval and starts the count again.
#[derive(Debug, Clone, PartialEq)]
pub struct Quorum {
    pub needed: u32,
    /// Approvals counted toward `needed` for the change under approval.
    pub given: u32,
    /// The change under approval when a modify replaced the proposed one.
    pub change: Option<Value>,
}

impl Quorum {
    /// One approval decides.
    pub fn single() -> Quorum {
        Quorum {
            needed: 1,
            given: 0,
            change: None,
        }
    }

    /// Whether more than one approval is needed.
    pub fn is_counted(&self) -> bool {
        self.needed > 1
    }
}

/// What `propose` did.
#[derive(Debug, Clone, PartialEq)]
pub enum Proposed {
    /// A new pending proposal was queued.
    Created(Proposal),
    /// An identical undecided proposal from the same bottle existed: it is returned, with its
    /// hit count raised; nothing new was queued.
    Repeated(Proposal),
    /// An identical change was rejected within the cooldown: the earlier rejected proposal
    /// is returned (its note is the answer), a hit counted on it, nothing queued.
    AutoRejected(Proposal),
    /// A rule decided the new proposal at filing time (approved with its grant, or
    /// rejected with the rule's note), by `rules:ID` via `rules`.
    Ruled(Proposal),
}

impl Proposed {
    /// The proposal, whichever way it came.
    pub fn proposal(&self) -> &Proposal {
        match self {
            Proposed::Created(p)
            | Proposed::Repeated(p)
            | Proposed::AutoRejected(p)
            | Proposed::Ruled(p) => p,
        }
    }

    /// Moves the proposal out.
    pub fn into_proposal(self) -> Proposal {
        match self {
            Proposed::Created(p)
            | Proposed::Repeated(p)
            | Proposed::AutoRejected(p)
            | Proposed::Ruled(p) => p,
        }
    }
}

/// A request to file a proposal (one item of a group commit).
#[derive(Debug, Clone)]
pub struct NewProposal {
    /// The bottle's generation id, from [`Bottle::id`].
    pub bottle_id: BottleId,
    pub kind: Kind,
    /// The change as the agent gave it (validated and normalised by the store).
    pub change: Value,
    pub justification: String,
    /// Approvals it needs from distinct operators (`None`: one); set by the rules matched
    /// when it is filed and fixed from then on.
    pub quorum: Option<u32>,
}

/// What `take_decision` found.
#[derive(Debug, Clone, PartialEq)]
pub enum Delivery {
    /// Decided: the decision is delivered and the proposal archived (exactly once).
    Decided(Proposal),
    /// Still undecided.
    Pending(Proposal),
    /// Undecided past its expiry: now archived as expired (exactly once).
    Expired(Proposal),
    /// No such id for this bottle, or already delivered.
    Unknown,
}

/// An operator's verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Approve,
    /// Approve a different change of the same kind: these fields are merged over the
    /// proposed change and the result validated like a proposal.
    Modify(serde_json::Map<String, Value>),
    Reject,
}

/// Which proposals `list` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StatusFilter {
    /// Undecided and not expired (the operator's queue).
    #[default]
    Pending,
    /// Decided, not yet delivered.
    Decided,
    /// Delivered, expired or withdrawn: no longer active.
    Archived,
    /// Expired (whether or not the agent has been told).
    Expired,
    All,
}

impl StatusFilter {
    /// Parses the CLI's `--status` values.
    pub fn parse(s: &str) -> Option<StatusFilter> {
        Some(match s {
            "pending" => StatusFilter::Pending,
            "decided" => StatusFilter::Decided,
            "archived" => StatusFilter::Archived,
            "expired" => StatusFilter::Expired,
            "all" => StatusFilter::All,
            _ => return None,
        })
    }
}

/// A grant: a change in the bottle's policy made by approve or modify.
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    pub id: GrantId,
    /// The bottle's host.
    pub host: String,
    /// The bottle's slug.
    pub bottle: String,
    pub proposal_id: ProposalId,
    pub kind: Kind,
    pub change: Value,
    pub granted_by: String,
    pub created_at: Timestamp,
    /// `None`: until revoked.
    pub expires_at: Option<Timestamp>,
    pub ended_at: Option<Timestamp>,
    pub end_reason: Option<EndReason>,
    /// The last `grant-used` event the egress proxy's helper recorded for it (read by
    /// `policy`; `None` elsewhere, and when none was recorded).
    pub last_used_at: Option<Timestamp>,
}

/// One audit event; `seq` orders them and is the change feed's cursor.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub seq: i64,
    pub at: Timestamp,
    pub event: EventKind,
    /// `bottle:SLUG`, `operator:NAME` or `system`.
    pub actor: String,
    /// Through what an operator's event was made (`None` for a bottle's or the system's).
    pub via: Option<Via>,
    /// The bottle's host (`None` for an event of no bottle).
    pub host: Option<String>,
    pub bottle: Option<String>,
    pub bottle_id: Option<BottleId>,
    pub proposal_id: Option<ProposalId>,
    pub grant_id: Option<GrantId>,
    pub kind: Option<Kind>,
    pub change: Option<Value>,
    pub note: Option<String>,
}

/// What a sweep changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    pub expired_proposals: u64,
    pub expired_grants: u64,
}

/// How `register_bottle` left the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registered {
    Added,
    Updated,
    Unchanged,
}

/// A proposal filed as a task (the 2026-07-28 tasks extension): a second, longer-lived way
/// to read its outcome, kept apart from delivery (`Proposal::archived_at`).
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub proposal_id: ProposalId,
    pub bottle_id: BottleId,
    pub created_at: Timestamp,
    /// Until when `tasks/get` reads it; `None`: always (the proposal never expired).
    pub readable_until: Option<Timestamp>,
    /// The agent cancelled it while the proposal was undecided.
    pub cancelled_at: Option<Timestamp>,
}

/// What a task read found: the task and its proposal as they read now.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRead {
    pub task: Task,
    pub proposal: Proposal,
    /// This read delivered the outcome (archived the proposal, `delivered` event).
    pub delivered_now: bool,
}

/// One ref update of a push through the git gate, as git's `pre-receive` hook reads it,
/// with what the gate computed of it.
#[derive(Debug, Clone, PartialEq)]
pub struct RefUpdate {
    /// The full ref, e.g. `refs/heads/agent/x`.
    pub reference: String,
    /// The ref's commit before the push (all zeros: a creation).
    pub old: String,
    /// The ref's commit after the push (all zeros: a deletion).
    pub new: String,
    /// `commits`, `subjects`, `files_changed`, `insertions`, `deletions`, `force`,
    /// `delete`, `create`, as SPEC's git gate section defines them.
    pub summary: Value,
    /// The pusher's `justification=` push option, or the newest commit's subject.
    pub justification: String,
    /// What the push contains, recorded with the proposal filed for it (`None`: not
    /// computed, e.g. a deletion).
    pub diff: Option<PushDiff>,
}

/// What lets one ref update through, or what the gate did instead.
#[derive(Debug, Clone, PartialEq)]
pub enum GateRef {
    /// A one-shot approval of exactly this (ref, old, new); used when the push is accepted.
    Approved(Proposal),
    /// A standing `git-push` grant for the ref (a fast-forward or a creation).
    Granted(Grant),
    /// Not covered: a proposal was filed, found undecided, or found rejected in the cooldown.
    Proposed(Proposed),
    /// Not covered, and nothing could be filed (the bottle's pending cap); the reason.
    Refused(String),
}

/// The gate's answer for a whole push: accepted only when every ref update is covered.
#[derive(Debug, Clone, PartialEq)]
pub struct GateVerdict {
    pub accepted: bool,
    /// One entry per ref update, in the order given.
    pub refs: Vec<GateRef>,
}
