//! `supervise doctor` on a real PostgreSQL: the server's version, and the role the URL
//! connects as: a superuser fails, a role lacking a privilege the store uses fails naming
//! the table and the GRANT, a role that does not own the tables is warned, and the role
//! that owns the database passes every check (exit 0).

use std::path::Path;

use crate::util::{Run, clean_command, psql};

fn doctor(url: &str) -> Run {
    Run::from(
        clean_command()
            .arg("--db")
            .arg(Path::new(url))
            .args(["--host-id", "h1", "doctor"])
            .output()
            .unwrap(),
    )
}

fn line<'a>(r: &'a Run, start: &str) -> &'a str {
    r.stdout
        .lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting {start:?}: {r:#?}"))
}

#[test]
fn on_postgres_a_superuser_or_a_role_lacking_a_privilege_fails_naming_it() {
    let Some(cluster) = supervise_testpg::cluster() else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The test cluster's URL names the bootstrap superuser, `postgres` (trust authentication).
    let admin = rt.block_on(cluster.fresh_database());
    assert!(admin.contains("://postgres@"), "{admin}");
    let database = admin.rsplit('/').next().unwrap().to_owned();
    let (owner, app) = (format!("own_{database}"), format!("app_{database}"));
    psql(
        &admin,
        &format!(
            "CREATE ROLE {owner} LOGIN; CREATE ROLE {app} LOGIN; \
             ALTER DATABASE {database} OWNER TO {owner}"
        ),
    );
    let as_role = |role: &str| admin.replacen("://postgres@", &format!("://{role}@"), 1);
    let owner_url = as_role(&owner);
    let app_url = as_role(&app);
    Run::from(
        clean_command()
            .arg("--db")
            .arg(&owner_url)
            .args([
                "--host-id",
                "h1",
                "bottle",
                "add",
                "demo",
                "--ip",
                "10.9.0.2",
            ])
            .output()
            .unwrap(),
    )
    .assert_ok();

    // The database's owner: every check passes.
    let r = doctor(&owner_url);
    assert_eq!(r.code, 0, "{r:#?}");
    assert!(line(&r, "ok   postgres version: PostgreSQL 1").contains("15 or newer is supported"));
    assert_eq!(
        line(&r, "ok   postgres role"),
        format!("ok   postgres role: {owner} is not a superuser")
    );
    assert!(
        line(&r, "ok   postgres privileges").contains(&format!(
            "{owner} has SELECT, INSERT, UPDATE, DELETE on the "
        )),
        "{r:#?}"
    );
    assert!(!r.stdout.contains("postgres owner"), "{r:#?}");

    // The bootstrap superuser: fails, saying to use a role of its own.
    let r = doctor(&admin);
    assert_eq!(r.code, 1, "{r:#?}");
    let su = line(&r, "FAIL postgres role");
    assert!(su.contains("postgres is a superuser"), "{su}");
    assert!(
        su.contains("fix: connect as a role of its own: createuser"),
        "{su}"
    );
    assert!(
        su.contains(&format!("ALTER DATABASE {database} OWNER TO")),
        "{su}"
    );

    // A role that may only read: fails naming what it lacks, and the GRANT.
    psql(
        &owner_url,
        &format!("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {app}"),
    );
    let r = doctor(&app_url);
    assert_eq!(r.code, 1, "{r:#?}");
    let privs = line(&r, "FAIL postgres privileges");
    assert!(
        privs.contains(&format!(
            "{app} lacks INSERT, UPDATE, DELETE on _sqlx_migrations, "
        )),
        "{privs}"
    );
    assert!(privs.contains(", approvals, "), "{privs}");
    assert!(privs.contains(", proposals, "), "{privs}");
    assert!(
        privs.ends_with(&format!(
            "fix: as the tables' owner: GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {app}"
        )),
        "{privs}"
    );

    // Granted everything but not owning the tables: the privileges pass, the owner warns.
    psql(
        &owner_url,
        &format!("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {app}"),
    );
    let r = doctor(&app_url);
    assert_eq!(r.code, 0, "a warning does not fail: {r:#?}");
    assert!(
        line(&r, "ok   postgres privileges").contains(&app),
        "{r:#?}"
    );
    let owned = line(&r, "warn postgres owner");
    assert!(
        owned.contains(&format!("{app} does not own any of the ")),
        "{owned}"
    );
    assert!(
        owned.contains("a newer supervise cannot migrate them"),
        "{owned}"
    );
}
