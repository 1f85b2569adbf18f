//! Approvals toward a quorum from the command line, on SQLite and on PostgreSQL: a counted
//! approval that is not the last exits 0 saying "1 of 2", the same operator (`--as`, by
//! default the login user) approving again exits 1 counting nothing, `show` and `list` show
//! the count, a modify starts it again, and the last approval decides.

use std::path::Path;

use serde_json::{Value, json};
use supervise_store::{Kind, NewProposal, Store, StoreOptions};

use crate::util::{Run, command};

/// Files an egress proposal to `dest` for bottle `demo` that needs `n` approvals.
fn propose(rt: &tokio::runtime::Runtime, db: &Path, dest: &str, n: u32) -> String {
    rt.block_on(async {
        let store = Store::open(db, StoreOptions::default())
            .await
            .expect("open store");
        let bottle = store.bottle("demo").await.unwrap().expect("the bottle");
        store
            .propose(NewProposal {
                bottle_id: bottle.id,
                kind: Kind::Egress,
                change: json!({"host": dest, "port": 443}),
                justification: "quorum".into(),
                quorum: Some(n),
            })
            .await
            .expect("propose")
            .into_proposal()
            .id
            .into()
    })
}

fn run(db: &Path, args: &[&str]) -> Run {
    Run::from(command(db).args(args).output().expect("run supervise"))
}

fn show(db: &Path, id: &str) -> Value {
    let r = run(db, &["show", id, "--json"]);
    r.assert_ok();
    serde_json::from_str(&r.stdout).expect("show --json")
}

fn approvals_are_counted_from_the_command_line(db: &Path) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    run(db, &["bottle", "add", "demo", "--ip", "10.0.0.2"]).assert_ok();

    // Two distinct operators: the first is counted, the second decides.
    let id = propose(&rt, db, "pypi.org", 2);
    let r = run(db, &["approve", &id]);
    r.assert_ok();
    assert_eq!(
        r.stdout.trim_end(),
        format!(
            "approval 1 of 2 recorded for {id} (demo: egress pypi.org:443); another operator \
             must approve it"
        )
    );
    // The login user (`tester`) again, by name: refused, nothing counted.
    let r = run(db, &["--as", "tester", "approve", &id]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("already approved"), "{r:?}");
    let doc = show(db, &id);
    assert_eq!(doc["status"], "pending");
    assert_eq!(doc["quorum"], json!({"needed": 2, "given": 1}));
    let r = run(db, &["list"]);
    r.assert_ok();
    assert!(
        r.stdout.contains("pypi.org:443 (1 of 2 approvals)"),
        "{r:?}"
    );
    let r = run(db, &["show", &id]);
    r.assert_ok();
    assert!(
        r.stdout
            .lines()
            .any(|l| l.starts_with("approvals") && l.ends_with("1 of 2 approvals")),
        "{r:?}"
    );
    let r = run(db, &["--as", "bob", "approve", &id]);
    r.assert_ok();
    assert!(
        r.stdout.starts_with(&format!(
            "approved {id} (demo: egress pypi.org:443); grant "
        )),
        "{r:?}"
    );
    assert_eq!(show(db, &id)["decision"]["decided_by"], "bob");

    // A modify starts the count again with the modifier's approval; the next approval
    // decides the modified change.
    let id = propose(&rt, db, "crates.io", 2);
    run(db, &["--as", "alice", "approve", &id]).assert_ok();
    let r = run(
        db,
        &[
            "--as",
            "bob",
            "modify",
            "--yes",
            &id,
            "--change",
            r#"{"port": 8443}"#,
        ],
    );
    r.assert_ok();
    assert!(
        r.stdout.starts_with(&format!(
            "approval 1 of 2 recorded for {id} (demo: egress crates.io:443 -> crates.io:8443)"
        )),
        "{r:?}"
    );
    assert_eq!(run(db, &["--as", "bob", "approve", "--yes", &id]).code, 1);
    let r = run(db, &["--as", "alice", "approve", "--yes", &id]);
    r.assert_ok();
    assert!(
        r.stdout.starts_with(&format!(
            "modified {id} (demo: egress crates.io:443 -> crates.io:8443)"
        )),
        "{r:?}"
    );

    // One reject ends it.
    let id = propose(&rt, db, "example.org", 3);
    run(db, &["--as", "alice", "approve", &id]).assert_ok();
    let r = run(db, &["--as", "bob", "reject", &id]);
    r.assert_ok();
    assert_eq!(
        r.stdout.trim_end(),
        format!("rejected {id} (demo: egress example.org:443)")
    );
    assert_eq!(run(db, &["--as", "carol", "approve", &id]).code, 1);
}

#[test]
fn approvals_are_counted_from_the_command_line_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    approvals_are_counted_from_the_command_line(&dir.path().join("quorum.db"));
}

#[test]
fn approvals_are_counted_from_the_command_line_on_postgres() {
    let Some(cluster) = supervise_testpg::cluster() else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let url = rt.block_on(cluster.fresh_database());
    approvals_are_counted_from_the_command_line(Path::new(&url));
}
