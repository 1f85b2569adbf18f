//! The console's integration tests, against a real console (`supervise_console::serve`
//! in-process on a real SQLite file) over real HTTP: `security` (roles, scopes, CSRF,
//! Origin, links, sessions, headers, rate limit), `api` (every endpoint with a bearer
//! token, conflicts, the live feed), `hosts` (two hosts' bottles: names and `?host=`
//! filters on pages and API), `limits` (stalled clients, sign-in floods), `scope` (what an
//! operator limited to some bottles learns of the rest: id prefixes, the trail) and
//! `browser` (the operator's day in real headless Chromium through WebDriver, with an agent
//! on the real MCP server) and `prometheus` (a real Prometheus scraping the server's
//! metrics listener and the console).

mod api;
mod browser;
mod context;
mod harness;
mod hosts;
mod limits;
mod prometheus;
mod push_page;
mod quorum;
mod review;
mod rules;
mod scope;
mod security;
