//! Evaluating one proposal against a [`RuleSet`]: the Cedar request built from the
//! proposal's facts, each group of policies asked which of its policies match, and the
//! outcome by precedence (forbid, then quorum, then permit, else a human; never-automatic
//! flags keep a permit from approving).

use std::collections::HashSet;
use std::str::FromStr;

use cedar_policy::{
    Authorizer, Context, Entities, Entity, EntityId, EntityTypeName, EntityUid, Request,
    RestrictedExpression as X,
};
use serde_json::Value;

use super::index::Index;
use super::{Evaluation, Outcome, Rule, RuleSet, ShadowMatch};
use crate::change;
use crate::model::{Flag, Kind};

/// What a rule sees of one proposal (the schema's principal, resource and context).
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// The bottle's slug and host.
    pub slug: &'a str,
    pub host: &'a str,
    pub kind: Kind,
    /// The normalised change.
    pub change: &'a Value,
    /// The proposal's risk flags (`observed` among them for the egress helper's filings).
    pub flags: &'a [Flag],
    pub hits: i64,
    pub justification: &'a str,
    /// Seconds since 1970, UTC.
    pub time: i64,
}

fn uid(kind: &str, id: &str) -> EntityUid {
    EntityUid::from_type_name_and_id(
        EntityTypeName::from_str(kind).expect("a schema type name"),
        EntityId::new(id),
    )
}

fn text<'v>(v: &'v Value, field: &str) -> &'v str {
    v.get(field).and_then(Value::as_str).unwrap_or("")
}

fn count(v: &Value, field: &str) -> i64 {
    v.get(field)
        .and_then(Value::as_u64)
        .map_or(0, |n| i64::try_from(n).unwrap_or(i64::MAX))
}

fn flag(v: &Value, field: &str) -> bool {
    v.get(field).and_then(Value::as_bool).unwrap_or(false)
}

/// The Cedar request and entities for `facts`, built value by value: every value has the
/// type the schema gives its attribute, so the policies (validated against the schema when
/// the file was checked) read them as they would after a schema-checked parse, without a
/// JSON round trip and a conformance check on every filing. `None` when Cedar refuses them.
pub(super) fn request(facts: &Facts<'_>) -> Option<(Request, Entities)> {
    let c = facts.change;
    let (action, kind, attrs) = match facts.kind {
        Kind::Egress => {
            let host = text(c, "host");
            (
                "egress",
                "Egress",
                vec![
                    ("host", string(host)),
                    ("port", X::new_long(count(c, "port"))),
                    ("wildcard", X::new_bool(host.starts_with("*."))),
                ],
            )
        }
        Kind::GitPush => {
            let s = c.get("summary").cloned().unwrap_or(Value::Null);
            (
                "git-push",
                "GitPush",
                vec![
                    ("remote", string(text(c, "remote"))),
                    ("ref", string(text(c, "ref"))),
                    ("force", X::new_bool(flag(&s, "force"))),
                    ("create", X::new_bool(flag(&s, "create"))),
                    ("delete", X::new_bool(flag(&s, "delete"))),
                    ("commits", X::new_long(count(&s, "commits"))),
                    ("files", X::new_long(count(&s, "files_changed"))),
                ],
            )
        }
    };
    let entity = |uid: EntityUid, attrs: Vec<(&str, X)>| {
        Entity::new(
            uid,
            attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            HashSet::new(),
        )
        .map_err(|e| tracing::warn!(error = %e, "rules: the change does not fit the schema"))
        .ok()
    };
    let bottle = entity(
        uid("Bottle", facts.slug),
        vec![("slug", string(facts.slug)), ("host", string(facts.host))],
    )?;
    let change = entity(uid(kind, "change"), attrs)?;
    let entities = Entities::from_entities([bottle, change], None)
        .map_err(|e| tracing::warn!(error = %e, "rules: the change does not fit the schema"))
        .ok()?;
    let context = Context::from_pairs([
        (
            "flags".to_string(),
            X::new_set(facts.flags.iter().map(|f| string(f.as_str()))),
        ),
        ("hits".to_string(), X::new_long(facts.hits)),
        (
            "observed".to_string(),
            X::new_bool(facts.flags.contains(&Flag::Observed)),
        ),
        ("justification".to_string(), string(facts.justification)),
        ("time".to_string(), X::new_long(facts.time)),
    ])
    .map_err(|e| tracing::warn!(error = %e, "rules: the context does not fit the schema"))
    .ok()?;
    let request = Request::new(
        uid("Bottle", facts.slug),
        uid("Action", action),
        uid(kind, "change"),
        context,
        None,
    )
    .map_err(|e| tracing::warn!(error = %e, "rules: the request does not fit the schema"))
    .ok()?;
    Some((request, entities))
}

fn string(s: &str) -> X {
    X::new_string(s.to_string())
}

impl RuleSet {
    /// The outcome for one proposal, and the shadow policies that matched it.
    pub fn evaluate(&self, facts: &Facts<'_>) -> Evaluation {
        let human = Evaluation {
            outcome: Outcome::Human,
            shadow: Vec::new(),
        };
        if self.rules.is_empty() {
            return human;
        }
        let Some((request, entities)) = request(facts) else {
            return human;
        };
        let authorizer = Authorizer::new();
        let host = match facts.kind {
            Kind::Egress => text(facts.change, "host"),
            Kind::GitPush => "",
        };
        // The rules of `group` that match, in the order written: only its policies that can
        // match this proposal's action and host are run. A policy whose evaluation fails
        // matches nothing.
        let matching = |group: &Index| -> Vec<&Rule> {
            let mut ids: Vec<String> = Vec::new();
            for set in group.candidates(facts.kind, host) {
                let response = authorizer.is_authorized(&request, set, &entities);
                ids.extend(response.diagnostics().reason().map(ToString::to_string));
            }
            if ids.is_empty() {
                return Vec::new();
            }
            self.rules.iter().filter(|r| ids.contains(&r.id)).collect()
        };
        let never = change::never_automatic(facts.flags);
        let permit_outcome = |r: &Rule| match r.quorum {
            Some(n) => Outcome::Quorum(n),
            None if never => Outcome::Human,
            None => Outcome::Permit {
                rule: r.id.clone(),
                grant: r.grant,
            },
        };
        let forbid_outcome = |r: &Rule| Outcome::Forbid {
            rule: r.id.clone(),
            note: r.note.clone(),
        };
        let outcome = if let Some(r) = matching(&self.forbid).first() {
            forbid_outcome(r)
        } else if let Some(n) = matching(&self.quorum).iter().filter_map(|r| r.quorum).max() {
            Outcome::Quorum(n)
        } else if let Some(r) = matching(&self.permit).first() {
            permit_outcome(r)
        } else {
            Outcome::Human
        };
        let mut shadow: Vec<ShadowMatch> = matching(&self.shadow_forbid)
            .into_iter()
            .map(|r| ShadowMatch {
                rule: r.id.clone(),
                would: forbid_outcome(r),
            })
            .chain(
                matching(&self.shadow_permit)
                    .into_iter()
                    .map(|r| ShadowMatch {
                        rule: r.id.clone(),
                        would: permit_outcome(r),
                    }),
            )
            .collect();
        shadow.sort_by_key(|m| self.rules.iter().position(|r| r.id == m.rule));
        Evaluation { outcome, shadow }
    }
}
