//! `GET /proposals`, `GET /proposals/{id}` and the three decisions. Reads are filtered to
//! the operator's bottles (out of scope reads as not found); decisions go to the store with
//! the operator's `Actor`, which refuses a missing role (403) or a bottle out of scope (404).

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::Json;
use serde::Deserialize;
use supervise_store::{StatusFilter, StoreError, Verdict};
use utoipa::IntoParams;

use super::model::{DecideBody, ErrorDoc, ProposalDetail, ProposalDoc, ProposalList};
use super::{ApiError, bad_query};
use crate::app::App;
use crate::auth::ApiUser;
use crate::input::grant_duration;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// `pending` (default), `decided`, `archived`, `expired` or `all`.
    status: Option<String>,
    /// Only this bottle's proposals (its slug).
    bottle: Option<String>,
    /// Only the proposals of this host's bottles.
    host: Option<String>,
}

/// Proposals in the operator's bottles, oldest first.
#[utoipa::path(get, path = "/api/v1/proposals", params(ListQuery), tag = "proposals",
    responses(
        (status = 200, body = ProposalList),
        (status = 400, body = ErrorDoc), (status = 401, body = ErrorDoc),
    ))]
pub(crate) async fn list(
    State(app): State<App>,
    user: ApiUser,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<ProposalList>, ApiError> {
    let Query(q) = query.map_err(bad_query)?;
    let status = match q.status.as_deref() {
        None | Some("") => StatusFilter::Pending,
        Some(s) => StatusFilter::parse(s).ok_or_else(|| {
            ApiError::bad_request(
                Some("status"),
                "status is pending, decided, archived, expired or all",
            )
        })?,
    };
    let proposals = app.store().list(None, status).await?;
    let proposals = proposals
        .iter()
        .filter(|p| user.actor.sees(&p.bottle))
        .filter(|p| q.bottle.as_deref().is_none_or(|b| b == p.bottle))
        .filter(|p| q.host.as_deref().is_none_or(|h| h == p.host))
        .map(ProposalDoc::from)
        .collect();
    Ok(Json(ProposalList { proposals }))
}

/// One proposal (full id or a unique prefix) with its history.
#[utoipa::path(get, path = "/api/v1/proposals/{id}", tag = "proposals",
    params(("id" = String, Path, description = "proposal id or a unique prefix")),
    responses(
        (status = 200, body = ProposalDetail),
        (status = 400, body = ErrorDoc), (status = 401, body = ErrorDoc),
        (status = 404, body = ErrorDoc),
    ))]
pub(crate) async fn show(
    State(app): State<App>,
    user: ApiUser,
    Path(id): Path<String>,
) -> Result<Json<ProposalDetail>, ApiError> {
    let not_found = || ApiError::not_found(format!("no proposal with id {id}"));
    match app.store().show_for(&id, &user.actor).await {
        Ok((p, events)) => Ok(Json(ProposalDetail {
            proposal: ProposalDoc::from(&p),
            history: events
                .iter()
                .map(|e| super::events::document(&app, e))
                .collect(),
        })),
        Err(StoreError::ProposalNotFound(_)) => Err(not_found()),
        Err(err) => Err(err.into()),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Action {
    Approve,
    Modify,
    Reject,
}

/// Approve as proposed (or as modified, for a proposal whose quorum a modify restarted).
/// A proposal that needs several approvals counts this one and stays `pending` until the
/// last (`quorum.given` of `quorum.needed`); the token's operator counts once. A flagged
/// change needs `"confirm": true`.
#[utoipa::path(post, path = "/api/v1/proposals/{id}/approve", tag = "proposals",
    params(("id" = String, Path, description = "proposal id or a unique prefix")),
    request_body(content = Option<DecideBody>, content_type = "application/json"),
    responses(
        (status = 200, body = ProposalDoc),
        (status = 400, description = "invalid input; `field` names it (`confirm`: a flagged \
            change not confirmed, `for`: a duration on a gate push)", body = ErrorDoc),
        (status = 401, body = ErrorDoc),
        (status = 403, body = ErrorDoc), (status = 404, body = ErrorDoc),
        (status = 409, description = "already decided (who and when), or this operator's \
            approval is already counted toward the proposal's quorum", body = ErrorDoc),
    ))]
pub(crate) async fn approve(
    app: State<App>,
    user: ApiUser,
    id: Path<String>,
    body: Bytes,
) -> Result<Json<ProposalDoc>, ApiError> {
    decide(app, user, id, body, Action::Approve).await
}

