//! The supervise store: proposals, decisions, bottles, grants and the audit trail in SQLite.
//!
//! Layout: [`change`] validates and normalises what a proposal asks for and computes its
//! risk flags; [`model`] holds the domain types callers see; [`db`] is the [`Store`] itself,
//! where every public method is one transaction and every write begins with
//! `BEGIN IMMEDIATE`; [`clock`] is the time format and duration syntax; [`paths`] finds the database file; [`error`] the one
//! error type. The schema lives in the workspace's `migrations/`, embedded at build time.
//!
//! Nothing here speaks HTTP or MCP, and no SQLite type crosses the public API, so another
//! backend can stand behind the same methods.

pub mod change;
pub mod clock;
mod db;
pub mod error;
pub mod model;
pub mod paths;

pub use change::Kind;
pub use db::{Policy, Store, StoreOptions};
pub use error::{StoreError, StoreResult};
pub use model::{
    Bottle, Decision, Delivery, Event, Grant, NewProposal, Proposal, Proposed, Registered, Status,
    StatusFilter, Swept, Verdict,
};
