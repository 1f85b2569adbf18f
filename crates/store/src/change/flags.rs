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
    Flag::SecretInDiff,
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
    let content: Vec<&str> = summary
        .get("content")
        .and_then(Value::as_array)
        .map_or(Vec::new(), |a| a.iter().filter_map(Value::as_str).collect());
    if count("commits") > LARGE_PUSH_COMMITS
        || count("insertions").saturating_add(count("deletions")) > LARGE_PUSH_LINES
        || content.contains(&Flag::LargePush.as_str())
    {
        out.push(Flag::LargePush);
    }
    for flag in CONTENT_FLAGS {
        if *flag != Flag::LargePush && content.contains(&flag.as_str()) {
            out.push(*flag);
        }
    }
    out
}

/// The flags the gate computes from a push's content and hands over in its summary's
/// `content` list (`large-push` there: the scan was cut short by a size limit).
pub const CONTENT_FLAGS: &[Flag] = &[
    Flag::SecretInDiff,
    Flag::ExecutableAdded,
    Flag::CiConfig,
    Flag::InstallScript,
    Flag::LargePush,
];

/// Flags for an operator's modified change: its own flags, plus `widened` when it carries a
/// flag the proposed change did not, when its wildcard covers the proposed host, or when it
/// lets through methods or paths the proposed egress limits did not.
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
        if super::request::limits_widened(proposed, modified) {
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

/// The flags of one address as a connection would reach it (an IPv4 address embedded in
/// an IPv6 one is judged as itself): `loopback`, `private-ip`, `link-local`,
/// `unspecified`, `cloud-metadata`, `cgnat`. What `show --resolve` marks a resolved
/// address with.
pub fn address_flags(ip: IpAddr) -> Vec<Flag> {
    ip_flags(embedded_ipv4(ip).map_or(ip, IpAddr::V4))
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
mod tests;
