//! Characters a person does not see but a model reads, and the normalisation that takes them out
//! before the rules run.
//!
//! - Unicode tag characters (U+E0000–E007F) mirror ASCII invisibly: a whole instruction can ride
//!   in them. Always critical; the decoded text is shown in the finding.
//! - Bidirectional controls (U+202A–202E, U+2066–2069) reorder what a reader sees ("Trojan
//!   Source"). High.
//! - Zero-width characters, word joiners, soft hyphens, the combining grapheme joiner: between
//!   two ASCII letters or digits they split a word so a keyword ("ig\u{00AD}nore") escapes a
//!   naive pattern — high. Elsewhere ZWJ/ZWNJ/soft hyphens are ordinary typography (emoji
//!   sequences, Persian, hyphenation hints) and are not reported; a zero-width space or word
//!   joiner elsewhere is medium in a skill file and high in text shown verbatim in every prompt.
//!
//! All of them are removed for the rule pass; then NFKC (full-width letters, ligatures) and a
//! small fold of Cyrillic/Greek letters that look Latin. Newlines are never removed or added, so
//! line numbers in the normalised text are those of the original.

use std::borrow::Cow;

use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};

use super::{Category, Finding, Origin, Severity};

/// The Unicode tag block.
pub const TAG_CHARS: std::ops::RangeInclusive<char> = '\u{E0000}'..='\u{E007F}';

pub(super) struct Normalized<'a> {
    pub text: Cow<'a, str>,
    pub findings: Vec<Finding>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Visible,
    Tag,
    Bidi,
    /// Zero-width space, word joiner, invisible operators, BOM: no typographic use in ASCII text.
    ZeroWidth,
    /// Joiners, soft hyphen, marks: typography in some scripts.
    Typographic,
}

fn kind(c: char) -> Kind {
    match c {
        '\u{E0000}'..='\u{E007F}' => Kind::Tag,
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => Kind::Bidi,
        '\u{200B}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' | '\u{180E}' => Kind::ZeroWidth,
        '\u{200C}'
        | '\u{200D}'
        | '\u{00AD}'
        | '\u{034F}'
        | '\u{200E}'
        | '\u{200F}'
        | '\u{061C}'
        | '\u{FE00}'..='\u{FE0F}' => Kind::Typographic,
        _ => Kind::Visible,
    }
}

fn is_word_char(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_ascii_alphanumeric())
}

