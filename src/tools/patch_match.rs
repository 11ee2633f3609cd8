//! Finding `old_string` in a file for the `patch` tool, from strict to tolerant:
//! 1. exact text;
//! 2. whole lines equal after trimming and collapsing inner whitespace (the replacement is
//!    re-indented to the file's own indentation and line endings);
//! 3. the same words separated by any whitespace, anywhere (inside a line or across lines).
//!
//! The first strategy that finds anything wins, so a tolerant match never hides an exact one.
//! When nothing matches, [`nearest`] finds the most similar window of lines to show the model.

use crate::tools::file_common::{bigrams, dice};
use crate::tools::patch_indent::IndentMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    Exact,
    /// Whole lines, whitespace-normalized.
    Lines,
    /// Words separated by any whitespace.
    Words,
    /// `old_string` written with `\n`/`\t` escapes where the file has real newlines/tabs.
    Escaped,
}

impl Strategy {
    pub fn describe(self) -> &'static str {
        match self {
            Strategy::Exact => "exact match",
            Strategy::Lines => {
                "matched ignoring whitespace differences; indentation adapted to the file"
            }
            Strategy::Words => "matched ignoring whitespace differences",
            Strategy::Escaped => {
                "matched after reading \\n and \\t in old_string as newlines and tabs"
            }
        }
    }
}

/// One place to replace: the byte range in the original content and the text to put there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    pub replacement: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub strategy: Strategy,
    /// Sorted by start. Line-level matches may overlap; see [`non_overlapping`].
    pub spans: Vec<Span>,
}

/// Finds `old` in `content` with the first strategy that matches anything.
pub fn find(content: &str, old: &str, new: &str) -> Option<Found> {
    let exact: Vec<Span> = content
        .match_indices(old)
        .map(|(i, m)| Span {
            start: i,
            end: i + m.len(),
            replacement: new.to_string(),
        })
        .collect();
    if !exact.is_empty() {
        return Some(Found {
            strategy: Strategy::Exact,
            spans: exact,
        });
    }
    let lines = find_lines(content, old, new);
    if !lines.is_empty() {
        return Some(Found {
            strategy: Strategy::Lines,
            spans: lines,
        });
    }
    let words = find_words(content, old, new);
    if !words.is_empty() {
        return Some(Found {
            strategy: Strategy::Words,
            spans: words,
        });
    }
    None
}

/// The last resort, after [`find`]: `old` holds `\n`, `\t` or `\r` escapes (the model
/// serialized newlines twice) and matches once they are read as the characters. `new` is read
/// the same way when it has no real newline either (it was serialized like `old`); otherwise it
/// is taken as written. Exact and whole-line matching only: escapes plus loose words would be
/// too loose.
pub fn find_escaped(content: &str, old: &str, new: &str) -> Option<Found> {
    let unescaped_old = unescape(old);
    if unescaped_old == old {
        return None;
    }
    let new = if new.contains('\n') {
        new.to_string()
    } else {
        unescape(new)
    };
    let new = match_line_endings(content, &new);
    let spans: Vec<Span> = content
        .match_indices(&unescaped_old)
        .map(|(i, m)| Span {
            start: i,
            end: i + m.len(),
            replacement: new.clone(),
        })
        .collect();
    let spans = if spans.is_empty() {
        find_lines(content, &unescaped_old, &new)
    } else {
        spans
    };
    (!spans.is_empty()).then_some(Found {
        strategy: Strategy::Escaped,
        spans,
    })
}

fn unescape(text: &str) -> String {
    text.replace("\\r\\n", "\n")
        .replace("\\n", "\n")
        .replace("\\t", "\t")
        .replace("\\r", "\r")
}

/// Uses CRLF in the new text when the file is CRLF and the model wrote bare `\n`.
pub fn match_line_endings(content: &str, new: &str) -> String {
    let crlf = content.matches("\r\n").count();
    let lf = content.matches('\n').count();
    if crlf > 0 && crlf * 2 > lf && !new.contains('\r') {
        new.replace('\n', "\r\n")
    } else {
        new.to_string()
    }
}

/// Keeps the first of any overlapping spans (for replace_all).
pub fn non_overlapping(spans: Vec<Span>) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    for span in spans {
        if out.last().is_none_or(|prev| span.start >= prev.end) {
            out.push(span);
        }
    }
    out
}

