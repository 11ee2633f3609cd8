//! Session titles: cleaning a title the way Python Hermes does (`SessionDB.sanitize_title`:
//! control and invisible characters removed, whitespace collapsed, at most 100 characters), and
//! the automatic title made after the first exchange — a few words of the first user message,
//! with no model call. (`auxiliary.title_generation.model`, when configured, asks a model
//! instead: see `agent/title.rs`.)

/// Python Hermes' `SessionDB.MAX_TITLE_LENGTH`.
pub const MAX_TITLE_CHARS: usize = 100;

/// Words and characters of an automatic title made from the first message.
const AUTO_TITLE_WORDS: usize = 7;
const AUTO_TITLE_CHARS: usize = 60;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TitleError {
    #[error("the title is {0} characters long; the limit is {MAX_TITLE_CHARS}: shorten it")]
    TooLong(usize),
}

/// Zero-width, direction-override and object-replacement characters Python strips too.
fn invisible(c: char) -> bool {
    matches!(c,
        '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}'
        | '\u{feff}' | '\u{fffc}' | '\u{fff9}'..='\u{fffb}')
}

/// The cleaned title; `None` when nothing is left (which clears a title).
pub fn sanitize(raw: &str) -> Result<Option<String>, TitleError> {
    let kept: String = raw
        .chars()
        .filter(|c| !invisible(*c))
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let cleaned = kept.split_whitespace().collect::<Vec<_>>().join(" ");
    if cleaned.is_empty() {
        return Ok(None);
    }
    let n = cleaned.chars().count();
    if n > MAX_TITLE_CHARS {
        return Err(TitleError::TooLong(n));
    }
    Ok(Some(cleaned))
}

/// A short title from the first user message: its first non-empty line without Markdown
/// decoration, at most 7 words / 60 characters (cut at a word, with "…"). `None` when the
/// message has no words (an attachment marker, only punctuation).
pub fn from_first_message(text: &str) -> Option<String> {
    let line = text
        .lines()
        .map(|l| {
            l.trim()
                .trim_start_matches(['#', '>', '-', '*', '`', ' '])
                .trim()
        })
        .find(|l| l.chars().any(char::is_alphanumeric))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut out = String::new();
    let mut cut = false;
    for (i, word) in words.iter().enumerate() {
        if i == AUTO_TITLE_WORDS
            || out.chars().count() + word.chars().count() + 1 > AUTO_TITLE_CHARS
        {
            cut = true;
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    if out.is_empty() {
        // One very long word: keep its start.
        out = crate::util::truncate_chars(line, AUTO_TITLE_CHARS - 1).to_string();
        cut = true;
    }
    let mut out = out
        .trim_end_matches(|c: char| !c.is_alphanumeric() && c != ')' && c != '"')
        .to_string();
    if cut {
        out.push('…');
    }
    sanitize(&out).ok().flatten()
}

/// A title as a model answered it: the first line, without quotes or a "Title:" prefix, at
/// most 80 characters (like Python Hermes' title generator).
pub fn from_model_answer(answer: &str) -> Option<String> {
    let line = answer.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = match line.get(..6) {
        Some(p) if p.eq_ignore_ascii_case("title:") => line[6..].trim(),
        _ => line,
    };
    let quotes = ['"', '\'', '*', '`', '“', '”'];
    let line = line
        .trim_matches(quotes)
        .trim_end_matches(['.', '!'])
        .trim_matches(quotes);
    let line = if line.chars().count() > 80 {
        format!("{}...", crate::util::truncate_chars(line, 77))
    } else {
        line.to_string()
    };
    sanitize(&line).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_like_python() {
        assert_eq!(
            sanitize("  my\u{200b} \tproject\n notes ")
                .unwrap()
                .as_deref(),
            Some("my project notes")
        );
        assert_eq!(sanitize(" \u{feff} ").unwrap(), None);
        assert_eq!(sanitize(&"x".repeat(101)), Err(TitleError::TooLong(101)));
        assert!(sanitize(&"x".repeat(100)).unwrap().is_some());
    }

    #[test]
    fn auto_title_from_first_message() {
        assert_eq!(
            from_first_message("Fix the failing login test in auth.rs please").as_deref(),
            Some("Fix the failing login test in auth.rs…")
        );
        assert_eq!(
            from_first_message("\n## Plan a trip to Kyoto\nmore").as_deref(),
            Some("Plan a trip to Kyoto")
        );
        assert_eq!(
            from_first_message("你好，帮我写一首诗").as_deref(),
            Some("你好，帮我写一首诗")
        );
        assert_eq!(from_first_message("???\n..."), None);
        let long = "a".repeat(300);
        let t = from_first_message(&long).unwrap();
        assert!(t.chars().count() <= AUTO_TITLE_CHARS, "{t}");
    }

    #[test]
    fn model_answers_are_cleaned() {
        assert_eq!(
            from_model_answer("Title: \"Kyoto trip planning\".\n").as_deref(),
            Some("Kyoto trip planning")
        );
        assert_eq!(from_model_answer("  \n"), None);
    }
}
