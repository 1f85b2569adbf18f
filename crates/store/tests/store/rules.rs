//! The change rules seen through the store: risky spellings are flagged on the filed
//! proposal (and read back from the file), dangerous remotes are refused naming the field,
//! and a refusal writes nothing.

use crate::common::*;
use serde_json::json;
use supervise_store::{Flag, Kind, NewProposal, Proposed, StoreError};

fn push(bottle: &supervise_store::Bottle, remote: &str, reference: &str) -> NewProposal {
    NewProposal {
        bottle_id: bottle.id,
        kind: Kind::GitPush,
        change: json!({ "remote": remote, "ref": reference }),
        justification: "push my branch".into(),
        quorum: None,
    }
}

async fn risky_spellings_are_flagged_and_the_flags_survive_the_file(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let cases: Vec<(NewProposal, &[Flag])> = vec![
        (egress(&b, "app.localhost"), &[Flag::Loopback]),
        (
            egress(&b, "metadata.google.internal"),
            &[Flag::CloudMetadata],
        ),
        (
            egress(&b, "::ffff:169.254.169.254"),
            &[
                Flag::IpLiteral,
                Flag::DisguisedIp,
                Flag::CloudMetadata,
                Flag::LinkLocal,
            ],
        ),
        (
            egress(&b, "64:ff9b::7f00:1"),
            &[Flag::IpLiteral, Flag::DisguisedIp, Flag::Loopback],
        ),
        (push(&b, "\u{43e}rigin", "feature/x"), &[Flag::Lookalike]),
        (push(&b, "origin", "m\u{430}in"), &[Flag::Lookalike]),
    ];
    for (item, want) in cases {
        let change = item.change.clone();
        let id = created(&store, item).await;
        let (shown, _) = store.show(&id).await.expect("show");
        assert_eq!(shown.flags, want, "{change}");
    }
    // A second handle reads the same words from the file.
    let again = db.open().await;
    let listed = again
        .list(Some("demo"), supervise_store::StatusFilter::Pending)
        .await
        .expect("list");
    assert!(listed.iter().any(|p| p.flags == [Flag::Lookalike]));
}
on_both!(risky_spellings_are_flagged_and_the_flags_survive_the_file);

async fn dangerous_remotes_are_refused_naming_the_field_and_write_nothing(db: TestDb) {
    let store = db.open().await;
    let b = bottle(&store, "demo", "127.0.0.1").await;
    let before = counts(&db).await;
    for remote in [
        "--receive-pack=evil",
        "-oProxyCommand=evil",
        "ext::sh",
        "fd::3",
        "https://user:token@github.com/org/repo",
        "http://github.com/org/repo",
        "ssh://-oProxyCommand=evil/x",
        "../elsewhere",
        "ori\u{200b}gin",
    ] {
        match store.propose(push(&b, remote, "feature/x")).await {
            Err(StoreError::Invalid { field, .. }) => assert_eq!(field, "remote", "{remote:?}"),
            other => panic!("{remote:?} should be refused, got {other:?}"),
        }
    }
    for reference in ["-x", "ma\u{200d}in"] {
        match store.propose(push(&b, "origin", reference)).await {
            Err(StoreError::Invalid { field, .. }) => assert_eq!(field, "ref", "{reference:?}"),
            other => panic!("{reference:?} should be refused, got {other:?}"),
        }
    }
    assert_eq!(counts(&db).await, before);
    assert!(matches!(
        store
            .propose(push(&b, "git@github.com:org/repo.git", "feature/x"))
            .await,
        Ok(Proposed::Created(_))
    ));
}
on_both!(dangerous_remotes_are_refused_naming_the_field_and_write_nothing);
