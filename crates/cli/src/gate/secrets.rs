//! Secret detection for the gate's content scan, from gitleaks' rule file (vendored in
//! `rules/gitleaks.toml` with its MIT licence, `rules/LICENSE-gitleaks`): each rule's
//! keywords select the rules worth running on a fragment, its regex finds the secret (the
//! rule's `secretGroup`, else the first non-empty group), its `entropy` is the least Shannon
//! entropy a secret needs, and the global and per-rule allowlists (regexes, stopwords, paths)
//! drop known false positives. A regex is compiled the first time a fragment needs it.
//! Rules the `regex` crate cannot compile are skipped (a unit test keeps them few).

use std::collections::HashMap;
use std::sync::{LazyLock, OnceLock};

use aho_corasick::AhoCorasick;
use regex::Regex;
use serde::Deserialize;

const RULES: &str = include_str!("rules/gitleaks.toml");

#[derive(Deserialize)]
struct File {
    allowlist: Option<Allow>,
    rules: Vec<RawRule>,
}

#[derive(Deserialize, Default)]
struct Allow {
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    stopwords: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
    #[serde(rename = "regexTarget")]
    regex_target: Option<String>,
    condition: Option<String>,
}

#[derive(Deserialize)]
struct RawRule {
    id: String,
    regex: Option<String>,
    #[serde(rename = "secretGroup")]
    secret_group: Option<usize>,
    entropy: Option<f64>,
    #[serde(default)]
    keywords: Vec<String>,
    path: Option<String>,
    #[serde(default)]
    allowlists: Vec<Allow>,
}

/// An allowlist with its regexes compiled.
struct Allowlist {
    regexes: Vec<Regex>,
    stopwords: Vec<String>,
    paths: Vec<Regex>,
    /// What the regexes are matched against: `secret` (default), `match` or `line`.
    target: String,
    all: bool,
}

impl Allowlist {
    fn new(raw: &Allow) -> Allowlist {
        let compile = |v: &[String]| v.iter().filter_map(|r| Regex::new(r).ok()).collect();
        Allowlist {
            regexes: compile(&raw.regexes),
            stopwords: raw.stopwords.iter().map(|s| s.to_lowercase()).collect(),
            paths: compile(&raw.paths),
            target: raw.regex_target.clone().unwrap_or_else(|| "secret".into()),
            all: raw.condition.as_deref() == Some("AND"),
        }
    }

    fn allows(&self, path: &str, secret: &str, whole: &str, line: &str) -> bool {
        let target = match self.target.as_str() {
            "match" => whole,
            "line" => line,
            _ => secret,
        };
        let lower = secret.to_lowercase();
        let mut checks = Vec::with_capacity(3);
        if !self.regexes.is_empty() {
            checks.push(self.regexes.iter().any(|r| r.is_match(target)));
        }
        if !self.stopwords.is_empty() {
            checks.push(self.stopwords.iter().any(|w| lower.contains(w)));
        }
        if !self.paths.is_empty() {
            checks.push(self.paths.iter().any(|r| r.is_match(path)));
        }
        match self.all {
            true => !checks.is_empty() && checks.iter().all(|c| *c),
            false => checks.iter().any(|c| *c),
        }
    }
}

struct Rule {
    id: String,
    source: String,
    regex: OnceLock<Option<Regex>>,
    secret_group: Option<usize>,
    entropy: Option<f64>,
    keywords: Vec<String>,
    path: Option<Regex>,
    allowlists: Vec<Allowlist>,
}

impl Rule {
    fn regex(&self) -> Option<&Regex> {
        self.regex
            .get_or_init(|| {
                // gitleaks' broad rules (`generic-api-key`) compile past the default size
                // limit once `\w` and bounded repeats are expanded to Unicode classes.
                regex::RegexBuilder::new(&self.source)
                    .size_limit(64 << 20)
                    .dfa_size_limit(64 << 20)
                    .build()
                    .ok()
            })
            .as_ref()
    }
}

struct Rules {
    global: Allowlist,
    rules: Vec<Rule>,
    /// Every rule's keywords, case-insensitive, for one pass over a fragment.
    keywords: AhoCorasick,
    /// For each keyword pattern of `keywords`, the rule it belongs to.
    keyword_rule: Vec<usize>,
}

static LOADED: LazyLock<Rules> = LazyLock::new(|| {
    let file: File = toml::from_str(RULES).expect("the vendored gitleaks rules parse");
    let rules: Vec<Rule> = file
        .rules
        .into_iter()
        .filter_map(|r| {
            Some(Rule {
                id: r.id,
                source: r.regex?,
                regex: OnceLock::new(),
                secret_group: r.secret_group,
                entropy: r.entropy,
                keywords: r.keywords.iter().map(|k| k.to_lowercase()).collect(),
                path: r.path.and_then(|p| Regex::new(&p).ok()),
                allowlists: r.allowlists.iter().map(Allowlist::new).collect(),
            })
        })
        .collect();
    let mut patterns = Vec::new();
    let mut keyword_rule = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        for k in &rule.keywords {
            patterns.push(k.clone());
            keyword_rule.push(i);
        }
    }
    let keywords = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(&patterns)
        .expect("the keywords build an automaton");
    Rules {
        global: Allowlist::new(&file.allowlist.unwrap_or_default()),
        rules,
        keywords,
        keyword_rule,
    }
});

/// One secret found: the rule's id and the secret itself (for masking, never stored).
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub rule: String,
    pub secret: String,
}

