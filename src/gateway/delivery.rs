//! Outbound text shaping: splitting an answer into platform-sized chunks at newline/space
//! boundaries, keeping Markdown code fences balanced across chunks (closed at the end of one
//! chunk, reopened with the same language in the next) and marking chunks ` (i/N)`.
//!
//! Lengths are measured with the platform's own function (Telegram counts UTF-16 code units), so a
//! chunk never exceeds the limit even with emoji or CJK text.

/// Room kept for the ` (i/N)` marker, as the reference does.
const MARKER_RESERVE: usize = 10;
const FENCE: &str = "```";

/// Telegram's measure: UTF-16 code units.
pub fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

/// Splits `text` into chunks of at most `max` units by `len`. A text that fits is returned as is.
pub fn split_message(text: &str, max: usize, len: &dyn Fn(&str) -> usize) -> Vec<String> {
    if len(text) <= max {
        return vec![text.to_string()];
    }
    let budget = max.saturating_sub(MARKER_RESERVE).max(1);
    let mut bodies: Vec<String> = Vec::new();
    let mut rest = text;
    // The language of the code fence left open by the previous chunk, if any.
    let mut open: Option<String> = None;
    while !rest.is_empty() {
        let prefix = open
            .as_ref()
            .map(|lang| format!("{FENCE}{lang}\n"))
            .unwrap_or_default();
        let close_reserve = len("\n") + len(FENCE);
        let room = budget
            .saturating_sub(len(&prefix))
            .saturating_sub(close_reserve)
            .max(1);
        let (body, next) = take_prefix(rest, room, len);
        let mut state = open.clone();
        for line in body.lines() {
            if let Some(lang) = line.trim_start().strip_prefix(FENCE) {
                state = match state {
                    Some(_) => None,
                    None => Some(lang.trim().to_string()),
                };
            }
        }
        let mut chunk = prefix;
        chunk.push_str(body);
        if state.is_some() && !next.is_empty() {
            chunk.push('\n');
            chunk.push_str(FENCE);
        }
        bodies.push(chunk);
        open = state;
        rest = next;
    }
    let n = bodies.len();
    bodies
        .into_iter()
        .enumerate()
        .map(|(i, b)| format!("{b} ({}/{n})", i + 1))
        .collect()
}

/// The longest piece of `text` within `room` units, cut at the last newline, else the last space,
/// else mid-word; returns `(piece, rest)` with the separator dropped.
fn take_prefix<'a>(text: &'a str, room: usize, len: &dyn Fn(&str) -> usize) -> (&'a str, &'a str) {
    let mut used = 0;
    let mut end = 0;
    let mut buf = [0u8; 4];
    for (i, c) in text.char_indices() {
        let w = len(c.encode_utf8(&mut buf));
        if used + w > room {
            break;
        }
        used += w;
        end = i + c.len_utf8();
    }
    if end == 0 {
        // Not even one character fits: send one anyway so delivery always progresses.
        end = text.chars().next().map(char::len_utf8).unwrap_or(0);
    }
    if end >= text.len() {
        return (text, "");
    }
    let head = &text[..end];
    for sep in ['\n', ' '] {
        if let Some(pos) = head.rfind(sep).filter(|&p| p > 0) {
            return (&text[..pos], &text[pos + 1..]);
        }
    }
    (head, &text[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count_fences(chunk: &str) -> usize {
        chunk
            .lines()
            .filter(|l| l.trim_start().starts_with(FENCE))
            .count()
    }

    #[test]
    fn short_text_is_untouched() {
        assert_eq!(
            split_message("hi", 4096, &utf16_len),
            vec!["hi".to_string()]
        );
    }

    #[test]
    fn long_text_splits_at_newlines_with_markers_and_loses_nothing() {
        let lines: Vec<String> = (0..400).map(|i| format!("line number {i}")).collect();
        let text = lines.join("\n");
        let chunks = split_message(&text, 1000, &utf16_len);
        let n = chunks.len();
        assert!(n > 1);
        let mut seen = Vec::new();
        for (i, c) in chunks.iter().enumerate() {
            assert!(utf16_len(c) <= 1000, "chunk {i} too long");
            let marker = format!(" ({}/{n})", i + 1);
            let body = c.strip_suffix(&marker).expect("marker");
            seen.extend(body.lines().map(String::from));
        }
        assert_eq!(
            seen, lines,
            "every line arrives once, in order, never split"
        );
    }

    #[test]
    fn code_fences_stay_balanced_and_reopen_with_language() {
        let code: Vec<String> = (0..300).map(|i| format!("let x{i} = {i};")).collect();
        let text = format!("intro\n```rust\n{}\n```\noutro", code.join("\n"));
        let chunks = split_message(&text, 500, &utf16_len);
        assert!(chunks.len() > 2);
        for (i, c) in chunks.iter().enumerate() {
            assert!(utf16_len(c) <= 500);
            assert_eq!(count_fences(c) % 2, 0, "chunk {i} unbalanced: {c}");
            if i > 0 && i + 1 < chunks.len() {
                assert!(c.starts_with("```rust\n"), "chunk {i} reopens: {c}");
            }
        }
        assert!(chunks.last().is_some_and(|c| c.contains("outro")));
    }

    #[test]
    fn utf16_units_are_the_measure_for_emoji() {
        // Each 😀 is 2 UTF-16 units but one char: a char-counting splitter would overflow.
        let text = "😀".repeat(5000);
        let chunks = split_message(&text, 4096, &utf16_len);
        assert!(chunks.len() >= 3);
        for c in &chunks {
            assert!(utf16_len(c) <= 4096);
        }
        let total: usize = chunks
            .iter()
            .map(|c| c.chars().filter(|&ch| ch == '😀').count())
            .sum();
        assert_eq!(total, 5000);
    }

    #[test]
    fn words_without_spaces_are_cut_and_tiny_limits_still_progress() {
        let text = "x".repeat(100);
        let chunks = split_message(&text, 30, &utf16_len);
        let joined: String = chunks
            .iter()
            .map(|c| c.rsplit_once(" (").map(|(b, _)| b).unwrap_or(c))
            .collect();
        assert_eq!(joined, text);
        let tiny = split_message("abcdef", 2, &utf16_len);
        assert!(!tiny.is_empty());
    }
}
