//! `rules test`: proposals already filed, run through a candidate [`RuleSet`] as if it had
//! been in force when each was filed, counted by outcome, with every disagreement with
//! what a human actually decided.

use serde::Serialize;

use super::{Facts, Outcome, RuleSet};
use crate::model::{Kind, Proposal, Status, Via};

/// What a candidate rules file would have done to a window of proposals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Replay {
    /// Proposals replayed.
    pub proposals: u64,
    pub auto_approved: u64,
    pub auto_rejected: u64,
    /// Left to humans: no rule decided (quorum ones included).
    pub human: u64,
    /// Of `human`, those a quorum permit matched.
    pub quorum: u64,
    /// A human decided one way and the rules the other, oldest first.
    pub disagreements: Vec<Disagreement>,
}

/// One proposal a human decided otherwise than the candidate rules would.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Disagreement {
    pub id: String,
    pub bottle: String,
    pub kind: Kind,
    pub change: serde_json::Value,
    /// `approved`, `modified` or `rejected`.
    pub human: Status,
    pub decided_by: String,
    /// The rule that would have decided, and what it would have done.
    pub rule: String,
    pub would: String,
}

/// Whether a person (not a rule) decided `p`.
fn human_decision(p: &Proposal) -> Option<(Status, String)> {
    let d = p.decision.as_ref()?;
    if d.via == Some(Via::Rules) || !p.status.is_decision() {
        return None;
    }
    Some((p.status, d.decided_by.clone()))
}

/// Replays `proposals` through `rules`.
pub fn replay<'a>(rules: &RuleSet, proposals: impl IntoIterator<Item = &'a Proposal>) -> Replay {
    let mut out = Replay::default();
    for p in proposals {
        out.proposals += 1;
        let facts = Facts {
            slug: &p.bottle,
            host: &p.host,
            kind: p.kind,
            change: &p.change,
            flags: &p.flags,
            hits: 1,
            justification: &p.justification,
            time: p.created_at.to_time().unix_timestamp(),
        };
        let outcome = rules.evaluate(&facts).outcome;
        let approves = match &outcome {
            Outcome::Permit { .. } => {
                out.auto_approved += 1;
                true
            }
            Outcome::Forbid { .. } => {
                out.auto_rejected += 1;
                false
            }
            Outcome::Quorum(_) => {
                out.human += 1;
                out.quorum += 1;
                continue;
            }
            Outcome::Human => {
                out.human += 1;
                continue;
            }
        };
        let Some((human, decided_by)) = human_decision(p) else {
            continue;
        };
        if approves == (human == Status::Rejected) {
            out.disagreements.push(Disagreement {
                id: p.id.to_string(),
                bottle: p.bottle.clone(),
                kind: p.kind,
                change: p.change.clone(),
                human,
                decided_by,
                rule: outcome.rule().unwrap_or_default().to_string(),
                would: outcome.describe(),
            });
        }
    }
    out
}
