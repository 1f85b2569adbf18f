//! Risk flags in `list`, `list --json` and `show`.

use serde_json::json;

use crate::util::{Env, find, ids};

#[test]
fn risk_flags_show_in_json_list_and_show() {
    let env = Env::new();
    let egress: &[(&str, u16, &[&str])] = &[
        ("plain.example.com", 443, &[]),
        ("plain.example.com", 80, &[]),
        ("*.example.com", 443, &["wildcard-host"]),
        ("ssh.example.com", 22, &["unusual-port"]),
        ("8.8.8.8", 443, &["ip-literal"]),
        ("10.1.2.3", 443, &["ip-literal", "private-ip"]),
        ("192.168.1.1", 443, &["ip-literal", "private-ip"]),
        ("127.0.0.1", 443, &["ip-literal", "loopback"]),
        ("::1", 443, &["ip-literal", "loopback"]),
        ("fe80::1", 443, &["ip-literal", "link-local"]),
        (
            "169.254.169.254",
            80,
            &["ip-literal", "cloud-metadata", "link-local"],
        ),
        (
            "fd00:ec2::254",
            80,
            &["ip-literal", "cloud-metadata", "private-ip"],
        ),
        ("100.64.0.1", 443, &["ip-literal", "cgnat"]),
        ("2130706433", 443, &["disguised-ip", "loopback"]),
        ("0x7f000001", 443, &["disguised-ip", "loopback"]),
        ("0177.0.0.1", 443, &["disguised-ip", "loopback"]),
        (
            "0xa9.0xfe.0xa9.0xfe",
            443,
            &["disguised-ip", "cloud-metadata", "link-local"],
        ),
    ];
    let pushes: &[(&str, &[&str])] = &[
        ("refs/heads/feature/x", &[]),
        ("refs/heads/main", &["default-branch"]),
        ("refs/heads/master", &["default-branch"]),
        ("refs/tags/v1.0", &["tag"]),
        ("refs/notes/commits", &["ref-outside-heads"]),
    ];
    let mut cases: Vec<(String, Vec<&str>)> = Vec::new();
    for (host, port, want) in egress {
        cases.push((env.egress(host, *port), want.to_vec()));
    }
    for (reference, want) in pushes {
        cases.push((env.push(reference), want.to_vec()));
    }
    let doc = env.json(&["list", "--json"]);
    assert_eq!(ids(&doc).len(), cases.len());
    for (id, want) in &cases {
        let p = find(&doc, id);
        assert_eq!(p["flags"], json!(want), "{}", p["change"]);
    }

    // The table's FLAGS column and show's one line per flag say the same.
    let table = env.ok(&["list"]);
    let metadata = table
        .lines()
        .find(|l| l.contains("169.254.169.254:80"))
        .unwrap();
    assert!(
        metadata.contains("ip-literal,cloud-metadata,link-local"),
        "{metadata}"
    );
    let plain = table
        .lines()
        .find(|l| l.contains("plain.example.com:443"))
        .unwrap();
    let flags_col = table.lines().next().unwrap().find("FLAGS").unwrap();
    assert_eq!(&plain[flags_col..flags_col + 2], "- ", "{table}");
    let shown = env.ok(&["show", &cases[10].0]);
    assert!(
        shown.contains("cloud-metadata  the cloud metadata service"),
        "{shown}"
    );
    let clean = env.ok(&["show", &cases[0].0]);
    assert!(
        clean
            .lines()
            .any(|l| l.starts_with("flags") && l.ends_with("none")),
        "{clean}"
    );
}
