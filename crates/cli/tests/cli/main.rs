//! The real `supervise` binary against real database files: every command in human and
//! `--json` form, decisions and refusals, exit codes, grants that end, risk flags, watch,
//! bulk decisions, fleet commands across hosts (on SQLite and PostgreSQL). Data is set up
//! through `supervise-store`, as the server would.
//!
//! One module per capability; `util` is the harness.

mod util;

mod audit;
mod bottles;
mod bulk;
mod confirm;
mod console;
mod context;
mod database;
mod db_file;
mod decide;
mod doctor;
mod doctor_console;
mod doctor_pg;
mod egress;
mod evidence;
mod flags;
mod fleet;
mod gate;
mod gate_content;
mod grants;
mod invocation;
mod operator;
mod output;
mod queue;
mod quorum;
mod rules;
mod running;
mod watch;