/// 1-based line number of a byte offset.
pub fn line_of(content: &str, offset: usize) -> usize {
    content.as_bytes()[..offset.min(content.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn normalize(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A line of the file: byte range without its line ending, and whether that ending is CRLF.
struct FileLine {
    start: usize,
    end: usize,
    crlf: bool,
}

fn file_lines(content: &str) -> Vec<FileLine> {
    let mut out = Vec::new();
    let mut pos = 0;
    for piece in content.split_inclusive('\n') {
        let mut end = pos + piece.len();
        let mut crlf = false;
        if piece.ends_with('\n') {
            end -= 1;
            if piece.ends_with("\r\n") {
                end -= 1;
                crlf = true;
            }
        }
        out.push(FileLine {
            start: pos,
            end,
            crlf,
        });
        pos += piece.len();
    }
    out
}

/// Lines of `text` without blank lines at either end; returns (lines, blank lines cut at the
/// start, blank lines cut at the end).
fn trimmed_lines(text: &str) -> (Vec<&str>, usize, usize) {
    let all: Vec<&str> = text.lines().collect();
    let lead = all.iter().take_while(|l| l.trim().is_empty()).count();
    if lead == all.len() {
        return (Vec::new(), lead, 0);
    }
    let trail = all.iter().rev().take_while(|l| l.trim().is_empty()).count();
    (all[lead..all.len() - trail].to_vec(), lead, trail)
}

fn find_lines(content: &str, old: &str, new: &str) -> Vec<Span> {
    let (old_lines, old_lead, old_trail) = trimmed_lines(old);
    if old_lines.is_empty() {
        return Vec::new();
    }
    let wanted: Vec<String> = old_lines.iter().map(|l| normalize(l)).collect();
    let lines = file_lines(content);
    let normalized: Vec<String> = lines
        .iter()
        .map(|l| normalize(&content[l.start..l.end]))
        .collect();
    let k = wanted.len();
    if lines.len() < k {
        return Vec::new();
    }
    // The new text loses the same blank edges the old text lost (they were not matched).
    let new_all: Vec<&str> = new.lines().collect();
    let lead = new_all
        .iter()
        .take(old_lead)
        .take_while(|l| l.trim().is_empty())
        .count();
    let rest = &new_all[lead..];
    let trail = rest
        .iter()
        .rev()
        .take(old_trail)
        .take_while(|l| l.trim().is_empty())
        .count();
    let new_lines = &rest[..rest.len() - trail];

    let mut spans = Vec::new();
    for i in 0..=lines.len() - k {
        if (0..k).all(|j| normalized[i + j] == wanted[j]) {
            let first = &lines[i];
            let last = &lines[i + k - 1];
            // How each indentation the model used maps to the file's, learned from the pairs of
            // lines that matched (e.g. 4 spaces -> 2 tabs).
            let matched: Vec<(&str, &str)> = old_lines
                .iter()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(j, l)| (*l, &content[lines[i + j].start..lines[i + j].end]))
                .collect();
            let indents = IndentMap::learn(&matched, new_lines, content);
            let eol = if first.crlf { "\r\n" } else { "\n" };
            let replacement = new_lines
                .iter()
                .enumerate()
                .map(|(j, l)| indents.apply(j, l))
                .collect::<Vec<_>>()
                .join(eol);
            // Deleting whole lines removes their line endings too, not just their text.
            let end = if new_lines.is_empty() {
                lines.get(i + k).map_or(content.len(), |next| next.start)
            } else {
                last.end
            };
            spans.push(Span {
                start: first.start,
                end,
                replacement,
            });
        }
    }
    spans
}

fn find_words(content: &str, old: &str, new: &str) -> Vec<Span> {
    let words: Vec<&str> = old.split_whitespace().collect();
    if words.len() < 2 {
        // One word: the line strategy already covered it; matching it anywhere would be too loose.
        return Vec::new();
    }
    let pattern = words
        .iter()
        .map(|w| regex::escape(w))
        .collect::<Vec<_>>()
        .join(r"\s+");
    let Ok(re) = regex::RegexBuilder::new(&pattern)
        .size_limit(16 * 1024 * 1024)
        .build()
    else {
        return Vec::new();
    };
    // The match starts at the first word and ends at the last, so drop the whitespace the old
    // text had around them from the new text as well.
    let old_lead = &old[..old.len() - old.trim_start().len()];
    let old_trail = &old[old.trim_end().len()..];
    let core = new.strip_prefix(old_lead).unwrap_or(new);
    let core = core.strip_suffix(old_trail).unwrap_or(core);
    re.find_iter(content)
        .map(|m| Span {
            start: m.start(),
            end: m.end(),
            replacement: core.to_string(),
        })
        .collect()
}

/// The window of file lines most similar to `old`: (first line, last line, similarity 0..1).
/// Lines are 1-based; `None` for an empty file, an empty `old`, or a file too large to scan.
pub fn nearest(content: &str, old: &str) -> Option<(usize, usize, f64)> {
    // Bounds the work on huge files: line comparisons, lines scanned, chars per line compared.
    const BUDGET: usize = 200_000;
    const MAX_LINES: usize = 100_000;
    const LINE_CHARS: usize = 200;
    if content.lines().nth(MAX_LINES).is_some() {
        return None;
    }
    let lines: Vec<Vec<u64>> = content
        .lines()
        .map(|l| bigrams(&normalize(l), LINE_CHARS))
        .collect();
    if lines.is_empty() {
        return None;
    }
    let (old_lines, _, _) = trimmed_lines(old);
    let wanted: Vec<Vec<u64>> = old_lines
        .iter()
        .map(|l| bigrams(&normalize(l), LINE_CHARS))
        .collect();
    if wanted.is_empty() {
        return None;
    }
    let k = wanted.len().min(lines.len());
    let scored = k.min((BUDGET / lines.len()).max(1));
    let mut best = (0usize, -1.0f64);
    for i in 0..=lines.len() - k {
        let score: f64 = (0..scored)
            .map(|j| dice(&lines[i + j], &wanted[j]))
            .sum::<f64>()
            / scored as f64;
        if score > best.1 {
            best = (i, score);
        }
    }
    Some((best.0 + 1, best.0 + k, best.1.max(0.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(content: &str, found: &Found) -> String {
        let mut out = String::new();
        let mut pos = 0;
        for s in &found.spans {
            out.push_str(&content[pos..s.start]);
            out.push_str(&s.replacement);
            pos = s.end;
        }
        out.push_str(&content[pos..]);
        out
    }

    #[test]
    fn exact_wins_over_tolerant() {
        let content = "a  b\na b\n";
        let f = find(content, "a b", "X").unwrap();
        assert_eq!(f.strategy, Strategy::Exact);
        assert_eq!(f.spans.len(), 1);
        assert_eq!(apply(content, &f), "a  b\nX\n");
    }

    #[test]
    fn lines_strategy_keeps_file_indentation_and_crlf() {
        let content = "fn f() {\r\n        let x = 1;\r\n        let  y = 2;\r\n}\r\n";
        let old = "let x = 1;\nlet y = 2;\n";
        let new = "let x = 10;\nif x > 1 {\n    go();\n}\n";
        let f = find(content, old, new).unwrap();
        assert_eq!(f.strategy, Strategy::Lines);
        assert_eq!(
            apply(content, &f),
            "fn f() {\r\n        let x = 10;\r\n        if x > 1 {\r\n            go();\r\n        }\r\n}\r\n"
        );
    }

    #[test]
    fn lines_strategy_drops_matching_blank_edges() {
        let content = "a\n    b\nc\n";
        let f = find(content, "\n  b\n\n", "\n  B\n\n").unwrap();
        assert_eq!(f.strategy, Strategy::Lines);
        assert_eq!(apply(content, &f), "a\n    B\nc\n");
    }

    #[test]
    fn lines_strategy_deletes_whole_lines() {
        let content = "keep\n    drop  me\nkeep too\n";
        let f = find(content, "drop me\n", "").unwrap();
        assert_eq!(f.strategy, Strategy::Lines);
        assert_eq!(apply(content, &f), "keep\nkeep too\n");
    }

    #[test]
    fn words_strategy_matches_inside_lines() {
        let content = "let v = call(a,   b) + 1;\n";
        let f = find(content, "call(a, b)", "call(a, c)").unwrap();
        assert_eq!(f.strategy, Strategy::Words);
        assert_eq!(apply(content, &f), "let v = call(a, c) + 1;\n");
    }

    #[test]
    fn nothing_found_then_nearest_window() {
        let content = "alpha\nbeta\nfn compute(x: i32) -> i32 {\n    x * 2\n}\nomega\n";
        assert!(find(content, "fn compute(y: i64) -> i64 {\n    y * 3", "z").is_none());
        let (a, b, score) = nearest(content, "fn compute(y: i64) -> i64 {\n    y * 3").unwrap();
        assert_eq!((a, b), (3, 4));
        assert!(score > 0.5 && score < 1.0, "{score}");
        assert!(nearest("", "x").is_none());
    }

    #[test]
    fn overlapping_spans_are_thinned() {
        let content = "a\na\na\n";
        let f = find(content, "a\na", "b").unwrap();
        assert_eq!(f.strategy, Strategy::Exact);
        let f = find("x\n x\n  x\n", "x\nx", "y").unwrap();
        assert_eq!(f.strategy, Strategy::Lines);
        assert_eq!(f.spans.len(), 2);
        assert_eq!(non_overlapping(f.spans).len(), 1);
        assert_eq!(line_of("a\nb\nc", 4), 3);
    }

    /// Hostile sizes: a big file with no match stays fast, a huge one is not scanned for hints.
    #[test]
    fn big_files_are_bounded() {
        let content: String = (0..50_000)
            .map(|i| format!("    let value_{i} = compute(\"text\", {i});\n"))
            .collect();
        let old: String = (0..10)
            .map(|i| format!("let other_{i} = different(thing, {i});\n"))
            .collect();
        let started = std::time::Instant::now();
        assert!(find(&content, &old, "x").is_none());
        assert!(nearest(&content, &old).is_some());
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        let huge = "x\n".repeat(100_001);
        assert!(nearest(&huge, "y").is_none());
    }

    #[test]
    fn whitespace_only_old_matches_nothing_tolerantly() {
        assert!(find("a\nb\n", "   \n  ", "x").is_none());
    }
}
