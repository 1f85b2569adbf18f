//! The git side of the gate: running git inside the `pre-receive` hook's environment
//! ([`git`]) and what a push contains, read from git's stdin and computed from the pushed
//! objects ([`push`]).

pub mod git;
pub mod push;