/// Approve a different change of the same kind: `change` is merged over the proposed one.
/// A flagged change (proposed or modified) needs `"confirm": true`.
#[utoipa::path(post, path = "/api/v1/proposals/{id}/modify", tag = "proposals",
    params(("id" = String, Path, description = "proposal id or a unique prefix")),
    request_body(content = DecideBody, content_type = "application/json"),
    responses(
        (status = 200, body = ProposalDoc),
        (status = 400, description = "invalid input; `field` names it (`confirm`: a flagged \
            change not confirmed)", body = ErrorDoc),
        (status = 401, body = ErrorDoc),
        (status = 403, body = ErrorDoc), (status = 404, body = ErrorDoc),
        (status = 409, description = "already decided: who and when", body = ErrorDoc),
    ))]
pub(crate) async fn modify(
    app: State<App>,
    user: ApiUser,
    id: Path<String>,
    body: Bytes,
) -> Result<Json<ProposalDoc>, ApiError> {
    decide(app, user, id, body, Action::Modify).await
}

/// Reject; the note reaches the agent.
#[utoipa::path(post, path = "/api/v1/proposals/{id}/reject", tag = "proposals",
    params(("id" = String, Path, description = "proposal id or a unique prefix")),
    request_body(content = Option<DecideBody>, content_type = "application/json"),
    responses(
        (status = 200, body = ProposalDoc),
        (status = 400, body = ErrorDoc), (status = 401, body = ErrorDoc),
        (status = 403, body = ErrorDoc), (status = 404, body = ErrorDoc),
        (status = 409, description = "already decided: who and when", body = ErrorDoc),
    ))]
pub(crate) async fn reject(
    app: State<App>,
    user: ApiUser,
    id: Path<String>,
    body: Bytes,
) -> Result<Json<ProposalDoc>, ApiError> {
    decide(app, user, id, body, Action::Reject).await
}

/// The body as JSON (empty means `{}`), in the API's error shape when it is not.
pub(crate) fn parse_body<T: serde::de::DeserializeOwned + Default>(
    body: &[u8],
) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(None, format!("invalid JSON body: {e}")))
}

async fn decide(
    State(app): State<App>,
    user: ApiUser,
    Path(id): Path<String>,
    body: Bytes,
    action: Action,
) -> Result<Json<ProposalDoc>, ApiError> {
    let body: DecideBody = parse_body(&body)?;
    let grant_for = match body.grant_for.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(_) if action == Action::Reject => {
            return Err(ApiError::bad_request(
                Some("for"),
                "a rejection grants nothing, so it takes no duration",
            ));
        }
        Some(text) => {
            Some(grant_duration(text).map_err(|e| ApiError::bad_request(Some("for"), e))?)
        }
    };
    let verdict = match (action, body.change) {
        (Action::Modify, Some(change)) => Verdict::Modify(change),
        (Action::Modify, None) => {
            return Err(ApiError::bad_request(
                Some("change"),
                "modify needs a change: the fields to merge over the proposed one",
            ));
        }
        (_, Some(_)) => {
            return Err(ApiError::bad_request(
                Some("change"),
                "only modify takes a change",
            ));
        }
        (Action::Approve, None) => Verdict::Approve,
        (Action::Reject, None) => Verdict::Reject,
    };
    if verdict != Verdict::Reject && body.confirm != Some(true) && user.actor.may_decide() {
        let p = match app.store().show_for(&id, &user.actor).await {
            Ok((p, _)) => p,
            Err(StoreError::ProposalNotFound(_)) => {
                return Err(ApiError::not_found(format!("no proposal with id {id}")));
            }
            Err(err) => return Err(err.into()),
        };
        let flags = p.flags_to_confirm(&verdict);
        if !flags.is_empty() {
            let names: Vec<&str> = flags.iter().map(|f| f.as_str()).collect();
            return Err(ApiError::bad_request(
                Some("confirm"),
                format!(
                    "this change is flagged ({}): send \"confirm\": true to decide it",
                    names.join(", ")
                ),
            ));
        }
    }
    let decided = app
        .store()
        .decide(&id, verdict, &user.actor, body.note.as_deref(), grant_for)
        .await?;
    tracing::info!(host = %decided.host, bottle = %decided.bottle, proposal = %decided.id, status = %decided.status,
        operator = %user.actor.name, "decided through the API");
    Ok(Json(ProposalDoc::from(&decided)))
}
