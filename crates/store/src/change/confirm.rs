//! Which decisions need the operator's explicit confirmation, and which take no duration:
//! the one rule every surface (CLI, console page, API) asks before deciding.

use super::{flags::modified_flags, merge, normalise};
use crate::model::{Flag, Kind, Proposal, Verdict};

/// Whether approving or modifying a change with these flags needs an explicit
/// confirmation: any flag but `observed`, which says who filed the proposal (the proxy),
/// not that the change is risky.
pub fn needs_confirmation(flags: &[Flag]) -> bool {
    flags.iter().any(|f| *f != Flag::Observed)
}

impl Proposal {
    /// Whether this verdict needs the operator's explicit confirmation (a prompt or
    /// `--yes`, the console's box, the API's `"confirm": true`): an approval of a change
    /// with a risk flag, or a modification whose resulting change (or the proposed one)
    /// carries one, `widened` included. A rejection never does.
    pub fn needs_confirmation(&self, verdict: &Verdict) -> bool {
        !self.flags_to_confirm(verdict).is_empty()
    }

    /// The risk flags this verdict asks the operator to confirm (see
    /// [`Proposal::needs_confirmation`]); empty when it needs no confirmation.
    pub fn flags_to_confirm(&self, verdict: &Verdict) -> Vec<Flag> {
        let mut flags = match verdict {
            Verdict::Reject => return Vec::new(),
            Verdict::Approve => self.flags.clone(),
            Verdict::Modify(patch) => {
                let merged = merge(&self.change, patch);
                let mut all = self.flags.clone();
                if let Ok(m) = normalise(self.kind, &merged) {
                    all.extend(modified_flags(self.kind, &self.change, &m));
                }
                all
            }
        };
        flags.retain(|f| *f != Flag::Observed);
        let mut seen = Vec::with_capacity(flags.len());
        flags.retain(|f| {
            let new = !seen.contains(f);
            seen.push(*f);
            new
        });
        flags
    }

    /// Whether this is one push through the git gate (an exact ref, old and new): its
    /// approval lets exactly that push through once, so it takes no duration.
    pub fn is_gate_push(&self) -> bool {
        self.kind == Kind::GitPush && self.change.get("new").is_some()
    }
}
