//! Inline Markdown → ANSI styles: `**bold**`, `*italic*` / `_italic_`, `~~strike~~`,
//! `` `code` ``, `[text](url)` and backslash escapes. Styles nest: closing one resets and
//! re-applies whatever is still open, so a bold word inside a heading leaves the heading bold.
//! A marker without its partner on the same line is printed as written.

pub const RESET: &str = "\x1b[0m";
pub const BOLD: &str = "\x1b[1m";
pub const DIM: &str = "\x1b[2m";
pub const ITALIC: &str = "\x1b[3m";
pub const UNDERLINE: &str = "\x1b[4m";
pub const STRIKE: &str = "\x1b[9m";
/// Inline code and code blocks: a colour of their own.
pub const CODE: &str = "\x1b[36m";

/// Renders one line's inline markup with `active` (the styles already in effect, e.g. a
/// heading's bold) restored after every span that ends.
pub fn render(text: &str, active: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 16);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() && chars[i + 1].is_ascii_punctuation() {
            out.push(chars[i + 1]);
            i += 2;
            continue;
        }
        if c == '`' {
            let run = run_len(&chars, i, '`');
            if let Some(end) = find_run(&chars, i + run, '`', run) {
                let code: String = chars[i + run..end].iter().collect();
                let code = if code.starts_with(' ') && code.ends_with(' ') && code.trim() != "" {
                    &code[1..code.len() - 1]
                } else {
                    code.as_str()
                };
                out.push_str(CODE);
                out.push_str(code);
                out.push_str(RESET);
                out.push_str(active);
                i = end + run;
                continue;
            }
            // An unclosed run is literal text, all of it.
            out.extend(&chars[i..i + run]);
            i += run;
            continue;
        }
        if c == '['
            && let Some((label_end, url_end)) = link_at(&chars, i)
        {
            let label: String = chars[i + 1..label_end].iter().collect();
            let url: String = chars[label_end + 2..url_end].iter().collect();
            let style = format!("{active}{UNDERLINE}");
            out.push_str(UNDERLINE);
            out.push_str(&render(&label, &style));
            out.push_str(RESET);
            out.push_str(active);
            if url != label && !url.is_empty() {
                out.push_str(&format!(" {DIM}({url}){RESET}{active}"));
            }
            i = url_end + 1;
            continue;
        }
        if let Some((marker, style)) = delimiter_at(&chars, i)
            && let Some(end) = closing(&chars, i, marker)
        {
            let inner: String = chars[i + marker.len()..end].iter().collect();
            let nested = format!("{active}{style}");
            out.push_str(style);
            out.push_str(&render(&inner, &nested));
            out.push_str(RESET);
            out.push_str(active);
            i = end + marker.len();
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

fn run_len(chars: &[char], at: usize, c: char) -> usize {
    chars[at..].iter().take_while(|&&x| x == c).count()
}

/// The start of the next run of exactly `len` `c`s from `from`.
fn find_run(chars: &[char], from: usize, c: char, len: usize) -> Option<usize> {
    let mut j = from;
    while j < chars.len() {
        if chars[j] == c {
            let n = run_len(chars, j, c);
            if n == len {
                return Some(j);
            }
            j += n;
        } else {
            j += 1;
        }
    }
    None
}

/// `[label](url)` starting at `at`: the index of `]` and of `)`.
fn link_at(chars: &[char], at: usize) -> Option<(usize, usize)> {
    let close = chars[at + 1..].iter().position(|&c| c == ']')? + at + 1;
    if chars.get(close + 1) != Some(&'(') {
        return None;
    }
    let end = chars[close + 2..].iter().position(|&c| c == ')')? + close + 2;
    let url = &chars[close + 2..end];
    (close > at + 1 && !url.iter().any(|c| c.is_whitespace())).then_some((close, end))
}

/// An opening emphasis marker at `at`: followed by a non-space; `_` only at a word start (so
/// `snake_case_name` stays as written).
fn delimiter_at(chars: &[char], at: usize) -> Option<(&'static str, &'static str)> {
    let starts = |m: &str| {
        m.chars()
            .enumerate()
            .all(|(k, c)| chars.get(at + k) == Some(&c))
    };
    let (marker, style) = if starts("**") {
        ("**", BOLD)
    } else if starts("__") {
        ("__", BOLD)
    } else if starts("~~") {
        ("~~", STRIKE)
    } else if starts("*") {
        ("*", ITALIC)
    } else if starts("_") {
        ("_", ITALIC)
    } else {
        return None;
    };
    let next = chars.get(at + marker.len())?;
    if next.is_whitespace() {
        return None;
    }
    if marker.starts_with('_') && at > 0 && chars[at - 1].is_alphanumeric() {
        return None;
    }
    Some((marker, style))
}

/// The matching closing marker: preceded by a non-space, and for `_` not followed by a word
/// character.
fn closing(chars: &[char], open: usize, marker: &str) -> Option<usize> {
    let m: Vec<char> = marker.chars().collect();
    let mut j = open + m.len() + 1;
    while j + m.len() <= chars.len() {
        if chars[j] == '`' {
            // Markers inside inline code do not count.
            let run = run_len(chars, j, '`');
            j = find_run(chars, j + run, '`', run).map_or(j + run, |e| e + run);
            continue;
        }
        if chars[j] == m[0] {
            // A run of marker characters closes only if it is exactly this marker (`**` inside
            // `*…*` is a nested bold, not the italic's end).
            let run = run_len(chars, j, m[0]);
            let after = chars.get(j + run);
            let word_after = m[0] == '_' && after.is_some_and(|c| c.is_alphanumeric());
            if run == m.len() && !chars[j - 1].is_whitespace() && !word_after {
                return Some(j);
            }
            j += run;
            continue;
        }
        j += 1;
    }
    None
}
