//! Risk flags: short, stable names computed from a normalised change, in a fixed order.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde_json::Value;

use crate::model::{Flag, Kind};

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
                out.extend(ip_flags(ip));
            } else if let Some(ip) = disguised_ipv4(host) {
                out.push(Flag::DisguisedIp);
                out.extend(ip_flags(IpAddr::V4(ip)));
            }
            if port != 80 && port != 443 {
                out.push(Flag::UnusualPort);
            }
        }
        Kind::GitPush => {
            let reference = change.get("ref").and_then(Value::as_str).unwrap_or("");
            if reference == "refs/heads/main" || reference == "refs/heads/master" {
                out.push(Flag::DefaultBranch);
            }
            if reference.starts_with("refs/tags/") {
                out.push(Flag::Tag);
            } else if !reference.starts_with("refs/heads/") {
                out.push(Flag::RefOutsideHeads);
            }
        }
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

fn ip_flags(ip: IpAddr) -> Vec<Flag> {
    let mut out = Vec::new();
    match ip {
        IpAddr::V4(v4) => {
            if v4 == Ipv4Addr::new(169, 254, 169, 254) {
                out.push(Flag::CloudMetadata);
            }
            if v4.is_loopback() {
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
            if let Some(v4) = v6.to_ipv4_mapped() {
                return {
                    let mut inner = ip_flags(IpAddr::V4(v4));
                    inner.retain(|f| !out.contains(f));
                    out.extend(inner);
                    out
                };
            }
            let seg = v6.segments();
            if v6.is_loopback() {
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
