//! What every method handler shares: its view of the request ([`Ctx`]) and the words and
//! cache hints several methods send.

use serde_json::json;
use supervise_protocol::{ErrorObject, ModernMeta, ProtocolVersion, TASKS_EXTENSION};
use supervise_store::Bottle;

use crate::app::App;

/// What a method handler knows about its request.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    pub(crate) app: &'a App,
    pub(crate) bottle: &'a Bottle,
    /// The revision the request is served under.
    pub(crate) version: ProtocolVersion,
    /// The per-request metadata of a 2026-07-28 request.
    pub(crate) modern: Option<ModernMeta>,
}

impl Ctx<'_> {
    /// Whether this request declared the tasks extension in its client capabilities (only
    /// a 2026-07-28 request can).
    pub(crate) fn declares_tasks(&self) -> bool {
        self.modern
            .as_ref()
            .is_some_and(|m| m.has_extension(TASKS_EXTENSION))
    }

    /// -32021 for a tasks method called without the extension declared.
    pub(crate) fn require_tasks(&self) -> Result<(), ErrorObject> {
        if self.declares_tasks() {
            Ok(())
        } else {
            Err(ErrorObject::missing_required_client_capability(
                json!({ "extensions": { TASKS_EXTENSION: {} } }),
            ))
        }
    }
}

/// Guidance for the model, sent in `initialize` and `server/discover`.
pub(crate) const INSTRUCTIONS: &str = "This server lets you ask a human operator for access your \
sandbox does not have: propose-egress for a host/port, propose-git-push for a ref. A proposal \
waits briefly for the operator; if the answer is `pending`, keep the proposal_id and poll \
check-proposal later instead of proposing again. list-proposals shows your open proposals; \
withdraw-proposal takes one back.";

/// How long a `tools/list` or `server/discover` result may be cached (the tool set never
/// changes while the server runs).
pub(crate) const CACHE_TTL_MS: u64 = 3_600_000;
