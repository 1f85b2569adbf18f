//! The PostgreSQL checks of `supervise doctor`: the server's version against the oldest the
//! store supports, and the role the URL connects as (the one the servers and helpers given
//! the same URL use): not a superuser, every privilege the store uses on the schema's
//! tables, and owning them so a newer build can migrate.

use supervise_store::{BackendFacts, Location, MIN_POSTGRES_VERSION, Store, TABLE_PRIVILEGES};

use super::{Check, fail, pass, warn};

/// Appends the PostgreSQL checks for `location` (none for a SQLite file).
pub(super) async fn checks(location: &Location, checks: &mut Vec<Check>) {
    match Store::backend_facts(location).await {
        Ok(Some(facts)) => {
            checks.push(version(&facts));
            checks.push(superuser(&facts));
            checks.push(privileges(&facts));
            if let Some(c) = owner(&facts) {
                checks.push(c);
            }
        }
        Ok(None) => {}
        Err(e) => checks.push(fail(
            "postgres",
            format!("cannot read the server's version and the role's privileges from {location}"),
            crate::exit::message(&e.into()),
        )),
    }
}

fn version(f: &BackendFacts) -> Check {
    let min = MIN_POSTGRES_VERSION / 10_000;
    if f.version_num < MIN_POSTGRES_VERSION {
        fail(
            "postgres version",
            format!(
                "the server runs PostgreSQL {} ({}), older than {min}, the oldest supervise supports",
                f.major_minor(),
                f.version
            ),
            format!(
                "upgrade the server to PostgreSQL {min} or newer (pg_upgrade, or pg_dump and restore)"
            ),
        )
    } else {
        pass(
            "postgres version",
            format!(
                "PostgreSQL {} ({min} or newer is supported)",
                f.major_minor()
            ),
        )
    }
}

fn superuser(f: &BackendFacts) -> Check {
    if f.superuser {
        fail(
            "postgres role",
            format!(
                "{} is a superuser: every server and helper given this URL bypasses all \
                 privileges, and a leaked URL gives away the whole PostgreSQL server",
                f.role
            ),
            format!(
                "connect as a role of its own: createuser --pwprompt supervise; then as {}: \
                 ALTER DATABASE {} OWNER TO supervise, ALTER TABLE ... OWNER TO supervise for \
                 each table of schema {}; and put supervise in the URL",
                f.role, f.database, f.schema
            ),
        )
    } else {
        pass("postgres role", format!("{} is not a superuser", f.role))
    }
}

fn privileges(f: &BackendFacts) -> Check {
    let all = TABLE_PRIVILEGES.join(", ");
    if f.missing.is_empty() {
        return pass(
            "postgres privileges",
            format!(
                "{} has {all} on the {} tables of schema {}",
                f.role, f.tables, f.schema
            ),
        );
    }
    // Tables lacking the same privileges on one clause: "INSERT, DELETE on a, b".
    let mut groups: Vec<(&Vec<String>, Vec<&str>)> = Vec::new();
    for (table, privs) in &f.missing {
        match groups.iter_mut().find(|(p, _)| *p == privs) {
            Some((_, tables)) => tables.push(table),
            None => groups.push((privs, vec![table])),
        }
    }
    let lacking = groups
        .iter()
        .map(|(privs, tables)| format!("{} on {}", privs.join(", "), tables.join(", ")))
        .collect::<Vec<_>>()
        .join("; ");
    fail(
        "postgres privileges",
        format!(
            "{} lacks {lacking} ({} of the {} tables of schema {})",
            f.role,
            f.missing.len(),
            f.tables,
            f.schema
        ),
        format!(
            "as the tables' owner: GRANT {all} ON ALL TABLES IN SCHEMA {} TO {}",
            f.schema, f.role
        ),
    )
}

/// A warning, not a failure: today's schema works, but the next migration cannot run.
fn owner(f: &BackendFacts) -> Option<Check> {
    if f.not_owned.is_empty() || f.superuser {
        return None;
    }
    let which = if f.not_owned.len() == f.tables {
        format!("any of the {} tables of schema {}", f.tables, f.schema)
    } else {
        f.not_owned.join(", ")
    };
    Some(warn(
        "postgres owner",
        format!(
            "{} does not own {which}: a newer supervise cannot migrate them",
            f.role
        ),
        format!(
            "as their owner: ALTER TABLE ... OWNER TO {} for each, or run upgrades as the owner",
            f.role
        ),
    ))
}
