//! Operator rules in Cedar (SPEC "Rules"): the schema every rules file is validated
//! against, the checks `rules check` runs (syntax, schema, an `@id` on every policy,
//! well-formed annotations), and the evaluation of one proposal into an [`Outcome`] plus
//! the shadow policies that matched. Pure: the versions in the database and the decisions
//! they make are `db/rules.rs`.

use std::collections::HashSet;
use std::str::FromStr;
use std::sync::LazyLock;
use std::time::Duration;

use cedar_policy::{Effect, PolicyId, PolicySet, Schema, ValidationMode, Validator};

use index::Index;

mod eval;
mod index;
mod replay;

pub use eval::Facts;
pub use replay::{Disagreement, Replay, replay};

use crate::clock;

/// The schema rules are written against (docs/RULES.md), shipped with the crate.
pub const SCHEMA_TEXT: &str = include_str!("rules/schema.cedarschema");

static SCHEMA: LazyLock<Schema> = LazyLock::new(|| {
    Schema::from_cedarschema_str(SCHEMA_TEXT)
        .expect("the shipped schema parses")
        .0
});

/// The annotations a policy may carry.
const ANNOTATIONS: [&str; 5] = ["id", "note", "grant", "quorum", "mode"];

/// A rules file that is not acceptable: every problem found, one line each.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", problems.join("\n"))]
pub struct RulesError {
    pub problems: Vec<String>,
}

impl RulesError {
    fn one(problem: impl Into<String>) -> RulesError {
        RulesError {
            problems: vec![problem.into()],
        }
    }
}

/// One policy of a rules file as the store reads its annotations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// `@id`: the name decisions are recorded under (`rules:ID`).
    pub id: String,
    /// `permit` (true) or `forbid`.
    pub permit: bool,
    /// `@note`: what the agent is told (a forbid's reason).
    pub note: Option<String>,
    /// `@grant`: how long a permit's grant lasts (`None`: until revoked).
    pub grant: Option<Duration>,
    /// `@quorum`: approvals from distinct operators a matching proposal needs.
    pub quorum: Option<u32>,
    /// `@mode("shadow")`: evaluated and recorded, decides nothing.
    pub shadow: bool,
}

/// What the rules decide for one proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A forbid matched: rejected at once, `note` reaching the agent.
    Forbid { rule: String, note: Option<String> },
    /// A permit matched (and no never-automatic flag is set): approved at once, with a grant
    /// lasting `grant` (`None`: until revoked).
    Permit {
        rule: String,
        grant: Option<Duration>,
    },
    /// A quorum permit matched: humans decide, and the proposal needs this many approvals
    /// from distinct operators (the largest N of the matching quorum permits).
    Quorum(u32),
    /// Nothing decided: a human decides, as without rules.
    Human,
}

impl Outcome {
    /// Whether it decides the proposal at filing time.
    pub fn is_automatic(&self) -> bool {
        matches!(self, Outcome::Forbid { .. } | Outcome::Permit { .. })
    }

    /// The rule that decided, for an automatic outcome.
    pub fn rule(&self) -> Option<&str> {
        match self {
            Outcome::Forbid { rule, .. } | Outcome::Permit { rule, .. } => Some(rule),
            Outcome::Quorum(_) | Outcome::Human => None,
        }
    }

    /// What it decides, in words: `approve (grant 1h)`, `reject: NOTE`, `2 approvals`,
    /// `a human`.
    pub fn describe(&self) -> String {
        match self {
            Outcome::Forbid { note, .. } => match note {
                Some(n) => format!("reject: {n}"),
                None => "reject".into(),
            },
            Outcome::Permit { grant, .. } => match grant {
                Some(d) => format!("approve (grant {})", clock::humanize(d.as_secs() as i64)),
                None => "approve (grant until revoked)".into(),
            },
            Outcome::Quorum(n) => format!("{n} approvals from distinct operators"),
            Outcome::Human => "a human".into(),
        }
    }
}

/// A shadow policy that matched: what it would have decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShadowMatch {
    pub rule: String,
    pub would: Outcome,
}

/// One proposal through the rules: the outcome, and the shadow policies that matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evaluation {
    pub outcome: Outcome,
    pub shadow: Vec<ShadowMatch>,
}

/// A checked rules file, ready to evaluate: its policies split by what they do, each
/// under its `@id`.
#[derive(Debug, Clone)]
pub struct RuleSet {
    rules: Vec<Rule>,
    /// Live forbids, live quorum permits, live plain permits, shadow forbids, shadow
    /// permits, each bucketed by what can match them.
    forbid: Index,
    quorum: Index,
    permit: Index,
    shadow_forbid: Index,
    shadow_permit: Index,
}

impl RuleSet {
    /// No rules at all: every proposal goes to a human.
    pub fn empty() -> RuleSet {
        RuleSet {
            rules: Vec::new(),
            forbid: Index::default(),
            quorum: Index::default(),
            permit: Index::default(),
            shadow_forbid: Index::default(),
            shadow_permit: Index::default(),
        }
    }

