//! `supervise check egress (--bottle NAME | --ip IP) HOST[:PORT] [--method M --path P]`:
//! the store's one egress
//! decision, asked by hand: exit 0 allowed (the grant and when it ends), 1 not (why, and the
//! undecided proposal asking for it), 2 usage. `--bottle` takes `SLUG` (the bottle of
//! whichever host has it) or `HOST/SLUG`; `--ip` is an address of the CLI's `--host-id`.

use std::io::Write;
use std::net::IpAddr;

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;
use supervise_store::present::address;
use supervise_store::{
    BottleRef, EgressDecision, GrantId, HttpRequest, Kind, ProposalId, Store, Timestamp,
};

use super::{Ctx, bottle_name, print_json};
use crate::exit::NotAllowed;
use crate::render::{self, Color};

/// `HOST[:PORT]` as given on the command line: the host (brackets dropped) and the port
/// (443 when none is given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
}

/// Parses `pypi.org`, `pypi.org:443`, `[::1]:8080`, `::1` (a bare IPv6 address takes port
/// 443) and checks the host by the proposals' rule, so a typo is a usage error.
pub fn parse_target(text: &str) -> Result<Target, String> {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or("an IPv6 address in brackets needs its closing ]")?;
        match after.strip_prefix(':') {
            Some(p) => (host, Some(p)),
            None if after.is_empty() => (host, None),
            None => return Err(format!("unexpected {after:?} after ]")),
        }
    } else if text.matches(':').count() == 1 {
        let (h, p) = text.split_once(':').expect("one colon");
        (h, Some(p))
    } else {
        (text, None)
    };
    let port = match port {
        None => 443,
        Some(p) => match p.parse::<u32>() {
            Ok(n @ 1..=65535) => n as u16,
            _ => return Err(format!("the port must be 1-65535, not {p:?}")),
        },
    };
    let host = supervise_store::change::normalise_host(host).map_err(|e| e.to_string())?;
    if host.starts_with("*.") {
        return Err("name one host to check, not a wildcard".into());
    }
    Ok(Target { host, port })
}

/// `check egress --json`.
#[derive(Debug, Serialize)]
struct CheckView {
    allowed: bool,
    bottle: Option<String>,
    host: String,
    port: u16,
    /// The grant that allows it (allowed only).
    grant_id: Option<GrantId>,
    /// What the grant allows (its host may be `*.domain`).
    grant: Option<Value>,
    /// When the grant ends; `null`: until revoked (or not allowed).
    expires_at: Option<Timestamp>,
    /// `unknown-bottle`, `invalid-destination`, `no-grant`, `request-unseen`,
    /// `outside-limits`, `invalid-request` (not allowed only).
    reason: Option<&'static str>,
    message: Option<String>,
    /// An undecided proposal asking for it (not allowed only).
    proposal_id: Option<ProposalId>,
}

pub async fn egress(
    ctx: &Ctx,
    store: &Store,
    (slug, ip): (Option<&str>, Option<IpAddr>),
    target: &Target,
    request: Option<(&str, &str)>,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let who = match (slug, ip) {
        (Some(s), _) => BottleRef::Slug(s),
        (None, Some(ip)) => BottleRef::Ip(ip),
        (None, None) => unreachable!("clap requires --bottle or --ip"),
    };
    let decision = store
        .egress_request_decision(
            who,
            &target.host,
            target.port,
            request.map(|(method, path)| HttpRequest { method, path }),
        )
        .await?;
    let allowed = decision.is_allowed();
    let name = match &decision {
        EgressDecision::Allowed { bottle, .. }
        | EgressDecision::Denied {
            bottle: Some(bottle),
            ..
        } => Some(bottle_name(store, &bottle.host, &bottle.slug).await?),
        EgressDecision::Denied { bottle: None, .. } => None,
    };
    match decision {
        EgressDecision::Allowed {
            host, port, grant, ..
        } => {
            let name = name.unwrap_or_default();
            if json {
                print_json(
                    out,
                    &CheckView {
                        allowed,
                        bottle: Some(name.clone()),
                        host,
                        port,
                        grant_id: Some(grant.id.clone()),
                        grant: Some(grant.change.clone()),
                        expires_at: grant.expires_at.clone(),
                        reason: None,
                        message: None,
                        proposal_id: None,
                    },
                )?;
            } else {
                let until = match &grant.expires_at {
                    Some(t) => format!("until {t} ({} left)", render::time_left(t)),
                    None => "until revoked".into(),
                };
                writeln!(
                    out,
                    "allowed: bottle {name} may reach {} by grant {} ({}), {until}",
                    address(&host, port),
                    ctx.style.paint(Color::Cyan, &grant.id),
                    render::change_text(Kind::Egress, &grant.change),
                )?;
                out.flush()?;
            }
            Ok(())
        }
        EgressDecision::Denied {
            host,
            port,
            reason,
            proposal_id,
            ..
        } => {
            if json {
                print_json(
                    out,
                    &CheckView {
                        allowed,
                        bottle: name.clone(),
                        host,
                        port,
                        grant_id: None,
                        grant: None,
                        expires_at: None,
                        reason: Some(reason.code()),
                        message: Some(reason.to_string()),
                        proposal_id,
                    },
                )?;
            } else {
                let whom = match &name {
                    Some(n) => format!("bottle {n}"),
                    None => who.to_string(),
                };
                let mut line = format!(
                    "not allowed: {whom} may not reach {}: {reason}",
                    render::one_line(&address(&host, port))
                );
                if let Some(id) = &proposal_id {
                    line.push_str(&format!(
                        "; undecided proposal {} asks for it (supervise approve {id})",
                        ctx.style.paint(Color::Cyan, id)
                    ));
                }
                writeln!(out, "{line}")?;
                out.flush()?;
            }
            Err(NotAllowed.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        let t = |s: &str| parse_target(s).map(|t| (t.host, t.port));
        assert_eq!(t("PyPI.org"), Ok(("pypi.org".into(), 443)));
        assert_eq!(t("pypi.org:80"), Ok(("pypi.org".into(), 80)));
        assert_eq!(t("[::1]:8080"), Ok(("::1".into(), 8080)));
        assert_eq!(t("[::1]"), Ok(("::1".into(), 443)));
        assert_eq!(t("::1"), Ok(("::1".into(), 443)));
        for bad in [
            "pypi.org:0",
            "pypi.org:70000",
            "pypi.org:x",
            "[::1",
            "*.a.test",
            "a b",
            "",
        ] {
            assert!(parse_target(bad).is_err(), "{bad:?}");
        }
    }
}
