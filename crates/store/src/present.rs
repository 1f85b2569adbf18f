//! The words a person reads, in one place for every surface (the CLI, the console and the
//! tools' answers): what each risk flag means ([`Flag::meaning`]), a change on one line
//! ([`change_line`], [`describe`]), an address as `host:port` ([`address`]), and the one
//! JSON document of an audit event ([`EventDoc`]). No I/O, and nothing here escapes: agent
//! text is escaped by each surface for where it shows it (`text::escape_untrusted`).

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::model::{Event, EventKind, Flag, GrantId, Kind, ProposalId, Timestamp, Via};

impl Flag {
    /// What the flag warns of, in plain words (`show`, the console's queue and review page).
    pub fn meaning(self) -> &'static str {
        match self {
            Flag::WildcardHost => "a wildcard covers every host under the domain",
            Flag::IpLiteral => "the host is a raw IP address, not a name",
            Flag::DisguisedIp => {
                "an IPv4 address written as a number, in hex/octal, or inside an IPv6 address"
            }
            Flag::UnusualPort => "a port other than 80 and 443",
            Flag::CloudMetadata => {
                "the cloud metadata service (instance credentials), by address or name \
                 (metadata.google.internal)"
            }
            Flag::Loopback => {
                "a loopback address or name (localhost, *.localhost): the host itself"
            }
            Flag::PrivateIp => "a private-network address (RFC 1918 / ULA)",
            Flag::LinkLocal => "a link-local address",
            Flag::Cgnat => "a carrier-grade NAT address (100.64.0.0/10)",
            Flag::Unspecified => {
                "the unspecified address (0.0.0.0, 0, ::): the host itself, like loopback"
            }
            Flag::DefaultBranch => "a push to main or master",
            Flag::Tag => "a push to a tag",
            Flag::RefOutsideHeads => "a ref outside refs/heads/",
            Flag::Lookalike => {
                "the remote or a ref part looks like origin, main or master but is spelled \
                 otherwise"
            }
            Flag::Widened => "the operator's change grants more than the agent asked for",
            Flag::ForcePush => "a force push: the old commit is not an ancestor of the new one",
            Flag::RefDeletion => "the push deletes the ref",
            Flag::LargePush => {
                "over 100 commits or over 10,000 changed lines, or too large for the gate to \
                 scan whole"
            }
            Flag::Observed => {
                "filed by the egress proxy for a connection it refused, not by the agent"
            }
            Flag::SharedSuffix => {
                "a wildcard over a shared hosting suffix (github.io, s3.amazonaws.com): every \
                 customer's sites under it"
            }
            Flag::SecretInDiff => {
                "an added line looks like a secret (a private key, a cloud access key, a forge \
                 or registry token)"
            }
            Flag::ExecutableAdded => {
                "the push adds an executable file, makes a file executable, or adds a symlink \
                 pointing outside the repository"
            }
            Flag::CiConfig => "the push changes a CI definition, which runs with CI's secrets",
            Flag::InstallScript => {
                "the push adds a package install script (preinstall, postinstall, prepare...), \
                 which runs on every machine that installs the package"
            }
        }
    }
}

/// An address as `host:port`, an IPv6 host in brackets (`[::1]:443`) so it reads
/// unambiguously.
pub fn address(host: &str, port: impl fmt::Display) -> String {
    format!("{}:{port}", bracketed(host))
}

/// A host as it stands before `:port`: an IPv6 address in brackets, anything else as is.
pub fn bracketed(host: &str) -> std::borrow::Cow<'_, str> {
    if host.contains(':') {
        format!("[{host}]").into()
    } else {
        host.into()
    }
}

