//! One proposal: everything `supervise show` shows (the change, flags, the git push's
//! summary, justification, decision, history with actor and via) and the three decisions.
//! A flagged proposal is approved or modified only with the confirmation box ticked; a
//! decision someone else made first is shown as "already approved by NAME at TIME".

use askama::Template;
use axum::Form;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::{Map, Value};
use supervise_store::{Event, Proposal, Status, StoreError, Verdict};

use super::proposal_context::{self, ContextView};
use super::{Chrome, PageError, html};
use crate::app::App;
use crate::auth::PageUser;
use crate::input::grant_duration;
use crate::view;

pub(crate) struct DecisionView {
    pub status: &'static str,
    pub by: String,
    pub via: Option<String>,
    pub at: String,
    pub granted: Option<String>,
    pub note: Option<String>,
    pub grant: Option<String>,
}

pub(crate) struct EventView {
    pub at: String,
    pub event: &'static str,
    pub actor: String,
    pub via: Option<String>,
    pub note: Option<String>,
}

pub(crate) struct ProposalView {
    pub id: String,
    pub short_id: String,
    pub host: String,
    pub bottle: String,
    pub kind: &'static str,
    pub status: &'static str,
    pub pending: bool,
    pub change: String,
    pub fields: Vec<(&'static str, String)>,
    pub flags: Vec<(&'static str, &'static str)>,
    /// Approving needs the confirmation box ([`supervise_store::change::needs_confirmation`]).
    pub needs_confirm: bool,
    /// A gate push: approved once, with no duration and no modification.
    pub one_shot: bool,
    pub hits: i64,
    pub created_at: String,
    pub age: String,
    pub expires: String,
    pub summary: Vec<String>,
    pub justification: String,
    pub decision: Option<DecisionView>,
    pub history: Vec<EventView>,
    /// `1 of 2 approvals` when more than one approval is needed.
    pub approvals: Option<String>,
    /// The change under approval when a modify replaced the proposed one (pending only).
    pub approving: Option<String>,
}

impl ProposalView {
    fn of(p: &Proposal, events: &[Event]) -> ProposalView {
        let decision = p.decision.as_ref().map(|d| DecisionView {
            status: p.status.as_str(),
            by: view::untrusted(&d.decided_by),
            via: d.via.map(|v| v.to_string()),
            at: d.decided_at.to_string(),
            granted: d.change.as_ref().map(|c| view::change_text(p.kind, c)),
            note: d.note.as_deref().map(view::untrusted),
            grant: d.grant_id.as_ref().map(|g| match &d.grant_expires_at {
                Some(end) => format!("{g}, until {end}"),
                None => format!("{g}, until revoked"),
            }),
        });
        ProposalView {
            id: p.id.to_string(),
            short_id: view::short_id(&p.id).to_owned(),
            host: view::untrusted(&p.host),
            bottle: view::untrusted(&p.bottle),
            kind: p.kind.as_str(),
            status: p.status.as_str(),
            pending: p.status == Status::Pending,
            change: view::change_text(p.kind, &p.change),
            fields: view::editable_fields(p.kind, &p.change),
            flags: p.flags.iter().map(|f| (f.as_str(), f.meaning())).collect(),
            needs_confirm: supervise_store::change::needs_confirmation(&p.flags),
            one_shot: p.is_gate_push(),
            hits: p.hits,
            created_at: p.created_at.to_string(),
            age: view::age(&p.created_at),
            expires: match &p.expires_at {
                Some(at) => format!("{at} ({})", view::time_left(Some(at))),
                None => "never".into(),
            },
            summary: view::summary_lines(p),
            justification: view::untrusted(&p.justification),
            decision,
            approvals: view::approvals(p),
            approving: p
                .quorum
                .change
                .as_ref()
                .filter(|_| p.status == Status::Pending)
                .map(|c| view::change_text(p.kind, c)),
            history: events
                .iter()
                .map(|e| EventView {
                    at: e.at.to_string(),
                    event: e.event.as_str(),
                    actor: view::untrusted(&e.actor),
                    via: e.via.map(|v| v.to_string()),
                    note: e.note.as_deref().map(view::untrusted),
                })
                .collect(),
        }
    }
}

#[derive(Template)]
#[template(path = "proposal.html")]
struct ProposalPage {
    chrome: Chrome,
    p: ProposalView,
    /// A gate push's recorded content.
    diff: Option<super::push_diff::DiffView>,
    context: Option<ContextView>,
    may_decide: bool,
    notice: Option<String>,
    error: Option<String>,
}

/// The proposal if the operator may see it; 404 otherwise (the same answer as for an id
/// that does not exist, so nothing about other bottles leaks).
async fn load(app: &App, user: &PageUser, id: &str) -> Result<(Proposal, Vec<Event>), PageError> {
    let not_found = || PageError::not_found(format!("no proposal with id {}", view::untrusted(id)));
    match app.store().show_for(id, &user.actor).await {
        Ok(found) => Ok(found),
        Err(StoreError::ProposalNotFound(_)) => Err(not_found()),
        Err(err) => Err(err.into()),
    }
}

async fn render(
    app: &App,
    user: &PageUser,
    id: &str,
    status: StatusCode,
    notice: Option<String>,
    error: Option<String>,
) -> Result<Response, PageError> {
    render_resolving(app, user, id, status, notice, error, false).await
}

async fn render_resolving(
    app: &App,
    user: &PageUser,
    id: &str,
    status: StatusCode,
    notice: Option<String>,
    error: Option<String>,
    resolving: bool,
) -> Result<Response, PageError> {
    let (p, events) = load(app, user, id).await?;
    let diff = app.store().push_diff(&p.id).await?;
    let context = proposal_context::load(app, user, &p, resolving).await?;
    let page = ProposalPage {
        chrome: Chrome::new(user, format!("Proposal {}", view::short_id(&p.id)), "queue"),
        p: ProposalView::of(&p, &events),
        diff: diff.as_ref().map(super::push_diff::DiffView::of),
        context,
        may_decide: user.actor.may_decide(),
        notice,
        error,
    };
    Ok(html(status, &page))
}

/// `?resolve=1`: the operator asked to resolve an egress proposal's name.
#[derive(Deserialize)]
pub(crate) struct PageQuery {
    resolve: Option<String>,
}

pub(crate) async fn page(
    State(app): State<App>,
    user: PageUser,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Result<Response, PageError> {
    let resolving = q.resolve.as_deref() == Some("1");
    render_resolving(&app, &user, &id, StatusCode::OK, None, None, resolving).await
}

/// The fields of the three decision forms; each form sends the ones it has.
#[derive(Deserialize)]
pub(crate) struct DecideForm {
    note: Option<String>,
    #[serde(rename = "for")]
    grant_for: Option<String>,
    confirm: Option<String>,
    host: Option<String>,
    port: Option<String>,
    remote: Option<String>,
    #[serde(rename = "ref")]
    reference: Option<String>,
}

pub(crate) async fn approve(
    state: State<App>,
    user: PageUser,
    id: Path<String>,
    form: Form<DecideForm>,
) -> Result<Response, PageError> {
    decide(state, user, id, form, Action::Approve).await
}

pub(crate) async fn modify(
    state: State<App>,
    user: PageUser,
    id: Path<String>,
    form: Form<DecideForm>,
) -> Result<Response, PageError> {
    decide(state, user, id, form, Action::Modify).await
}

pub(crate) async fn reject(
    state: State<App>,
    user: PageUser,
    id: Path<String>,
    form: Form<DecideForm>,
) -> Result<Response, PageError> {
    decide(state, user, id, form, Action::Reject).await
}

#[derive(Clone, Copy, PartialEq)]
enum Action {
    Approve,
    Modify,
    Reject,
}

async fn decide(
    State(app): State<App>,
    user: PageUser,
    Path(id): Path<String>,
    Form(form): Form<DecideForm>,
    action: Action,
) -> Result<Response, PageError> {
    // The store refuses a viewer too; asking first keeps the answer 403 rather than a
    // complaint about the form.
    if !user.actor.may_decide() {
        return Err(PageError::forbidden(format!(
            "operator {} ({}) may not decide proposals",
            user.operator.name, user.operator.role
        )));
    }
    let (p, _) = load(&app, &user, &id).await?;
    let again = |message: String| {
        let (app, user, id) = (&app, &user, &id);
        async move { render(app, user, id, StatusCode::BAD_REQUEST, None, Some(message)).await }
    };
    let grant_for = match form.grant_for.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(text) => match grant_duration(text) {
            Ok(d) => Some(d),
            Err(err) => return again(err).await,
        },
    };
    let verdict = match action {
        Action::Approve => Verdict::Approve,
        Action::Reject => Verdict::Reject,
        Action::Modify => Verdict::Modify(patch(&form)),
    };
    let flags = p.flags_to_confirm(&verdict);
    if !flags.is_empty() && form.confirm.as_deref() != Some("yes") {
        let names: Vec<&str> = flags.iter().map(|f| f.as_str()).collect();
        return again(format!(
            "this change is flagged ({}): tick the confirmation box to decide it",
            names.join(", ")
        ))
        .await;
    }
    let note = form.note.as_deref();
    match app
        .store()
        .decide(&p.id, verdict, &user.actor, note, grant_for)
        .await
    {
        Ok(decided) => {
            tracing::info!(bottle = %decided.bottle, proposal = %decided.id, status = %decided.status,
                operator = %user.operator.name, "decided in the console");
            Ok(Redirect::to(&format!("/proposals/{}", decided.id)).into_response())
        }
        Err(StoreError::NotPending {
            status,
            decided_by,
            decided_at,
            ..
        }) => {
            let notice = match (decided_by, decided_at) {
                (Some(by), Some(at)) => {
                    format!("already {status} by {} at {at}", view::untrusted(&by))
                }
                (_, Some(at)) => format!("already {status} at {at}"),
                _ => format!("already {status}"),
            };
            render(&app, &user, &id, StatusCode::CONFLICT, Some(notice), None).await
        }
        Err(err @ StoreError::AlreadyApproved { .. }) => {
            let notice = view::untrusted(&err.to_string());
            render(&app, &user, &id, StatusCode::CONFLICT, Some(notice), None).await
        }
        Err(err @ StoreError::Invalid { .. }) => again(err.to_string()).await,
        Err(err) => Err(err.into()),
    }
}

/// The modify form's fields as a change patch: only the fields sent and not empty; a port
/// that is a number goes as a number (the store validates the result like a proposal).
fn patch(form: &DecideForm) -> Map<String, Value> {
    let mut patch = Map::new();
    let mut put = |name: &str, value: &Option<String>| {
        if let Some(v) = value.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
            patch.insert(name.into(), Value::String(v.to_owned()));
        }
    };
    put("host", &form.host);
    put("remote", &form.remote);
    put("ref", &form.reference);
    if let Some(port) = form
        .port
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        let value = port
            .parse::<u64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::String(port.to_owned()));
        patch.insert("port".into(), value);
    }
    patch
}
