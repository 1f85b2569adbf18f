//! Human output: colour (only on a terminal, never with `NO_COLOR`), text that cannot
//! disguise itself (control and bidirectional characters made visible), one-line changes,
//! ages, cut and wrapped text, and aligned tables.

use std::io::IsTerminal;

use serde_json::Value;
use supervise_store::{Kind, clock, present, text};

/// When to colour human output (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    // Colour when stdout is a terminal and `NO_COLOR` is unset or empty.
    Auto,
    Always,
    Never,
}

/// Colours for human output; a no-op when disabled.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    enabled: bool,
}

impl Style {
    /// Decides once, from `--color`, `NO_COLOR` and whether stdout is a terminal.
    pub fn detect(choice: ColorChoice) -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let enabled = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => !no_color && std::io::stdout().is_terminal(),
        };
        Style { enabled }
    }

    /// No colour at all.
    #[cfg(test)]
    pub fn plain() -> Style {
        Style { enabled: false }
    }

    pub fn paint(self, color: Color, text: &str) -> String {
        if !self.enabled || text.is_empty() {
            return text.to_string();
        }
        let code = match color {
            Color::Red => "31",
            Color::Green => "32",
            Color::Yellow => "33",
            Color::Cyan => "36",
            Color::Bold => "1",
            Color::Dim => "2",
        };
        format!("\x1b[{code}m{text}\x1b[0m")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Color {
    Red,
    Green,
    Yellow,
    Cyan,
    Bold,
    Dim,
}

/// Text from an agent (justifications, hosts, refs) made safe to print on one line:
/// line breaks and tabs become spaces, and everything else that could hide or reorder
/// text is shown as `\u{..}` by the store's one rule, [`text::escape_untrusted`].
pub fn one_line(text: &str) -> String {
    if text.contains(['\n', '\r', '\t']) {
        text::escape_untrusted(&text.replace(['\n', '\r', '\t'], " ")).into_owned()
    } else {
        text::escape_untrusted(text).into_owned()
    }
}

pub use supervise_store::model::hosts_differ;

/// A bottle as the operator names it ([`supervise_store::model::bottle_name`]: `SLUG`, or
/// `HOST/SLUG` when the rows shown span several hosts), escaped for the terminal.
pub fn bottle_name(with_host: bool, host: &str, slug: &str) -> String {
    one_line(&supervise_store::model::bottle_name(with_host, host, slug))
}

/// Like [`one_line`] but keeps line breaks (for wrapped blocks).
pub fn multi_line(text: &str) -> String {
    text.replace("\r\n", "\n")
        .split('\n')
        .map(one_line)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Cuts `text` to at most `width` characters, ending with `…` when something was cut.
pub fn cut(text: &str, width: usize) -> String {
    let count = text.chars().count();
    if count <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out: String = text.chars().take(width - 1).collect();
    out.push('…');
    out
}

/// Wraps `text` at word boundaries to lines of at most `width` characters (a longer word
/// is split), keeping its own line breaks.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(10);
    let mut lines = Vec::new();
    for para in text.split('\n') {
        let mut line = String::new();
        let mut len = 0;
        for word in para.split(' ').filter(|w| !w.is_empty()) {
            let mut word: Vec<char> = word.chars().collect();
            while word.len() > width {
                if len > 0 {
                    lines.push(std::mem::take(&mut line));
                    len = 0;
                }
                lines.push(word.drain(..width).collect());
            }
            let wlen = word.len();
            if len > 0 && len + 1 + wlen > width {
                lines.push(std::mem::take(&mut line));
                len = 0;
            }
            if len > 0 {
                line.push(' ');
                len += 1;
            }
            line.extend(word);
            len += wlen;
        }
        lines.push(line);
    }
    lines
}

/// A change in one line ([`present::change_line`]: `host:port`, `remote ref old..new`), made
/// safe with [`one_line`].
pub fn change_text(kind: Kind, change: &Value) -> String {
    one_line(&present::change_line(kind, change))
}

/// How long ago a stored time was: `42s`, `5m 3s`, `2h 10m`, `3d 1h`.
pub fn age(at: &str) -> String {
    match clock::seconds_until(at) {
        Some(secs) => clock::humanize(-secs),
        None => "?".into(),
    }
}

/// Time left until a stored time (`expired` when past).
pub fn time_left(at: &str) -> String {
    match clock::seconds_until(at) {
        Some(secs) if secs > 0 => clock::humanize(secs),
        Some(_) => "expired".into(),
        None => "?".into(),
    }
}

/// The width human output should fit: the terminal's, else `$COLUMNS`, else 120.
pub fn output_width() -> usize {
    if let Some((terminal_size::Width(w), _)) = terminal_size::terminal_size_of(std::io::stdout()) {
        return usize::from(w).max(40);
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<usize>().ok())
        .filter(|&c| c >= 40)
        .unwrap_or(120)
}

/// One cell: plain text (already safe to print) and an optional colour.
#[derive(Debug, Clone)]
pub struct Cell {
    pub text: String,
    pub color: Option<Color>,
}

impl Cell {
    pub fn new(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            color: None,
        }
    }

    pub fn colored(text: impl Into<String>, color: Color) -> Cell {
        Cell {
            text: text.into(),
            color: Some(color),
        }
    }
}

/// An aligned table. Columns are as wide as their widest cell, two spaces apart; the
/// `flexible` column (normally the last, free text) is cut with `…` so a line fits the
/// output width, and never below a readable minimum. Other columns are never cut.
#[derive(Debug)]
pub struct Table {
    headers: Vec<&'static str>,
    rows: Vec<Vec<Cell>>,
    flexible: Option<usize>,
}

