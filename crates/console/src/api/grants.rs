//! `GET /grants` (in force, in the operator's bottles) and `POST /grants/{id}/revoke`.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::Json;
use serde::Deserialize;
use utoipa::IntoParams;

use super::model::{ErrorDoc, GrantDoc, GrantList};
use super::{ApiError, bad_query};
use crate::app::App;
use crate::auth::ApiUser;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct GrantQuery {
    /// Only this bottle's grants (its slug).
    bottle: Option<String>,
    /// Only the grants of this host's bottles.
    host: Option<String>,
}

/// The grants in force in the operator's bottles of every host (or of `host`), each with
/// its last recorded use.
#[utoipa::path(get, path = "/api/v1/grants", params(GrantQuery), tag = "grants",
    responses(
        (status = 200, body = GrantList),
        (status = 400, body = ErrorDoc), (status = 401, body = ErrorDoc),
    ))]
pub(crate) async fn list(
    State(app): State<App>,
    user: ApiUser,
    query: Result<Query<GrantQuery>, QueryRejection>,
) -> Result<Json<GrantList>, ApiError> {
    let Query(q) = query.map_err(bad_query)?;
    let policy = app.store().policy_on(q.host.as_deref()).await?;
    let grants = policy
        .iter()
        .filter(|(b, _)| user.actor.sees(&b.slug))
        .filter(|(b, _)| q.bottle.as_deref().is_none_or(|s| s == b.slug))
        .flat_map(|(_, grants)| grants.iter().map(GrantDoc::from))
        .collect();
    Ok(Json(GrantList { grants }))
}

/// Ends a grant now.
#[utoipa::path(post, path = "/api/v1/grants/{id}/revoke", tag = "grants",
    params(("id" = String, Path, description = "grant id")),
    responses(
        (status = 200, body = GrantDoc),
        (status = 401, body = ErrorDoc), (status = 403, body = ErrorDoc),
        (status = 404, body = ErrorDoc),
        (status = 409, description = "the grant already ended", body = ErrorDoc),
    ))]
pub(crate) async fn revoke(
    State(app): State<App>,
    user: ApiUser,
    Path(id): Path<String>,
) -> Result<Json<GrantDoc>, ApiError> {
    let grant = app.store().revoke(&id, &user.actor).await?;
    tracing::info!(host = %grant.host, bottle = %grant.bottle, proposal = %grant.proposal_id, grant = %grant.id,
        operator = %user.actor.name, "grant revoked through the API");
    Ok(Json(GrantDoc::from(&grant)))
}
