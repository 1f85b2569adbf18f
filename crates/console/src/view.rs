//! Store types shaped for people: the one-line change, flag meanings, ages and time left,
//! a git push's summary. Pages and the API both use these; the template engine escapes
//! everything on the way out, and agent text goes through `escape_untrusted` first so
//! control and invisible characters show as `\u{..}`.

use std::collections::BTreeSet;

use serde_json::Value;
use supervise_store::change::describe_push;
use supervise_store::text::escape_untrusted;
use supervise_store::{Flag, Kind, Proposal, Timestamp, clock, model};

/// Agent text for a page: invisible and control characters made visible (HTML escaping is
/// the template's).
pub(crate) fn untrusted(text: &str) -> String {
    escape_untrusted(text).into_owned()
}

/// The change on one line: `host:port`, or `remote ref old..new`.
pub(crate) fn change_text(kind: Kind, change: &Value) -> String {
    let field = |name: &str| change.get(name).and_then(Value::as_str);
    let text = match kind {
        Kind::Egress => match (field("host"), change.get("port").and_then(Value::as_u64)) {
            (Some(host), Some(port)) if host.contains(':') => format!("[{host}]:{port}"),
            (Some(host), Some(port)) => format!("{host}:{port}"),
            _ => change.to_string(),
        },
        Kind::GitPush => match (field("remote"), field("ref"), field("old"), field("new")) {
            (Some(remote), Some(reference), Some(old), Some(new)) => {
                let short = |id: &str| id.chars().take(7).collect::<String>();
                format!("{remote} {reference} {}..{}", short(old), short(new))
            }
            (Some(remote), Some(reference), ..) => format!("{remote} {reference}"),
            _ => change.to_string(),
        },
    };
    untrusted(&text)
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

/// What a flag warns of, in words.
pub(crate) fn flag_meaning(flag: Flag) -> &'static str {
    match flag.as_str() {
        "wildcard-host" => "a wildcard covers every host under the domain",
        "ip-literal" => "the host is a raw IP address, not a name",
        "private-ip" => "a private-network address (RFC 1918 / ULA)",
        "loopback" => "a loopback address or name: the host itself",
        "link-local" => "a link-local address",
        "cloud-metadata" => "the cloud metadata service (instance credentials)",
        "cgnat" => "a carrier-grade NAT address (100.64.0.0/10)",
        "unspecified" => "the unspecified address (0.0.0.0, ::): the host itself, like loopback",
        "unusual-port" => "a port other than 80 and 443",
        "disguised-ip" => "an IPv4 address written as a number, in hex/octal, or inside IPv6",
        "default-branch" => "a push to main or master",
        "tag" => "a push to a tag",
        "ref-outside-heads" => "a ref outside refs/heads/",
        "lookalike" => "looks like origin, main or master but is spelled otherwise",
        "widened" => "the operator's change grants more than the agent asked for",
        "force-push" => "a force push: the old commit is not an ancestor of the new one",
        "ref-deletion" => "the push deletes the ref",
        "large-push" => "over 100 commits or over 10,000 changed lines",
        "observed" => "filed by the egress proxy after it refused a connection",
        "shared-suffix" => {
            "a wildcard over a shared hosting suffix: every customer's sites under it"
        }
        _ => "a risky change",
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
