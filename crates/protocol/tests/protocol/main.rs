//! The protocol crate's integration tests, one module per capability:
//!
//! - `classify`: `parse_message` on good and bad bodies;
//! - `golden`: the MCP specification's examples, decoded and re-encoded;
//! - `tasks`: the tasks extension's shapes, decoded and re-encoded;
//! - `fuzz`: property tests over every reader of untrusted request data (`scripts/fuzz.sh`
//!   runs its timed loop).

mod classify;
mod fuzz;
mod golden;
mod tasks;
