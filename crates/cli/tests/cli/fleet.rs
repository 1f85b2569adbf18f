//! Two hosts on one database, seen from an operator's machine (a third `--host-id`): the
//! fleet commands span every host and name a bottle `HOST/SLUG` when its slug is on more
//! than one, on SQLite (two hosts on one file) and on PostgreSQL (a fresh database on the
//! test process's cluster, `supervise-testpg`).

use std::path::Path;

use serde_json::{Value, json};
use supervise_store::{Kind, NewProposal, Store, StoreOptions};

use crate::util::{Run, command};

/// Files an egress proposal as `host`'s server would for its bottle `slug`.
fn propose(rt: &tokio::runtime::Runtime, db: &Path, host: &str, slug: &str, dest: &str) -> String {
    rt.block_on(async {
        let store = Store::open(
            db,
            StoreOptions {
                host: Some(host.into()),
                ..StoreOptions::default()
            },
        )
        .await
        .expect("open store");
        let bottle = store.bottle(slug).await.unwrap().expect("the bottle");
        store
            .propose(NewProposal {
                bottle_id: bottle.id,
                kind: Kind::Egress,
                change: json!({"host": dest, "port": 443}),
                justification: "fleet".into(),
                quorum: None,
            })
            .await
            .expect("propose")
            .into_proposal()
            .id
            .into()
    })
}

/// `supervise --host-id HOST ARGS` on `db`.
fn on(db: &Path, host: &str, args: &[&str]) -> Run {
    Run::from(
        command(db)
            .args(["--host-id", host])
            .args(args)
            .output()
            .expect("run supervise"),
    )
}

fn json(run: Run) -> Value {
    run.assert_ok();
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {run:?}"))
}

