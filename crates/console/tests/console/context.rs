//! The egress context on a proposal's page: grants in force, the last decisions on the
//! same destination within the operator's scope (agent and operator text escaped), the
//! proxy's refusals, and the name's addresses only after the operator presses Resolve.

use supervise_store::{Role, Verdict};

use crate::harness::{Console, root};

#[tokio::test]
async fn the_proposal_page_shows_the_egress_context_escaped() {
    let c = Console::start().await;
    c.bottle("team-a-x", "127.0.0.2").await;
    c.bottle("team-b-x", "127.0.0.3").await;
    let granted = c.propose("team-a-x", "other.example", 443, "for a").await;
    c.store
        .decide(granted.id.as_str(), Verdict::Approve, &root(), None, None)
        .await
        .unwrap();
    let theirs = c.propose("team-b-x", "pkg.example", 443, "for b").await;
    c.store
        .decide(
            theirs.id.as_str(),
            Verdict::Reject,
            &root(),
            Some("<script>alert(1)</script>"),
            None,
        )
        .await
        .unwrap();
    let mine = c.propose("team-a-x", "pkg.example", 443, "for a").await;
    let a = c.store.bottle("team-a-x").await.unwrap().unwrap();
    assert!(
        c.store
            .record_refusal(&a, "pkg.example", 443)
            .await
            .unwrap()
    );

    let admin = c
        .sign_in(&c.operator("root-op", Role::Approver, &[]).await)
        .await;
    let (status, page) = admin.get(&format!("/proposals/{}", mine.id)).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Grants in force"), "{page}");
    assert!(page.contains("other.example"), "{page}");
    assert!(
        page.contains("Recent decisions on pkg.example:443"),
        "{page}"
    );
    assert!(
        page.contains("&#60;script&#62;alert(1)&#60;/script&#62;"),
        "{page}"
    );
    assert!(!page.contains("<script>alert(1)"), "{page}");
    assert!(
        page.contains("Refused at the proxy: 1 time, last"),
        "{page}"
    );
    assert!(
        page.contains("href=\"?resolve=1#egress-context\""),
        "{page}"
    );
    assert!(!page.contains("id=\"context-resolved\""), "{page}");

    // An operator of team-a only does not see team-b's decision.
    let amy = c
        .sign_in(&c.operator("amy", Role::Approver, &["team-a-*"]).await)
        .await;
    let (status, page) = amy.get(&format!("/proposals/{}", mine.id)).await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("Recent decisions on pkg.example:443"),
        "{page}"
    );
    assert!(!page.contains("alert(1)"), "{page}");
    assert!(!page.contains("team-b-x"), "{page}");
}

#[tokio::test]
async fn resolving_on_the_page_marks_loopback() {
    let c = Console::start().await;
    c.bottle("team-a-x", "127.0.0.2").await;
    let p = c.propose("team-a-x", "localhost", 8080, "local").await;
    let op = c
        .sign_in(&c.operator("root-op", Role::Viewer, &[]).await)
        .await;
    let (status, page) = op.get(&format!("/proposals/{}?resolve=1", p.id)).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("id=\"context-resolved\""), "{page}");
    assert!(
        page.contains("<span class=\"flag\">loopback</span>"),
        "{page}"
    );
}
