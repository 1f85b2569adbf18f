//! Which events of the trail an operator sees: the rule the audit page, its export, the
//! API's events and both live streams share.

use supervise_store::{Actor, Event};

/// Whether `actor` may see `event`: the store's scope rule for its bottle; admins for
/// events of no bottle.
pub(crate) fn visible(actor: &Actor, event: &Event) -> bool {
    match &event.bottle {
        Some(slug) => actor.sees(slug),
        None => actor.is_admin(),
    }
}
