//! Text an agent wrote, made safe to show a human: the one escaping rule the CLI, the
//! server's logs and the console share, so a justification, host, ref or remote can neither
//! hide part of itself nor reorder what is printed around it.
//!
//! # The rule
//!
//! A character is shown as `\u{hex}` (lower-case hex, as Rust writes it) when any of these
//! holds, and is kept as it is otherwise:
//!
//! 1. its Unicode general category is one of
//!    - `Cc` control: C0 (U+0000–U+001F, newline and tab included), DEL and C1
//!      (U+007F–U+009F) — terminal escapes, carriage returns, line breaks;
//!    - `Cf` format: the bidi embeddings, overrides, isolates and marks (U+061C,
//!      U+200E/F, U+202A–U+202E, U+2066–U+2069), zero-width characters (U+200B–U+200D,
//!      U+2060–U+2064, U+FEFF), the soft hyphen U+00AD, U+180E, the tag characters
//!      U+E0001 and U+E0020–U+E007F, interlinear annotations U+FFF9–U+FFFB, ...;
//!    - `Zl` / `Zp`: the line and paragraph separators U+2028 and U+2029;
//!    - `Co` private use: drawn as whatever a font wants;
//!    - `Cn` unassigned, noncharacters included: no meaning yet, so no safe rendering
//!      (a character assigned after the Unicode version of the table, 16.0, is escaped
//!      until the table catches up: the safe side);
//! 2. or it is a Default_Ignorable_Code_Point (Unicode's list of characters a renderer may
//!    draw as nothing) of another category: the combining grapheme joiner U+034F, the
//!    Hangul fillers U+115F, U+1160, U+3164 and U+FFA0, the Khmer inherent vowels U+17B4/5,
//!    the Mongolian variation selectors U+180B–U+180D and U+180F, and the variation
//!    selectors U+FE00–U+FE0F and U+E0100–U+E01EF;
//! 3. or it is the Braille blank U+2800, which is a visible symbol to Unicode but draws as
//!    a blank, and is the usual "invisible name" in spoofing.
//!
//! Everything else prints as it is: letters, marks, digits, punctuation, symbols and
//! spaces of every script (é, 日本, Ελληνικά, 🎉). The price of the rule is that an emoji
//! sequence held together by a zero-width joiner or made coloured by U+FE0F shows those as
//! `\u{200d}` / `\u{fe0f}`; a reader sees every code point, which is the point.
//!
//! The escaped text is for display only: a backslash is not doubled, so it cannot be read
//! back, and it should never be stored or compared.

use std::borrow::Cow;
use std::fmt::Write as _;

use unicode_general_category::{GeneralCategory, get_general_category};

/// Whether `c` is shown escaped by [`escape_untrusted`] (the rule in the module docs).
pub fn needs_escape(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    match get_general_category(c) {
        GeneralCategory::Control
        | GeneralCategory::Format
        | GeneralCategory::LineSeparator
        | GeneralCategory::ParagraphSeparator
        | GeneralCategory::PrivateUse
        | GeneralCategory::Unassigned
        | GeneralCategory::Surrogate => true,
        _ => matches!(c,
            '\u{034f}'
            | '\u{115f}'..='\u{1160}'
            | '\u{17b4}'..='\u{17b5}'
            | '\u{180b}'..='\u{180d}'
            | '\u{180f}'
            | '\u{2800}'
            | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{ffa0}'
            | '\u{e0100}'..='\u{e01ef}'),
    }
}