/// Removes and reports hidden characters, then folds look-alikes.
pub(super) fn normalize(text: &str, origin: Origin) -> Normalized<'_> {
    // Nearly all text is plain ASCII: nothing is hidden and NFKC is the identity.
    if text.is_ascii() {
        return Normalized {
            text: Cow::Borrowed(text),
            findings: Vec::new(),
        };
    }
    let mut findings: Vec<Finding> = Vec::new();
    let mut report = |id: String, severity, line, description: &str, matched: String| {
        if !findings.iter().any(|f| f.id == id) {
            findings.push(Finding {
                id,
                category: Category::Hidden,
                severity,
                line,
                description: description.to_string(),
                matched,
            });
        }
    };
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    // Line numbers are counted lazily, only up to where something is reported.
    let mut counted_to = 0usize;
    let mut line = 1usize;
    let mut line_at = |i: usize| {
        line += bytes[counted_to..i].iter().filter(|b| **b == b'\n').count();
        counted_to = i;
        line
    };
    let mut prev_visible: Option<char> = None;
    // Tag characters decoded to the ASCII they mirror, per run.
    let mut tag_text = String::new();
    let mut tag_line = 0usize;
    let mut needs_nfkc = false;
    let mut pos = 0usize;
    while pos < bytes.len() {
        // Runs of ASCII are copied as they are (nothing to hide, nothing to normalise).
        let run_end = bytes[pos..]
            .iter()
            .position(|b| !b.is_ascii())
            .map_or(bytes.len(), |o| pos + o);
        if run_end > pos {
            if !tag_text.is_empty() {
                report_tags(&mut report, &mut tag_text, tag_line);
            }
            out.push_str(&text[pos..run_end]);
            prev_visible = Some(char::from(bytes[run_end - 1]));
            pos = run_end;
            continue;
        }
        let i = pos;
        let Some(c) = text[i..].chars().next() else {
            break;
        };
        pos += c.len_utf8();
        let k = kind(c);
        if k != Kind::Tag && !tag_text.is_empty() {
            report_tags(&mut report, &mut tag_text, tag_line);
        }
        match k {
            Kind::Visible => {
                let folded = fold_homoglyph(c);
                out.push(folded);
                prev_visible = Some(folded);
                needs_nfkc = needs_nfkc || is_nfkc_quick(std::iter::once(c)) != IsNormalized::Yes;
            }
            Kind::Tag => {
                if tag_text.is_empty() {
                    tag_line = line_at(i);
                }
                let ascii = (c as u32).wrapping_sub(0xE0000);
                if (0x20..0x7F).contains(&ascii) {
                    tag_text.push(char::from(ascii as u8));
                }
            }
            Kind::Bidi => report(
                invisible_id(c),
                Severity::High,
                line_at(i),
                "bidirectional control character (reorders what a reader sees)",
                code(c),
            ),
            Kind::ZeroWidth | Kind::Typographic => {
                // A BOM that opens the text is an encoding mark.
                if c == '\u{FEFF}' && i == 0 {
                    continue;
                }
                let next_visible = text[pos..].chars().find(|&n| kind(n) == Kind::Visible);
                if is_word_char(prev_visible) && is_word_char(next_visible) {
                    report(
                        "hidden_in_word".into(),
                        Severity::High,
                        line_at(i),
                        "an invisible character or soft hyphen splits a word (hides a keyword from filters)",
                        code(c),
                    );
                } else if k == Kind::ZeroWidth {
                    let severity = if origin.is_prompt_text() {
                        Severity::High
                    } else {
                        Severity::Medium
                    };
                    report(
                        invisible_id(c),
                        severity,
                        line_at(i),
                        "invisible unicode character (hides text from the reader)",
                        code(c),
                    );
                }
            }
        }
    }
    if !tag_text.is_empty() {
        report_tags(&mut report, &mut tag_text, tag_line);
    }
    // Only text with composed forms, compatibility characters or combining marks needs NFKC.
    let folded = if needs_nfkc {
        out.nfkc().map(fold_homoglyph).collect()
    } else {
        out
    };
    Normalized {
        text: Cow::Owned(folded),
        findings,
    }
}

fn report_tags(
    report: &mut impl FnMut(String, Severity, usize, &str, String),
    tag_text: &mut String,
    line: usize,
) {
    let shown = crate::util::truncate_chars(tag_text, 80).to_string();
    report(
        "unicode_tag_characters".into(),
        Severity::Critical,
        line,
        "invisible Unicode tag characters carry hidden text",
        format!("hidden text: {shown:?}"),
    );
    tag_text.clear();
}

/// `invisible_unicode_U+200B` for U+200B (Python Hermes' id).
fn invisible_id(c: char) -> String {
    format!("invisible_unicode_U+{:04X}", c as u32)
}

fn code(c: char) -> String {
    format!("U+{:04X}", c as u32)
}

/// Cyrillic and Greek letters that render like Latin ones, mapped to the Latin letter (for
/// matching only: "іgnore" with a Cyrillic і must read "ignore").
fn fold_homoglyph(c: char) -> char {
    match c {
        'а' | 'α' => 'a',
        'с' | 'ϲ' => 'c',
        'ԁ' => 'd',
        'е' | 'ε' => 'e',
        'һ' => 'h',
        'і' | 'ι' | 'ı' => 'i',
        'ј' => 'j',
        'о' | 'ο' | 'σ' => 'o',
        'р' | 'ρ' => 'p',
        'ԛ' => 'q',
        'ѕ' => 's',
        'υ' => 'u',
        'ν' => 'v',
        'ԝ' | 'ω' => 'w',
        'х' | 'χ' => 'x',
        'у' | 'γ' => 'y',
        'А' | 'Α' => 'A',
        'В' | 'Β' => 'B',
        'С' => 'C',
        'Е' | 'Ε' => 'E',
        'Н' | 'Η' => 'H',
        'І' | 'Ι' => 'I',
        'Ј' => 'J',
        'К' | 'Κ' => 'K',
        'М' | 'Μ' => 'M',
        'О' | 'Ο' => 'O',
        'Р' | 'Ρ' => 'P',
        'Ѕ' => 'S',
        'Т' | 'Τ' => 'T',
        'Х' | 'Χ' => 'X',
        'У' | 'Υ' => 'Y',
        'Ζ' => 'Z',
        _ => c,
    }
}
