//! `supervise show ID --diff [--stat]`: the content the gate recorded with a push proposal,
//! as a file list (status, counts, mode, path) and the unified patches, every line of agent
//! text escaped; coloured on a terminal, and through the pager (`$PAGER`, else `less -R`)
//! when stdout is a terminal and the text is longer than the screen.

use std::io::{IsTerminal, Write};
use std::process::{Command, Stdio};

use anyhow::Result;
use supervise_store::PushDiff;

use crate::render::{self, Color, Style};

/// The diff's lines: commits, findings, the file list and (without `stat`) each patch.
pub fn lines(style: Style, diff: &PushDiff, stat: bool) -> Vec<String> {
    let mut out = Vec::new();
    out.push(style.paint(Color::Bold, "commits"));
    for c in &diff.commits {
        out.push(format!(
            "  {} {}  {}",
            style.paint(Color::Yellow, &c.id[..c.id.len().min(12)]),
            render::one_line(&c.subject),
            style.paint(Color::Dim, &render::one_line(&c.author)),
        ));
    }
    if diff.commits_truncated {
        out.push("  ... more commits than listed".into());
    }
    if !diff.findings.is_empty() {
        out.push(style.paint(Color::Bold, "found"));
        for f in &diff.findings {
            let secret = f
                .masked
                .as_deref()
                .map(|m| format!(" {}", render::one_line(m)))
                .unwrap_or_default();
            out.push(format!(
                "  {} {}: {}{secret}",
                style.paint(Color::Red, &format!("! {}", f.flag)),
                render::one_line(&f.path),
                render::one_line(&f.rule),
            ));
        }
    }
    out.push(style.paint(Color::Bold, "files"));
    for f in &diff.files {
        out.push(format!("  {}", file_line(style, f)));
    }
    if diff.truncated {
        out.push(
            "  (patches cut: at most 64 KiB per file and 1 MiB per push are kept; \
             `git fetch GATE refs/supervise/ID` has the whole push while it is pending)"
                .into(),
        );
    }
    if stat {
        return out;
    }
    for f in &diff.files {
        out.push(String::new());
        out.push(style.paint(Color::Bold, &format!("── {}", render::one_line(f.path()))));
        if f.binary {
            out.push("  (binary)".into());
        }
        for l in f.patch.lines() {
            let text = render::one_line(l);
            let color = if l.starts_with("+++") || l.starts_with("---") || l.starts_with("diff ") {
                Color::Bold
            } else if l.starts_with('+') {
                Color::Green
            } else if l.starts_with('-') {
                Color::Red
            } else if l.starts_with("@@") {
                Color::Cyan
            } else {
                out.push(text);
                continue;
            };
            out.push(style.paint(color, &text));
        }
        if f.truncated {
            out.push(style.paint(Color::Yellow, "  (patch cut here)"));
        }
    }
    out
}

/// `status  +added -removed  [mode]  path` of one file.
fn file_line(style: Style, f: &supervise_store::DiffFile) -> String {
    let path = match (&f.old_path, &f.new_path) {
        (Some(old), Some(new)) if old != new => {
            format!("{} → {}", render::one_line(old), render::one_line(new))
        }
        _ => render::one_line(f.path()),
    };
    let counts = if f.binary {
        "binary".to_string()
    } else {
        format!(
            "{} {}",
            style.paint(Color::Green, &format!("+{}", f.added)),
            style.paint(Color::Red, &format!("-{}", f.removed))
        )
    };
    let mode = match (&f.old_mode, f.mode.as_str()) {
        (Some(old), new) => format!("  [{old} → {new}]"),
        (None, "file" | "none") => String::new(),
        (None, m) => format!("  [{m}]"),
    };
    format!("{:<11} {counts}  {path}{mode}", f.status)
}

/// Prints `lines`, through the pager when stdout is a terminal and they overflow it.
pub fn print(lines: &[String], out: &mut dyn Write) -> Result<()> {
    let height = terminal_size::terminal_size().map_or(usize::MAX, |(_, h)| h.0 as usize);
    if std::io::stdout().is_terminal() && lines.len() + 1 > height {
        let pager = std::env::var("PAGER")
            .ok()
            .filter(|p| !p.trim().is_empty())
            .unwrap_or_else(|| "less -R".into());
        let mut words = pager.split_whitespace();
        let program = words.next().unwrap_or("less");
        if let Ok(mut child) = Command::new(program)
            .args(words)
            .stdin(Stdio::piped())
            .spawn()
        {
            if let Some(mut stdin) = child.stdin.take() {
                for l in lines {
                    if writeln!(stdin, "{l}").is_err() {
                        break; // the pager quit early
                    }
                }
            }
            child.wait()?;
            return Ok(());
        }
    }
    for l in lines {
        writeln!(out, "{l}")?;
    }
    out.flush()?;
    Ok(())
}
