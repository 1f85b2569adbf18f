//! The rules file checks and the outcome precedence, without a database.

use serde_json::json;

use super::*;
use crate::model::{Flag, Kind};

fn egress<'a>(change: &'a serde_json::Value, flags: &'a [Flag]) -> Facts<'a> {
    Facts {
        slug: "demo",
        host: "h1",
        kind: Kind::Egress,
        change,
        flags,
        hits: 1,
        justification: "install deps",
        time: 0,
    }
}

const PYPI: &str = r#"
@id("pypi") @grant("1h")
permit (principal, action == Action::"egress", resource)
when { resource.host == "pypi.org" && resource.port == 443 };

@id("no-paste") @note("paste sites leak secrets")
forbid (principal, action == Action::"egress", resource)
when { resource.host like "*paste*" };

@id("any-egress") @mode("shadow")
permit (principal, action == Action::"egress", resource);

@id("two-for-push") @quorum("2")
permit (principal, action == Action::"git-push", resource);

@id("three-for-main") @quorum("3")
permit (principal, action == Action::"git-push", resource)
when { resource.ref == "refs/heads/main" };
"#;

#[test]
fn each_outcome_by_precedence() {
    let set = RuleSet::parse(PYPI).unwrap();
    let pypi = json!({"host": "pypi.org", "port": 443});
    let e = set.evaluate(&egress(&pypi, &[]));
    assert_eq!(
        e.outcome,
        Outcome::Permit {
            rule: "pypi".into(),
            grant: Some(Duration::from_secs(3600))
        }
    );
    assert_eq!(e.shadow.len(), 1);
    assert_eq!(e.shadow[0].rule, "any-egress");

    let paste = json!({"host": "pastebin.com", "port": 443});
    assert_eq!(
        set.evaluate(&egress(&paste, &[])).outcome,
        Outcome::Forbid {
            rule: "no-paste".into(),
            note: Some("paste sites leak secrets".into())
        }
    );
    let other = json!({"host": "example.com", "port": 443});
    assert_eq!(set.evaluate(&egress(&other, &[])).outcome, Outcome::Human);

    let push = json!({"remote": "origin", "ref": "refs/heads/main"});
    let facts = Facts {
        kind: Kind::GitPush,
        change: &push,
        ..egress(&push, &[])
    };
    assert_eq!(set.evaluate(&facts).outcome, Outcome::Quorum(3));
}

#[test]
fn a_never_automatic_flag_keeps_a_permit_from_approving_but_not_a_forbid_from_rejecting() {
    let set = RuleSet::parse(
        r#"@id("all") permit (principal, action, resource);
           @id("no-meta") @note("never the metadata service")
           forbid (principal, action, resource) when { context.flags.contains("cloud-metadata") };"#,
    )
    .unwrap();
    let ip = json!({"host": "169.254.169.254", "port": 80});
    let e = set.evaluate(&egress(&ip, &[Flag::IpLiteral, Flag::LinkLocal]));
    assert_eq!(e.outcome, Outcome::Human);
    let e = set.evaluate(&egress(&ip, &[Flag::CloudMetadata]));
    assert!(matches!(e.outcome, Outcome::Forbid { rule, .. } if rule == "no-meta"));
}

#[test]
fn check_names_every_problem() {
    let bad = r#"
permit (principal, action, resource);
@id("a") @grant("soon") permit (principal, action, resource);
@id("b") @quorum("1") permit (principal, action, resource);
@id("c") @mode("loud") forbid (principal, action, resource);
@id("c") @grant("1h") forbid (principal, action, resource);
@id("d") @colour("red") permit (principal, action, resource);
"#;
    let err = RuleSet::parse(bad).unwrap_err().to_string();
    for needle in [
        "policy 1 (the 1st in the file): needs an @id",
        "@grant(\"soon\") must be a duration",
        "@quorum(\"1\") must be a whole number from 2",
        "@mode(\"loud\") must be \"shadow\"",
        "@grant is for permit policies only",
        "unknown annotation @colour",
    ] {
        assert!(err.contains(needle), "{needle:?} missing from:\n{err}");
    }
    let err = RuleSet::parse(
        r#"@id("x") permit (principal, action, resource) when { resource.colour == "red" };"#,
    )
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("schema:"), "{err}");
    let err = RuleSet::parse("permit (principal").unwrap_err().to_string();
    assert!(err.starts_with("syntax:"), "{err}");
    let err = RuleSet::parse(
        r#"@id("x") permit (principal, action, resource); @id("x") forbid (principal, action, resource);"#,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("is used twice"), "{err}");
}

#[test]
fn the_schema_ships_and_parses() {
    assert!(SCHEMA_TEXT.contains("entity Bottle"));
    let _ = &*SCHEMA;
    assert!(RuleSet::parse("").unwrap().rules().is_empty());
}

#[test]
fn the_request_built_for_each_kind_conforms_to_the_schema() {
    use cedar_policy::{Entities, Request};
    let egress_change = json!({ "host": "*.pypi.org", "port": 443 });
    let push_change = json!({
        "remote": "origin", "ref": "refs/heads/main",
        "summary": { "force": true, "create": false, "delete": false, "commits": 3, "files_changed": 7 },
    });
    let flags = [Flag::Observed, Flag::WildcardHost];
    let push = Facts {
        kind: Kind::GitPush,
        ..egress(&push_change, &flags)
    };
    for facts in [egress(&egress_change, &flags), push] {
        let (request, entities) = eval::request(&facts).expect("a request");
        Entities::from_entities(entities.iter().cloned(), Some(&*SCHEMA))
            .expect("the entities conform to the schema");
        let context = request.context().expect("a context").clone();
        Request::new(
            request.principal().expect("a principal").clone(),
            request.action().expect("an action").clone(),
            request.resource().expect("a resource").clone(),
            context,
            Some(&*SCHEMA),
        )
        .expect("the request conforms to the schema");
    }
}