/// A change's target on one line, as lists and tables show it: `host:port` for egress
/// (`[v6]:port`), `remote ref old..new` for a push (`remote ref` without the commits), the
/// change's compact JSON when its fields are not there.
pub fn change_line(kind: Kind, change: &Value) -> String {
    let field = |name: &str| change.get(name).and_then(Value::as_str);
    match kind {
        Kind::Egress => match (field("host"), change.get("port").and_then(Value::as_u64)) {
            (Some(host), Some(port)) => format!("{}{}", address(host, port), limits(change)),
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
    }
}

/// An egress change's limits after its address: ` (GET, HEAD under /simple/)`,
/// ` (GET only)`, ` (under /simple/)`, or nothing when it has none.
pub fn limits(change: &Value) -> String {
    match crate::change::limits(change) {
        (None, None) => String::new(),
        (Some(m), None) => format!(" ({} only)", m.join(", ")),
        (None, Some(p)) => format!(" (under {p})"),
        (Some(m), Some(p)) => format!(" ({} under {p})", m.join(", ")),
    }
}

/// What a change asks for, as a phrase in a sentence: `egress to api.example.com:443`,
/// `push of refs/heads/x to origin` (`?` for a field that is not there).
pub fn describe(kind: Kind, change: &Value) -> String {
    let field = |name: &str| match change.get(name) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "?".into(),
    };
    match kind {
        Kind::Egress => format!(
            "egress to {}{}",
            address(&field("host"), field("port")),
            limits(change)
        ),
        Kind::GitPush => format!("push of {} to {}", field("ref"), field("remote")),
    }
}

/// The one JSON document of an audit event (SPEC "Events"): what a hook reads on stdin,
/// what `audit --json`, `show --json` and `list --watch --json` print, and what the
/// console's API and Server-Sent Events carry. Every field is always present (`null` when
/// the event has none) but `url`, which is there only when a console URL is configured
/// and the event concerns a proposal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventDoc {
    /// The change feed's cursor.
    pub seq: i64,
    pub at: Timestamp,
    pub event: EventKind,
    /// `bottle:SLUG`, `operator:NAME`, `system`, …
    pub actor: String,
    /// Through what an operator's event was made (`cli`, `console`, `gate`); `null` otherwise.
    pub via: Option<Via>,
    /// The bottle's host; `null` for an event of no bottle.
    pub host: Option<String>,
    /// The bottle's slug; `null` for an event of no bottle.
    pub bottle: Option<String>,
    pub proposal_id: Option<ProposalId>,
    pub grant_id: Option<GrantId>,
    pub kind: Option<Kind>,
    pub change: Option<Value>,
    pub note: Option<String>,
    /// The proposal's page in the console (see [`EventDoc::with_console`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl EventDoc {
    /// Every field's name, in the order written.
    pub const FIELDS: &'static [&'static str] = &[
        "seq",
        "at",
        "event",
        "actor",
        "via",
        "host",
        "bottle",
        "proposal_id",
        "grant_id",
        "kind",
        "change",
        "note",
        "url",
    ];

    /// Adds `url`, the proposal's page in the console reached at `console` (its public URL,
    /// `SUPERVISE_CONSOLE_URL`), when the event concerns a proposal.
    pub fn with_console(mut self, console: &str) -> EventDoc {
        self.url = self
            .proposal_id
            .as_ref()
            .map(|id| proposal_url(console, id.as_str()));
        self
    }
}

/// A proposal's page in the console reached at `console`: `{console}/proposals/{id}`.
pub fn proposal_url(console: &str, id: &str) -> String {
    format!("{}/proposals/{id}", console.trim_end_matches('/'))
}

impl Event {
    /// The event as its one JSON document.
    pub fn document(&self) -> EventDoc {
        self.clone().into_document()
    }

