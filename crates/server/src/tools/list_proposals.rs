//! `list-proposals`: the caller's own proposals that are not archived yet.

use serde_json::{Map, Value, json};
use supervise_protocol::Tool;
use supervise_store::{Bottle, StoreError};

use crate::answer::{self, Answer};
use crate::app::App;
use crate::bottles::Stale;

pub(crate) const NAME: &str = "list-proposals";

pub(crate) fn definition() -> Tool {
    super::schema::tool(
        NAME,
        "List proposals",
        "List your open proposals (undecided, or decided but not yet delivered to you), oldest \
         first. Never creates a proposal.",
        json!({ "type": "object", "properties": {}, "additionalProperties": false }),
        json!({
            "type": "object",
            "properties": {
                "proposals": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "proposal_id": { "type": "string" },
                            "status": { "type": "string" },
                            "kind": { "type": "string" },
                            "proposal": { "type": "object" },
                            "decision": { "type": "object" },
                            "created_at": { "type": "string" },
                            "hits": { "type": "integer" }
                        },
                        "required": ["proposal_id", "status", "kind", "proposal", "created_at", "hits"]
                    }
                },
                "status": { "type": "string" },
                "error": { "type": "string" }
            }
        }),
        true,
    )
}

pub(crate) fn parse(args: &Map<String, Value>) -> Result<(), Answer> {
    super::args::refuse_unknown(args, &[], NAME)
}

pub(crate) async fn apply(app: &App, bottle: &Bottle) -> Result<Answer, Stale> {
    match app.store.open_proposals(bottle.id).await {
        Ok(list) => Ok(answer::list(&list)),
        Err(StoreError::BottleGone(_)) => Err(Stale),
        Err(e) => Ok(answer::store_failure(&e, NAME)),
    }
}
