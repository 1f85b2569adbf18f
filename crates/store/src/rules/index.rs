//! The policies of one group (forbids, quorum permits, ...) bucketed by what can match
//! them, so a proposal is run only through the policies that can: by action (a policy
//! scoped to `Action::"egress"` never matches a push), and for egress by host (a policy
//! whose `when` has a top-level conjunct `resource.host == "LITERAL"` matches only that
//! host). A policy whose shape is not recognised goes in the general bucket, so the
//! matches are exactly those of the whole group.

use std::collections::HashMap;
use std::str::FromStr;

use cedar_policy::{ActionConstraint, EntityUid, Policy, PolicySet};
use serde_json::Value;

use crate::model::Kind;

/// One group's policies, bucketed.
#[derive(Debug, Clone, Default)]
pub(super) struct Index {
    /// Egress policies with no host literal (and policies of any action).
    egress: PolicySet,
    /// Egress policies that can match only the host they are keyed by.
    by_host: HashMap<String, PolicySet>,
    /// Policies that can match a push.
    push: PolicySet,
}

impl Index {
    /// Files `policy` under every bucket it can match in; Cedar's refusal, in words.
    pub(super) fn add(&mut self, policy: Policy) -> Result<(), String> {
        let (egress, push) = actions(&policy);
        if push {
            self.push.add(policy.clone()).map_err(|e| e.to_string())?;
        }
        if egress {
            match host_literal(&policy) {
                Some(host) => self.by_host.entry(host).or_default().add(policy),
                None => self.egress.add(policy),
            }
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The sets a proposal of `kind` to `host` must be run through (at most two), the
    /// empty ones left out.
    pub(super) fn candidates<'a>(
        &'a self,
        kind: Kind,
        host: &str,
    ) -> impl Iterator<Item = &'a PolicySet> {
        let (general, by_host) = match kind {
            Kind::Egress => (&self.egress, self.by_host.get(host)),
            Kind::GitPush => (&self.push, None),
        };
        std::iter::once(general)
            .chain(by_host)
            .filter(|s| s.policies().next().is_some())
    }
}

#[cfg(test)]
impl Index {
    /// Every policy of the group in one set for both actions: the group unindexed.
    pub(super) fn flattened(&self) -> Index {
        let mut all = PolicySet::new();
        let sets = std::iter::once(&self.egress)
            .chain(self.by_host.values())
            .chain(std::iter::once(&self.push));
        for p in sets.flat_map(PolicySet::policies) {
            if all.policy(p.id()).is_none() {
                all.add(p.clone()).expect("ids are unique");
            }
        }
        Index {
            egress: all.clone(),
            by_host: HashMap::new(),
            push: all,
        }
    }

    /// The literal hosts that have a bucket of their own.
    pub(super) fn hosts(&self) -> Vec<&str> {
        let mut hosts: Vec<&str> = self.by_host.keys().map(String::as_str).collect();
        hosts.sort_unstable();
        hosts
    }
}

/// Whether `policy` can match an egress request, and a push.
fn actions(policy: &Policy) -> (bool, bool) {
    let action = |name: &str| EntityUid::from_str(&format!("Action::\"{name}\"")).ok();
    match policy.action_constraint() {
        ActionConstraint::Eq(a) if Some(&a) == action("egress").as_ref() => (true, false),
        ActionConstraint::Eq(a) if Some(&a) == action("git-push").as_ref() => (false, true),
        _ => (true, true),
    }
}

/// The host a policy can only match: a top-level conjunct `resource.host == "LITERAL"`
/// (either way round) of one of its `when` conditions, when it has no `unless`. `None`
/// whenever in doubt.
fn host_literal(policy: &Policy) -> Option<String> {
    let json = policy.to_json().ok()?;
    let conditions = json.get("conditions")?.as_array()?;
    if conditions
        .iter()
        .any(|c| c.get("kind").and_then(Value::as_str) != Some("when"))
    {
        return None;
    }
    conditions
        .iter()
        .filter_map(|c| c.get("body"))
        .find_map(|body| conjuncts(body).into_iter().find_map(host_equality))
}

/// The top-level conjuncts of `e` (`A && B && C`: A, B, C).
fn conjuncts(e: &Value) -> Vec<&Value> {
    match e.get("&&") {
        Some(and) => match (and.get("left"), and.get("right")) {
            (Some(l), Some(r)) => {
                let mut out = conjuncts(l);
                out.extend(conjuncts(r));
                out
            }
            _ => vec![e],
        },
        None => vec![e],
    }
}

/// `LITERAL` when `e` is `resource.host == "LITERAL"` or `"LITERAL" == resource.host`.
fn host_equality(e: &Value) -> Option<String> {
    let eq = e.get("==")?;
    let (l, r) = (eq.get("left")?, eq.get("right")?);
    let is_host = |v: &Value| {
        let dot = v.get(".")?;
        (dot.get("left")?.get("Var")?.as_str()? == "resource"
            && dot.get("attr")?.as_str()? == "host")
            .then_some(())
    };
    let literal = |v: &Value| v.get("Value")?.as_str().map(str::to_string);
    if is_host(l).is_some() {
        literal(r)
    } else if is_host(r).is_some() {
        literal(l)
    } else {
        None
    }
}
