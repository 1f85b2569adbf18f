//! `check-proposal`: the non-blocking poll. A decision found is delivered (and archived), an
//! undecided proposal answers `pending`, anything else `unknown`. Never creates a proposal.

use serde_json::{Map, Value};
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
        super::proposal_id_input_schema(),
        super::proposal_output_schema(),
        false,
    )
}

pub fn parse(args: &Map<String, Value>) -> Result<Args, Answer> {
    super::proposal_id_arg(args, NAME).map(|proposal_id| Args { proposal_id })
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
