//! The supervise store: proposals, decisions, bottles, grants and the audit trail, in a
//! SQLite file or a PostgreSQL database ([`Location`]).
//!
//! Layout: [`model`] is the vocabulary ([`Kind`], [`Status`], [`EventKind`], [`Flag`],
//! [`EndReason`], ids and [`Timestamp`]) and the domain types callers see, depending on
//! nothing else here but [`glob`]; [`change`] validates and normalises what a proposal asks for and
//! computes its risk flags; [`glob`] the one glob rule (bulk matches, operator scopes);
//! [`error`] is the one error type; [`clock`] the duration syntax;
//! [`paths`] finds the database file; [`text`] escapes agent text for display; [`present`]
//! is the words a person reads on every surface (flag meanings, a change on one line, an
//! address, the one event document, [`EventDoc`]). The [`Store`] itself is `db`, split by aggregate
//! (`db/bottles.rs`, `db/proposals.rs`, `db/decisions.rs`, `db/grants.rs`, `db/gate.rs`,
//! `db/tasks.rs`, `db/feed.rs` (and `db/follow.rs`, [`Follow`]: the one follower of the change feed), `db/operators.rs` and `db/sessions.rs` (console operators,
//! their sign-in links, sessions and API tokens), and `db/egress.rs`, the one egress decision every
//! enforcement point asks),
//! with the file and migrations in `db/schema.rs`, row decoding in `db/rows.rs` and event
//! appending in `db/trail.rs`. Every public method is one transaction, and every write
//! takes the write lock up front (`BEGIN IMMEDIATE` on SQLite, an advisory lock on
//! PostgreSQL) through `Store::write()`; only opening, before a `Store` exists, settles the
//! file's host id in a write transaction of its own (`db/schema.rs`). The schema lives in
//! the workspace's `migrations/` (one folder per backend), embedded at build time.
//!
//! Nothing here speaks HTTP or MCP, and no SQLite or PostgreSQL type crosses the public
//! API: both backends stand behind the same methods.

pub mod change;
pub mod clock;
mod db;
pub mod error;
pub mod glob;
pub mod model;
pub mod paths;
pub mod present;
pub mod rules;
pub mod text;

pub use db::EgressLookups;
pub use db::{
    ARCHIVE_VERSION, ArchiveCheck, Archived, AuditFilter, Backend, CONTEXT_DECISIONS, Changes,
    Checkpoint, EVENT_SCHEMA_VERSION, EgressContext, Follow, GateInstall, InForce, Location,
    PendingGroup, ProposalLimits, REFUSAL_EVERY, RESOLVE_LIMIT, Refusals, Resolution, RulesVersion,
    SESSION_IDLE, SESSION_MAX, SIGN_IN_LINK_TTL, ServerClaim, Store, StoreOptions, TrailBreak,
    TrailCheck, Woken, WriteObserver, actor_rule, default_host, egress_destination, resolve,
    rules_sha256, verify_archive,
};
pub use db::{BackendFacts, MIN_POSTGRES_VERSION, TABLE_PRIVILEGES};
pub use error::{StoreError, StoreResult};
pub use model::{
    Actor, Bottle, BottleId, BottleRef, Decision, Delivery, DenyReason, EgressDecision, EndReason,
    Event, EventKind, Flag, GateRef, GateVerdict, Grant, GrantId, HttpRequest, Kind, NewProposal,
    NewSession, Operator, Proposal, ProposalId, Proposed, Quorum, RefUpdate, Registered, Role,
    Secret, Session, SignInLink, SignInRefusal, Status, StatusFilter, Swept, Task, TaskRead,
    Timestamp, UnknownName, Verdict, Via,
};
pub use model::{DiffFile, Finding, PushCommit, PushDiff, mask_secret};
pub use present::EventDoc;