/// The secrets in `fragment` (added lines of one file, joined by newlines) at `path`.
pub fn scan(path: &str, fragment: &str) -> Vec<Found> {
    let rules = &*LOADED;
    if rules.global.paths.iter().any(|r| r.is_match(path)) {
        return Vec::new();
    }
    let mut wanted: Vec<bool> = rules.rules.iter().map(|r| r.keywords.is_empty()).collect();
    for m in rules.keywords.find_overlapping_iter(fragment) {
        wanted[rules.keyword_rule[m.pattern().as_usize()]] = true;
    }
    let mut out: Vec<Found> = Vec::new();
    // The specific rules first: a secret both a specific rule and `generic-api-key` match
    // is named by the specific one (the first rule to find a secret names it).
    let mut order: Vec<&Rule> = (rules.rules.iter().zip(&wanted))
        .filter(|(_, w)| **w)
        .map(|(r, _)| r)
        .collect();
    order.sort_by_key(|r| r.id.starts_with("generic-"));
    for rule in order {
        if rule.path.as_ref().is_some_and(|p| !p.is_match(path)) {
            continue;
        }
        let Some(regex) = rule.regex() else { continue };
        for caps in regex.captures_iter(fragment) {
            let whole = caps.get(0).map_or("", |m| m.as_str());
            let secret = match rule.secret_group {
                Some(n) => caps.get(n).map(|m| m.as_str()),
                None => caps
                    .iter()
                    .skip(1)
                    .flatten()
                    .map(|m| m.as_str())
                    .find(|s| !s.is_empty()),
            }
            .unwrap_or(whole)
            .trim();
            if secret.is_empty() {
                continue;
            }
            if rule.entropy.is_some_and(|min| entropy(secret) <= min) {
                continue;
            }
            let start = caps.get(0).map_or(0, |m| m.start());
            let line = line_at(fragment, start);
            if rules.global.allows(path, secret, whole, line)
                || rule
                    .allowlists
                    .iter()
                    .any(|a| a.allows(path, secret, whole, line))
            {
                continue;
            }
            if !out.iter().any(|f| f.secret == secret) {
                out.push(Found {
                    rule: rule.id.clone(),
                    secret: secret.to_string(),
                });
            }
        }
    }
    out
}

/// The line of `text` that byte `at` is on.
fn line_at(text: &str, at: usize) -> &str {
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    &text[start..end]
}

/// Shannon entropy of `text`'s characters, in bits.
fn entropy(text: &str) -> f64 {
    let mut counts: HashMap<char, usize> = HashMap::new();
    for c in text.chars() {
        *counts.entry(c).or_default() += 1;
    }
    let n = text.chars().count() as f64;
    counts
        .values()
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vendored_rules_load_and_nearly_all_compile() {
        let rules = &*LOADED;
        assert!(rules.rules.len() > 200, "{}", rules.rules.len());
        let broken: Vec<&str> = rules
            .rules
            .iter()
            .filter(|r| r.regex().is_none())
            .map(|r| r.id.as_str())
            .collect();
        assert!(broken.len() <= 3, "rules that do not compile: {broken:?}");
        assert!(
            !broken.contains(&"generic-api-key"),
            "the broad rule must compile: {broken:?}"
        );
    }

    #[test]
    fn cloud_keys_private_keys_and_forge_tokens_are_found() {
        let aws = scan("deploy.sh", "export AWS_ACCESS_KEY_ID=AKIAZ7QK2M4XWB3NVD6R");
        assert_eq!(aws.len(), 1, "{aws:?}");
        assert_eq!(aws[0].rule, "aws-access-token");
        assert_eq!(aws[0].secret, "AKIAZ7QK2M4XWB3NVD6R");
        let gh = scan("ci.env", "token = ghp_R4nd0mT0k3nV4lu3Xy9Qw2Er5Ty7Ui1Op3As");
        assert!(gh.iter().any(|f| f.rule == "github-pat"), "{gh:?}");
        let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxKLxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo9z+40RQzuVaE8AkAFmxZzow3x+VJYKdjykkJ0iT9wCS0DRTXu269V264Vf/3jvredZiKRkgwlL9xNAwxXFg0x/XFw005UWVRIkdgcKWTjpBP2dPwVZ4WWC+9aGVd+Gyn1o0CLelf4rEjGoXbAAEgAqeGUxrcIlbjXfbcmwIDAQABAoIBAQCHu3cnb0m2A6bKb4yb6mv/bV1bQNrYbOp0mbMzLNfYtQg5Z6ifo9cmRPAnQwbt7dnOyFJ1t0FKBJvgI6KtYwsTz1Xn7t9o\n-----END RSA PRIVATE KEY-----";
        let pk = scan("id_rsa", key);
        assert!(pk.iter().any(|f| f.rule == "private-key"), "{pk:?}");
        assert!(scan("a.txt", "nothing to see here").is_empty());
        // gitleaks' own allowlist: AWS's documented example key is not a secret.
        assert!(scan("a.sh", "AKIAIOSFODNN7EXAMPLE").is_empty());
    }

    #[test]
    fn a_secret_only_the_broad_rule_knows_is_found() {
        let env =
            "AWS_REGION=eu-west-1\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8vTz3XhR";
        let found = scan("deploy.env", env);
        assert!(
            found
                .iter()
                .any(|f| f.secret == "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8vTz3XhR"),
            "{found:?}"
        );
    }
}