impl Table {
    pub fn new(headers: Vec<&'static str>) -> Table {
        Table {
            headers,
            rows: Vec::new(),
            flexible: None,
        }
    }

    /// Lets column `index` be cut to fit the width.
    pub fn flexible(mut self, index: usize) -> Table {
        self.flexible = Some(index);
        self
    }

    pub fn push(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(row.len(), self.headers.len());
        self.rows.push(row);
    }

    /// The table's lines, header first, without trailing spaces.
    pub fn render(mut self, style: Style, width: usize) -> Vec<String> {
        const GAP: usize = 2;
        const MIN_FLEX: usize = 20;
        let n = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(cell.text.chars().count());
            }
        }
        if let Some(flex) = self.flexible {
            let others: usize = widths
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != flex)
                .map(|(_, w)| w + GAP)
                .sum();
            let room = width.saturating_sub(others).max(MIN_FLEX);
            if widths[flex] > room {
                widths[flex] = room;
                for row in &mut self.rows {
                    row[flex].text = cut(&row[flex].text, room);
                }
            }
        }
        let mut lines = Vec::with_capacity(self.rows.len() + 1);
        let header: Vec<Cell> = self
            .headers
            .iter()
            .map(|h| Cell::colored(*h, Color::Bold))
            .collect();
        for row in std::iter::once(&header).chain(self.rows.iter()) {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                let pad = widths[i].saturating_sub(cell.text.chars().count());
                let text = match cell.color {
                    Some(c) => style.paint(c, &cell.text),
                    None => cell.text.clone(),
                };
                line.push_str(&text);
                if i + 1 < n {
                    line.push_str(&" ".repeat(pad + GAP));
                }
            }
            lines.push(line.trim_end().to_string());
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn agent_text_cannot_hide() {
        assert_eq!(one_line("a\nb\tc"), "a b c");
        assert_eq!(one_line("x\u{1b}[2Jy"), "x\\u{1b}[2Jy");
        assert_eq!(
            one_line("evil\u{202e}moc.elgoog"),
            "evil\\u{202e}moc.elgoog"
        );
        assert_eq!(multi_line("a\r\nb\u{7}"), "a\nb\\u{7}");
    }

    #[test]
    fn invisible_and_bidi_characters_are_shown_escaped() {
        for c in [
            '\u{61c}',
            '\u{2028}',
            '\u{2029}',
            '\u{e0041}',
            '\u{3164}',
            '\u{115f}',
            '\u{1160}',
            '\u{ffa0}',
            '\u{2800}',
            '\u{fe0f}',
            '\u{200b}',
            '\u{2064}',
            '\u{feff}',
            '\u{2067}',
            '\u{ad}',
            '\u{180e}',
            '\u{34f}',
            '\u{85}',
        ] {
            let want = format!("a\\u{{{:x}}}b", c as u32);
            assert_eq!(one_line(&format!("a{c}b")), want);
            assert_eq!(multi_line(&format!("a{c}b\nc")), format!("{want}\nc"));
        }
        assert_eq!(one_line("café 日本 🎉"), "café 日本 🎉");
        assert_eq!(
            change_text(
                Kind::GitPush,
                &json!({"remote": "or\u{200b}igin", "ref": "refs/heads/x"})
            ),
            "or\\u{200b}igin refs/heads/x"
        );
    }

    #[test]
    fn cut_marks_what_it_drops() {
        assert_eq!(cut("hello", 5), "hello");
        assert_eq!(cut("hello world", 6), "hello…");
        assert_eq!(cut("héllo wörld", 3), "hé…");
    }

    #[test]
    fn wrap_keeps_words_and_splits_long_ones() {
        assert_eq!(wrap("aaa bbb ccc", 10), vec!["aaa bbb", "ccc"]);
        assert_eq!(wrap("x\n\ny", 10), vec!["x", "", "y"]);
        let long = "y".repeat(25);
        assert_eq!(wrap(&long, 10).len(), 3);
    }

    #[test]
    fn changes_in_one_line_are_escaped() {
        assert_eq!(
            change_text(Kind::Egress, &json!({"host": "::1", "port": 80})),
            "[::1]:80"
        );
        assert_eq!(
            change_text(
                Kind::GitPush,
                &json!({"remote": "origin", "ref": "refs/heads/a\nb"})
            ),
            "origin refs/heads/a b"
        );
    }

    #[test]
    fn table_aligns_and_cuts_only_the_flexible_column() {
        let mut t = Table::new(vec!["A", "NOTE"]).flexible(1);
        t.push(vec![Cell::new("long-id"), Cell::new("x".repeat(100))]);
        t.push(vec![Cell::new("b"), Cell::new("short")]);
        let lines = t.render(Style::plain(), 40);
        assert_eq!(lines[0], "A        NOTE");
        assert!(lines[1].starts_with("long-id  xxx"));
        assert!(lines[1].ends_with('…'));
        assert_eq!(lines[1].chars().count(), 40);
        assert_eq!(lines[2], "b        short");
    }

    #[test]
    fn colour_only_when_enabled() {
        assert_eq!(Style::plain().paint(Color::Red, "x"), "x");
        assert_eq!(
            Style { enabled: true }.paint(Color::Red, "x"),
            "\x1b[31mx\x1b[0m"
        );
    }
}
