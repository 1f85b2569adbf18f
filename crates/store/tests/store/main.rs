//! The store's integration tests, on real databases: SQLite files in temporary directories
//! and PostgreSQL databases on a throwaway cluster. One module per capability; `common` is
//! the shared set-up, and its `on_both!` runs a test body on each backend. What only a file
//! has (`files`, `corrupt`'s hand edits with CHECKs off, SQLite's migration probe) stays
//! SQLite-only.

#[macro_use]
mod common;
mod backup;
mod bad_input;
mod batch;
mod busy;
mod cedar;
mod chain;
mod concurrency;
mod context;
mod corrupt;
mod crash;
mod egress;
mod egress_limits;
mod files;
mod fleet;
mod follow;
mod fresh;
mod gate;
mod hosts;
mod lifecycle;
mod migrations;
mod operators;
mod pending_cap;
mod queue;
mod quorum;
mod review;
mod rules;
mod scope;
mod server_limits;
mod tasks;
mod trail;
