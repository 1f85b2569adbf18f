//! The policies of one group (forbids, quorum permits, ...) bucketed by what can match
//! them, so a proposal is run only through the policies that can: by action (a policy
//! scoped to `Action::"egress"` never matches a push), and for egress by host (a policy
//! whose `when` has a top-level conjunct `resource.host == "LITERAL"` matches only that
//! host; one with `resource.host like "…*TAIL"`, TAIL holding a dot, matches only hosts
//! ending in TAIL, so only hosts with TAIL's part from its first dot as a suffix). `A && B`
//! is false whenever A is, so such a conjunct excludes every other host. A policy whose
//! shape is not recognised goes in the general bucket, so the matches are exactly those of
//! the whole group.

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
    /// Egress policies that can match only hosts ending in the suffix they are keyed by
    /// (which starts with a dot).
    by_suffix: HashMap<String, PolicySet>,
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
            match host_key(&policy) {
                Some(Key::Host(host)) => self.by_host.entry(host).or_default().add(policy),
                Some(Key::Suffix(tail)) => self.by_suffix.entry(tail).or_default().add(policy),
                None => self.egress.add(policy),
            }
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The sets a proposal of `kind` to `host` must be run through: the general one, the
    /// host's, and one per suffix of the host from one of its dots that has a bucket; the
    /// empty ones left out.
    pub(super) fn candidates<'a>(
        &'a self,
        kind: Kind,
        host: &'a str,
    ) -> impl Iterator<Item = &'a PolicySet> {
        let egress = kind == Kind::Egress;
        let general = if egress { &self.egress } else { &self.push };
        let by_host = egress.then(|| self.by_host.get(host)).flatten();
        let suffixes = host
            .match_indices('.')
            .filter(move |_| egress && !self.by_suffix.is_empty())
            .filter_map(|(i, _)| self.by_suffix.get(&host[i..]));
        std::iter::once(general)
            .chain(by_host)
            .chain(suffixes)
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
            .chain(self.by_suffix.values())
            .chain(std::iter::once(&self.push));
        for p in sets.flat_map(PolicySet::policies) {
            if all.policy(p.id()).is_none() {
                all.add(p.clone()).expect("ids are unique");
            }
        }
        Index {
            egress: all.clone(),
            by_host: HashMap::new(),
            by_suffix: HashMap::new(),
            push: all,
        }
    }

    /// The literal hosts that have a bucket of their own.
    pub(super) fn hosts(&self) -> Vec<&str> {
        let mut hosts: Vec<&str> = self.by_host.keys().map(String::as_str).collect();
        hosts.sort_unstable();
        hosts
    }

    /// The host suffixes that have a bucket of their own.
    pub(super) fn suffixes(&self) -> Vec<&str> {
        let mut tails: Vec<&str> = self.by_suffix.keys().map(String::as_str).collect();
        tails.sort_unstable();
        tails
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

/// What confines a policy to some hosts.
#[derive(Debug, PartialEq, Eq)]
enum Key {
    /// Only this host.
    Host(String),
    /// Only hosts ending in this (which starts with a dot).
    Suffix(String),
}

/// What confines `policy` to some hosts: a top-level conjunct of one of its `when`
/// conditions, when it has no `unless`, that is `resource.host == "LITERAL"` (either way
/// round) or `resource.host like PATTERN`. A host equality wins over a suffix. `None`
/// whenever in doubt.
fn host_key(policy: &Policy) -> Option<Key> {
    let json = policy.to_json().ok()?;
    let conditions = json.get("conditions")?.as_array()?;
    if conditions
        .iter()
        .any(|c| c.get("kind").and_then(Value::as_str) != Some("when"))
    {
        return None;
    }
    let keys: Vec<Key> = conditions
        .iter()
        .filter_map(|c| c.get("body"))
        .flat_map(conjuncts)
        .filter_map(|e| host_equality(e).or_else(|| host_like(e)))
        .collect();
    let host = keys.iter().position(|k| matches!(k, Key::Host(_)));
    keys.into_iter().nth(host.unwrap_or(0))
}

fn is_host(v: &Value) -> bool {
    let dot = v.get(".");
    dot.and_then(|d| d.get("left")?.get("Var")?.as_str()) == Some("resource")
        && dot.and_then(|d| d.get("attr")?.as_str()) == Some("host")
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

/// `e` is `resource.host == "LITERAL"` or `"LITERAL" == resource.host`.
fn host_equality(e: &Value) -> Option<Key> {
    let eq = e.get("==")?;
    let (l, r) = (eq.get("left")?, eq.get("right")?);
    let literal = |v: &Value| v.get("Value")?.as_str().map(|s| Key::Host(s.to_string()));
    if is_host(l) {
        literal(r)
    } else if is_host(r) {
        literal(l)
    } else {
        None
    }
}

/// `e` is `resource.host like PATTERN`: without a wildcard, the host itself; else the
/// literal tail after the last wildcard from its first dot on, when it has one.
fn host_like(e: &Value) -> Option<Key> {
    let like = e.get("like")?;
    if !is_host(like.get("left")?) {
        return None;
    }
    let pattern = like.get("pattern")?.as_array()?;
    let mut tail = String::new();
    let mut wildcard = false;
    for elem in pattern {
        match elem.get("Literal").and_then(Value::as_str) {
            Some(c) => tail.push_str(c),
            None if elem.as_str() == Some("Wildcard") => {
                wildcard = true;
                tail.clear();
            }
            None => return None,
        }
    }
    if !wildcard {
        return Some(Key::Host(tail));
    }
    let dot = tail.find('.')?;
    Some(Key::Suffix(tail[dot..].to_string()))
}
