//! The risk flags' tests: each flag by example, hidden spellings of addresses, lookalikes,
//! gate push summaries and widening.

use super::*;
use serde_json::json;

fn names(flags: &[Flag]) -> Vec<&'static str> {
    flags.iter().map(|f| f.as_str()).collect()
}

#[test]
fn risk_flags_table() {
    let cases: &[(Kind, Value, &[&str])] = &[
        (Kind::Egress, json!({"host": "a.com", "port": 443}), &[]),
        (Kind::Egress, json!({"host": "a.com", "port": 80}), &[]),
        (
            Kind::Egress,
            json!({"host": "*.a.com", "port": 443}),
            &["wildcard-host"],
        ),
        (
            Kind::Egress,
            json!({"host": "a.com", "port": 22}),
            &["unusual-port"],
        ),
        (
            Kind::Egress,
            json!({"host": "10.1.2.3", "port": 443}),
            &["ip-literal", "private-ip"],
        ),
        (
            Kind::Egress,
            json!({"host": "127.0.0.1", "port": 443}),
            &["ip-literal", "loopback"],
        ),
        (
            Kind::Egress,
            json!({"host": "169.254.169.254", "port": 80}),
            &["ip-literal", "cloud-metadata", "link-local"],
        ),
        (
            Kind::Egress,
            json!({"host": "fd00:ec2::254", "port": 80}),
            &["ip-literal", "cloud-metadata", "private-ip"],
        ),
        (
            Kind::Egress,
            json!({"host": "100.64.0.1", "port": 443}),
            &["ip-literal", "cgnat"],
        ),
        (
            Kind::Egress,
            json!({"host": "fe80::1", "port": 443}),
            &["ip-literal", "link-local"],
        ),
        (
            Kind::Egress,
            json!({"host": "8.8.8.8", "port": 443}),
            &["ip-literal"],
        ),
        (
            Kind::Egress,
            json!({"host": "2130706433", "port": 443}),
            &["disguised-ip", "loopback"],
        ),
        (
            Kind::Egress,
            json!({"host": "0x7f000001", "port": 443}),
            &["disguised-ip", "loopback"],
        ),
        (
            Kind::Egress,
            json!({"host": "0xa9.0xfe.0xa9.0xfe", "port": 443}),
            &["disguised-ip", "cloud-metadata", "link-local"],
        ),
        (
            Kind::Egress,
            json!({"host": "0177.0.0.1", "port": 443}),
            &["disguised-ip", "loopback"],
        ),
        (
            Kind::GitPush,
            json!({"remote": "origin", "ref": "refs/heads/feature/x"}),
            &[],
        ),
        (
            Kind::GitPush,
            json!({"remote": "origin", "ref": "refs/heads/main"}),
            &["default-branch"],
        ),
        (
            Kind::GitPush,
            json!({"remote": "origin", "ref": "refs/heads/master"}),
            &["default-branch"],
        ),
        (
            Kind::GitPush,
            json!({"remote": "origin", "ref": "refs/tags/v1.0"}),
            &["tag"],
        ),
        (
            Kind::GitPush,
            json!({"remote": "origin", "ref": "refs/notes/x"}),
            &["ref-outside-heads"],
        ),
    ];
    for (kind, change, want) in cases {
        assert_eq!(&names(&flags(*kind, change)), want, "{change}");
    }
}

fn egress_flags(host: &str) -> Vec<&'static str> {
    let change = crate::change::normalise(Kind::Egress, &json!({ "host": host }))
        .unwrap_or_else(|e| panic!("{host:?} should be accepted: {e}"));
    names(&flags(Kind::Egress, &change))
}

#[test]
fn loopback_names_are_flagged() {
    for host in [
        "localhost",
        "LOCALHOST.",
        "app.localhost",
        "a.b.localhost",
        "localhost.localdomain",
        "ip6-localhost",
        "ip6-loopback",
    ] {
        assert_eq!(egress_flags(host), ["loopback"], "{host}");
    }
    assert_eq!(
        egress_flags("*.app.localhost"),
        ["wildcard-host", "loopback"]
    );
    for host in ["localhost.example.com", "notlocalhost", "mylocalhost.com"] {
        assert_eq!(egress_flags(host), [] as [&str; 0], "{host}");
    }
}

