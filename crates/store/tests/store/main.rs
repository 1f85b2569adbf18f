//! The store's integration tests, on real database files in temporary directories. One
//! module per capability; `common` is the shared set-up.

mod bad_input;
mod busy;
mod common;
mod concurrency;
mod corrupt;
mod crash;
mod egress;
mod files;
mod gate;
mod lifecycle;
mod migrations;
mod operators;
mod pending_cap;
mod rules;
mod tasks;
mod trail;
