//! End-to-end tests of the real `supervise-server` binary: a real MCP client (rmcp's
//! streamable HTTP client) for the agent's side, raw HTTP for the error cases, and a second
//! `Store` on the same file standing in for the operator's CLI.

mod batches;
mod fairness;
mod fleet;
mod harness;
mod health;
mod in_process;
mod limits;
mod metrics;
mod protocol;
mod rules;
mod settings;
mod shutdown;
mod tasks;
mod tools;
