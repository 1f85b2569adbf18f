//! The one glob rule, for the CLI's bulk decisions (`--match`) and an operator's bottle
//! scope: `*` is any run of characters (dots and slashes included), `?` exactly one,
//! everything else itself. Nothing cleverer, so an operator can predict every match;
//! `--dry-run` shows them before anything is decided.

/// Whether `text` matches `pattern` as a whole.
pub fn matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Iterative matcher with backtracking to the last `*`: linear in practice, no recursion.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs() {
        let cases = [
            ("*", "anything.example.com", true),
            ("*.github.com", "api.github.com", true),
            ("*.github.com", "github.com", false),
            ("*.github.com", "api.github.com.evil.net", false),
            ("api.?.com", "api.x.com", true),
            ("api.?.com", "api.xy.com", false),
            ("refs/heads/feature/*", "refs/heads/feature/a/b", true),
            ("exact.com", "exact.com", true),
            ("exact.com", "exact.co", false),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("", "", true),
        ];
        for (p, t, want) in cases {
            assert_eq!(matches(p, t), want, "{p} vs {t}");
        }
    }
}