    /// [`Event::document`], moving the fields into place.
    pub fn into_document(self) -> EventDoc {
        EventDoc {
            seq: self.seq,
            at: self.at,
            event: self.event,
            actor: self.actor,
            via: self.via,
            host: self.host,
            bottle: self.bottle,
            proposal_id: self.proposal_id,
            grant_id: self.grant_id,
            kind: self.kind,
            change: self.change,
            note: self.note,
            url: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_flag_has_a_meaning() {
        for &flag in Flag::ALL {
            assert!(!flag.meaning().is_empty(), "{flag}");
        }
    }

    #[test]
    fn addresses_bracket_ipv6() {
        assert_eq!(address("a.com", 443), "a.com:443");
        assert_eq!(address("::1", 80), "[::1]:80");
        assert_eq!(bracketed("10.0.0.1"), "10.0.0.1");
    }

    #[test]
    fn changes_in_one_line() {
        let egress = |c: Value| change_line(Kind::Egress, &c);
        assert_eq!(egress(json!({"host": "a.com", "port": 443})), "a.com:443");
        assert_eq!(egress(json!({"host": "::1", "port": 80})), "[::1]:80");
        assert_eq!(egress(json!({"host": "a.com"})), r#"{"host":"a.com"}"#);
        assert_eq!(
            egress(
                json!({"host": "a.com", "port": 443, "methods": ["GET", "HEAD"],
                "path_prefix": "/simple/"})
            ),
            "a.com:443 (GET, HEAD under /simple/)"
        );
        assert_eq!(
            egress(json!({"host": "a.com", "port": 443, "path_prefix": "/x/"})),
            "a.com:443 (under /x/)"
        );
        let push = |c: Value| change_line(Kind::GitPush, &c);
        assert_eq!(
            push(json!({"remote": "origin", "ref": "refs/heads/x"})),
            "origin refs/heads/x"
        );
        assert_eq!(
            push(json!({"remote": "origin", "ref": "refs/heads/x",
                "old": "0123456789", "new": "abcdef0123"})),
            "origin refs/heads/x 0123456..abcdef0"
        );
    }

    #[test]
    fn describe_names_the_change() {
        assert_eq!(
            describe(Kind::Egress, &json!({"host": "a.example", "port": 443})),
            "egress to a.example:443"
        );
        assert_eq!(
            describe(Kind::Egress, &json!({"host": "::1", "port": 443})),
            "egress to [::1]:443"
        );
        assert_eq!(
            describe(
                Kind::GitPush,
                &json!({"remote": "origin", "ref": "refs/heads/x"})
            ),
            "push of refs/heads/x to origin"
        );
        assert_eq!(describe(Kind::Egress, &json!({})), "egress to ?:?");
    }

    /// A representative event: an operator's modification through the console, every
    /// field set.
    fn modified() -> Event {
        Event {
            seq: 42,
            at: "2026-11-30T12:07:17.141Z".parse().unwrap(),
            event: EventKind::Modified,
            actor: "operator:alice".into(),
            via: Some(Via::Console),
            host: Some("build-1".into()),
            bottle: Some("demo".into()),
            bottle_id: None,
            proposal_id: serde_json::from_value(json!("01a22c59-5e8e-7489-8e71-52941718a72d"))
                .unwrap(),
            grant_id: serde_json::from_value(json!("01a22c5a-0c21-7d3e-b1a4-6f0e2d9c8b17"))
                .unwrap(),
            kind: Some(Kind::Egress),
            change: Some(json!({"host": "registry.npmjs.org", "port": 443})),
            note: Some("for today's release build".into()),
        }
    }

    /// The document's bytes are held by a fixture: a field renamed, added, dropped or
    /// moved fails here, and every surface writes this one document.
    #[test]
    fn the_event_document_is_the_golden_one() {
        let doc = modified()
            .document()
            .with_console("https://console.internal:8443/");
        let text = serde_json::to_string_pretty(&doc).unwrap();
        assert_eq!(
            text,
            include_str!("../tests/fixtures/event-document.json").trim_end()
        );
        let value = serde_json::to_value(&doc).unwrap();
        // Sorted: serde_json keeps insertion order when `preserve_order` is on in the build.
        let mut keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        let mut fields = EventDoc::FIELDS.to_vec();
        fields.sort_unstable();
        assert_eq!(keys, fields, "FIELDS names every field");
    }

    #[test]
    fn an_event_of_no_bottle_has_nulls_and_no_url() {
        let event = Event {
            event: EventKind::OperatorAdded,
            via: None,
            host: None,
            bottle: None,
            proposal_id: None,
            grant_id: None,
            kind: None,
            change: None,
            note: None,
            ..modified()
        };
        let value = serde_json::to_value(event.document().with_console("https://c")).unwrap();
        let object = value.as_object().unwrap();
        assert!(!object.contains_key("url"));
        assert_eq!(object.len(), EventDoc::FIELDS.len() - 1);
        assert_eq!(object["proposal_id"], Value::Null);
        assert_eq!(object["via"], Value::Null);
    }

    #[test]
    fn a_proposal_url_has_one_slash() {
        assert_eq!(
            proposal_url("https://c.example/", "019a"),
            "https://c.example/proposals/019a"
        );
        assert_eq!(
            proposal_url("https://c.example", "019a"),
            "https://c.example/proposals/019a"
        );
    }
}
