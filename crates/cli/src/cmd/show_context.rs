//! What `supervise show` adds for an egress proposal: the bottle's grants in force, the
//! last decisions on the same destination, the proxy's refusals, and (`--resolve` only)
//! what the name resolves to from this host, each address marked.

use supervise_store::present::address;
use supervise_store::{EgressContext, Resolution, resolve as resolve_name};

use super::Ctx;
use crate::json::{AddressDoc, ContextDoc, GrantView, RefusalsDoc, ResolvedDoc};
use crate::render::{self, Color};

const INDENT: &str = "  ";

/// The context as `show --json` carries it; resolved only when `resolve`.
pub async fn document(c: &EgressContext, resolve: bool) -> ContextDoc {
    let resolved = if resolve {
        Some(resolved_doc(resolve_name(&c.host, c.port).await))
    } else {
        None
    };
    ContextDoc {
        host: c.host.clone(),
        port: c.port,
        grants: c.grants.iter().map(GrantView::from).collect(),
        decisions: c.decisions.iter().map(|e| e.document()).collect(),
        refusals: c.refusals.as_ref().map(|r| RefusalsDoc {
            count: r.count,
            first_seen: r.first_seen.clone(),
            last_seen: r.last_seen.clone(),
        }),
        resolved,
    }
}

fn resolved_doc(r: Resolution) -> ResolvedDoc {
    match r {
        Resolution::Addresses(list) => ResolvedDoc {
            addresses: list
                .into_iter()
                .map(|(ip, flags)| AddressDoc {
                    address: ip.to_string(),
                    marks: flags.iter().map(|f| f.as_str()).collect(),
                })
                .collect(),
            error: None,
        },
        Resolution::Failed(why) => ResolvedDoc {
            addresses: Vec::new(),
            error: Some(why),
        },
    }
}

/// The sections `show` prints after the proposal's block.
pub fn lines(ctx: &Ctx, doc: &ContextDoc) -> Vec<String> {
    let s = ctx.style;
    let dest = address(&doc.host, doc.port);
    let mut out = vec![s.paint(Color::Bold, "Grants in force")];
    if doc.grants.is_empty() {
        out.push(format!("{INDENT}none"));
    }
    for g in &doc.grants {
        let until = match &g.expires_at {
            Some(exp) => format!("{} left", render::time_left(exp.as_str())),
            None => "until revoked".into(),
        };
        out.push(format!(
            "{INDENT}{}  {}  {until}",
            g.id,
            render::change_text(
                g.kind.parse().unwrap_or(supervise_store::Kind::Egress),
                &g.change
            )
        ));
    }
    out.push(s.paint(
        Color::Bold,
        &format!("Recent decisions on {}", render::one_line(&dest)),
    ));
    if doc.decisions.is_empty() {
        out.push(format!("{INDENT}none"));
    }
    for d in &doc.decisions {
        let mut line = format!(
            "{INDENT}{}  {:<13}  {}  by {}",
            d.at,
            d.event,
            render::one_line(d.bottle.as_deref().unwrap_or("-")),
            render::one_line(&d.actor)
        );
        if let Some(note) = &d.note {
            line.push_str(&format!(
                "  \"{}\"",
                render::cut(&render::one_line(note), 80)
            ));
        }
        out.push(line);
    }
    out.push(match &doc.refusals {
        Some(r) => s.paint(
            Color::Bold,
            &format!(
                "Refused at the proxy: {} {}, last {} ({} ago)",
                r.count,
                if r.count == 1 { "time" } else { "times" },
                r.last_seen,
                render::age(r.last_seen.as_str())
            ),
        ),
        None => s.paint(Color::Bold, "Refused at the proxy: never recorded"),
    });
    if let Some(r) = &doc.resolved {
        out.push(s.paint(
            Color::Bold,
            &format!("Resolves from this host ({})", render::one_line(&doc.host)),
        ));
        if let Some(why) = &r.error {
            out.push(format!("{INDENT}not resolved: {}", render::one_line(why)));
        }
        for a in &r.addresses {
            let marks = if a.marks.is_empty() {
                String::new()
            } else {
                format!(
                    "  {}",
                    s.paint(Color::Red, &format!("! {}", a.marks.join(", ")))
                )
            };
            out.push(format!("{INDENT}{}{marks}", a.address));
        }
    }
    out
}
