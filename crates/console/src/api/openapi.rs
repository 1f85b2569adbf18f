//! `GET /api/v1/openapi.json`: the API described, derived from the handlers' annotations
//! and the wire types in `model`, so the document cannot drift from the code.

use axum::response::{IntoResponse, Response};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::model::{
    DecideBody, DecisionDoc, ErrorDoc, EventSchema, GrantDoc, GrantList, ProposalDetail,
    ProposalDoc, ProposalList, QuorumDoc,
};
use super::{events, grants, proposals};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "supervise console API",
        description = "Decide what sandboxed agents may reach. Authenticate with \
            `Authorization: Bearer TOKEN` (`supervise operator token NAME`). \
            `GET /api/v1/events` with `Accept: text/event-stream` streams the change feed \
            as Server-Sent Events (id = seq, event = the event name, data = the event)."
    ),
    paths(
        proposals::list, proposals::show, proposals::approve, proposals::modify,
        proposals::reject, grants::list, grants::revoke, events::events
    ),
    components(schemas(
        ProposalDoc, DecisionDoc, EventSchema, GrantDoc, ProposalList, ProposalDetail, GrantList,
        DecideBody, ErrorDoc, QuorumDoc
    )),
    modifiers(&BearerAuth),
    security(("bearer" = []))
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The document as JSON text.
pub(crate) fn json() -> String {
    ApiDoc::openapi()
        .to_json()
        .unwrap_or_else(|_| "{}".to_owned())
}

pub(crate) async fn document() -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        json(),
    )
        .into_response()
}