#[test]
fn a_wildcard_over_a_shared_hosting_suffix_is_flagged() {
    for host in ["*.github.io", "*.s3.amazonaws.com", "*.blogspot.com"] {
        assert_eq!(
            egress_flags(host),
            ["wildcard-host", "shared-suffix"],
            "{host}"
        );
    }
    for host in [
        "*.user.github.io",
        "*.example.com",
        "github.io",
        "user.github.io",
    ] {
        assert!(!egress_flags(host).contains(&"shared-suffix"), "{host}");
    }
}

#[test]
fn cloud_metadata_names_are_flagged() {
    for host in [
        "metadata.google.internal",
        "Metadata.Google.Internal.",
        "metadata",
        "instance-data",
        "instance-data.ec2.internal",
    ] {
        assert_eq!(egress_flags(host), ["cloud-metadata"], "{host}");
    }
    for host in ["*.google.internal", "*.ec2.internal"] {
        assert_eq!(
            egress_flags(host),
            ["wildcard-host", "cloud-metadata"],
            "{host}"
        );
    }
    for host in [
        "metadata.example.com",
        "google.internal",
        "*.example.internal",
    ] {
        assert!(!egress_flags(host).contains(&"cloud-metadata"), "{host}");
    }
}

#[test]
fn ipv6_spellings_of_ipv4_are_classified_like_the_ipv4() {
    let metadata = ["ip-literal", "disguised-ip", "cloud-metadata", "link-local"];
    let loopback = ["ip-literal", "disguised-ip", "loopback"];
    let cases: &[(&str, &[&str])] = &[
        // IPv4-mapped
        ("::ffff:169.254.169.254", &metadata),
        ("::ffff:a9fe:a9fe", &metadata),
        ("[::ffff:127.0.0.1]", &loopback),
        (
            "::ffff:10.0.0.1",
            &["ip-literal", "disguised-ip", "private-ip"],
        ),
        // IPv4-compatible
        ("::169.254.169.254", &metadata),
        ("::127.0.0.1", &loopback),
        ("::7f00:1", &loopback),
        // NAT64 well-known prefix
        ("64:ff9b::a9fe:a9fe", &metadata),
        ("64:ff9b::169.254.169.254", &metadata),
        ("64:ff9b::7f00:1", &loopback),
        ("64:ff9b::808:808", &["ip-literal", "disguised-ip"]),
        // the IPv6 addresses themselves are not IPv4
        ("::1", &["ip-literal", "loopback"]),
        ("::", &["ip-literal", "loopback", "unspecified"]),
        (
            "fd00:ec2::254",
            &["ip-literal", "cloud-metadata", "private-ip"],
        ),
        ("2001:db8::1", &["ip-literal"]),
        // Alibaba's metadata address
        (
            "100.100.100.200",
            &["ip-literal", "cloud-metadata", "cgnat"],
        ),
    ];
    for (host, want) in cases {
        assert_eq!(&egress_flags(host), want, "{host}");
    }
}

#[test]
fn the_unspecified_address_is_flagged_as_loopback() {
    let disguised = ["ip-literal", "disguised-ip", "loopback", "unspecified"];
    let cases: &[(&str, &[&str])] = &[
        ("0.0.0.0", &["ip-literal", "loopback", "unspecified"]),
        ("::", &["ip-literal", "loopback", "unspecified"]),
        ("[::]", &["ip-literal", "loopback", "unspecified"]),
        ("::ffff:0.0.0.0", &disguised),
        ("0", &["disguised-ip", "loopback", "unspecified"]),
        ("0x0", &["disguised-ip", "loopback", "unspecified"]),
        ("0.0", &["disguised-ip", "loopback", "unspecified"]),
    ];
    for (host, want) in cases {
        assert_eq!(&egress_flags(host), want, "{host}");
    }
    for host in ["0.0.0.0", "::", "0"] {
        let change = crate::change::normalise(Kind::Egress, &json!({ "host": host })).unwrap();
        assert!(never_automatic(&flags(Kind::Egress, &change)), "{host}");
    }
    assert!(NEVER_AUTOMATIC.contains(&Flag::Loopback));
    assert!(NEVER_AUTOMATIC.contains(&Flag::Unspecified));
}

fn push_flags(remote: &str, reference: &str) -> Vec<&'static str> {
    let change = crate::change::normalise(
        Kind::GitPush,
        &json!({ "remote": remote, "ref": reference }),
    )
    .unwrap_or_else(|e| panic!("{remote:?} {reference:?} should be accepted: {e}"));
    names(&flags(Kind::GitPush, &change))
}