fn fleet_commands_span_hosts_and_name_host_slug(db: &Path) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Each host registers its own bottles: the same slug and address on both.
    on(db, "host-a", &["bottle", "add", "demo", "--ip", "10.0.0.2"]).assert_ok();
    on(db, "host-b", &["bottle", "add", "demo", "--ip", "10.0.0.2"]).assert_ok();
    let r = on(
        db,
        "host-b",
        &["bottle", "add", "only-b", "--ip", "10.0.0.3"],
    );
    r.assert_ok();
    assert_eq!(r.stdout.trim(), "added bottle only-b (10.0.0.3)");
    let pa = propose(&rt, db, "host-a", "demo", "pypi.org");
    let pb = propose(&rt, db, "host-b", "demo", "crates.io");
    let op = |args: &[&str]| on(db, "laptop", args);

    // `bottle list`: every host's bottles, HOST/SLUG since they span hosts.
    let r = op(&["bottle", "list"]);
    r.assert_ok();
    assert!(r.stdout.starts_with("BOTTLE"), "{r:?}");
    for name in ["host-a/demo", "host-b/demo", "host-b/only-b"] {
        assert!(r.stdout.contains(name), "{name}: {r:?}");
    }
    let doc = json(op(&["bottle", "list", "--json"]));
    let listed: Vec<(&str, &str)> = doc["bottles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["host"].as_str().unwrap(), b["slug"].as_str().unwrap()))
        .collect();
    assert_eq!(
        listed,
        [("host-a", "demo"), ("host-b", "demo"), ("host-b", "only-b")]
    );
    // `--host` filters, and one host's bottles are named by slug.
    let r = op(&["bottle", "list", "--host", "host-b"]);
    r.assert_ok();
    assert!(r.stdout.starts_with("SLUG"), "{r:?}");
    assert!(
        r.stdout.contains("only-b") && !r.stdout.contains("host-a"),
        "{r:?}"
    );
    let r = op(&["bottle", "list", "--host", "nowhere"]);
    r.assert_ok();
    assert!(
        r.stdout
            .starts_with("no bottles registered on host nowhere"),
        "{r:?}"
    );

    // Decisions name the bottle with its host: `demo` alone is two bottles.
    let r = op(&["approve", &pa]);
    r.assert_ok();
    assert!(
        r.stdout.contains("(host-a/demo: egress pypi.org:443)"),
        "{r:?}"
    );
    let r = op(&["reject", &pb]);
    r.assert_ok();
    assert!(
        r.stdout.contains("(host-b/demo: egress crates.io:443)"),
        "{r:?}"
    );

    // A bulk decision by slug names each bottle it decided with its host.
    propose(&rt, db, "host-a", "demo", "a.example");
    propose(&rt, db, "host-b", "demo", "b.example");
    let r = op(&[
        "reject",
        "--bottle",
        "demo",
        "--kind",
        "egress",
        "--match",
        "*.example",
    ]);
    r.assert_ok();
    assert!(
        r.stdout.contains("(host-a/demo: egress a.example:443)"),
        "{r:?}"
    );
    assert!(
        r.stdout.contains("(host-b/demo: egress b.example:443)"),
        "{r:?}"
    );

    // `policy --all` spans hosts; `policy NAME` takes HOST/SLUG, or a slug one host has.
    let r = op(&["policy", "--all"]);
    r.assert_ok();
    for name in ["host-a/demo", "host-b/demo", "host-b/only-b"] {
        assert!(r.stdout.contains(name), "{name}: {r:?}");
    }
    assert!(r.stdout.contains("pypi.org:443"), "{r:?}");
    let doc = json(op(&["policy", "--all", "--json"]));
    assert_eq!(doc["bottles"][0]["host"], "host-a");
    assert_eq!(doc["bottles"][0]["grants"][0]["change"]["host"], "pypi.org");
    let doc = json(op(&["policy", "--all", "--host", "host-b", "--json"]));
    assert_eq!(doc["bottles"].as_array().unwrap().len(), 2, "{doc}");
    let doc = json(op(&["policy", "host-a/demo", "--json"]));
    assert_eq!(doc["grants"].as_array().unwrap().len(), 1, "{doc}");
    let r = op(&["policy", "only-b"]);
    r.assert_ok();
    assert!(
        r.stdout.contains("no grants in force for bottle only-b"),
        "{r:?}"
    );
    op(&["policy", "demo"]).assert_refused("name one as HOST/SLUG");

    // `check egress --bottle` takes HOST/SLUG (or a slug one host has) from any machine.
    let r = op(&["check", "egress", "--bottle", "host-a/demo", "pypi.org"]);
    r.assert_ok();
    assert!(
        r.stdout
            .starts_with("allowed: bottle host-a/demo may reach pypi.org:443"),
        "{r:?}"
    );
    let doc = json(op(&[
        "check",
        "egress",
        "--bottle",
        "host-a/demo",
        "pypi.org",
        "--json",
    ]));
    assert_eq!(doc["bottle"], "host-a/demo");
    let r = op(&[
        "check", "egress", "--bottle", "only-b", "pypi.org", "--json",
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["reason"], "no-grant", "{doc}");
    assert_eq!(doc["bottle"], "only-b");
    op(&["check", "egress", "--bottle", "demo", "pypi.org"])
        .assert_refused("name one as HOST/SLUG");
    // `--ip` is an address of the CLI's own host.
    let r = on(
        db,
        "host-a",
        &["check", "egress", "--ip", "10.0.0.2", "pypi.org"],
    );
    r.assert_ok();
    assert!(r.stdout.contains("bottle host-a/demo"), "{r:?}");
    let r = on(
        db,
        "host-b",
        &["check", "egress", "--ip", "10.0.0.2", "pypi.org"],
    );
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("bottle host-b/demo"), "{r:?}");
}

#[test]
fn fleet_commands_span_hosts_and_name_host_slug_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    fleet_commands_span_hosts_and_name_host_slug(&dir.path().join("fleet.db"));
}

#[test]
fn fleet_commands_span_hosts_and_name_host_slug_on_postgres() {
    let Some(cluster) = supervise_testpg::cluster() else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let url = rt.block_on(cluster.fresh_database());
    fleet_commands_span_hosts_and_name_host_slug(Path::new(&url));
}
