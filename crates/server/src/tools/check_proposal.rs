//! `check-proposal`: the non-blocking poll. A decision found is delivered (and archived), an
//! undecided proposal answers `pending`, anything else `unknown`. Never creates a proposal.

use serde_json::{Map, Value, json};
use supervise_protocol::Tool;
use supervise_store::{Bottle, Delivery};

use crate::App;
use crate::answer::{self, Answer};

pub const NAME: &str = "check-proposal";

/// The parsed arguments.
#[derive(Debug)]
pub struct Args {
    pub proposal_id: String,
}

pub fn definition() -> Tool {
    super::tool(
        NAME,
        "Check proposal",
        "Look up the status of one of your proposals by proposal_id, without waiting. A \
         decision is delivered once: after it has been returned, the id answers `unknown`.",
        json!({
            "type": "object",
            "properties": {
                "proposal_id": {
                    "type": "string",
                    "description": "The proposal_id a propose-* call returned.",
                    "minLength": 1
                }
            },
            "required": ["proposal_id"],
            "additionalProperties": false
        }),
        super::proposal_output_schema(),
        false,
    )
}

pub fn parse(args: &Map<String, Value>) -> Result<Args, Answer> {
    super::refuse_unknown(args, &["proposal_id"], NAME)?;
    let proposal_id = super::required_string(args, "proposal_id", NAME)?;
    let proposal_id = proposal_id.trim().to_string();
    if proposal_id.is_empty() {
        return Err(super::bad("proposal_id", "must not be empty", NAME));
    }
    Ok(Args { proposal_id })
}

pub async fn apply(app: &App, bottle: &Bottle, args: Args) -> Answer {
    // Exactly one poll gets a decision; calls waiting on the same proposal get it as well.
    match app
        .waiters
        .poll(&app.store, bottle.id, &args.proposal_id)
        .await
    {
        Ok(Delivery::Decided(p)) => {
            tracing::info!(bottle = %bottle.slug, proposal = %p.id, status = %p.status, "decision delivered to check-proposal");
            answer::delivered(&p)
        }
        Ok(Delivery::Expired(p)) => answer::expired(&p),
        Ok(Delivery::Pending(p)) => answer::pending(&p),
        Ok(Delivery::Unknown) => answer::unknown(&args.proposal_id),
        Err(e) => super::store_failure(&e, NAME),
    }
}
