//! The egress context on a proposal's page: the bottle's grants in force, the last
//! decisions on the same destination among the bottles the operator sees, the proxy's
//! refusals, and (only when the operator presses "Resolve", `?resolve=1`) what the name
//! resolves to from this host, each address marked.

use supervise_store::present::address;
use supervise_store::{Proposal, Resolution, resolve};

use super::PageError;
use crate::app::App;
use crate::auth::PageUser;
use crate::view;

pub(crate) struct GrantLine {
    pub id: String,
    pub change: String,
    pub until: String,
}

pub(crate) struct DecisionLine {
    pub at: String,
    pub event: &'static str,
    pub bottle: String,
    pub actor: String,
    pub note: Option<String>,
}

pub(crate) struct AddressLine {
    pub address: String,
    pub marks: Vec<&'static str>,
}

pub(crate) struct ContextView {
    pub destination: String,
    pub grants: Vec<GrantLine>,
    pub decisions: Vec<DecisionLine>,
    /// `Refused at the proxy: N times, last …`.
    pub refusals: String,
    /// `None` until the operator asks; then the addresses or why there are none.
    pub resolved: Option<Result<Vec<AddressLine>, String>>,
}

/// The context of an egress proposal `user` sees (`None` for other kinds).
pub(crate) async fn load(
    app: &App,
    user: &PageUser,
    p: &Proposal,
    resolving: bool,
) -> Result<Option<ContextView>, PageError> {
    let Some(c) = app.store().context_of(p, &user.actor).await? else {
        return Ok(None);
    };
    let resolved = if resolving {
        Some(match resolve(&c.host, c.port).await {
            Resolution::Addresses(list) => Ok(list
                .into_iter()
                .map(|(ip, flags)| AddressLine {
                    address: ip.to_string(),
                    marks: flags.iter().map(|f| f.as_str()).collect(),
                })
                .collect()),
            Resolution::Failed(why) => Err(view::untrusted(&why)),
        })
    } else {
        None
    };
    Ok(Some(ContextView {
        destination: view::untrusted(&address(&c.host, c.port)),
        grants: c
            .grants
            .iter()
            .map(|g| GrantLine {
                id: g.id.to_string(),
                change: view::change_text(g.kind, &g.change),
                until: match &g.expires_at {
                    Some(end) => format!("until {end}"),
                    None => "until revoked".into(),
                },
            })
            .collect(),
        decisions: c
            .decisions
            .iter()
            .map(|e| DecisionLine {
                at: e.at.to_string(),
                event: e.event.as_str(),
                bottle: view::untrusted(e.bottle.as_deref().unwrap_or("-")),
                actor: view::untrusted(&e.actor),
                note: e.note.as_deref().map(view::untrusted),
            })
            .collect(),
        refusals: match &c.refusals {
            Some(r) => format!(
                "Refused at the proxy: {} {}, last {}",
                r.count,
                if r.count == 1 { "time" } else { "times" },
                r.last_seen
            ),
            None => "Refused at the proxy: never recorded".into(),
        },
        resolved,
    }))
}
