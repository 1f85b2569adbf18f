//! `supervise list --watch`: the current list, then one line per change, read as the
//! store's change signal says the feed grew ([`supervise_store::Follow`]; every [`POLL`]
//! while the signal is lost). Ends cleanly (exit 0) on Ctrl-C or SIGTERM, and when stdout is
//! closed (checked every [`POLL`], so a closed pipe is noticed even while idle).

use std::io::Write;
use std::time::Duration;

use anyhow::Result;
use supervise_store::{Event, EventKind, Store, change};

use super::{Ctx, print_json_line, queue};
use crate::cli::ListArgs;
use crate::render::{self, Color, Style};

/// How often stdout is checked, and the feed read while the store's change signal is lost.
pub const POLL: Duration = Duration::from_millis(250);

pub async fn run(ctx: &Ctx, store: &Store, args: &ListArgs, out: &mut dyn Write) -> Result<()> {
    let mut stop = Stop::new()?;
    // The follower starts before the snapshot is read, so no change falls between the two
    // (one may show in both, which is harmless).
    let mut follow = store.follow_from_end().await?.every(POLL);
    let proposals = queue::snapshot(store, args).await?;
    if args.json {
        print_json_line(out, &queue::document(&proposals))?;
    } else {
        queue::print_table(ctx, store, &proposals, args, out).await?;
        eprintln!("watching {} for changes (Ctrl-C to stop)", ctx.shown_db());
    }
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // Every branch is cancel-safe: a tick between two reads loses no event.
        let events = tokio::select! {
            _ = stop.wait() => return Ok(()),
            _ = tick.tick() => {
                if stdout_closed() {
                    return Ok(());
                }
                continue;
            }
            page = follow.next_page() => page?,
        };
        if stdout_closed() {
            return Ok(());
        }
        for e in &events {
            if args
                .bottle
                .as_deref()
                .is_some_and(|b| e.bottle.as_deref() != Some(b))
            {
                continue;
            }
            if args.json {
                print_json_line(out, &e.document())?;
            } else {
                let e = with_change(store, e).await;
                writeln!(out, "{}", event_line(ctx.style, &e))?;
            }
        }
        out.flush()?;
    }
}

/// A rejection's event carries no change (nothing was granted); the line names what was
/// refused, so it is read from the proposal.
async fn with_change(store: &Store, e: &Event) -> Event {
    let mut e = e.clone();
    if e.change.is_none()
        && e.kind.is_some()
        && let Some(id) = e.proposal_id.as_deref()
        && let Ok((p, _)) = store.show(id).await
    {
        e.change = Some(p.change);
    }
    e
}

/// `12:00:01 + proposed   demo  019a…  egress a.com:22  [unusual-port]  bottle:demo  "why"`
///
/// `+` a proposal entered the queue, `-` one left it (decided, expired, withdrawn),
/// `~` anything else (repeats, deliveries, grants, bottles).
pub fn event_line(s: Style, e: &Event) -> String {
    let (marker, color) = match e.event {
        EventKind::Proposed => ("+", Color::Yellow),
        EventKind::Approved | EventKind::Modified => ("-", Color::Green),
        EventKind::Rejected => ("-", Color::Red),
        EventKind::Expired | EventKind::Withdrawn => ("-", Color::Dim),
        _ => ("~", Color::Dim),
    };
    let time = e.at.get(11..19).unwrap_or(&e.at);
    let mut parts = vec![
        format!(
            "{time} {}",
            s.paint(color, &format!("{marker} {:<13}", e.event))
        ),
        e.bottle
            .as_deref()
            .map(render::one_line)
            .unwrap_or_else(|| "-".into()),
    ];
    if let Some(id) = &e.proposal_id {
        parts.push(s.paint(Color::Cyan, id));
    }
    if let (Some(kind), Some(change_value)) = (&e.kind, &e.change) {
        parts.push(format!(
            "{kind} {}",
            render::change_text(*kind, change_value)
        ));
        if e.event == EventKind::Proposed {
            let flags = change::flags(*kind, change_value);
            if !flags.is_empty() {
                parts.push(s.paint(Color::Red, &format!("[{}]", queue::flag_names(&flags, ","))));
            }
        }
    }
    if let Some(grant) = &e.grant_id {
        parts.push(format!("grant {grant}"));
    }
    parts.push(render::one_line(&e.actor));
    if let Some(note) = &e.note {
        parts.push(format!("\"{}\"", render::cut(&render::one_line(note), 72)));
    }
    parts.join("  ")
}

/// Ctrl-C (SIGINT) or SIGTERM. Registered up front, so a signal that arrives while the
/// snapshot is printed is not lost.
struct Stop {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
}

impl Stop {
    fn new() -> Result<Stop> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Stop {
                int: signal(SignalKind::interrupt())?,
                term: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Stop {})
    }

    async fn wait(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Whether nobody reads stdout any more (the pipe's read end is closed, or the terminal
/// hung up). A zero-timeout poll(2): no write is needed to find out.
#[cfg(unix)]
fn stdout_closed() -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let stdout = std::io::stdout();
    let mut fds = [PollFd::new(&stdout, PollFlags::empty())];
    let zero = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    match poll(&mut fds, Some(&zero)) {
        Ok(_) => fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP),
        Err(_) => false,
    }
}

#[cfg(not(unix))]
fn stdout_closed() -> bool {
    false
}
