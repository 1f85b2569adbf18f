//! The bucketed evaluation against the unindexed one: generated rules files and proposals
//! give the same outcome and shadow matches either way.

use serde_json::json;

use super::*;
use crate::model::{Flag, Kind};

impl RuleSet {
    /// The same rules with every policy of a group run for every proposal.
    fn unindexed(&self) -> RuleSet {
        RuleSet {
            rules: self.rules.clone(),
            forbid: self.forbid.flattened(),
            quorum: self.quorum.flattened(),
            permit: self.permit.flattened(),
            shadow_forbid: self.shadow_forbid.flattened(),
            shadow_permit: self.shadow_permit.flattened(),
        }
    }
}

/// A small deterministic generator (xorshift), so a failure reproduces.
struct Gen(u64);

impl Gen {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

const HOSTS: [&str; 8] = [
    "pypi.org",
    "pre1.test",
    "b.x.lab.test",
    "files.pythonhosted.org",
    "a.mirror.test",
    "pastebin.com",
    "x.lab.test",
    "other.example",
];

/// One policy, `@id("p{i}")`, of a shape picked by `g`.
fn policy(g: &mut Gen, i: usize) -> String {
    let host = HOSTS[g.below(HOSTS.len() as u64) as usize];
    let port = [22, 80, 443, 8080][g.below(4) as usize];
    let effect = if g.below(3) == 0 { "forbid" } else { "permit" };
    let mut ann = format!("@id(\"p{i}\")");
    match g.below(6) {
        0 => ann.push_str(" @mode(\"shadow\")"),
        1 if effect == "permit" => ann.push_str(&format!(" @quorum(\"{}\")", 2 + g.below(3))),
        2 if effect == "permit" => ann.push_str(" @grant(\"1h\")"),
        _ => {}
    }
    let (action, cond) = match g.below(9) {
        0 => (
            "action == Action::\"egress\"",
            format!("when {{ resource.host == \"{host}\" && resource.port == {port} }}"),
        ),
        1 => (
            "action == Action::\"egress\"",
            format!("when {{ resource.port == {port} && \"{host}\" == resource.host }}"),
        ),
        2 => (
            "action == Action::\"egress\"",
            format!("when {{ resource.host == \"{host}\" || resource.port == {port} }}"),
        ),
        3 => (
            "action == Action::\"egress\"",
            format!("when {{ resource.host == \"{host}\" }} unless {{ resource.port == {port} }}"),
        ),
        4 => (
            "action == Action::\"egress\"",
            format!(
                "when {{ resource.host like \"*{}\" }}",
                &host[host.len() - 4..]
            ),
        ),
        5 => (
            "action == Action::\"git-push\"",
            "when { resource.ref == \"refs/heads/main\" && !resource.force }".to_string(),
        ),
        6 => ("action", "when { context.hits < 3 }".to_string()),
        7 => (
            "action in [Action::\"egress\", Action::\"git-push\"]",
            "when { context.justification like \"*deps*\" }".to_string(),
        ),
        _ => ("action == Action::\"egress\"", String::new()),
    };
    format!("{ann}\n{effect} (principal, {action}, resource)\n{cond};\n")
}

#[test]
fn bucketed_evaluation_equals_the_unindexed_one() {
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    let mut compared = 0;
    let mut decided = 0;
    for _file in 0..40 {
        let n = 1 + g.below(25) as usize;
        let text: String = (0..n).map(|i| policy(&mut g, i)).collect();
        let set = RuleSet::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let plain = set.unindexed();
        for _proposal in 0..30 {
            let flags: Vec<Flag> = if g.below(4) == 0 {
                vec![Flag::Loopback]
            } else {
                Vec::new()
            };
            let (kind, change) = if g.below(3) == 0 {
                let r#ref = ["refs/heads/main", "refs/heads/dev"][g.below(2) as usize];
                let force = g.below(2) == 0;
                (
                    Kind::GitPush,
                    json!({"remote": "origin", "ref": r#ref, "summary": {"force": force}}),
                )
            } else {
                let host = HOSTS[g.below(HOSTS.len() as u64) as usize];
                let port = [22, 80, 443, 8080][g.below(4) as usize];
                (Kind::Egress, json!({"host": host, "port": port}))
            };
            let facts = Facts {
                slug: "demo",
                host: "h1",
                kind,
                change: &change,
                flags: &flags,
                hits: g.below(5) as i64,
                justification: ["install deps", "fetch docs"][g.below(2) as usize],
                time: 0,
            };
            let got = set.evaluate(&facts);
            assert_eq!(got, plain.evaluate(&facts), "{change}\n{text}");
            compared += 1;
            decided += u32::from(got.outcome != Outcome::Human || !got.shadow.is_empty());
        }
    }
    // The generated proposals are not all left to a human: the comparison sees matches.
    assert!(decided > compared / 4, "{decided} of {compared} matched");
}

#[test]
fn a_host_equality_conjunct_buckets_a_policy_by_its_host() {
    let set = RuleSet::parse(
        r#"
@id("eq") permit (principal, action == Action::"egress", resource)
when { resource.port == 443 && (resource.host == "a.test" && context.hits < 3) };
@id("flipped") permit (principal, action == Action::"egress", resource)
when { "b.test" == resource.host };
@id("or") permit (principal, action == Action::"egress", resource)
when { resource.host == "c.test" || resource.port == 1 };
@id("unless") permit (principal, action == Action::"egress", resource)
when { resource.host == "d.test" } unless { resource.port == 1 };
@id("negated") permit (principal, action == Action::"egress", resource)
when { !(resource.host == "e.test") };
@id("suffix") permit (principal, action == Action::"egress", resource)
when { resource.port == 443 && resource.host like "*.f.test" };
@id("mid-label") permit (principal, action == Action::"egress", resource)
when { resource.host like "pre*99.g.test" };
@id("no-dot") permit (principal, action == Action::"egress", resource)
when { resource.host like "*test" };
@id("prefix") permit (principal, action == Action::"egress", resource)
when { resource.host like "h.test*" };
@id("exact") permit (principal, action == Action::"egress", resource)
when { resource.host like "i.test" };
"#,
    )
    .unwrap();
    assert_eq!(set.permit.hosts(), ["a.test", "b.test", "i.test"]);
    assert_eq!(set.permit.suffixes(), [".f.test", ".g.test"]);
}
