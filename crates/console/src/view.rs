//! Store types shaped for people: the one-line change (the store's [`present`] words, made
//! safe to show), ages and time left, a git push's summary. Pages and the API both use
//! these; the template engine escapes everything on the way out, and agent text goes
//! through `escape_untrusted` first so control and invisible characters show as `\u{..}`.

use std::collections::BTreeSet;

use serde_json::Value;
use supervise_store::change::describe_push;
use supervise_store::text::escape_untrusted;
use supervise_store::{Kind, Proposal, Timestamp, clock, model, present};

/// Agent text for a page: invisible and control characters made visible (HTML escaping is
/// the template's).
pub(crate) fn untrusted(text: &str) -> String {
    escape_untrusted(text).into_owned()
}

/// The change on one line ([`present::change_line`]: `host:port`, `remote ref old..new`),
/// made safe to show.
pub(crate) fn change_text(kind: Kind, change: &Value) -> String {
    untrusted(&present::change_line(kind, change))
}

/// The fields an operator may edit when modifying, with their current values.
pub(crate) fn editable_fields(kind: Kind, change: &Value) -> Vec<(&'static str, String)> {
    let text = |name: &str| match change.get(name) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    match kind {
        Kind::Egress => vec![("host", text("host")), ("port", text("port"))],
        Kind::GitPush => vec![("remote", text("remote")), ("ref", text("ref"))],
    }
}

/// How long ago: `42s`, `5m 3s`, `2h 10m`.
pub(crate) fn age(at: &Timestamp) -> String {
    clock::humanize(-at.seconds_until())
}

/// Time left until `at`, or `expired`; `never` without one.
pub(crate) fn time_left(at: Option<&Timestamp>) -> String {
    match at {
        None => "never expires".into(),
        Some(at) if at.seconds_until() <= 0 => "expired".into(),
        Some(at) => clock::humanize(at.seconds_until()),
    }
}

/// A git push's summary as lines for review (the same facts `supervise show` prints).
pub(crate) fn summary_lines(p: &Proposal) -> Vec<String> {
    let Some(summary) = p.change.get("summary") else {
        return Vec::new();
    };
    let (mut lines, unlisted) = describe_push(summary, untrusted);
    if unlisted > 0 {
        lines.push(format!("… and {unlisted} more"));
    }
    lines
}

/// The first characters of an id, enough to tell proposals apart on a page.
pub(crate) fn short_id(id: &str) -> &str {
    id.get(..13).unwrap_or(id)
}

/// A bottle as a page names it: `HOST/SLUG` when the rows shown span several hosts, else
/// `SLUG` (the store's rule, [`model::bottle_name`]), made safe to show.
pub(crate) fn bottle_name(with_host: bool, host: &str, slug: &str) -> String {
    untrusted(&model::bottle_name(with_host, host, slug))
}

/// The host filter of a listing page (`?host=NAME`): the hosts of the rows the operator may
/// see, for its select, and the one chosen (empty: every host).
pub(crate) struct HostFilter {
    /// Made safe to show, sorted.
    pub hosts: Vec<String>,
    /// As the query gave it.
    chosen: String,
}

impl HostFilter {
    pub(crate) fn new<'a>(hosts: impl Iterator<Item = &'a str>, chosen: &str) -> HostFilter {
        let chosen = chosen.trim().to_owned();
        let mut set: BTreeSet<&str> = hosts.collect();
        if !chosen.is_empty() {
            set.insert(&chosen);
        }
        HostFilter {
            hosts: set.into_iter().map(untrusted).collect(),
            chosen,
        }
    }

    /// Whether the page offers the filter: its rows span several hosts, or one is chosen.
    pub(crate) fn offered(&self) -> bool {
        self.hosts.len() > 1 || !self.chosen.is_empty()
    }

    /// Whether `shown` (one of [`HostFilter::hosts`]) is the host chosen.
    pub(crate) fn is_chosen(&self, shown: &str) -> bool {
        !self.chosen.is_empty() && untrusted(&self.chosen) == shown
    }

    /// Whether a row of `host` passes; a row of no host (an event of no bottle) passes
    /// whatever the host, as in `supervise audit --host`.
    pub(crate) fn admits(&self, host: Option<&str>) -> bool {
        self.chosen.is_empty() || host.is_none_or(|h| h == self.chosen)
    }
}

/// `1 of 2 approvals` for a proposal that needs more than one approval; `None` otherwise.
pub(crate) fn approvals(p: &Proposal) -> Option<String> {
    p.quorum
        .is_counted()
        .then(|| format!("{} of {} approvals", p.quorum.given, p.quorum.needed))
}
