//! `supervise operator add|link|token|list|rm`: who may use the review console and its
//! API. The CLI acts with the host's full power ([`supervise_store::Actor::cli`]); each
//! secret is printed once and the store keeps only its hash.

use std::io::Write;

use anyhow::Result;
use supervise_store::{Role, SignInLink, Store};

use super::{Ctx, print_json};
use crate::json::{OperatorList, OperatorView};
use crate::render::{self, Cell, Color, Table};

fn print_link(out: &mut dyn Write, public_url: &str, link: &SignInLink) -> Result<()> {
    writeln!(
        out,
        "one-time sign-in link for {} (expires {}, in {}):",
        link.operator,
        link.expires_at,
        render::time_left(&link.expires_at)
    )?;
    writeln!(out, "  {}", link.url(public_url))?;
    out.flush()?;
    Ok(())
}

fn scope(bottles: &[String]) -> String {
    if bottles.is_empty() {
        "all bottles".into()
    } else {
        format!("bottles {}", bottles.join(", "))
    }
}

pub async fn add(
    ctx: &Ctx,
    store: &Store,
    name: &str,
    role: Role,
    bottles: &[String],
    public_url: &str,
    out: &mut dyn Write,
) -> Result<()> {
    let (op, link) = store
        .add_operator(name, role, bottles, &ctx.actor()?)
        .await?;
    writeln!(
        out,
        "added operator {} ({}, {})",
        ctx.style.paint(Color::Cyan, &op.name),
        op.role,
        scope(&op.bottles)
    )?;
    print_link(out, public_url, &link)
}

pub async fn link(
    ctx: &Ctx,
    store: &Store,
    name: &str,
    public_url: &str,
    qr: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let link = store.operator_link(name, &ctx.actor()?).await?;
    print_link(out, public_url, &link)?;
    if qr {
        writeln!(out, "{}", qr_text(&link.url(public_url))?)?;
        out.flush()?;
    }
    Ok(())
}

/// `text` as a QR code of Unicode half blocks (two modules a character), dark on light
/// with the quiet zone, so a phone's camera reads it from the terminal.
fn qr_text(text: &str) -> Result<String> {
    use qrcode::render::unicode::Dense1x2;
    let code = qrcode::QrCode::new(text.as_bytes())
        .map_err(|e| anyhow::anyhow!("cannot draw the link as a QR code: {e}"))?;
    Ok(code
        .render::<Dense1x2>()
        .dark_color(Dense1x2::Light)
        .light_color(Dense1x2::Dark)
        .quiet_zone(true)
        .build())
}

pub async fn token(ctx: &Ctx, store: &Store, name: &str, out: &mut dyn Write) -> Result<()> {
    let token = store.operator_token(name, &ctx.actor()?).await?;
    writeln!(
        out,
        "API token for {name} (shown once; send it as `Authorization: Bearer TOKEN`; \
         any earlier token of {name} has stopped working):"
    )?;
    writeln!(out, "  {}", token.expose())?;
    out.flush()?;
    Ok(())
}

pub async fn list(ctx: &Ctx, store: &Store, json: bool, out: &mut dyn Write) -> Result<()> {
    let operators = store.list_operators().await?;
    if json {
        let doc = OperatorList {
            operators: operators.iter().map(OperatorView::from).collect(),
        };
        return print_json(out, &doc);
    }
    if operators.is_empty() {
        writeln!(
            out,
            "no operators (add one with `supervise operator add NAME --role ROLE`)"
        )?;
        return Ok(());
    }
    let mut t = Table::new(vec![
        "NAME",
        "ROLE",
        "BOTTLES",
        "TOKEN",
        "LAST SEEN",
        "ADDED BY",
    ])
    .flexible(2);
    for o in &operators {
        t.push(vec![
            Cell::colored(&o.name, Color::Cyan),
            Cell::new(o.role.as_str()),
            Cell::new(if o.bottles.is_empty() {
                "*".to_string()
            } else {
                o.bottles.join(", ")
            }),
            Cell::new(if o.has_token { "yes" } else { "no" }),
            Cell::new(match &o.last_seen_at {
                Some(at) => format!("{} ago", render::age(at)),
                None => "never".into(),
            }),
            Cell::new(render::one_line(&o.created_by)),
        ]);
    }
    for line in t.render(ctx.style, ctx.width) {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}

pub async fn remove(ctx: &Ctx, store: &Store, name: &str, out: &mut dyn Write) -> Result<()> {
    let op = store.remove_operator(name, &ctx.actor()?).await?;
    writeln!(
        out,
        "removed operator {}: their sessions, token and unused sign-in links ended",
        ctx.style.paint(Color::Cyan, &op.name)
    )?;
    out.flush()?;
    Ok(())
}
