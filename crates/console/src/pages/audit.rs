//! The audit trail, newest first, filtered by host, bottle, event, operator, how it was
//! decided (`via`: `rules` keeps the automatic decisions) and time, and its
//! export as JSON lines (`?format=jsonl`, the same filters). An operator sees the events
//! of the bottles in their scope; events of no bottle (operators, sign-ins) only admins.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use supervise_store::{Event, EventKind, Timestamp, Via, clock, model};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::{Chrome, PageError, html};
use crate::app::App;
use crate::auth::PageUser;
use crate::view;

/// Events shown on the page at most (the export has them all).
const PAGE_LIMIT: usize = 500;

#[derive(Deserialize, Default)]
pub(crate) struct AuditQuery {
    #[serde(default)]
    host: String,
    #[serde(default)]
    bottle: String,
    #[serde(default)]
    event: String,
    #[serde(default)]
    operator: String,
    /// `rules` (automatic decisions and shadow matches), `cli`, `console` or `gate`.
    #[serde(default)]
    via: String,
    #[serde(default)]
    since: String,
    #[serde(default)]
    until: String,
    #[serde(default)]
    format: String,
}

pub(crate) struct AuditEvent {
    pub at: String,
    pub event: &'static str,
    pub actor: String,
    pub via: Option<String>,
    pub bottle: Option<String>,
    pub proposal_id: Option<String>,
    pub short: String,
    pub change: Option<String>,
    pub note: Option<String>,
}

#[derive(Template)]
#[template(path = "audit.html")]
struct AuditPage {
    chrome: Chrome,
    q: AuditQuery,
    hosts: view::HostFilter,
    event_names: Vec<&'static str>,
    via_names: Vec<&'static str>,
    events: Vec<AuditEvent>,
    shown: usize,
    total: usize,
    export: String,
    error: Option<String>,
}

/// Whether `event` is of the bottle `name` (`SLUG`, or `HOST/SLUG`); every event for "".
fn named(event: &Event, name: &str) -> bool {
    match (name.split_once('/'), &event.host, &event.bottle) {
        _ if name.is_empty() => true,
        (Some((host, slug)), Some(h), Some(b)) => host == h && slug == b,
        (None, _, Some(b)) => name == b,
        _ => false,
    }
}

/// A time filter: RFC 3339, or a duration meaning that long ago (`1h`, `7d`).
fn parse_when(text: &str) -> Result<Option<OffsetDateTime>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    if let Ok(t) = OffsetDateTime::parse(text, &Rfc3339) {
        return Ok(Some(t));
    }
    clock::parse_duration(text)
        .map(|d| Some(Timestamp::before(d).to_time()))
        .map_err(|_| format!("{text:?} is neither an RFC 3339 time nor a duration like 1h"))
}

pub(crate) async fn page(
    State(app): State<App>,
    user: PageUser,
    Query(q): Query<AuditQuery>,
) -> Result<Response, PageError> {
    let mut error = None;
    let since = parse_when(&q.since).unwrap_or_else(|e| {
        error = Some(e);
        None
    });
    let until = parse_when(&q.until).unwrap_or_else(|e| {
        error = Some(e);
        None
    });
    let event = match q.event.trim() {
        "" => None,
        name => match name.parse::<EventKind>() {
            Ok(kind) => Some(kind),
            Err(_) => {
                error = Some(format!("no event named {name:?}"));
                None
            }
        },
    };
    let operator = q.operator.trim();
    let via = match q.via.trim() {
        "" => None,
        name => match name.parse::<Via>() {
            Ok(via) => Some(via),
            Err(_) => {
                error = Some(format!("no way of deciding named {name:?}"));
                None
            }
        },
    };
    let all = app.store().audit(None).await?;
    let seen: Vec<&Event> = all.iter().filter(|e| user.actor.sees_event(e)).collect();
    let hosts = view::HostFilter::new(seen.iter().filter_map(|e| e.host.as_deref()), &q.host);
    let matching: Vec<&Event> = seen
        .into_iter()
        .filter(|e| hosts.admits(e.host.as_deref()))
        .filter(|e| named(e, q.bottle.trim()))
        .filter(|e| event.is_none_or(|k| e.event == k))
        .filter(|e| {
            operator.is_empty()
                || e.actor == format!("operator:{operator}")
                || e.actor == operator
                || (operator.ends_with(':') && e.actor.starts_with(operator))
        })
        .filter(|e| via.is_none_or(|v| e.via == Some(v)))
        .filter(|e| since.is_none_or(|t| e.at.to_time() >= t))
        .filter(|e| until.is_none_or(|t| e.at.to_time() <= t))
        .collect();
    if q.format == "jsonl" {
        return Ok(jsonl(&app, &matching));
    }
    let total = matching.len();
    let with_host = model::hosts_differ(matching.iter().filter_map(|e| e.host.as_deref()));
    let events: Vec<AuditEvent> = matching
        .iter()
        .rev()
        .take(PAGE_LIMIT)
        .map(|e| AuditEvent {
            at: e.at.to_string(),
            event: e.event.as_str(),
            actor: view::untrusted(&e.actor),
            via: e.via.map(|v| v.to_string()),
            bottle: match (&e.host, &e.bottle) {
                (Some(host), Some(slug)) => Some(view::bottle_name(with_host, host, slug)),
                (None, slug) => slug.as_deref().map(view::untrusted),
                (Some(_), None) => None,
            },
            proposal_id: e.proposal_id.as_ref().map(|p| p.to_string()),
            short: e
                .proposal_id
                .as_ref()
                .map(|p| view::short_id(p).to_owned())
                .unwrap_or_default(),
            change: match (e.kind, &e.change) {
                (Some(kind), Some(change)) => Some(view::change_text(kind, change)),
                _ => None,
            },
            note: e.note.as_deref().map(view::untrusted),
        })
        .collect();
    let export = export_link(&q);
    let page = AuditPage {
        chrome: Chrome::new(&user, "Audit", "audit"),
        shown: events.len(),
        total,
        events,
        hosts,
        event_names: EventKind::ALL.iter().map(|k| k.as_str()).collect(),
        via_names: Via::ALL.iter().map(|v| v.as_str()).collect(),
        export,
        q,
        error,
    };
    Ok(html(StatusCode::OK, &page))
}

fn export_link(q: &AuditQuery) -> String {
    let mut pairs = vec![("format", "jsonl")];
    for (name, value) in [
        ("host", &q.host),
        ("bottle", &q.bottle),
        ("event", &q.event),
        ("operator", &q.operator),
        ("via", &q.via),
        ("since", &q.since),
        ("until", &q.until),
    ] {
        if !value.trim().is_empty() {
            pairs.push((name, value.trim()));
        }
    }
    let query: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", percent(v)))
        .collect();
    format!("/audit?{}", query.join("&"))
}

fn percent(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~:".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One JSON document per line (the store's event document, linking each proposal's page
/// here), oldest first, as a download.
fn jsonl(app: &App, events: &[&Event]) -> Response {
    let mut body = String::new();
    for e in events {
        let doc = e.document().with_console(app.public_url());
        if let Ok(line) = serde_json::to_string(&doc) {
            body.push_str(&line);
            body.push('\n');
        }
    }
    (
        [
            (header::CONTENT_TYPE, "application/x-ndjson; charset=utf-8"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"supervise-audit.jsonl\"",
            ),
        ],
        body,
    )
        .into_response()
}