    /// Parses and checks a rules file (what `rules check` does): syntax, the schema, an
    /// `@id` on every policy (unique), and well-formed annotations.
    pub fn parse(text: &str) -> Result<RuleSet, RulesError> {
        let all = PolicySet::from_str(text).map_err(|e| RulesError::one(format!("syntax: {e}")))?;
        if all.templates().next().is_some() {
            return Err(RulesError::one(
                "templates are not supported: write each policy out",
            ));
        }
        let mut problems = Vec::new();
        let validated = Validator::new(SCHEMA.clone()).validate(&all, ValidationMode::Strict);
        for e in validated.validation_errors() {
            problems.push(format!("schema: {e}"));
        }
        // Policies in the order written (the parser numbers them policy0, policy1, ...).
        let mut policies: Vec<_> = all.policies().collect();
        policies.sort_by_key(|p| {
            p.id()
                .to_string()
                .trim_start_matches("policy")
                .parse::<usize>()
                .unwrap_or(usize::MAX)
        });
        let mut set = RuleSet::empty();
        let mut seen = HashSet::new();
        for (n, policy) in policies.into_iter().enumerate() {
            let at = format!("policy {} (the {} in the file)", n + 1, ordinal(n + 1));
            match read_rule(policy.effect(), policy.annotations()) {
                Ok(rule) => {
                    if !seen.insert(rule.id.clone()) {
                        problems.push(format!("{at}: @id(\"{}\") is used twice", rule.id));
                        continue;
                    }
                    let named = policy.new_id(PolicyId::new(&rule.id));
                    let target = match (rule.shadow, rule.permit, rule.quorum.is_some()) {
                        (false, false, _) => &mut set.forbid,
                        (false, true, true) => &mut set.quorum,
                        (false, true, false) => &mut set.permit,
                        (true, false, _) => &mut set.shadow_forbid,
                        (true, true, _) => &mut set.shadow_permit,
                    };
                    if let Err(e) = target.add(named) {
                        problems.push(format!("{at}: {e}"));
                    }
                    set.rules.push(rule);
                }
                Err(why) => problems.extend(why.into_iter().map(|w| format!("{at}: {w}"))),
            }
        }
        if problems.is_empty() {
            Ok(set)
        } else {
            Err(RulesError { problems })
        }
    }

    /// The policies, in the order written.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The rule named `id`.
    pub fn rule(&self, id: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.id == id)
    }
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// A policy's annotations read and checked: every problem found.
fn read_rule<'a>(
    effect: Effect,
    annotations: impl Iterator<Item = (&'a str, &'a str)>,
) -> Result<Rule, Vec<String>> {
    let permit = effect == Effect::Permit;
    let mut problems = Vec::new();
    let mut rule = Rule {
        id: String::new(),
        permit,
        note: None,
        grant: None,
        quorum: None,
        shadow: false,
    };
    let mut has_id = false;
    for (key, value) in annotations {
        match key {
            "id" => {
                has_id = true;
                if valid_id(value) {
                    rule.id = value.to_string();
                } else {
                    problems.push(format!(
                        "@id(\"{value}\") must be 1-64 letters, digits, '-', '_' or '.'"
                    ));
                }
            }
            "note" => {
                let note = value.trim();
                if note.is_empty() {
                    problems.push("@note must not be empty".into());
                } else if note.chars().count() > 1000 {
                    problems.push("@note is longer than 1000 characters".into());
                } else {
                    rule.note = Some(note.to_string());
                }
            }
            "grant" if !permit => problems.push("@grant is for permit policies only".into()),
            "grant" => match clock::parse_duration(value) {
                Ok(d) if !d.is_zero() => rule.grant = Some(d),
                _ => problems.push(format!(
                    "@grant(\"{value}\") must be a duration such as \"30m\", \"8h\" or \"7d\""
                )),
            },
            "quorum" if !permit => problems.push("@quorum is for permit policies only".into()),
            "quorum" => match value.trim().parse::<u32>() {
                Ok(n) if (2..=100).contains(&n) => rule.quorum = Some(n),
                _ => problems.push(format!(
                    "@quorum(\"{value}\") must be a whole number from 2 to 100"
                )),
            },
            "mode" if value == "shadow" => rule.shadow = true,
            "mode" => problems.push(format!("@mode(\"{value}\") must be \"shadow\"")),
            other => problems.push(format!(
                "unknown annotation @{other} (known: {})",
                ANNOTATIONS.map(|a| format!("@{a}")).join(", ")
            )),
        }
    }
    if !has_id {
        problems.push("needs an @id(\"NAME\") annotation".into());
    }
    if rule.quorum.is_some() && rule.grant.is_some() {
        problems.push("@grant and @quorum together: a quorum's grant is the humans' to set".into());
    }
    if problems.is_empty() {
        Ok(rule)
    } else {
        Err(problems)
    }
}

fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod index_tests;
