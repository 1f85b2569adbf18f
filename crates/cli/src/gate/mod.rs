//! The git side of the gate: running git inside the `pre-receive` hook's environment
//! ([`git`]), what a push contains, read from git's stdin and computed from the pushed
//! objects ([`push`], [`diff`]), the content flags ([`scan`], [`secrets`]) and the refs that
//! keep a refused push's objects for review ([`keep`]).

pub mod diff;
pub mod git;
pub mod keep;
pub mod push;
pub mod scan;
pub mod secrets;
