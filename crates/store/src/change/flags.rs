//! Risk flags: short, stable names computed from a normalised change, in a fixed order.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde_json::Value;

use super::egress::{PublicSuffix, public_suffix};
use crate::model::{Flag, Kind};

/// Flags no rule may approve (SPEC "Rules"): a change carrying one always goes to a human,
/// even when a permit matches. The host itself (`loopback`, and `unspecified`, which is
/// the host too), the link-local network and the metadata service, addresses in disguise,
/// lookalike names, and pushes that rewrite history or the default branch.
pub const NEVER_AUTOMATIC: &[Flag] = &[
    Flag::CloudMetadata,
    Flag::LinkLocal,
    Flag::Loopback,
    Flag::Unspecified,
    Flag::DisguisedIp,
    Flag::Lookalike,
    Flag::ForcePush,
    Flag::RefDeletion,
    Flag::DefaultBranch,
];

/// Whether no rule may approve a change with these flags (see [`NEVER_AUTOMATIC`]).
pub fn never_automatic(flags: &[Flag]) -> bool {
    flags.iter().any(|f| NEVER_AUTOMATIC.contains(f))
}

/// Risk flags of a normalised change: short, stable names, in a fixed order.
pub fn flags(kind: Kind, change: &Value) -> Vec<Flag> {
    let mut out = Vec::new();
    match kind {
        Kind::Egress => {
            let host = change.get("host").and_then(Value::as_str).unwrap_or("");
            let port = change.get("port").and_then(Value::as_u64).unwrap_or(443);
            if host.starts_with("*.") {
                out.push(Flag::WildcardHost);
            }
            if let Ok(ip) = host.parse::<IpAddr>() {
                out.push(Flag::IpLiteral);
                match embedded_ipv4(ip) {
                    Some(v4) => {
                        out.push(Flag::DisguisedIp);
                        out.extend(ip_flags(IpAddr::V4(v4)));
                    }
                    None => out.extend(ip_flags(ip)),
                }
            } else if let Some(ip) = disguised_ipv4(host) {
                out.push(Flag::DisguisedIp);
                out.extend(ip_flags(IpAddr::V4(ip)));
            } else {
                out.extend(name_flags(host));
            }
            if port != 80 && port != 443 {
                out.push(Flag::UnusualPort);
            }
        }
        Kind::GitPush => {
            let remote = change.get("remote").and_then(Value::as_str).unwrap_or("");
            let reference = change.get("ref").and_then(Value::as_str).unwrap_or("");
            if reference == "refs/heads/main" || reference == "refs/heads/master" {
                out.push(Flag::DefaultBranch);
            }
            if reference.starts_with("refs/tags/") {
                out.push(Flag::Tag);
            } else if !reference.starts_with("refs/heads/") {
                out.push(Flag::RefOutsideHeads);
            }
            if is_lookalike(remote) || reference.split('/').any(is_lookalike) {
                out.push(Flag::Lookalike);
            }
            if let Some(summary) = change.get("summary") {
                out.extend(summary_flags(summary));
            }
        }
    }
    out
}

/// A gate push over this many commits is `large-push`.
pub const LARGE_PUSH_COMMITS: u64 = 100;
/// A gate push changing over this many lines (insertions plus deletions) is `large-push`.
pub const LARGE_PUSH_LINES: u64 = 10_000;

/// The flags of a gate push's summary: force, deletion, size.
fn summary_flags(summary: &Value) -> Vec<Flag> {
    let yes = |name: &str| summary.get(name).and_then(Value::as_bool) == Some(true);
    let count = |name: &str| summary.get(name).and_then(Value::as_u64).unwrap_or(0);
    let mut out = Vec::new();
    if yes("force") {
        out.push(Flag::ForcePush);
    }
    if yes("delete") {
        out.push(Flag::RefDeletion);
    }
    if count("commits") > LARGE_PUSH_COMMITS
        || count("insertions").saturating_add(count("deletions")) > LARGE_PUSH_LINES
    {
        out.push(Flag::LargePush);
    }
    out
}