#[test]
fn lookalikes_of_origin_main_and_master_are_flagged() {
    assert_eq!(push_flags("origin", "main"), ["default-branch"]);
    assert_eq!(push_flags("origin", "feature/x"), [] as [&str; 0]);
    for remote in [
        "\u{43e}rigin",                                     // Cyrillic о
        "or\u{456}gin",                                     // Cyrillic і
        "\u{3bf}rigin",                                     // Greek ο
        "\u{ff4f}\u{ff52}\u{ff49}\u{ff47}\u{ff49}\u{ff4e}", // fullwidth
        "\u{1d428}rigin",                                   // mathematical bold o
        "Origin",
        "ORIGIN",
    ] {
        assert_eq!(push_flags(remote, "feature/x"), ["lookalike"], "{remote:?}");
    }
    for reference in [
        "m\u{430}in",   // Cyrillic а
        "ma\u{131}n",   // dotless i
        "\u{41c}aster", // Cyrillic М
        "\u{ff4d}ain",  // fullwidth m
        "Main",
        "release/m\u{430}in",
        "refs/heads/m\u{430}ster",
    ] {
        assert_eq!(
            push_flags("origin", reference),
            ["lookalike"],
            "{reference:?}"
        );
    }
    for reference in ["maintenance", "mainline", "café", "日本"] {
        assert_eq!(
            push_flags("origin", reference),
            [] as [&str; 0],
            "{reference:?}"
        );
    }
}

#[test]
fn gate_pushes_are_flagged_by_their_summary() {
    let push = |force: bool, delete: bool, commits: u64, lines: u64| {
        let summary = json!({"commits": commits, "subjects": [], "files_changed": 1,
            "insertions": lines, "deletions": 0, "force": force, "delete": delete,
            "create": false});
        names(&flags(
            Kind::GitPush,
            &json!({"remote": "origin", "ref": "refs/heads/x", "summary": summary}),
        ))
    };
    assert!(push(false, false, 1, 1).is_empty());
    assert_eq!(push(true, false, 1, 1), ["force-push"]);
    assert_eq!(push(false, true, 0, 0), ["ref-deletion"]);
    assert_eq!(push(false, false, 101, 1), ["large-push"]);
    assert_eq!(push(false, false, 100, 10_001), ["large-push"]);
    assert!(push(false, false, 100, 10_000).is_empty());
}

#[test]
fn a_push_summarys_content_flags_are_its_flags_and_a_secret_is_never_automatic() {
    let old = "a".repeat(40);
    let new = "b".repeat(40);
    let change = |content: Value| {
        crate::change::normalise(
            Kind::GitPush,
            &json!({"remote": "origin", "ref": "x", "old": old, "new": new,
                "summary": {"commits": 1, "subjects": [], "files_changed": 1,
                    "insertions": 1, "deletions": 0, "force": false, "delete": false,
                    "create": false, "content": content}}),
        )
    };
    let c = change(json!(["large-push", "install-script", "secret-in-diff"])).unwrap();
    assert_eq!(
        c["summary"]["content"],
        json!(["secret-in-diff", "install-script", "large-push"]),
        "kept in the fixed order"
    );
    let f = flags(Kind::GitPush, &c);
    assert_eq!(
        names(&f),
        ["large-push", "secret-in-diff", "install-script"]
    );
    assert!(crate::change::never_automatic(&f));
    assert!(change(json!(["force-push"])).is_err(), "not a content flag");
    assert!(
        change(json!(["ci-config", "ci-config"])).is_err(),
        "once each"
    );
    assert!(change(json!("ci-config")).is_err(), "a list");
    let none = change(json!([])).unwrap();
    assert!(none["summary"].get("content").is_none());
}

#[test]
fn widening_is_flagged() {
    let p = json!({"host": "api.a.com", "port": 443});
    assert_eq!(
        names(&modified_flags(
            Kind::Egress,
            &p,
            &json!({"host": "*.a.com", "port": 443})
        )),
        vec!["wildcard-host", "widened"]
    );
    assert!(
        modified_flags(Kind::Egress, &p, &json!({"host": "api.a.com", "port": 443})).is_empty()
    );
    let wild = json!({"host": "*.a.com", "port": 443});
    assert_eq!(
        names(&modified_flags(Kind::Egress, &wild, &wild)),
        vec!["wildcard-host"]
    );
    let g = json!({"remote": "origin", "ref": "refs/heads/x"});
    assert_eq!(
        names(&modified_flags(
            Kind::GitPush,
            &g,
            &json!({"remote": "origin", "ref": "refs/heads/main"})
        )),
        vec!["default-branch", "widened"]
    );
}
