//! The end-to-end suite: the real `supervise-server` and `supervise` binaries on one
//! database file, found by `supervise_tests::bin`. One binary, one module per capability:
//!
//! - `e2e`: an agent's proposal answered by the operator, across both binaries;
//! - `stories`: the operator's day (grants, expiry, cooldown, flags, watch, hooks, bulk);
//! - `crash`: SIGKILL under load loses no answered proposal (`scripts/soak-crash.sh`);
//! - `delivery`: every decision is delivered exactly once;
//! - `bad_input`: the bad input catalogue, each case refused with the right error;
//! - `fuzz`: generated and mutated `tools/call` requests (`scripts/fuzz.sh`);
//! - `backpressure`: the pending cap and the waiting-call limits;
//! - `busy`: a write lock held by another process;
//! - `gate`: the git gate with real git, the bottle on MCP and the operator on the CLI;
//! - `console`: the review console in real Chromium and its API, beside the CLI and an agent;
//! - `cooldown`: the proxy's helpers apply the `--reject-cooldown` the server recorded;
//! - `systemd`: the units in `contrib/systemd/` verify and score "OK".
//!
//! Run one with a filter: `cargo test -p supervise-tests --test suite -- crash::`.

mod backpressure;
mod bad_input;
mod busy;
mod console;
mod cooldown;
mod crash;
mod delivery;
mod e2e;
mod fuzz;
mod gate;
mod stories;
mod systemd;