/// Flags for an operator's modified change: its own flags, plus `widened` when it carries a
/// flag the proposed change did not, or when its wildcard covers the proposed host.
pub fn modified_flags(kind: Kind, proposed: &Value, modified: &Value) -> Vec<Flag> {
    let before = flags(kind, proposed);
    let mut after = flags(kind, modified);
    let mut widened = after.iter().any(|f| !before.contains(f));
    if kind == Kind::Egress {
        let old = proposed.get("host").and_then(Value::as_str).unwrap_or("");
        let new = modified.get("host").and_then(Value::as_str).unwrap_or("");
        if let Some(domain) = new.strip_prefix("*.")
            && old != new
            && (old == domain || old.ends_with(&format!(".{domain}")))
        {
            widened = true;
        }
    }
    if widened {
        after.push(Flag::Widened);
    }
    after
}

/// Names that resolve to the cloud metadata service on some provider: Google's
/// (`metadata.google.internal`, and `metadata` through its search domain) and the EC2 names
/// (`instance-data`, `instance-data.ec2.internal`).
const METADATA_NAMES: &[&str] = &[
    "metadata",
    "metadata.google.internal",
    "instance-data",
    "instance-data.ec2.internal",
];

/// Flags of a DNS name (normalised: lower case, no trailing dot), a wildcard included:
/// `shared-suffix` for a wildcard over a suffix of the public suffix list's private section
/// (`*.github.io`: every name under it is another customer's); `loopback` for `localhost`, any name under `.localhost` (RFC 6761 keeps them on the host
/// itself) and the Debian aliases `ip6-localhost` / `ip6-loopback`; `cloud-metadata` for a
/// metadata name, or a wildcard that covers one (`*.google.internal`).
fn name_flags(host: &str) -> Vec<Flag> {
    let mut out = Vec::new();
    let name = host.strip_prefix("*.").unwrap_or(host);
    let wildcard = name.len() != host.len();
    if wildcard && public_suffix(name) == Some(PublicSuffix::Private) {
        out.push(Flag::SharedSuffix);
    }
    let covers = |target: &str| {
        if wildcard {
            target.ends_with(&format!(".{name}"))
        } else {
            target == name
        }
    };
    if METADATA_NAMES.iter().any(|m| covers(m)) {
        out.push(Flag::CloudMetadata);
    }
    if name == "localhost"
        || name.ends_with(".localhost")
        || name == "localhost.localdomain"
        || (!wildcard && matches!(name, "ip6-localhost" | "ip6-loopback"))
    {
        out.push(Flag::Loopback);
    }
    out
}

/// The IPv4 address an IPv6 literal carries, where resolvers, stacks or a NAT64 gateway
/// would reach that IPv4 address: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible
/// (`::a.b.c.d`, first octet not 0, so `::` and `::1` stay themselves) and the NAT64
/// well-known prefix (`64:ff9b::a.b.c.d`, RFC 6052).
fn embedded_ipv4(ip: IpAddr) -> Option<Ipv4Addr> {
    let IpAddr::V6(v6) = ip else { return None };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let seg = v6.segments();
    let low = Ipv4Addr::new(
        (seg[6] >> 8) as u8,
        seg[6] as u8,
        (seg[7] >> 8) as u8,
        seg[7] as u8,
    );
    if seg[..6] == [0; 6] && seg[6] >= 0x0100 {
        return Some(low);
    }
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(low);
    }
    None
}

/// Whether a ref component or remote looks like `origin`, `main` or `master` without being
/// it: it folds to one of them (see [`skeleton`]) but is spelled otherwise, with another
/// case or with letters of another script.
fn is_lookalike(text: &str) -> bool {
    const PROTECTED: &[&str] = &["origin", "main", "master"];
    if PROTECTED.contains(&text) {
        return false;
    }
    let folded = skeleton(text);
    PROTECTED.contains(&folded.as_str())
}