/// `text` with every character that could hide or reorder text shown as `\u{hex}`
/// (see the module docs for the exact rule). Borrows when nothing needs escaping.
pub fn escape_untrusted(text: &str) -> Cow<'_, str> {
    let Some(first) = text.find(needs_escape) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if needs_escape(c) {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(c: char) -> bool {
        escape_untrusted(&format!("a{c}b")) == format!("a\\u{{{:x}}}b", c as u32)
    }

    #[test]
    fn every_class_that_can_hide_or_reorder_is_escaped() {
        let classes: &[(&str, &[char])] = &[
            ("C0 controls", &['\0', '\u{7}', '\n', '\r', '\t', '\u{1b}']),
            (
                "DEL and C1",
                &['\u{7f}', '\u{80}', '\u{85}', '\u{9b}', '\u{9f}'],
            ),
            ("soft hyphen", &['\u{ad}']),
            ("combining grapheme joiner", &['\u{34f}']),
            ("arabic letter mark", &['\u{61c}']),
            (
                "hangul fillers",
                &['\u{115f}', '\u{1160}', '\u{3164}', '\u{ffa0}'],
            ),
            ("khmer inherent vowels", &['\u{17b4}', '\u{17b5}']),
            (
                "mongolian selectors and separator",
                &['\u{180b}', '\u{180d}', '\u{180e}', '\u{180f}'],
            ),
            (
                "zero-width and marks",
                &['\u{200b}', '\u{200c}', '\u{200d}', '\u{200e}', '\u{200f}'],
            ),
            ("line and paragraph separators", &['\u{2028}', '\u{2029}']),
            (
                "bidi embeddings and overrides",
                &['\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}'],
            ),
            (
                "word joiner and invisible operators",
                &['\u{2060}', '\u{2061}', '\u{2062}', '\u{2063}', '\u{2064}'],
            ),
            (
                "bidi isolates",
                &['\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}'],
            ),
            ("deprecated format characters", &['\u{206a}', '\u{206f}']),
            ("braille blank", &['\u{2800}']),
            ("variation selectors", &['\u{fe00}', '\u{fe0f}']),
            (
                "supplementary variation selectors",
                &['\u{e0100}', '\u{e01ef}'],
            ),
            ("byte order mark", &['\u{feff}']),
            (
                "interlinear annotation",
                &['\u{fff9}', '\u{fffa}', '\u{fffb}'],
            ),
            (
                "tag characters",
                &[
                    '\u{e0000}',
                    '\u{e0001}',
                    '\u{e0020}',
                    '\u{e0041}',
                    '\u{e007f}',
                ],
            ),
            (
                "private use",
                &['\u{e000}', '\u{f8ff}', '\u{f0000}', '\u{10fffd}'],
            ),
            (
                "unassigned and noncharacters",
                &['\u{378}', '\u{fdd0}', '\u{fffe}', '\u{ffff}', '\u{2fffe}'],
            ),
        ];
        for (class, chars) in classes {
            for &c in *chars {
                assert!(
                    needs_escape(c),
                    "{class}: U+{:04X} must be escaped",
                    c as u32
                );
                assert!(
                    escaped(c),
                    "{class}: U+{:04X} not shown as \\u{{..}}",
                    c as u32
                );
            }
        }
    }

    #[test]
    fn ordinary_text_of_every_script_is_kept() {
        for text in [
            "plain ascii: a-z 0-9 ~!@#$%^&*()_+{}|:\"<>?`[];',./\\",
            "café, naïve, Ærø, ß",
            "日本語のテキスト、カタカナ",
            "한국어 텍스트",
            "Ελληνικά, русский, עברית, العربية, हिन्दी",
            "emoji 🎉🚀😀 and symbols ✓ € © →",
            "spaces: nbsp\u{a0}thin\u{2009}ideographic\u{3000}end",
            "combining: e\u{301} a\u{308}",
        ] {
            assert!(
                matches!(escape_untrusted(text), Cow::Borrowed(_)),
                "{text:?} was escaped: {}",
                escape_untrusted(text)
            );
        }
    }

    #[test]
    fn the_escaped_form_shows_the_code_point_in_place() {
        assert_eq!(
            escape_untrusted("evil\u{202e}moc.elgoog"),
            "evil\\u{202e}moc.elgoog"
        );
        assert_eq!(escape_untrusted("x\u{1b}[2Jy"), "x\\u{1b}[2Jy");
        assert_eq!(
            escape_untrusted("日本\u{200b}語\u{e0041}"),
            "日本\\u{200b}語\\u{e0041}"
        );
        assert_eq!(escape_untrusted(""), "");
        assert_eq!(
            escape_untrusted("a\nb"),
            "a\\u{a}b",
            "a line break cannot forge a log line"
        );
    }
}
