//! Just enough Rust lexing for the tidy checks: a source split into its code (comments and
//! literals blanked, lines kept), its comments and its string literals, each with a line.

/// One source file, taken apart.
pub struct Lexed {
    /// The source with every comment and every string or character literal replaced by
    /// spaces (newlines kept), so paths and keywords are found only where they are code.
    pub code: String,
    /// Each line of each comment (`//`, `///`, `//!`, `/* */`): (line, text).
    pub comments: Vec<(usize, String)>,
    /// Each string literal's source text between its quotes: (first line, text, raw).
    pub strings: Vec<(usize, String, bool)>,
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Splits `src` into code, comments and string literals.
pub fn lex(src: &str) -> Lexed {
    let s: Vec<char> = src.chars().collect();
    let n = s.len();
    let mut code = String::with_capacity(src.len());
    let mut comments = Vec::new();
    let mut strings = Vec::new();
    let mut line = 1;
    let mut i = 0;
    // Appends s[from..to] to `code` blanked (newlines kept) and counts its lines.
    let blank = |code: &mut String, line: &mut usize, from: usize, to: usize| {
        for &c in &s[from..to] {
            if c == '\n' {
                *line += 1;
                code.push('\n');
            } else {
                code.push(' ');
            }
        }
    };
    while i < n {
        let c = s[i];
        let at = |k: usize| s.get(i + k).copied();
        let prev_ident = i > 0 && is_ident(s[i - 1]);
        if c == '/' && at(1) == Some('/') {
            let end = s[i..].iter().position(|&c| c == '\n').map_or(n, |p| i + p);
            comments.push((line, s[i + 2..end].iter().collect()));
            blank(&mut code, &mut line, i, end);
            i = end;
        } else if c == '/' && at(1) == Some('*') {
            let (mut depth, mut j) = (0, i);
            while j < n {
                if s[j] == '/' && s.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if s[j] == '*' && s.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            let text: String = s[i + 2..j.saturating_sub(2).max(i + 2)].iter().collect();
            for (k, l) in text.lines().enumerate() {
                comments.push((line + k, l.to_string()));
            }
            blank(&mut code, &mut line, i, j);
            i = j;
        } else if !prev_ident && raw_string_start(&s[i..]).is_some() {
            let (prefix, hashes) = raw_string_start(&s[i..]).unwrap_or_default();
            let open = i + prefix + hashes + 1;
            let mut j = open;
            while j < n && !(s[j] == '"' && (1..=hashes).all(|k| s.get(j + k) == Some(&'#'))) {
                j += 1;
            }
            strings.push((line, s[open..j.min(n)].iter().collect(), true));
            let end = (j + 1 + hashes).min(n);
            blank(&mut code, &mut line, i, end);
            i = end;
        } else if c == '"' {
            let mut j = i + 1;
            while j < n && s[j] != '"' {
                j += if s[j] == '\\' { 2 } else { 1 };
            }
            strings.push((line, s[i + 1..j.min(n)].iter().collect(), false));
            let end = (j + 1).min(n);
            blank(&mut code, &mut line, i, end);
            i = end;
        } else if c == '\'' {
            match char_literal_len(&s[i..]) {
                Some(len) => {
                    blank(&mut code, &mut line, i, i + len);
                    i += len;
                }
                None => {
                    // A lifetime or a label.
                    code.push(c);
                    i += 1;
                }
            }
        } else {
            if c == '\n' {
                line += 1;
            }
            code.push(c);
            i += 1;
        }
    }
    Lexed {
        code,
        comments,
        strings,
    }
}

/// `r"`, `r#"`, `br"`, `cr##"` …: the prefix's length and the number of `#`.
fn raw_string_start(s: &[char]) -> Option<(usize, usize)> {
    let prefix = match s {
        ['r', ..] => 1,
        ['b' | 'c', 'r', ..] => 2,
        _ => return None,
    };
    let hashes = s[prefix..].iter().take_while(|&&c| c == '#').count();
    (s.get(prefix + hashes) == Some(&'"')).then_some((prefix, hashes))
}

/// The length of the character literal at the start of `s`, or `None` for a lifetime.
fn char_literal_len(s: &[char]) -> Option<usize> {
    match s {
        ['\'', '\\', 'u', '{', ..] => s.iter().position(|&c| c == '}').map(|p| p + 2),
        ['\'', '\\', 'x', _, _, '\'', ..] => Some(6),
        ['\'', '\\', _, '\'', ..] => Some(4),
        ['\'', c, '\'', ..] if *c != '\\' => Some(3),
        _ => None,
    }
}

/// The tokens of blanked code: identifiers, `::`, and single punctuation characters, each
/// with its line. Numbers and whitespace are dropped.
pub fn tokens(code: &str) -> Vec<(usize, String)> {
    let s: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < s.len() {
        let c = s[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if is_ident(c) {
            let start = i;
            while i < s.len() && is_ident(s[i]) {
                i += 1;
            }
            if !c.is_ascii_digit() {
                out.push((line, s[start..i].iter().collect()));
            }
        } else if c == ':' && s.get(i + 1) == Some(&':') {
            out.push((line, "::".to_string()));
            i += 2;
        } else {
            out.push((line, c.to_string()));
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_literals_are_taken_out_of_the_code() {
        let l = lex(
            "//! top\nfn f<'a>() { let c = '\"'; let s = \"crate::x\"; } // crate::y\n\
             /* a /* nested */ b */ let r = r#\"q\"#;",
        );
        assert!(!l.code.contains("crate::"), "{}", l.code);
        assert!(l.code.contains("<'a>"), "{}", l.code);
        assert_eq!(l.code.lines().count(), 3);
        assert_eq!(l.comments[0], (1, "! top".to_string()));
        assert_eq!(l.comments[1], (2, " crate::y".to_string()));
        assert_eq!(l.strings[0], (2, "crate::x".to_string(), false));
        assert_eq!(l.strings[1], (3, "q".to_string(), true));
    }
}