/// A rough confusable skeleton: compatibility-normalised (NFKC folds fullwidth and
/// mathematical letters), the Cyrillic, Greek, Armenian and Latin letters that draw like
/// the ASCII letters of the protected names mapped to them, and lower-cased.
fn skeleton(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    text.nfkc()
        .map(|c| match c {
            'а' | 'А' | 'α' | 'Α' | 'ɑ' => 'a',
            'е' | 'Е' | 'ε' | 'Ε' => 'e',
            'ɡ' | 'ց' => 'g',
            'і' | 'І' | 'ӏ' | 'Ӏ' | 'ι' | 'Ι' | 'ı' | 'ɩ' | 'ǀ' => 'i',
            'М' | 'Μ' | 'ᴍ' => 'm',
            'Ν' | 'ո' | 'ɴ' => 'n',
            'о' | 'О' | 'ο' | 'Ο' | 'օ' | 'σ' | 'ᴏ' => 'o',
            'г' | 'ʀ' => 'r',
            'ѕ' | 'Ѕ' => 's',
            'Т' | 'Τ' | 'т' | 'τ' | 'ᴛ' => 't',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

fn ip_flags(ip: IpAddr) -> Vec<Flag> {
    let mut out = Vec::new();
    match ip {
        IpAddr::V4(v4) => {
            // The metadata service: 169.254.169.254 on most clouds, 100.100.100.200 on Alibaba's.
            if v4 == Ipv4Addr::new(169, 254, 169, 254) || v4 == Ipv4Addr::new(100, 100, 100, 200) {
                out.push(Flag::CloudMetadata);
            }
            // The unspecified address reaches this host, like loopback: a connection to
            // 0.0.0.0 lands on whatever listens on any local address, 127.0.0.1 included.
            if v4.is_loopback() || v4.is_unspecified() {
                out.push(Flag::Loopback);
            }
            if v4.is_private() {
                out.push(Flag::PrivateIp);
            }
            if v4.is_link_local() {
                out.push(Flag::LinkLocal);
            }
            let o = v4.octets();
            if o[0] == 100 && (64..128).contains(&o[1]) {
                out.push(Flag::Cgnat);
            }
            if v4.is_unspecified() {
                out.push(Flag::Unspecified);
            }
        }
        IpAddr::V6(v6) => {
            if v6 == "fd00:ec2::254".parse::<Ipv6Addr>().expect("literal") {
                out.push(Flag::CloudMetadata);
            }
            let seg = v6.segments();
            if v6.is_loopback() || v6.is_unspecified() {
                out.push(Flag::Loopback);
            }
            if (seg[0] & 0xfe00) == 0xfc00 {
                out.push(Flag::PrivateIp);
            }
            if (seg[0] & 0xffc0) == 0xfe80 {
                out.push(Flag::LinkLocal);
            }
            if v6.is_unspecified() {
                out.push(Flag::Unspecified);
            }
        }
    }
    out
}

/// An IPv4 address written as something other than a dotted quad: a single decimal or hex
/// number (`3232235777`, `0xc0a80001`), or dotted parts in hex or octal (`0x7f.1`, `0177.0.0.1`).
/// Resolvers and HTTP clients accept these, so they are flagged like the address itself.
fn disguised_ipv4(host: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut nums = Vec::with_capacity(parts.len());
    for p in &parts {
        let n = if let Some(hex) = p.strip_prefix("0x") {
            u64::from_str_radix(hex, 16).ok()?
        } else if p.len() > 1 && p.starts_with('0') {
            u64::from_str_radix(&p[1..], 8).ok()?
        } else if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) {
            p.parse::<u64>().ok()?
        } else {
            return None;
        };
        nums.push(n);
    }
    let last_bits = 8 * (5 - nums.len() as u32);
    let (head, last) = nums.split_at(nums.len() - 1);
    if head.iter().any(|&n| n > 255) || last[0] >= (1u64 << last_bits.min(32)) {
        return None;
    }
    let mut value: u64 = 0;
    for (i, n) in head.iter().enumerate() {
        value |= n << (24 - 8 * i as u64);
    }
    value |= last[0];
    Some(Ipv4Addr::from(value as u32))
}

#[cfg(test)]
mod tests {
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
}
