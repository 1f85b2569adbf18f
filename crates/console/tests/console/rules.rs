//! Decisions made by operator rules on the audit page: `via=rules` keeps only them (and
//! shadow matches), and `operator=rules:` matches every rule's actor.

use supervise_store::Role;

use crate::harness::*;

#[tokio::test]
async fn the_audit_page_filters_automatic_decisions() {
    let c = Console::start().await;
    c.bottle("demo", "127.0.0.2").await;
    c.store
        .set_rules(
            r#"@id("pypi") permit (principal, action == Action::"egress", resource)
               when { resource.host == "pypi.org" };"#,
            &root(),
        )
        .await
        .unwrap();
    c.propose("demo", "pypi.org", 443, "deps").await;
    let by_hand = c.propose("demo", "human.example", 443, "docs").await;
    c.store
        .decide(
            &by_hand.id,
            supervise_store::Verdict::Approve,
            &root(),
            None,
            None,
        )
        .await
        .unwrap();
    let admin = c.sign_in(&c.operator("ada", Role::Admin, &[]).await).await;
    let (status, page) = admin.get("/audit?via=rules").await;
    assert_eq!(status, 200);
    assert!(
        page.contains("rules:pypi") && page.contains("pypi.org"),
        "{page}"
    );
    assert!(!page.contains("human.example"), "{page}");
    assert!(page.contains("rules (automatic)"), "{page}");
    let (_, page) = admin.get("/audit?operator=rules:").await;
    assert!(
        page.contains("rules:pypi") && !page.contains("operator:root"),
        "{page}"
    );
    let (_, page) = admin.get("/audit?via=nonsense").await;
    assert!(page.contains("no way of deciding named"), "{page}");
}
